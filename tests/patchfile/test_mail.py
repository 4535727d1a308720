"""A patch file's mail part: the mbox split, the header, the mail/DEP-3/diff forms."""

from __future__ import annotations

import os
import subprocess

import pytest

from patch_samples import DEP3, FOLDED, HEADER, MAIL, SHORT, message
from patch_samples import README_DIFF as DIFF
from patchkit.errors import PatchkitError
from patchkit.patchfile.diff import diff_start
from patchkit.patchfile.mail import (Dep3Header, Unreadable, free_text, git_author, git_date, git_zone, header_fields,
                                     header_form, read_dep3, read_header, split, split_mbox)


def test_an_mbox_splits_on_its_from_lines_only():
    body = "A body line.\n>From the start, this was escaped (mboxrd).\n>>From twice.\n\nFrom here, no postmark.\n"
    text = message(1, body) + message(2) + message(3)
    parts = split_mbox(text)
    assert len(parts) == 3
    assert parts[0].startswith("From 0000") and "change 1" in parts[0]
    assert "\nFrom the start, this was escaped (mboxrd).\n>From twice.\n" in parts[0]
    assert "\nFrom here, no postmark.\n" in parts[0]  # not a separator: no postmark, no header after it
    assert [p.count("\ndiff --git ") for p in parts] == [1, 1, 1]


def test_a_body_paragraph_starting_with_from_is_no_message():
    """"From the docs:" then "Note: ..." in a message is text; a message needs a header with From:."""
    quoted = message(1, "Why:\n\nFrom the docs:\nNote: flags combine.\n\n")
    assert split_mbox(quoted) == [quoted]

    archived = message(2).replace(f"From {2:040x} Mon Sep 17 00:00:00 2001", "From ada@example.org")
    assert len(split_mbox(quoted + archived)) == 2  # a sender for a postmark, then a header


def test_patches_concatenated_without_their_last_empty_line_are_still_several():
    """An editor drops a format-patch file's last empty line, `cat` joins them: three patches,
    not one whose diff holds the other two mails (git apply skips them: silently one patch)."""
    text = "".join(message(n).rstrip("\n") + "\n" for n in (1, 2, 3))
    assert "2.39.5\nFrom 0000" in text
    parts = split_mbox(text)
    assert [p.count("\ndiff --git ") for p in parts] == [1, 1, 1]
    assert [p.splitlines()[3] for p in parts] == [f"Subject: [PATCH {n}/3] change {n}" for n in (1, 2, 3)]


def test_a_single_patch_is_one_message():
    assert split_mbox(message(1)) == [message(1)]
    assert split_mbox(DIFF) == [DIFF]


def test_a_mail_splits_into_header_and_diff_without_the_signature(tmp_path):
    header, diff, line = split(MAIL, tmp_path / "x.patch")
    assert header.startswith("From 11bb66ec") and header.endswith("\n\n")
    assert diff.startswith("diff --git a/a.c b/a.c\n") and diff.endswith("\\ No newline at end of file\n")
    assert MAIL.splitlines()[line - 1] == "diff --git a/a.c b/a.c"
    with pytest.raises(PatchkitError, match="no diff found"):
        split(HEADER, tmp_path / "x.patch")


def test_the_header_gives_author_date_subject_and_message(tmp_path):
    author, date, subject, body = read_header(split(FOLDED, tmp_path / "x.patch")[0], tmp_path / "x.patch")
    assert (author.name, author.email, date) == ("Ada Lovelace", "ada@example.org", "1790599820 +0200")
    assert subject == "a subject folded over two lines"
    assert body == "Body.\n\nLink: https://example.org/a\n  /continued\nForwarded: no"
    encoded = "From: =?UTF-8?q?M=C3=BCller=2C_Hans?= <h@example.org>\nDate: Mon, 2 Nov 2026 10:00:00 -0430\nSubject: s\n"
    author, date, _, _ = read_header(encoded, tmp_path / "x.patch")
    assert (author.name, date) == ("Müller, Hans", "1793629800 -0430")
    # Decided: no Date is no error (the apply dates the commit at the upstream commit).
    assert read_header("From: A <a@example.org>\nSubject: s\n", tmp_path / "x.patch")[1] is None
    with pytest.raises(Unreadable, match=r"x.patch:2: unreadable Date 'yesterday'"):
        read_header("From: A <a@example.org>\nDate: yesterday\nSubject: s\n", tmp_path / "x.patch")


