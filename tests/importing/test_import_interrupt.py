"""An import stopped while it writes leaves the queue as it was, or one rerun away from done."""

from __future__ import annotations

import signal

import pytest
from conftest import run_cli
from import_helpers import AT, fork, git, patches_state, series, three_commits, work_clone
from test_interrupt import start, stop, wait_for


@pytest.fixture
def mbox_of_three(tmp_path, upstream):
    repo = work_clone(tmp_path, upstream)
    three_commits(repo)
    mbox = tmp_path / "three.mbox"
    mbox.write_text(git("format-patch", "--stdout", "b1000..work", cwd=repo) + "\n")
    return mbox


def test_ctrl_c_after_a_patch_file_is_written_leaves_patches_as_they_were(tmp_path, upstream, mbox_of_three):
    root = fork(tmp_path, upstream)
    before = patches_state(root)
    proc = start("import", str(mbox_of_three), "--at", AT, cwd=root, pause="import-write")
    wait_for(proc, "paused at import-write")
    code, _ = stop(proc, signal.SIGINT)
    assert code == 130
    assert patches_state(root) == before


def test_killed_between_the_files_and_the_series_the_rerun_finishes(tmp_path, upstream, mbox_of_three):
    root = fork(tmp_path, upstream)
    proc = start("import", str(mbox_of_three), "--at", AT, cwd=root, pause="import-write")
    wait_for(proc, "paused at import-write")
    stop(proc, signal.SIGKILL)  # nothing can clean up: a patch file is there, the series is not
    assert series(root) == []
    result = run_cli("import", str(mbox_of_three), "--at", AT, cwd=root)
    assert result.returncode == 0, result.stderr
    clean = fork(tmp_path, upstream, name="clean")
    assert run_cli("import", str(mbox_of_three), "--at", AT, cwd=clean).returncode == 0
    assert patches_state(root) == patches_state(clean)
