"""`patchkit ci github`: the nightly workflow, through actionlint and by its structure."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from patchkit.errors import PatchkitError
from patchkit.ci.workflow import nightly_workflow

WORKFLOW = Path(".github/workflows/patchkit-nightly.yml")


def fork(tmp_path: Path, config: str = "") -> Path:
    root = tmp_path / "fork"
    root.mkdir()
    (root / "patchkit.yaml").write_text(f"upstream:\n  url: /nowhere\n{config}")
    return root


def actionlint(path: Path) -> subprocess.CompletedProcess:
    tool = shutil.which("actionlint")
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail("actionlint is missing: pip install -e '.[test]'")
        pytest.skip("actionlint not installed (pip install -e '.[test]')")
    return subprocess.run([tool, "-no-color", str(path)], capture_output=True, text=True, timeout=120)


def steps_by_name(job: dict) -> dict[str, dict]:
    return {step.get("name", step.get("uses")): step for step in job["steps"]}


def test_generated_workflow_passes_actionlint_and_has_the_structure(tmp_path):
    root = fork(tmp_path)
    result = run_cli("ci", "github", "--backend", "cpu", "--backend", "vulkan", cwd=root)
    assert result.returncode == 0, result.stderr
    path = root / WORKFLOW
    lint = actionlint(path)
    assert (lint.returncode, lint.stdout + lint.stderr) == (0, "")

    workflow = yaml.safe_load(path.read_text())
    assert workflow["on"] == {"schedule": [{"cron": "17 3 * * *"}], "workflow_dispatch": {}}
    assert workflow["permissions"] == {"contents": "read"}
    nightly, build = workflow["jobs"]["nightly"], workflow["jobs"]["build"]
    assert set(workflow["jobs"]) == {"nightly", "build"}
    assert nightly["permissions"] == {"contents": "write", "issues": "write", "pull-requests": "write"}
    assert build["needs"] == "nightly" and build["permissions"] == {"contents": "read"}
    assert build["strategy"]["matrix"] == {"backend": ["cpu", "vulkan"]}

    token = "${{ secrets.PATCHKIT_TOKEN || github.token }}"
    steps = steps_by_name(nightly)
    assert steps["actions/checkout@v4"]["with"]["token"] == token
    run = steps["patchkit nightly"]
    assert run["run"] == "patchkit nightly --report-dir .patchkit/nightly --github-issues"
    assert run["env"] == {"GITHUB_TOKEN": token}
    mirror = steps["Restore the upstream mirror"]["with"]
    assert mirror == {"path": "~/.cache/patchkit", "key": "patchkit-mirror-${{ github.run_id }}",
                      "restore-keys": "patchkit-mirror-"}
    save = steps["Save the upstream mirror"]
    assert save["uses"] == "actions/cache/save@v4" and save["if"] == "always()"
    assert save["with"] == {"path": "~/.cache/patchkit", "key": mirror["key"]}
    upload = steps["Upload the reports"]
    assert upload["uses"] == "actions/upload-artifact@v4" and upload["with"]["path"] == ".patchkit/nightly"
    push = steps["Push the refreshed patches and the lock"]
    assert push["env"] == {"BRANCH": "patchkit/refresh"} and "if" not in push  # a good night only
    assert 'git push --force origin "HEAD:refs/heads/$BRANCH"' in push["run"]
    assert "git add -A -- patches patchkit.lock" in push["run"]
    pr = steps["Open or update the pull request"]
    assert pr["if"] == "steps.push.outputs.ref != ''" and pr["env"]["GITHUB_TOKEN"] == token
    assert pr["run"].startswith('patchkit ci pull-request "$BRANCH" --base "$GITHUB_REF_NAME"')
    assert nightly["outputs"] == {"ref": "${{ steps.push.outputs.ref }}"}

    steps = steps_by_name(build)
    assert steps["actions/checkout@v4"]["with"]["ref"] == "${{ needs.nightly.outputs.ref || github.sha }}"
    assert steps["Restore the upstream mirror"]["with"] == mirror
    ccache = steps["Restore ccache"]["with"]
    assert ccache == {"path": "${{ github.workspace }}/.ccache",
                      "key": "ccache-${{ matrix.backend }}-${{ github.run_id }}",
                      "restore-keys": "ccache-${{ matrix.backend }}-"}
    assert build["env"]["CCACHE_DIR"] == ccache["path"] and build["env"]["BACKEND"] == "${{ matrix.backend }}"
    assert steps["Apply the queue at the locked commit"]["run"] == "patchkit apply upstream@locked"
    assert steps["Build"]["run"].startswith('patchkit build --backend "$BACKEND"')


def test_actionlint_does_catch_a_broken_workflow(tmp_path):
    """The lint above proves something: the same file with a job that needs a missing job fails."""
    path = tmp_path / "broken.yml"
    path.write_text(nightly_workflow(["cpu"]).replace("needs: nightly", "needs: nightlyy"))
    lint = actionlint(path)
    assert lint.returncode == 1 and "nightlyy" in lint.stdout


def test_refuses_to_overwrite_a_different_workflow_without_force(tmp_path):
    root = fork(tmp_path)
    path = root / WORKFLOW
    path.parent.mkdir(parents=True)
    path.write_text("name: mine\n")
    refused = run_cli("ci", "github", cwd=root)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "--force" in refused.stderr
    assert path.read_text() == "name: mine\n"
    assert run_cli("ci", "github", "--force", cwd=root).returncode == 0
    assert yaml.safe_load(path.read_text())["jobs"]["build"]["strategy"]["matrix"] == {"backend": ["cpu"]}
    again = run_cli("ci", "github", cwd=root)  # the same text again: nothing to refuse
    assert again.returncode == 0 and "up to date" in again.stdout


def test_options_and_a_cache_inside_the_repository(tmp_path):
    root = fork(tmp_path, "cache: .cache/patchkit\n")
    out = tmp_path / "elsewhere.yml"
    result = run_cli("ci", "github", "-o", str(out), "--cron", "30 2 * * 1-5", "--python", "3.12",
                     "--branch", "bot/rebase", "--patchkit", "patchkit @ git+https://example.invalid/pk@v1",
                     cwd=root)
    assert result.returncode == 0, result.stderr
    workflow = yaml.safe_load(out.read_text())
    nightly = steps_by_name(workflow["jobs"]["nightly"])
    assert workflow["on"]["schedule"] == [{"cron": "30 2 * * 1-5"}]
    assert nightly["Restore the upstream mirror"]["with"]["path"] == ".cache/patchkit"
    assert nightly["actions/setup-python@v5"]["with"] == {"python-version": "3.12"}
    assert nightly["Install patchkit"]["env"] == {"PATCHKIT": "patchkit @ git+https://example.invalid/pk@v1"}
    assert nightly["Push the refreshed patches and the lock"]["env"] == {"BRANCH": "bot/rebase"}
    assert not (root / WORKFLOW).exists()


def test_unknown_backend_and_bad_values_are_one_line_errors(tmp_path):
    root = fork(tmp_path)
    for args, words in ((["--backend", "nope"], "no recipe for backend nope"),
                        (["--cron", "daily"], "five cron fields"),
                        (["--branch", "a..b"], "not a branch name")):
        result = run_cli("ci", "github", *args, cwd=root)
        assert result.returncode == 2 and words in result.stderr and result.stderr.count("\n") == 1, args
    assert not (root / WORKFLOW).exists()
    with pytest.raises(PatchkitError, match="no backend"):
        nightly_workflow([])


def test_the_workflow_goes_through_a_fifo_and_never_into_a_folder(project, tmp_path):
    import os
    import threading

    from conftest import run_cli

    refused = run_cli("ci", "github", "-o", str(tmp_path), cwd=project.root)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "is a folder" in refused.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    proc = run_cli("ci", "github", "-o", str(fifo), cwd=project.root)
    reader.join(timeout=60)
    assert proc.returncode == 0 and received and "patchkit nightly" in received[0]
