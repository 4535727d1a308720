"""The diff part: where it starts, the signature, the one hunk walker, quoted paths."""

from __future__ import annotations

from patch_samples import DIFF, SHORT
from patchkit.patchfile.diff import HUNK_HEADER, diff_start, eaten_blank_lines, short_hunk, strip_signature, unquote, walk


def parts(text: str) -> list[tuple[str, str, bool]]:
    return [(line.text, line.part.name, line.changed) for line in walk(text.splitlines())]


def test_the_walk_reads_each_line_as_the_hunk_header_counts():
    text = "--- a/x\n+++ b/x\n@@ -1,3 +1,2 @@ int f()\n a\n-b\n\n+ not counted\n"
    assert parts(text) == [
        ("--- a/x", "OUTSIDE", False), ("+++ b/x", "OUTSIDE", False), ("@@ -1,3 +1,2 @@ int f()", "HEADER", False),
        (" a", "CONTEXT", False), ("-b", "REMOVED", True),
        ("", "CONTEXT", False),  # a context line whose space a mailer ate
        ("+ not counted", "OUTSIDE", False),  # the counts are used up
    ]


def test_a_no_newline_marker_belongs_to_the_line_before_it():
    text = "@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+x\n\\ No newline at end of file\n"
    assert [(p, c) for _, p, c in parts(text)] == [
        ("HEADER", False), ("REMOVED", True), ("NO_NEWLINE", True), ("ADDED", True), ("NO_NEWLINE", True)]
    context = "@@ -1 +1 @@\n same\n\\ No newline at end of file\n"
    assert parts(context)[-1] == ("\\ No newline at end of file", "NO_NEWLINE", False)


def test_lines_kept_with_their_newlines_walk_the_same():
    assert [line.part for line in walk(DIFF.splitlines(keepends=True))] == [line.part for line in walk(DIFF.splitlines())]
    assert [line.old_left for line in walk("@@ -1,2 +1,2 @@\n a\n\n".splitlines(keepends=True))] == [2, 1, 0]


def test_a_short_hunk_is_named_by_its_header():
    assert short_hunk(SHORT.splitlines()) == 3
    assert short_hunk("@@ -1,2 +1,2 @@\n a\n".splitlines()) == 0  # cut at the end
    assert short_hunk(["@@ -1,2 +1,2 @@", " a", "@@ -5 +5 @@", "-x", "+y"]) == 0  # the next header came early
    assert short_hunk(DIFF.splitlines()) == len(DIFF.splitlines()) - 1
    assert short_hunk([]) == 0


def test_the_hunk_header_and_where_a_diff_starts():
    m = HUNK_HEADER.match("@@ -3020,7 +3022 @@ private:")
    assert m is not None and m.groups() == ("3020", "7", "3022", None)
    assert HUNK_HEADER.search("collapsed text @@ -1 +1 @@ -a +b") is not None  # repair's search
    lines = ["From: a", "", "--- not a diff", "text", "Index: x", "--- a/x", "+++ b/x"]
    assert diff_start(lines) == 5 and diff_start(["no diff"]) is None
    assert strip_signature("-a\n+b\n-- \n2.39.5\n\n") == "-a\n+b\n"


def test_quoted_paths():
    assert unquote('"a/caf\\303\\251.md"') == "a/café.md"
    assert unquote('"a/tab\\there \\"q\\""') == 'a/tab\there "q"'
    assert unquote("a/plain name") == "a/plain name"
    assert unquote('"b/\\377"') == "b/\udcff"  # not UTF-8: kept as a surrogate escape


def test_a_hunk_one_context_line_short_at_its_end_is_where_a_blank_line_was_eaten():
    hunk = ["diff --git a/x b/x", "--- a/x", "+++ b/x", "@@ -1,3 +1,3 @@", " a", "-b", "+B"]
    assert eaten_blank_lines(hunk) == [7]  # at the end of the diff
    assert eaten_blank_lines(hunk + ["diff --git a/y b/y"]) == [7]  # before the next file
    assert eaten_blank_lines(hunk + [" c"]) == []  # complete
    assert eaten_blank_lines(hunk[:-1]) == []  # short of a post-image line too: not a context line
    assert eaten_blank_lines(["@@ -1,2 +1,2 @@", " a"]) == []  # no change: no hunk to read
    assert eaten_blank_lines(hunk[:4] + [" a", "-b", "+B", "", "@@ -9,2 +9,2 @@", "-x", "+y"]) == [11]
