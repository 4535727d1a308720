"""Opt-in (PATCHKIT_KILL_SWEEP=1; hundreds of runs): `record` and `absorb` killed just before each
of their git calls, in turn. After every kill, `--abort` gives back everything as it was (or there
is nothing to undo and nothing changed), and the next run ends where an uninterrupted run does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from record_helpers import cli, fork, snapshot
from test_journal import EDITS, written

pytestmark = pytest.mark.skipif(os.environ.get("PATCHKIT_KILL_SWEEP") != "1",
                                reason="hundreds of runs: set PATCHKIT_KILL_SWEEP=1")


def killed_at(project, command: str, k: int) -> bool:
    proc = subprocess.run([sys.executable, "-m", "patchkit", command], cwd=project.root, capture_output=True,
                          text=True, env={**os.environ, "NO_COLOR": "1", "PATCHKIT_TEST_KILL_AT": str(k)})
    assert proc.returncode in (0, -9), proc.stderr
    return proc.returncode == -9


@pytest.mark.parametrize("command", list(EDITS))
def test_killed_before_every_git_call_abort_undoes_and_the_rerun_finishes(tmp_path, command):
    project = fork(tmp_path / "run")
    EDITS[command](project)
    before = snapshot(project)
    template = tmp_path / "template"
    shutil.copytree(tmp_path / "run", template, symlinks=True)
    assert cli(command, cwd=project.root).returncode == 0
    clean = written(project)
    k = 0
    while True:
        k += 1
        shutil.rmtree(tmp_path / "run")
        shutil.copytree(template, tmp_path / "run", symlinks=True)
        if not killed_at(project, command, k):
            break
        if k % 2:  # undone, then run again
            pending = (project.state_dir / "journal").exists()
            aborted = cli(command, "--abort", cwd=project.root)
            assert aborted.returncode == (0 if pending else 2), (k, aborted.stderr)
            assert snapshot(project) == before, k
        rerun = cli(command, cwd=project.root)
        assert rerun.returncode == 0, (k, rerun.stdout + rerun.stderr)
        assert written(project) == clean, k
        assert not (project.state_dir / "journal").exists()
    print(f"{command}: killed before each of {k - 1} git calls; every run finished or undone")
    assert k > 10
