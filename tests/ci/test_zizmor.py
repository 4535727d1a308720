"""zizmor, the GitHub Actions security linter (pinned in the test extras: a release may add
audits), finds nothing in the workflows `ci github` writes: for every shipped backend with a CI
environment, alone and all together, with and without --smoke and --runs-on, at its default
persona, offline. And it would: the same workflow with one tag-pinned action, or a checkout
that keeps its credentials, is flagged."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from patchkit.backends.recipe import load_recipes
from patchkit.ci.actions import PINS
from patchkit.ci.install import Install
from patchkit.ci.workflow import ci_environments, nightly_workflow

WHEEL = Install("wheel", None, {})  # the default install; its files do not go into the workflow
SHIPPED = {name: recipe for name, recipe in load_recipes().items() if recipe.ci is not None}


def zizmor(folder: Path) -> list[dict]:
    tool = shutil.which("zizmor")
    if tool is None:
        pytest.skip("zizmor not installed (pip install -e '.[test]')")
    proc = subprocess.run([tool, "--offline", "--no-progress", "--format", "json", str(folder)],
                          capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


def write(folder: Path, name: str, text: str) -> None:
    (folder / ".github/workflows").mkdir(parents=True, exist_ok=True)
    (folder / ".github/workflows" / f"{name}.yml").write_text(text)


def workflow(backends: list[str], *, smoke: bool = False, runs_on: dict[str, str] | None = None,
             install: Install = WHEEL) -> str:
    runs_on = runs_on or {}
    environments = ci_environments({name: SHIPPED[name] for name in backends}, runs_on)
    return nightly_workflow(environments, self_hosted=frozenset(runs_on), smoke=smoke, install=install)


def test_no_finding_on_any_generated_workflow(tmp_path):
    every = sorted(SHIPPED)
    assert {"cpu", "cuda", "hip", "metal", "sycl", "vulkan"} <= set(every)
    cases = {f"{name}{'-smoke' if smoke else ''}": workflow([name], smoke=smoke)
             for name in every for smoke in (False, True)}
    cases["all-smoke"] = workflow(every, smoke=True)
    cases["gpus-on-runners"] = workflow(every, smoke=True,
                                        runs_on={"cuda": "self-hosted,gpu", "hip": "self-hosted,amd", "sycl": "arc"})
    cases["requirement"] = workflow(["cpu"], install=Install("requirement", "patchkit-queue==0.1.0", {}))
    for name, text in cases.items():
        write(tmp_path, name, text)
    assert zizmor(tmp_path) == []


def test_zizmor_does_flag_a_tag_pinned_action_and_a_checkout_keeping_its_credentials(tmp_path):
    text = workflow(["cpu"], smoke=True)
    commit, _ = PINS["actions/upload-artifact"]
    write(tmp_path, "tag", text.replace(f"actions/upload-artifact@{commit}", "actions/upload-artifact@v7", 1))
    kept = "\n      with:\n        persist-credentials: false\n"  # the nightly job's checkout, without it
    assert kept in text
    write(tmp_path, "credentials", text.replace(kept, "\n", 1))
    found = {(Path(finding["locations"][0]["symbolic"]["key"]["Local"]["verbatim_path"]).stem, finding["ident"])
             for finding in zizmor(tmp_path)}
    assert found == {("tag", "unpinned-uses"), ("credentials", "artipacked")}
