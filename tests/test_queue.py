"""The queue: series and patch parsing, and every bad input refused with one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_cli, seed_patch_path, write_project
from patchkit.errors import PatchkitError
from patchkit.patchfile.series import parse_series
from patchkit.queue import read_patch

SIMPLE = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: A U Thor <author@example.org>
Date: Mon, 2 Nov 2026 10:00:00 +0100
Subject: [PATCH 2/7] fix the thing

Body line.

Origin: vendor
Forwarded: no
---
diff --git a/{path} b/{path}
index 1111111..2222222 100644
--- a/{path}
+++ b/{path}
@@ -1,3 +1,3 @@ int main()
 a
-b
+B
 c
-- 
2.39.5
"""


def write(tmp_path: Path, text: str, name: str = "fix.patch") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reads_the_queue_patch_with_dep3_trailers():
    patch = read_patch(seed_patch_path())
    assert patch.author.name == "Mike Lothian" and patch.date == "1790518000 +0100"
    assert patch.subject == "server : keep speculative checkpoints on device"
    assert patch.trailers["Forwarded"] == "not-needed" and patch.trailers["Origin"].startswith("other, ")
    assert "Last-Update" in patch.trailers
    (change,) = patch.files
    assert change.path == "tools/server/server-context.cpp" and change.old_blob == "e95fb63ab"
    assert [h.old_start for h in change.hunks] == [255, 3020, 3059, 3078, 3090, 3942]
    assert change.hunks[0].section == "struct server_slot {"
    assert len(change.hunks[0].new_lines) - len(change.hunks[0].old_lines) == 2


def test_subject_prefix_and_signature_are_not_content(tmp_path):
    patch = read_patch(write(tmp_path, SIMPLE.format(path="src/a.c")))
    assert patch.subject == "fix the thing"
    assert patch.body.startswith("Body line.")
    hunk = patch.files[0].hunks[0]
    assert hunk.old_lines == ("a\n", "b\n", "c\n") and hunk.new_lines == ("a\n", "B\n", "c\n")
    assert hunk.section == "int main()"


def test_no_newline_at_end_of_file(tmp_path):
    text = SIMPLE.format(path="a.c").replace(" c\n-- \n", " c\n\\ No newline at end of file\n-- \n")
    hunk = read_patch(write(tmp_path, text)).files[0].hunks[0]
    assert hunk.old_lines[-1] == "c" and hunk.new_lines[-1] == "c"


@pytest.mark.parametrize("text, message", [
    (SIMPLE.format(path="../etc/passwd"), "unsafe path '../etc/passwd'"),
    (SIMPLE.replace("a/{path}", "/etc/{path}").format(path="passwd"), "unsafe path '/etc/passwd'"),
    # One context line short at the end reads as a blank line (test_tolerant_reads); more does not.
    (SIMPLE.format(path="a.c").replace("+B\n c\n-- \n", "-- \n"), "fix.patch:15: malformed or truncated"),
    (SIMPLE.format(path="a.c").replace("From: A U Thor <author@example.org>\n", ""), "missing or malformed author"),
    (SIMPLE.format(path="a.c").replace("From: A U Thor <author@example.org>", "From: A U Thor"),
     "fix.patch:2: missing or malformed author"),
    (SIMPLE.format(path="a.c").replace("Body line.\n", "Body line.\r\n"),
     "fix.patch:6: line 6 ends in CRLF, line 1 in LF: mixed line ends"),
    (SIMPLE.format(path="a.c").replace("From: A U Thor <author@example.org>", "From: A U Thor <<author>"),
     "has '<' or '>' in a name"),
    (SIMPLE.format(path="a.c").replace("Date: Mon, 2 Nov 2026 10:00:00 +0100", "Date: yesterday"),
     "fix.patch:3: unreadable Date 'yesterday'"),
    ("From: A <a@b.c>\nSubject: x\n\nno diff here\n", "no diff found"),
    ("From: A <a@b.c>\nDate: Mon, 2 Nov 2026 10:00:00 +0100\nSubject: img\n---\n"
     "diff --git a/x.png b/x.png\nindex 1111111..2222222 100644\nBinary files a/x.png and b/x.png differ\n",
     "'Binary files differ' without the binary data"),
])
def test_bad_patches_are_refused_with_a_reason(tmp_path, text, message):
    with pytest.raises(PatchkitError) as exc:
        read_patch(write(tmp_path, text))
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_a_traditional_diff_is_p1_whatever_its_first_folder(tmp_path):
    # quilt writes `llama.cpp.orig/` and `llama.cpp/`; GNU patch -p1 and git apply drop them.
    quilt = SIMPLE.format(path="a.c").replace("diff --git a/a.c b/a.c\nindex 1111111..2222222 100644\n", "")
    quilt = quilt.replace("--- a/a.c", "--- llama.cpp.orig/src/a.c").replace("+++ b/a.c", "+++ llama.cpp/src/a.c")
    (fc,) = read_patch(write(tmp_path, quilt)).files
    assert (fc.old_path, fc.new_path) == ("src/a.c", "src/a.c")
    # git's own diffs say a/ and b/; one without them was written with another -p and is refused.
    with pytest.raises(PatchkitError, match="lacks the 'a/' prefix"):
        read_patch(write(tmp_path, SIMPLE.format(path="a.c").replace(" a/a.c", " x/a.c")))
    with pytest.raises(PatchkitError, match="lacks the 'folder' prefix"):
        read_patch(write(tmp_path, quilt.replace("--- llama.cpp.orig/src/a.c", "--- a.c")))


