"""Trailers: one rule for reading, adding and changing the `Key: value` lines ending a message."""

from __future__ import annotations

from patchkit.patchfile.trailers import append, replace, split


def test_the_last_paragraph_is_the_trailer_block_when_every_line_is_a_trailer():
    body = "Why.\n\nReviewed-by: Ann <ann@example.org>\nReviewed-by: Bo <bo@example.org>\nForwarded:  no\n"
    assert split(body) == ("Why.", (("Reviewed-by", "Ann <ann@example.org>"), ("Reviewed-by", "Bo <bo@example.org>"),
                                    ("Forwarded", "no")))
    assert split("Only: trailers here") == ("", (("Only", "trailers here"),))
    assert split("") == ("", ())


def test_continuation_lines_are_joined():
    body = "Why.\n\nLink: https://example.org/a\n  /b\n\tand more\nForwarded: no"
    assert split(body)[1] == (("Link", "https://example.org/a /b and more"), ("Forwarded", "no"))


def test_prose_is_no_trailer_block():
    for body in ("Why.\n\nFrom the docs:\nNote: flags combine.", "Why.\n\nSee https://example.org/x",
                 "Why.\n\nKey:value without a blank", "Why.\n\n  Indented: first line"):
        assert split(body) == (body, ()), body


def test_append_goes_into_the_block_or_starts_one():
    assert append("Why.\n\nForwarded: no\n", [("Origin", "vendor")]) == "Why.\n\nForwarded: no\nOrigin: vendor"
    assert append("Why.\n\nSee this.", [("Origin", "vendor")]) == "Why.\n\nSee this.\n\nOrigin: vendor"
    assert append("", [("A", "1"), ("B", "2")]) == "A: 1\nB: 2"
    assert append("Why.\n", []) == "Why.\n"


def test_replace_changes_one_trailer_and_no_other_byte():
    message = "Subject: x\n\nWhy.\n\nLast-Update: 2026-01-01\n (late)\nForwarded: no"
    assert replace(message, "Last-Update", "2027-01-02") == "Subject: x\n\nWhy.\n\nLast-Update: 2027-01-02\nForwarded: no"
    assert replace(message, "Origin", "x") == message
    prose = "Subject: x\n\nLast-Update: 2026-01-01 is a date in prose\nand more prose."
    assert replace(prose, "Last-Update", "2027-01-02") == prose
    assert replace("no paragraphs", "Last-Update", "x") == "no paragraphs"


def test_a_block_with_gits_own_trailers_may_hold_other_lines():
    """git's rule: a quarter of the lines trailers, one of them git's own; the others stay text."""
    body = ("Why.\n\nBug: https://example.org/1\nSigned-off-by: Ann <ann@example.org>\n[bo: rebased]\n"
            "Signed-off-by: Bo <bo@example.org>\n(cherry picked from commit 0123abcd)")
    assert split(body) == ("Why.\n\n[bo: rebased]\n(cherry picked from commit 0123abcd)", (
        ("Bug", "https://example.org/1"), ("Signed-off-by", "Ann <ann@example.org>"),
        ("Signed-off-by", "Bo <bo@example.org>")))
    assert append(body, [("Origin", "vendor")]).endswith("(cherry picked from commit 0123abcd)\nOrigin: vendor")
    mostly_prose = "Why.\n\nSigned-off-by: Ann <ann@example.org>\nline\nline\nline\nline"
    assert split(mostly_prose) == (mostly_prose, ())
