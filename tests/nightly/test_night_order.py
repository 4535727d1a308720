"""A good night's writes, in an order that keeps the exit code the night's (issue 16, item 2): the
report files are staged first, patches/ and the lock change next, and only then do the reports
appear; a failure in between says what was written and leaves no report telling otherwise."""

from __future__ import annotations

import json
import signal

import pytest

from conftest import apply, run_cli
from patchkit.errors import EnvironmentProblem
from patchkit.nightly.night import NightlyOptions, run_nightly, write_refresh
from test_interrupt import start, stop, wait_for


def snapshot(project) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in project.patches_dir.iterdir()}


def test_reports_appear_only_after_the_patches_and_the_lock(project, tmp_path):
    apply(project, "b1000", update_lock=True)
    lock_before, reports = project.lock_path.read_bytes(), tmp_path / "reports"
    # A night before, on the same folder, that moved nothing: its report must not outlive the next.
    earlier = run_cli("nightly", "upstream@b1000", "--no-refresh", "--no-update-lock", "--report-dir", str(reports),
                      cwd=project.root)
    assert earlier.returncode == 0 and (reports / "report.json").is_file()
    night = start("nightly", "upstream@HEAD", "--report-dir", str(reports), cwd=project.root, pause="night-write")
    wait_for(night, "paused at night-write")
    # The patches are refreshed, the lock is not moved yet: no report may say anything yet.
    assert project.lock_path.read_bytes() == lock_before
    assert not (reports / "report.json").exists()
    assert [p for p in reports.rglob("*") if p.is_file() and not p.name.startswith(".")] == []  # staged only
    code, said = stop(night, signal.SIGTERM)
    assert code == 143 and "Traceback" not in said
    assert project.lock_path.read_bytes() == lock_before
    assert [p for p in reports.rglob("*") if p.is_file() and p.name != ".patchkit-manifest"] == []
    # The next night finishes what this one began.
    again = run_cli("nightly", "upstream@HEAD", "--report-dir", str(reports), cwd=project.root)
    assert again.returncode == 0, again.stderr
    report = json.loads((reports / "report.json").read_text())
    assert report["lock_moved"] and project.lock_path.read_bytes() != lock_before


def test_a_failed_lock_write_says_what_was_written_and_moves_nothing_else(project):
    apply(project, "b1000", update_lock=True)
    before = snapshot(project)
    report = run_nightly(project, NightlyOptions(spec="upstream@HEAD", fetch=False))
    assert report.passed and report.lock_moved and report.lock is not None
    assert snapshot(project) == before  # decided, not written
    project.lock_path.unlink()
    project.lock_path.mkdir()  # a lock that cannot be replaced: a real failure of the file system
    with pytest.raises(EnvironmentProblem) as failed:
        write_refresh(project, report)
    (refreshed,) = [r.name for r in report.refreshed]
    assert (f"the night's refresh stopped half way: patches/ has the refreshed {refreshed}, "
            "patchkit.lock was not moved, no report was written") in failed.value.message
    assert project.lock_path.is_dir()
