"""A rebase keeps what the user made: commits never recorded are named before it starts, files
made in patches/ and commits on a detached HEAD during a stop survive --abort (named), a removed
checkout does not strand it, one rebase runs at a time, and untracked files from before it are
no part of a fix."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import git_identity, run_cli
from patchkit import git
from test_interrupt import start, stop, wait_for
from test_rebase import queue_project, rebase, snapshot, take_post_image  # noqa: F401 (a fixture)

import signal


def test_commits_never_recorded_are_named_and_refused_before_the_start(queue_project):
    project = queue_project
    out = project.output_dir
    (out / "c.c").write_text("int c;\n")
    git.run(["add", "c.c"], cwd=out)
    git.run(["commit", "-q", "-m", "c : a new file"], cwd=out, env=git_identity())
    mine = git.run(["rev-parse", "--short=12", "HEAD"], cwd=out)
    before = snapshot(project)
    refused = rebase(project, "upstream@v2")
    assert refused.returncode == 2, refused.stderr
    assert f"{mine} (c : a new file)" in refused.stderr and "--record" in refused.stderr
    assert snapshot(project) == before and not (project.state_dir / "rebase").exists()
    stopped = rebase(project, "upstream@v2", "--record")
    assert stopped.returncode == 1, stopped.stderr
    assert "c-a-new-file.patch" in project.series_path.read_text()


def test_abort_keeps_files_made_in_patches_and_commits_on_a_detached_head(queue_project):
    project = queue_project
    before = snapshot(project)
    assert rebase(project, "upstream@v2").returncode == 1
    out = project.output_dir
    (project.patches_dir / "mine.patch").write_text("my notes\n")
    git.run(["switch", "-q", "--detach"], cwd=out)
    (out / "a.c").write_text("int mine;\n")
    git.run(["commit", "-q", "-am", "mine"], cwd=out, env=git_identity())
    detached = git.run(["rev-parse", "HEAD"], cwd=out)
    aborted = rebase(project, "--abort")
    assert aborted.returncode == 0, aborted.stderr
    kept = project.state_dir / "kept" / "patches" / "mine.patch"
    assert kept.read_text() == "my notes\n" and "patches/mine.patch" in aborted.stderr and str(kept) in aborted.stderr
    saved = f"refs/patchkit/saved/HEAD/{detached}"
    assert git.run(["rev-parse", saved], cwd=out) == detached and saved in aborted.stderr
    after = snapshot(project)
    assert after["files"] == before["files"] and after["lock"] == before["lock"]


def test_a_checkout_removed_during_a_stop_strands_nothing(queue_project):
    project = queue_project
    before = snapshot(project)
    assert rebase(project, "upstream@v2").returncode == 1
    shutil.rmtree(project.output_dir)
    status = run_cli("status", cwd=project.root)
    assert "its checkout was removed: `patchkit rebase --abort`" in status.stdout
    for args in (["rebase", "--continue"], ["rebase", "--skip"], ["apply"]):
        proc = run_cli(*args, cwd=project.root)
        assert proc.returncode == 2 and "--abort" in proc.stderr and "removed" in proc.stderr, (args, proc.stderr)
    aborted = rebase(project, "--abort")
    assert aborted.returncode == 0, aborted.stderr
    assert "was removed while the rebase stood" in aborted.stderr
    after = snapshot(project)
    assert after["files"] == before["files"] and after["lock"] == before["lock"]
    assert run_cli("apply", "upstream@locked", cwd=project.root).returncode == 0


def test_one_rebase_at_a_time(queue_project):
    project = queue_project
    first = start("rebase", "upstream@v2", cwd=project.root, pause="rebase-stop")
    try:
        wait_for(first, "paused at rebase-stop")
        for args in (["upstream@v2"], ["--abort"]):
            second = rebase(project, *args)
            assert second.returncode == 2, second.stderr
            assert f"(pid {first.pid})" in second.stderr and "one at a time" in second.stderr
        assert run_cli("record", cwd=project.root).returncode == 2
    finally:
        stop(first, signal.SIGKILL)
    assert rebase(project, "--abort").returncode == 0


def test_an_untracked_file_from_before_the_rebase_is_no_part_of_the_fix(queue_project):
    project = queue_project
    out = project.output_dir
    (out / "notes.txt").write_text("mine, from before\n")
    assert rebase(project, "upstream@v2").returncode == 1
    take_post_image(out / "a.c")
    proc = rebase(project, "--continue")
    assert proc.returncode == 1, proc.stderr  # p1 fixed; p2 stops next
    assert "notes.txt" not in (project.patches_dir / "p1.patch").read_text()
    assert (out / "notes.txt").read_text() == "mine, from before\n"
