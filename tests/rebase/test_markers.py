"""A patch written into the checkout as far as it goes: placed hunks applied, the others as
labelled zdiff3 blocks at the nearest place, or in the reject file; and the markers found again."""

from __future__ import annotations

from patchkit.apply import HunkVerdict, PatchResult, Verdict
from patchkit.queue import read_patch
from patchkit.rebase.markers import Marker, find_markers, write_partial

PATCH = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Ada <ada@example.org>
Date: Tue, 1 Dec 2026 10:00:00 +0000
Subject: [PATCH] two hunks, a new file, a deleted one

---
diff --git a/f.c b/f.c
--- a/f.c
+++ b/f.c
@@ -2,3 +2,3 @@
 two
-three
+THREE
 four
@@ -8,3 +8,3 @@
 eight
-nine
+NINE
 ten
diff --git a/new.c b/new.c
new file mode 100644
--- /dev/null
+++ b/new.c
@@ -0,0 +1,2 @@
+int a;
+int b;
diff --git a/old.c b/old.c
deleted file mode 100644
--- a/old.c
+++ /dev/null
@@ -1 +0,0 @@
-gone
"""


def test_placed_hunks_apply_and_the_others_become_labelled_blocks(tmp_path):
    (tmp_path / "p.patch").write_text(PATCH)
    patch = read_patch(tmp_path / "p.patch")
    tree = tmp_path / "tree"
    tree.mkdir()
    # Upstream: hunk 1 moved down two lines; hunk 2's removed line changed.
    (tree / "f.c").write_text("zero\none\none-b\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine!\nten\n")
    (tree / "old.c").write_text("gone\n")
    hunks = (HunkVerdict("f.c", 1, Verdict.OFFSET, 2, 4, 2),
             HunkVerdict("f.c", 2, Verdict.CONFLICT, 8, nearest_line=10, nearest=("eight\n", "nine!\n", "ten\n"),
                         nearest_differs=(1,)),
             HunkVerdict("new.c", 1, Verdict.CLEAN, 0, 1), HunkVerdict("old.c", 1, Verdict.CLEAN, 1, 1))
    result = PatchResult("p.patch", patch.subject, patch.sha256, Verdict.CONFLICT, hunks)
    partial = write_partial(tree, patch, result, {}, tmp_path / "rej")
    label = "(patchkit: p.patch hunk 2 of f.c)"
    assert (tree / "f.c").read_text() == (
        "zero\none\none-b\ntwo\nTHREE\nfour\nfive\nsix\nseven\n"
        f"<<<<<<< upstream {label}\neight\nnine!\nten\n"
        f"||||||| pre-image {label}\neight\nnine\nten\n"
        f"======= {label}\neight\nNINE\nten\n"
        f">>>>>>> post-image {label}\n")
    assert partial.markers == (Marker("f.c", 10, 2),) and partial.reject_file is None
    assert (tree / "new.c").read_text() == "int a;\nint b;\n" and not (tree / "old.c").exists()
    assert find_markers(tree, ["f.c", "new.c"]) == ["f.c:10", "f.c:14", "f.c:18", "f.c:22"]


def test_a_hunk_without_a_place_goes_to_the_reject_file_with_the_nearest_lines(tmp_path):
    (tmp_path / "p.patch").write_text(PATCH)
    patch = read_patch(tmp_path / "p.patch")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f.c").write_text("".join(f"{w}\n" for w in "one two three four five six seven eight nine ten".split()))
    hunks = (HunkVerdict("f.c", 1, Verdict.CLEAN, 2, 2),
             HunkVerdict("f.c", 2, Verdict.AMBIGUOUS, 8, detail="the pre-image is found at lines 8 and 30"),
             HunkVerdict("new.c", 1, Verdict.CLEAN, 0, 1), HunkVerdict("old.c", 1, Verdict.MISSING_FILE, 1))
    result = PatchResult("p.patch", patch.subject, patch.sha256, Verdict.AMBIGUOUS, hunks)
    partial = write_partial(tree, patch, result, {}, tmp_path / "rej")
    assert partial.markers == ()
    assert partial.rejected == ("f.c hunk 2: the pre-image is found at lines 8 and 30",
                                "old.c hunk 1: old.c is not in the checkout")
    text = partial.reject_file.read_text()
    assert partial.reject_file.name == "p.patch.rej"
    assert "@@ -8,3 +8,3 @@\n eight\n-nine\n+NINE\n ten\n" in text and "-gone" in text
    assert (tree / "f.c").read_text().startswith("one\ntwo\nTHREE\nfour\n")
    assert find_markers(tree, ["f.c"]) == []