def test_tolerant_reads(tmp_path):
    """What git am or GNU patch read unambiguously is read; the apply checks what needs upstream
    (tests/test_apply_malformed.py)."""
    crlf = read_patch(write(tmp_path, SIMPLE.format(path="a.c").replace("\n", "\r\n")))
    assert crlf.crlf and crlf.files[0].hunks[0].old_lines == ("a\n", "b\n", "c\n")
    assert not read_patch(write(tmp_path, SIMPLE.format(path="a.c"))).crlf

    short = read_patch(write(tmp_path, SIMPLE.format(path="a.c").replace(" c\n-- \n", "-- \n")))
    (hunk,) = short.files[0].hunks
    # the patch file's line 19 is where the blank line would have been
    assert hunk.old_lines == ("a\n", "b\n", "\n") and hunk.new_lines == ("a\n", "B\n", "\n")
    assert hunk.blank_read_at == 19 and hunk.trailing_context == 1

    nobody = read_patch(write(tmp_path, SIMPLE.format(path="a.c").replace("A U Thor <author@example.org>", "nobody <>")))
    assert (nobody.author.name, nobody.author.email) == ("nobody", "")
    undated = read_patch(write(tmp_path, SIMPLE.format(path="a.c").replace("Date: Mon, 2 Nov 2026 10:00:00 +0100\n", "")))
    assert undated.date is None and undated.subject == "fix the thing"
    # As git am: a name holding '<' or '>' gives way to the address.
    odd = read_patch(write(tmp_path, SIMPLE.format(path="a.c").replace("From: A U Thor <", 'From: "A <U> Thor" <')))
    assert (odd.author.name, odd.author.email) == ("author@example.org", "author@example.org")


def test_series_comments_blank_lines_and_p1(tmp_path):
    for name in ("a.patch", "b.patch"):
        write(tmp_path, SIMPLE.format(path="x.c"), name)
    series = write(tmp_path, "# queue\n\na.patch -p1\nb.patch  # trailing comment\n", "series")
    assert parse_series(series) == ["a.patch", "b.patch"]


@pytest.mark.parametrize("series, message", [
    ("a.patch\nmissing.patch\n", "series:2: missing.patch does not exist"),
    ("a.patch\n\na.patch\n", "series:3: a.patch is listed twice (first at line 1)"),
    ("a.patch\n./a.patch\n", "series:2: ./a.patch is listed twice (first at line 1)"),
    ("a.patch -p0\n", "series:1: unsupported series option '-p0'"),
    ("../a.patch\n", "unsafe path '../a.patch'"),
])
def test_bad_series_lines(tmp_path, series, message):
    write(tmp_path, SIMPLE.format(path="x.c"), "a.patch")
    with pytest.raises(PatchkitError) as exc:
        parse_series(write(tmp_path, series, "series"))
    assert message in str(exc.value)