def test_git_dates_and_zones():
    assert git_date("Mon, 28 Sep 2026 14:50:20 +0200", "x") == "1790599820 +0200"
    assert git_zone(-270) == "-0430" and git_zone(0) == "+0000"
    with pytest.raises(PatchkitError, match="unreadable Date"):
        git_date("yesterday", "x")


def test_what_comes_before_a_diff_is_a_mail_a_dep3_header_or_free_text():
    def form(text: str) -> str:
        lines = text.splitlines(keepends=True)
        return header_form(lines[:diff_start(lines)])

    assert [form(t) for t in (MAIL, FOLDED, DEP3, SHORT)] == ["mail", "mail", "dep3", "diff"]
    assert form("Subject: tidy\nOrigin: vendor\n\n" + SHORT) == "dep3"
    assert form("From: Ada <ada@example.org>\nSubject: tidy\n\n" + SHORT) == "mail"
    assert form("Some words: and a colon\nthen prose\n" + SHORT) == "diff"


def test_a_dep3_header():
    header = DEP3.split("---\n", 1)[0].splitlines(keepends=True)
    assert read_dep3(header) == Dep3Header(
        ("Ada Lovelace", "ada@example.org"), None, "fix the thing", "It was broken.\n\nNow it is not.",
        (("Origin", "upstream, https://example.org/fix"), ("Bug-Debian", "https://bugs.debian.org/1"),
         ("Forwarded", "not-needed"), ("Last-Update", "2026-01-01")))
    free = read_dep3(["Free text first.\n", "\n", "Subject: s\n", "Date: Mon, 2 Nov 2026 10:00:00 +0100\n"])
    assert (free.subject, free.date, free.body, free.author) == ("s", "Mon, 2 Nov 2026 10:00:00 +0100",
                                                                 "Free text first.", None)
    assert free_text(["Index: a.c\n", "=" * 67 + "\n", "Why.\n"]) == "Why."


def test_header_fields_unfold_and_keep_the_first_of_each_name():
    lines = ["From 0000 Mon Sep 17 00:00:00 2001", "Subject: a long", "\tsubject", "subject: second",
             "X-Mailer: x", "", "Body."]
    assert header_fields(lines) == ({"subject": "a long subject", "x-mailer": "x"}, 5)
    assert header_fields(["Body first.", "Subject: no"]) == ({}, 0)


AUTHORS = ["A U Thor <a@example.org>", "nobody <>", "<a@example.org>", "a@example.org", "Name Only", "<>",
           "a@example.org (Comment Name)", "Jo <jo@example.org> extra", "X <not-an-address>",
           "A <a@example.org>, B <b@example.org>", '"Jo \\"J\\" Doe" <j@example.org>', '"Last, First" <l@example.org>',
           "Jo   Doe    <j@example.org>", "Jo<j@example.org>", "(Jo) j@example.org", "jo@example.org <j@example.org>",
           "A Name Longer Than Sixty Characters Which Git Replaces With The Address <l@example.org>"]


@pytest.mark.parametrize("value", AUTHORS)
def test_the_author_is_read_as_git_am_reads_it(value):
    """Decided: a From: is read by git mailinfo's rule (the odd forms included), so the commit's
    author is the one `git am` gives; an empty name is unreadable, as git am refuses it."""
    out = subprocess.run(["git", "mailinfo", os.devnull, os.devnull], input=f"From: {value}\nSubject: s\n\nb\n",
                         capture_output=True, text=True, check=True).stdout
    info = dict(line.split(": ", 1) if ": " in line else (line.rstrip(":"), "") for line in out.splitlines())
    assert git_author(value) == (info["Author"], info["Email"])
