"""One patch text made into the queue's form: author, date, subject, message and diff from a
mail, a DEP-3 header or a plain diff (with --author/--subject), rendered as git format-patch."""

from __future__ import annotations

from pathlib import Path

import pytest

from patch_samples import README_DIFF as DIFF, message
from patchkit.errors import PatchkitError
from patchkit.importing import mail
from patchkit.importing.sources import PatchText
from patchkit.queue import read_patch


def draft(text: str, **kwargs) -> mail.ParsedPatch:
    return mail.parse(PatchText(text, "test.patch", kwargs.pop("kind", None), **kwargs.pop("piece", {})),
                      now=1790000000, **kwargs)


def render(d: mail.ParsedPatch, tmp_path: Path):
    with mail.MailWriter() as writer:
        data = writer.write(d)
    path = tmp_path / "x.patch"
    path.write_bytes(data)
    return data.decode(), read_patch(path)


def test_a_format_patch_mail_keeps_its_author_date_and_message(tmp_path):
    d = draft(message(2, "Why it matters.\n\nSigned-off-by: Ada Lovelace <ada@example.org>\n"))
    assert (d.format, d.kind, d.name, d.email, d.subject) == ("mail", "format-patch", "Ada Lovelace",
                                                             "ada@example.org", "change 2")
    assert not d.date_set and d.date == "1790599940 +0200"
    text, patch = render(d, tmp_path)
    assert text.startswith("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
                           "From: Ada Lovelace <ada@example.org>\nDate: Mon, 28 Sep 2026 14:52:20 +0200\n"
                           "Subject: [PATCH] change 2\n\nWhy it matters.\n\nSigned-off-by: Ada Lovelace <ada@example.org>\n"
                           "---\ndiff --git a/README.md b/README.md\n")
    assert not text.endswith("2.39.5\n\n")  # the signature is the mail's, not the diff's
    assert patch.subject == "change 2" and patch.date == "1790599940 +0200"


def test_a_dep3_header_becomes_from_and_trailers(tmp_path):
    text = ("Description: fix the build with gcc 14\n The long description,\n .\n second paragraph.\n"
            "Author: Jürgen Müller <jm@example.org>\nOrigin: upstream, https://example.org/commit/1\n"
            "Bug-Debian: https://bugs.debian.org/1\nForwarded: not-needed\nLast-Update: 2026-11-29\n---\n" + DIFF)
    d = draft(text)
    assert (d.format, d.kind, d.name, d.email) == ("dep3", "dep3", "Jürgen Müller", "jm@example.org")
    assert d.subject == "fix the build with gcc 14"
    assert d.body == ("The long description,\n\nsecond paragraph.\n\nOrigin: upstream, https://example.org/commit/1\n"
                      "Bug-Debian: https://bugs.debian.org/1\nForwarded: not-needed\nLast-Update: 2026-11-29")
    assert d.date_set and d.date.startswith("1790000000 ")
    rendered, patch = render(d, tmp_path)
    assert "From: =?UTF-8?q?J=C3=BCrgen=20M=C3=BCller?= <jm@example.org>\n" in rendered
    assert patch.author.name == "Jürgen Müller"
    assert patch.trailers == {"Origin": "upstream, https://example.org/commit/1", "Bug-Debian": "https://bugs.debian.org/1",
                              "Forwarded": "not-needed", "Last-Update": "2026-11-29"}
    assert not any(key == "Author" for key in patch.trailers)


def test_dep3_with_subject_and_free_text():
    d = draft("From: Ada <ada@example.org>\nSubject: tidy\nOrigin: vendor\n\nFree text explains it.\n\n" + DIFF)
    assert (d.format, d.subject, d.name) == ("dep3", "tidy", "Ada")
    assert d.body == "Free text explains it.\n\nOrigin: vendor"


def test_a_plain_diff_needs_author_and_subject():
    with pytest.raises(PatchkitError, match="a plain diff has no author"):
        draft(DIFF)
    with pytest.raises(PatchkitError, match="no subject"):
        draft(DIFF, author=("Ada", "ada@example.org"))
    d = draft("Index: README.md\n" + "=" * 67 + "\n" + DIFF, author=("Ada", "ada@example.org"), subject="docs: a line")
    assert (d.format, d.kind, d.subject, d.body, d.date_set) == ("diff", "diff", "docs: a line", "", True)
    assert "author from --author" in " ".join(d.warnings)
    assert "no date in the source" in " ".join(d.warnings)


def test_a_folder_patch_without_subject_takes_its_file_name_with_a_warning():
    d = draft(DIFF, author=("Ada", "ada@example.org"), kind="quilt", piece={"file_subject": "fix the build"})
    assert d.subject == "fix the build" and d.file_subject
    assert any("file name" in w for w in d.warnings)


def test_a_quilt_diff_gets_git_prefixes():
    text = ("--- pkg-1.0.orig/src/a.c\t2020-01-01 00:00:00.000000000 +0000\n+++ pkg-1.0/src/a.c\n@@ -1 +1 @@\n"
            "--- removed line\n+++ added line\n")
    d = draft(text, author=("Ada", "ada@example.org"), subject="s", kind="quilt")
    assert d.diff == ("--- a/src/a.c\t2020-01-01 00:00:00.000000000 +0000\n+++ b/src/a.c\n@@ -1 +1 @@\n"
                      "--- removed line\n+++ added line\n")


def test_blank_lines_after_the_diff_go_and_a_blank_context_line_stays():
    tail = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n"
    d = draft(f"{tail} \n\n\n", author=("Ada", "ada@example.org"), subject="s")
    assert d.diff == f"{tail} \n"
    d = draft(f"{tail}\n", author=("Ada", "ada@example.org"), subject="s")  # a mailer ate the space
    assert d.diff == f"{tail}\n"


def test_crlf_everywhere_is_undone_and_mixed_is_refused():
    d = draft(message(1).replace("\n", "\r\n"))
    assert "\r" not in d.diff and any("CRLF" in w for w in d.warnings)
    with pytest.raises(PatchkitError, match="some lines end in CRLF"):
        draft(message(1).replace("change 1\n", "change 1\r\n", 1))
    # CRs on hunk lines only: the file's own line ends (git format-patch of a CRLF line), kept
    assert "line 1.\r\n" in draft(message(1).replace("line 1.\n", "line 1.\r\n", 1)).diff


def test_a_web_copy_without_repair_says_to_repair():
    web = (Path(__file__).resolve().parents[3] / "shared" / "seeds" / "web-copy-of-the-patch.txt")
    text = web.read_text() if web.exists() else "From x Mon Sep 17 00:00:00 2001 From: A Date: x diff --git a/x b/x"
    with pytest.raises(PatchkitError, match="--repair"):
        draft(text)


def test_a_missing_email_needs_author():
    text = message(1).replace("From: Ada Lovelace <ada@example.org>", "From: Ada Lovelace")
    with pytest.raises(PatchkitError, match="--author"):
        draft(text)
    assert draft(text, author=("Ada Lovelace", "ada@example.org")).email == "ada@example.org"


def test_origin_is_added_for_a_url_only_when_missing():
    d = draft(message(1, "Body.\n"), piece={"origin": "https://example.org/1.patch"})
    assert d.body == "Body.\n\nOrigin: https://example.org/1.patch"
    d = draft(message(1, "Body.\n\nOrigin: upstream, https://elsewhere\n"), piece={"origin": "https://example.org/1.patch"})
    assert d.body.count("Origin:") == 1
