"""`rebase --abort` run again after it was killed in the middle of giving back patches/ finishes:
a symlink the user made in patches/ that the killed run had already kept aside is kept, not an error."""

from __future__ import annotations

import os

from test_rebase import queue_project, rebase, snapshot  # noqa: F401 (a fixture)


def test_an_abort_killed_after_keeping_the_users_symlink_finishes_when_run_again(queue_project):
    project = queue_project
    before = snapshot(project)
    assert rebase(project, "upstream@v2").returncode == 1
    link = project.patches_dir / "mine.patch"
    link.symlink_to("p1.patch")
    # What an abort killed between keeping the link aside and removing it from patches/ leaves.
    kept = project.state_dir / "kept" / "patches" / "mine.patch"
    kept.parent.mkdir(parents=True)
    kept.symlink_to("p1.patch")
    aborted = rebase(project, "--abort")
    assert aborted.returncode == 0, aborted.stderr
    assert os.readlink(kept) == "p1.patch" and not link.is_symlink() and str(kept) in aborted.stderr
    after = snapshot(project)
    assert after["files"] == before["files"] and after["lock"] == before["lock"]
