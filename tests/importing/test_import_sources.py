"""Reading sources and patches, without an upstream: mbox splitting, DEP-3, plain diffs, folders,
ebuilds, names and the series edit."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchkit.errors import PatchkitError
from patchkit.importing import mail, sources
from patchkit.importing.admit import check_name, slug
from patchkit.importing.sources import PatchText
from patchkit.patchfile.mail import split_mbox
from patchkit.patchfile.series import insert_into_series
from patchkit.queue import read_patch

DIFF = """\
diff --git a/README.md b/README.md
index 1111111..2222222 100644
--- a/README.md
+++ b/README.md
@@ -1,2 +1,3 @@
 # llama.cpp (synthetic)
+From here on, a line.
 
"""


def message(n: int, body: str = "") -> str:
    return (f"From {n:040x} Mon Sep 17 00:00:00 2001\nFrom: Ada Lovelace <ada@example.org>\n"
            f"Date: Mon, 28 Sep 2026 14:5{n}:20 +0200\nSubject: [PATCH {n}/3] change {n}\n\n{body}"
            f"---\n{DIFF.replace('a line', f'line {n}')}-- \n2.39.5\n\n")


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


def test_a_cover_letter_is_left_out_with_a_warning(tmp_path):
    cover = ("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nFrom: Ada <ada@example.org>\n"
             "Subject: [PATCH 0/3] three changes\n\nThe series.\n\n")
    mbox = tmp_path / "series.mbox"
    mbox.write_text(cover + message(1) + message(2) + message(3))
    got = sources.gather([str(mbox)])
    assert [p.source for p in got.pieces] == [f"{mbox} (message {i} of 4)" for i in (2, 3, 4)]
    assert got.warnings == (f"{mbox} (message 1 of 4): no diff (a cover letter or a reply?), not imported: "
                            "'[PATCH 0/3] three changes'",)
    mbox.write_text(cover + cover)
    with pytest.raises(PatchkitError, match="none of its 2 messages holds a diff"):
        sources.gather([str(mbox)])


def test_a_single_patch_is_one_message():
    assert split_mbox(message(1)) == [message(1)]
    assert split_mbox(DIFF) == [DIFF]


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
    assert patch.subject == "change 2" and patch.author.date == "1790599940 +0200"


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
        draft(message(1).replace("line 1.\n", "line 1.\r\n", 1))


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


def test_slugs_names_and_the_series_edit():
    assert slug("server : keep speculative checkpoints on device") == "server-keep-speculative-checkpoints-on-device"
    assert slug("Fix: Ünïcode & <stuff>!") == "fix-unicode-stuff"
    assert slug("!!!") == "patch"
    long = slug("word " * 40)
    assert len(long) <= 64 and not long.endswith("-")
    assert check_name("fix") == "fix.patch" and check_name("fix.diff") == "fix.diff"
    for bad in ("a/b.patch", ".hidden", "-x", "with space", "x#y"):
        with pytest.raises(PatchkitError):
            check_name(bad)
    text = "# header\nfirst.patch -p1 # note\n\nsecond.patch"
    assert insert_into_series(text, ["new.patch"], None) == "# header\nfirst.patch -p1 # note\n\nsecond.patch\nnew.patch\n"
    assert insert_into_series(text, ["n1.patch", "n2.patch"], "first.patch") == \
        "# header\nfirst.patch -p1 # note\nn1.patch\nn2.patch\n\nsecond.patch\n"


def test_a_quilt_series_folder(tmp_path):
    folder = tmp_path / "debian" / "patches"
    (folder / "upstream").mkdir(parents=True)
    (folder / "series").write_text("# order matters\nb.patch -p1\n\nupstream/a.patch  # from upstream\n")
    (folder / "b.patch").write_text(DIFF)
    (folder / "upstream" / "a.patch").write_text(DIFF)
    got = sources.gather([str(tmp_path / "debian")])
    assert [p.source for p in got.pieces] == [f"{tmp_path}/debian/patches/b.patch",
                                              f"{tmp_path}/debian/patches/upstream/a.patch"]
    assert [p.kind for p in got.pieces] == ["quilt", "quilt"]
    assert [p.file_subject for p in got.pieces] == ["b", "a"]
    (folder / "series").write_text("b.patch -p0\n")
    with pytest.raises(PatchkitError, match="-p0"):
        sources.gather([str(folder)])
    (folder / "series").write_text("b.patch\nmissing.patch\n")
    with pytest.raises(PatchkitError, match=r"series:2: missing.patch is listed but does not exist"):
        sources.gather([str(folder)])


def test_a_gentoo_folder_by_name_and_by_ebuild(tmp_path):
    files = tmp_path / "llama-cpp" / "files"
    (files / "extra").mkdir(parents=True)
    for name in ("llama-cpp-9999-b.patch", "llama-cpp-a.patch", "unused.patch", "extra/z.diff"):
        (files / name).write_text(DIFF)
    (files / "llama-cpp.initd").write_text("#!/sbin/openrc-run\n")
    got = sources.gather([str(files)])
    assert [Path(p.source).name for p in got.pieces] == ["llama-cpp-9999-b.patch", "llama-cpp-a.patch", "unused.patch"]
    assert any("file-name order" in w for w in got.warnings)
    ebuild = tmp_path / "llama-cpp" / "llama-cpp-9999-r1.ebuild"
    ebuild.write_text('EAPI=8\nMY_EXTRA="extra"\n\nPATCHES=(\n\t"${FILESDIR}"/${P}-b.patch  # first\n'
                      '\t"${FILESDIR}/${PN}-a.patch"\n)\n\nsrc_prepare() {\n\tPATCHES+=( "${FILESDIR}"/${MY_EXTRA} )\n'
                      '\tcmake_src_prepare\n}\n')
    got = sources.gather([str(files)], ebuild=ebuild)
    assert [p.source.removeprefix(str(files) + "/") for p in got.pieces] == [
        "llama-cpp-9999-b.patch", "llama-cpp-a.patch", "extra/z.diff"]
    assert [p.file_subject for p in got.pieces] == ["b", "a", "z"]
    assert got.warnings == (f"{files}: not in the PATCHES of {ebuild.name}, so not imported: unused.patch",)
    ebuild.write_text('PATCHES=( "${FILESDIR}"/${P}-missing.patch )\n')
    with pytest.raises(PatchkitError, match="does not exist"):
        sources.gather([str(files)], ebuild=ebuild)
    ebuild.write_text('PATCHES=( "${FILESDIR}"/${UNKNOWN}.patch )\n')
    with pytest.raises(PatchkitError, match="UNKNOWN"):
        sources.gather([str(files)], ebuild=ebuild)
    ebuild.write_text('PATCHES=( "${DISTDIR}"/x.patch )\n')
    with pytest.raises(PatchkitError, match="DISTDIR"):
        sources.gather([str(files)], ebuild=ebuild)


def test_source_errors(tmp_path):
    with pytest.raises(PatchkitError, match="no such file or folder"):
        sources.gather([str(tmp_path / "nope.patch")])
    with pytest.raises(PatchkitError, match="plain http is refused"):
        sources.gather(["http://example.org/x.patch"])
    with pytest.raises(PatchkitError, match="unsupported URL scheme"):
        sources.gather(["ftp://example.org/x.patch"])
    with pytest.raises(PatchkitError, match="one --sha256 per URL"):
        sources.gather([str(tmp_path)], sha256=["0" * 64])
    with pytest.raises(PatchkitError, match="not a SHA-256"):
        sources.gather(["https://example.org/x.patch"], sha256=["abc"])
