"""record and absorb on the real queue (the six-site patch on the llama.cpp-shaped upstream): the
site checks run on the new queue, `Last-Update:` moves with the content, and a failing check keeps
the lock where it was."""

from __future__ import annotations

import json
from datetime import date

from conftest import PATCH_NAME, apply
from patchkit.fixture import SERVER_CONTEXT
from record_helpers import cli, git, reapplied_tree

COMMENT = "    // one speculative checkpoint per slot, so its tensor data can stay on the device\n"


def replace_line(path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))


def test_an_absorbed_edit_refreshes_the_patch_and_its_checks_pass(project):
    assert apply(project, "b1000", check=True, update_lock=True).lock_updated
    out = project.output_dir
    replace_line(out / SERVER_CONTEXT, COMMENT, COMMENT.replace("the device", "the device (see #28118)"))
    proc = cli("absorb", cwd=project.root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"into {PATCH_NAME}" in proc.stdout and "patchkit.lock updated" in proc.stdout
    text = (project.patches_dir / PATCH_NAME).read_text()
    assert "(see #28118)" in text and f"Last-Update: {date.today().isoformat()}" in text
    assert "From: Mike Lothian <mike@fireburn.co.uk>" in text and "Origin: other, https://github.com" in text
    lock = json.loads(project.lock_path.read_text())
    assert lock["tree"] == git("rev-parse", "HEAD^{tree}", cwd=out) == reapplied_tree(project)
    # the commit's message still says the old Last-Update; a reword later keeps the file's
    message = git("log", "-1", "--format=%B", cwd=out)
    assert "Last-Update: 2026-11-29" in message
    git("commit", "-q", "--amend", "-m", message.replace("keep speculative", "keep the speculative"), cwd=out)
    proc = cli("record", cwd=project.root)
    assert proc.returncode == 0, proc.stderr
    text = (project.patches_dir / PATCH_NAME).read_text()
    assert "keep the speculative" in text and f"Last-Update: {date.today().isoformat()}" in text


def test_a_failing_site_check_writes_the_queue_but_keeps_the_lock(project):
    apply(project, "b1000", check=True, update_lock=True)
    lock = project.lock_path.read_text()
    out = project.output_dir
    replace_line(out / SERVER_CONTEXT, "ckpt.load_dft(ctx_dft, slot.id, slot.spec_ckpt_flags);",
                 "ckpt.load_dft(ctx_dft, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);")
    git("commit", "-q", "-a", "--amend", "--no-edit", cwd=out)
    proc = cli("record", cwd=project.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "site checks fail" in proc.stdout and "patchkit.lock not updated" in proc.stderr + proc.stdout
    assert project.lock_path.read_text() == lock
    assert "+                    ckpt.load_dft" not in (project.patches_dir / PATCH_NAME).read_text()


def test_the_lock_never_moves_backwards_without_allow_rewind(project):
    apply(project, "HEAD", update_lock=True)
    apply(project, "b1000")  # the branch now sits on an older commit than the lock
    out = project.output_dir
    replace_line(out / SERVER_CONTEXT, COMMENT, COMMENT.replace("the device", "the GPU"))
    git("commit", "-q", "-a", "--amend", "--no-edit", cwd=out)
    lock = project.lock_path.read_text()
    patch = (project.patches_dir / PATCH_NAME).read_bytes()
    proc = cli("record", cwd=project.root)
    assert proc.returncode == 2 and "does not contain the locked commit" in proc.stderr
    assert project.lock_path.read_text() == lock and (project.patches_dir / PATCH_NAME).read_bytes() == patch
    proc = cli("record", "--allow-rewind", cwd=project.root)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(project.lock_path.read_text())["tree"] == git("rev-parse", "HEAD^{tree}", cwd=out)


def test_a_patch_that_did_not_apply_is_never_recorded_away(project):
    apply(project, "scenario/ambiguous")  # the patch is not on the branch
    out = project.output_dir
    (out / "NOTES.md").write_text("mine\n")
    git("add", "NOTES.md", cwd=out)
    git("commit", "-q", "-m", "notes : mine", cwd=out)
    series = project.series_path.read_bytes()
    proc = cli("record", cwd=project.root)
    assert proc.returncode == 2
    assert f"{PATCH_NAME} is ambiguous at " in proc.stderr and "recording the branch would drop it" in proc.stderr
    assert project.series_path.read_bytes() == series and not (project.patches_dir / "notes-mine.patch").exists()
