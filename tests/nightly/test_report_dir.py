"""A report folder holds this run's files (nightly/publish.py): what an earlier run wrote there is
removed, what patchkit did not write is never touched, and a file the night would write over that
patchkit did not write is refused before the night."""

from __future__ import annotations

import hashlib
import json

from conftest import PATCH_NAME, apply, run_cli
from patchkit.nightly.publish import MANIFEST


def night(project, ref: str, report_dir, *args: str):
    return run_cli("nightly", f"upstream@{ref}", "--report-dir", str(report_dir), *args, cwd=project.root)


def listing(folder) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_a_bad_night_after_a_good_one_leaves_only_its_own_files(project, tmp_path):
    apply(project, "b1000", update_lock=True)
    reports = tmp_path / "reports"
    before = (project.patches_dir / PATCH_NAME).read_bytes()
    good = night(project, "HEAD", reports, "--no-update-lock")  # the bad night below bisects from b1000
    assert good.returncode == 0, good.stderr
    # The lock stays, and so does the patch it names: the refresh onto HEAD is in the report only.
    assert (project.patches_dir / PATCH_NAME).read_bytes() == before != (reports / "patches" / PATCH_NAME).read_bytes()
    assert listing(reports) == [MANIFEST, "junit.xml", f"patches/{PATCH_NAME}", "report.json", "report.md"]
    # What an earlier night wrote for a patch that has left the queue since, as its manifest says;
    # and the user's own files, one where refreshed patches go.
    gone = b"From: a patch no longer in the queue\n"
    (reports / "patches" / "gone.patch").write_bytes(gone)
    with open(reports / MANIFEST, "a") as manifest:
        manifest.write(f"{hashlib.sha256(gone).hexdigest()}  patches/gone.patch\n")
    (reports / "notes.txt").write_text("mine\n")
    (reports / "patches" / "mine.patch").write_text("mine too\n")

    bad = night(project, "scenario/conflict", reports)
    assert bad.returncode == 1, bad.stderr
    assert json.loads((reports / "report.json").read_text())["refreshed"] == []
    assert listing(reports) == [MANIFEST, "junit.xml", "notes.txt", "patches/mine.patch", "report.json",
                                "report.md"]
    assert (reports / "notes.txt").read_text() == "mine\n"
    listed = sorted(line.split("  ", 1)[1] for line in (reports / MANIFEST).read_text().splitlines())
    assert listed == ["junit.xml", "report.json", "report.md"]


def test_a_file_the_night_would_write_over_that_patchkit_did_not_write_is_refused(project, tmp_path):
    apply(project, "b1000", update_lock=True)
    lock = project.lock()
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "report.json").write_text('{"mine": true}\n')  # not patchkit's: no manifest lists it
    refused = night(project, "HEAD", reports)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "report.json was not written by patchkit" in refused.stderr
    assert project.lock() == lock and listing(reports) == ["report.json"]

    (reports / "report.json").unlink()
    assert night(project, "HEAD", reports).returncode == 0
    with open(reports / "junit.xml", "a") as edited:  # listed, but its bytes are not patchkit's now
        edited.write("<!-- a note -->\n")
    again = night(project, "HEAD", reports)
    assert again.returncode == 2 and "junit.xml was not written by patchkit" in again.stderr
    assert (reports / "junit.xml").read_text().endswith("<!-- a note -->\n")

    # The build logs a night with --build writes (logs/BACKEND.log) are checked the same way.
    mine = tmp_path / "mine"
    (mine / "logs").mkdir(parents=True)
    (mine / "logs" / "cpu-unpatched.log").write_text("my notes\n")
    refused = night(project, "HEAD", mine, "--build", "cpu")
    assert refused.returncode == 2 and "cpu-unpatched.log was not written by patchkit" in refused.stderr


def test_the_default_folder_is_patchkits_own_even_from_before_manifests(project):
    """.patchkit/nightly, as a patchkit without manifests left it: written over, not refused."""
    apply(project, "b1000", update_lock=True)
    default = project.state_dir / "nightly"
    default.mkdir(parents=True)
    (default / "report.json").write_text('{"from": "an older patchkit"}\n')
    proc = run_cli("nightly", "upstream@HEAD", cwd=project.root)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((default / "report.json").read_text())["passed"] and (default / MANIFEST).is_file()


def test_a_link_in_the_folder_that_leads_into_the_queue_is_refused(project, tmp_path):
    apply(project, "b1000", update_lock=True)
    queue = {p.name: p.read_bytes() for p in project.patches_dir.iterdir()}
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "patches").symlink_to(project.patches_dir)
    proc = night(project, "HEAD", reports)
    assert proc.returncode == 2 and "is inside the patch queue" in proc.stderr
    assert {p.name: p.read_bytes() for p in project.patches_dir.iterdir()} == queue
