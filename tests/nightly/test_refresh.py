"""Refresh: each patch regenerated from its commit, classified, written whole; 3-way bases re-keyed."""

from __future__ import annotations

import re
from datetime import date

from conftest import apply, seed_patch_path

from patchkit.nightly.refresh import Change, refresh_queue, rekey_bases, write_refreshed
from patchkit.queue import Queue
from patchkit.upstream import Mirror

TODAY = date(2027, 1, 2)
ZERO_FROM = b"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"


def refresh(project, ref: str, **options):
    """Apply at REF, then refresh the queue from that run (nothing written)."""
    report = apply(project, ref, **options)
    return report, refresh_queue(Mirror.open(project), Queue.load(project), report.patches, TODAY)


def refresh_and_write(project, ref: str):
    report, refreshed = refresh(project, ref)
    write_refreshed(project, refreshed)
    rekey_bases(Mirror.open(project), refreshed)
    return report, refreshed


def patch_file(project) -> bytes:
    return (project.patches_dir / seed_patch_path().name).read_bytes()


def test_first_rewrite_of_the_seed_patch_is_format_only_and_keeps_its_header(project):
    old = patch_file(project)
    _, [refreshed] = refresh_and_write(project, "b1000")
    new = patch_file(project)
    assert refreshed.change is Change.FORMAT_ONLY and new == refreshed.data
    assert refreshed.content_diff == ""
    # From, Date, Subject, the body and every trailer, to the last byte; only the mbox line differs.
    assert old.startswith(b"From 8b2e18efdd5d22b27da16d46b192b82445604a8d ") and new.startswith(ZERO_FROM)
    old_header = old.split(b"\n---\n", 1)[0].split(b"\n", 1)[1]
    new_header, diff = new.split(b"\n---\n", 1)
    assert new_header.split(b"\n", 1)[1] == old_header
    assert new_header.endswith(b"\nForwarded: not-needed\nLast-Update: 2026-11-29")
    # No stat, no signature, full blob ids; the hunks are the old ones line for line.
    assert diff.startswith(b"diff --git a/tools/server/server-context.cpp ")
    assert re.search(rb"\nindex [0-9a-f]{40}\.\.[0-9a-f]{40} 100644\n", diff)
    assert b"\n-- \n" not in new
    assert old.split(b"\n--- a/", 1)[1] == new.split(b"\n--- a/", 1)[1] + b"-- \n2.55.0\n\n"
    assert refreshed.new_sha256 != refreshed.old_sha256


def test_line_churn_is_line_numbers_only_and_changes_nothing_else(project):
    refresh_and_write(project, "b1000")
    before = patch_file(project).decode().splitlines()
    report, [refreshed] = refresh_and_write(project, "master")  # b1002 inserted lines above hunks
    after = patch_file(project).decode().splitlines()
    assert report.patches[0].verdict.value == "offset"
    assert refreshed.change is Change.LINE_NUMBERS and refreshed.content_diff == ""
    assert len(before) == len(after)
    differing = [(a, b) for a, b in zip(before, after) if a != b]
    assert differing and all(a.startswith(("@@ ", "index ")) and b[:3] == a[:3] for a, b in differing)
    assert ("@@ -255,6 +255,8 @@ struct server_slot {", "@@ -280,6 +280,8 @@ struct server_slot {") in differing
    assert "Last-Update: 2026-11-29" in after  # only a content change moves it


def test_refreshing_twice_gives_identical_bytes(project):
    refresh_and_write(project, "master")
    first = patch_file(project)
    _, [again] = refresh_and_write(project, "master")
    assert again.change is Change.UNCHANGED and again.data == first == patch_file(project)
    assert again.old_sha256 == again.new_sha256


def test_context_change_is_reported_as_such(project):
    refresh_and_write(project, "b1000")
    apply(project, "b1000")  # the refreshed patch's base, for the merge below
    report, [refreshed] = refresh(project, "scenario/merged")
    assert report.patches[0].verdict.value == "merged"
    assert refreshed.change is Change.CONTEXT and refreshed.content_diff == ""


def test_content_change_is_shown_and_moves_last_update(project):
    refresh_and_write(project, "b1000")
    old = patch_file(project)
    report, [refreshed] = refresh_and_write(project, "scenario/partially-applied")  # upstream has hunks 1-3
    assert report.patches[0].verdict.value == "partially-applied"
    assert refreshed.change is Change.CONTENT
    new = patch_file(project)
    assert b"Last-Update: 2026-11-29" in old
    assert new.split(b"\n---\n")[0] == old.split(b"\n---\n")[0].replace(
        b"Last-Update: 2026-11-29", b"Last-Update: 2027-01-02")
    # Only the change's own lines, as a diff of them: hunks 1-3 left, hunk 4 on is still there.
    name = seed_patch_path().name
    assert refreshed.content_diff.startswith(f"--- a/{name}\n+++ b/{name}\n@@ ")
    removed = [line for line in refreshed.content_diff.splitlines()[2:] if line.startswith("-")]
    assert removed == [
        "-+    // one speculative checkpoint per slot, so its tensor data can stay on the device",
        "-+    static constexpr llama_state_seq_flags spec_ckpt_flags = LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY "
        "| LLAMA_STATE_SEQ_FLAGS_ON_DEVICE;",
        "--                            slot.spec_ckpt.update_dft(ctx_dft, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);",
        "-+                            slot.spec_ckpt.update_dft(ctx_dft, slot.id, slot.spec_ckpt_flags);",
        "--                    ckpt.load_dft(ctx_dft, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);",
        "-+                    ckpt.load_dft(ctx_dft, slot.id, slot.spec_ckpt_flags);",
    ]
    assert not any(line.startswith("+") for line in refreshed.content_diff.splitlines()[2:])
    assert " -                    ckpt.update_tgt(ctx_tgt, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);" \
        in refreshed.content_diff.splitlines()


def test_bases_are_rekeyed_so_the_next_run_still_merges_from_them(project):
    good, [refreshed] = refresh_and_write(project, "b1000")
    mirror = Mirror.open(project)
    bases = mirror.base_commits()
    assert bases[refreshed.new_sha256] == bases[refreshed.old_sha256] == good.patches[0].commit
    report = apply(project, "scenario/merged")
    assert report.patches[0].sha256 == refreshed.new_sha256
    assert report.patches[0].verdict.value == "merged"
    assert "the last good run" in report.patches[0].hunks[3].detail  # the base, not the index blob


def test_a_patch_without_a_commit_is_not_refreshed(project):
    from patchkit.errors import PatchkitError

    report = apply(project, "scenario/conflict")
    try:
        refresh_queue(Mirror.open(project), Queue.load(project), report.patches, TODAY)
    except PatchkitError as exc:
        assert str(exc).startswith(f"cannot refresh {seed_patch_path().name}: conflict")
    else:
        raise AssertionError("refreshed a patch that did not apply")