def bad_input_project(tmp_path: Path, *, series: str | None = None, config_extra: str = "") -> Path:
    root = write_project(tmp_path / "fork", str(tmp_path / "nowhere"), extra=config_extra)
    if series is not None:
        (root / "patches" / "series").write_text(series)
    return root


@pytest.mark.parametrize("args, setup, message", [
    (["apply", "--", "--upload-pack=touch /tmp/x"], {}, "must not be empty or start with '-'"),
    (["apply", "upstream@a..b"], {}, "invalid upstream ref 'a..b'"),
    (["apply", "--upstream=-oops"], {}, "invalid --upstream '-oops'"),
    (["apply"], {"series": "nope.patch\n"}, "series:1: nope.patch does not exist"),
    (["apply"], {"config_extra": "colour: red\n"}, "unknown key 'colour'"),
])
def test_cli_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, args, setup, message):
    root = bad_input_project(tmp_path, **setup)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    proc = run_cli(*args, cwd=root)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_unreachable_upstream_is_exit_3_with_a_hint(tmp_path):
    root = write_project(tmp_path / "fork", "http://127.0.0.1:9/llama.cpp.git")
    proc = run_cli("apply", cwd=root)
    assert proc.returncode == 3, proc.stderr
    assert "cannot fetch upstream" in proc.stderr and "--upstream" in proc.stderr
    assert not (root / "llama.cpp").exists()


def test_paths_into_dot_git_are_refused(tmp_path):
    with pytest.raises(PatchkitError, match="unsafe path '.git/hooks/post-checkout'"):
        read_patch(write(tmp_path, SIMPLE.format(path=".git/hooks/post-checkout")))


def test_a_series_that_is_not_utf8(tmp_path):
    series = tmp_path / "series"
    series.write_bytes(b"caf\xe9.patch\n")
    with pytest.raises(PatchkitError, match="not UTF-8"):
        parse_series(series)


def test_an_encoded_author_name_with_a_comma_is_one_name(tmp_path):
    """git format-patch writes `Müller, Hans` as an RFC 2047 word: its comma is no list separator."""
    text = SIMPLE.format(path="a.c").replace("From: A U Thor <author@example.org>",
                                             "From: =?UTF-8?q?M=C3=BCller=2C=20Hans?= <h@example.org>")
    patch = read_patch(write(tmp_path, text))
    assert (patch.author.name, patch.author.email) == ("M\u00fcller, Hans", "h@example.org")


def test_a_binary_size_that_is_not_ascii_digits_is_refused_in_one_line(tmp_path):
    text = ("From: A <a@b.c>\nDate: Mon, 2 Nov 2026 10:00:00 +0100\nSubject: img\n---\n"
            "diff --git a/x.bin b/x.bin\nnew file mode 100644\n"
            "index 0000000000000000000000000000000000000000..d5d0b8b4c4c9e936890870f6799cfbb5ba984470\n"
            "GIT binary patch\nliteral \u00b2\nKcmb<ms0083<N)#j\n\nliteral 0\nHcmV?d00001\n\n")
    with pytest.raises(PatchkitError) as exc:
        read_patch(write(tmp_path, text))
    assert "unreadable binary patch line" in str(exc.value) and "\n" not in str(exc.value)


def test_a_malformed_patch_keeps_the_files_its_diff_headers_name(tmp_path):
    """What blocks later patches: every path its headers name (renames both sides, quoted names
    unquoted, a name with a space split as git splits it); no path outside the tree."""
    from patchkit.queue import Malformed, malformed_patch

    text = ("From: A U Thor\nSubject: [PATCH 3/9] odd\n\n---\n"
            "diff --git a/src/a b.c b/src/a b.c\n--- a/src/a b.c\n+++ b/src/a b.c\n@@ -1 +1 @@\n-x\n"
            "diff --git a/old.c b/new.c\nsimilarity index 90%\nrename from old.c\nrename to new.c\n"
            'diff --git "a/caf\\303\\251.md" "b/caf\\303\\251.md"\n'
            "--- a/../etc/passwd\n+++ b//etc/passwd\n")
    path = write(tmp_path, text)
    patch = malformed_patch(path, "fix.patch", Malformed(1, "missing or malformed author", ""))
    assert patch.touched_paths == ["src/a b.c", "old.c", "new.c", "café.md"]
    assert patch.subject == "odd" and patch.malformed.line == 1
