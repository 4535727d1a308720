"""The series file: entries, insertion keeping every other line. (Reading a queue's series and
its refusals: tests/test_queue.py.)"""

from __future__ import annotations

from patchkit.patchfile.series import entries, insert_into_series


def test_an_insertion_keeps_comments_and_options():
    text = "# header\nfirst.patch -p1 # note\n\nsecond.patch"
    assert insert_into_series(text, ["new.patch"], None) == "# header\nfirst.patch -p1 # note\n\nsecond.patch\nnew.patch\n"
    assert insert_into_series(text, ["n1.patch", "n2.patch"], "first.patch") == \
        "# header\nfirst.patch -p1 # note\nn1.patch\nn2.patch\n\nsecond.patch\n"


def test_entries_skip_comments_and_blank_lines():
    text = "# header\n./first.patch -p1 # note\n\n  \nsecond.patch\n"
    assert [(e.lineno, e.name, e.path, e.options) for e in entries(text)] == [
        (2, "./first.patch", "first.patch", ("-p1",)), (5, "second.patch", "second.patch", ())]
