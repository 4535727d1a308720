"""What patchkit says, read as a person reads it: plurals agree, nothing is said twice, numbers are
written as numbers. Each case renders the real text (a real run where one is cheap)."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from conftest import REPO, run_cli, write_project

RULES = REPO / "patches" / "server-keep-speculative-checkpoints-on-device.checks.yaml"
# A compiler that does not exist: CMake's configure fails at once, on any tree.
BROKEN_RECIPE = "description: a compiler that does not exist\noptions: {CMAKE_CXX_COMPILER: /nonexistent/c++}\n"
needs_cmake = pytest.mark.skipif(not shutil.which("cmake") and not os.environ.get("CI"), reason="needs cmake")


def test_a_good_night_of_one_patch_says_patch(tmp_path, upstream):
    fork = write_project(tmp_path / "fork", str(upstream.path))
    night = run_cli("nightly", "upstream@HEAD", "--no-refresh", "--no-update-lock", cwd=fork)
    assert night.returncode == 0, night.stderr
    assert re.search(r"^nightly: 1 patch good on [0-9a-f]{12} \(HEAD\); ", night.stdout, re.M), night.stdout


@needs_cmake
def test_a_build_that_fails_without_the_queue_too_says_whose_fault_once(tmp_path, upstream):
    fork = write_project(tmp_path / "fork", str(upstream.path))
    (fork / "recipes").mkdir()
    (fork / "recipes" / "broken.yaml").write_text(BROKEN_RECIPE)
    night = run_cli("nightly", "upstream@HEAD", "--build", "broken", "--no-refresh", "--no-update-lock", cwd=fork)
    assert night.returncode == 1, night.stderr
    (line,) = [line for line in night.stdout.splitlines() if line.startswith("build broken:")]
    assert line == "build broken: upstream's fault: fails on the unpatched target too"


@pytest.mark.parametrize("recipe, said", [
    pytest.param(BROKEN_RECIPE, "smoke broken: NOT RUN: the smoke build failed: ", marks=needs_cmake),
    ("description: needs a tool nobody has\nrequires: [{command: patchkit-no-such-tool}]\n",
     "smoke broken: NOT RUN: the smoke build was skipped: "),
], ids=["failed", "skipped"])
def test_a_smoke_build_that_did_not_make_a_server_says_what_happened(tmp_path, recipe, said):
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.14)\nproject(x CXX)\n")
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "broken.yaml").write_text(recipe)
    smoke = run_cli("smoke", "tree", "--backend", "broken", "--rules", str(RULES), cwd=tmp_path)
    assert smoke.returncode == 1, smoke.stderr
    assert said in smoke.stdout, smoke.stdout


def test_a_bad_http_limit_names_its_default_as_a_number(tmp_path):
    assert run_cli("init", cwd=tmp_path).returncode == 0
    done = run_cli("import", "https://example.invalid/x.patch", cwd=tmp_path,
                   env={"PATCHKIT_HTTP_MAX_BYTES": "lots"})
    assert done.returncode == 2
    assert done.stderr.rstrip().endswith(f"(default {32 << 20})"), done.stderr


def test_the_readme_layout_says_nothing_twice():
    text = (REPO / "README.md").read_text()
    layout = " ".join(text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0].split())
    words = layout.split()
    runs = [" ".join(words[i:i + 6]) for i in range(len(words) - 5)]
    assert sorted({run for run in runs if runs.count(run) > 1}) == []
    assert layout.endswith("`testpoint.py` lets tests stop a run at a named point.")
