"""What every reader and writer of the patch format does, on the same inputs.

Pinned before the format got one home (patchkit.patchfile), through a small adapter each at the
top of this file, so that the move changed only the adapters; each expectation that changed with
it says "Decided:" and why."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from conftest import git_identity, write_project
from patch_samples import DEP3, DIFF, FOLDED, FROM_PARAGRAPH, HOSTILE_CONFIG, MAIL, PROSE_LAST, SHORT, commit_repo
from patchkit import git
from patchkit.export.formats import Format
from patchkit.export.run import ExportOptions, run_export
from patchkit.importing import mail, run, sources
from patchkit.nightly import refresh
from patchkit.patchfile import diff as patch_diff
from patchkit.patchfile import trailers
from patchkit.patchfile.format_patch import format_commit, join
from patchkit.project import Project
from patchkit.queue import read_patch


# -- adapters: today's API ---------------------------------------------------------------------

def hunk_lines(lines: list[str]) -> list[str]:
    """The lines the walker puts inside a hunk."""
    return [line.text for line in patch_diff.walk(lines) if line.in_hunk]


def anatomy(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """refresh's classification depths: the change's own lines, the hunks."""
    seen = refresh._depths(text.encode("utf-8"))
    return seen.changes, seen.hunks


def failing_line(diff: str) -> int:
    return patch_diff.short_hunk(diff.splitlines())


def change_key(tmp_path: Path, text: str) -> str:
    path = tmp_path / "key.patch"
    path.write_text(text)
    return run.change_key(path.read_bytes(), read_patch(path))


def read(tmp_path: Path, text: str):
    path = tmp_path / "read.patch"
    path.write_text(text)
    return read_patch(path)


def with_trailers(body: str, added: list[tuple[str, str]]) -> str:
    return trailers.append(body, added)


def last_update(text: str, today: date) -> str:
    return refresh._last_update(text.encode("utf-8"), today).decode("utf-8")


def refresh_format(repo: Path, commit: str) -> str:
    return join(*format_commit(repo, commit))


def repository_format(repo: Path, first: str, second: str) -> str:
    (piece,) = sources.from_repository(str(repo), f"{first}..{second}")
    return piece.text


def import_format(text: str) -> str:
    with mail.MailWriter() as writer:
        return writer.write(mail.parse(sources.PatchText(text, "sample", None))).decode("utf-8")


# -- the hunk walkers ----------------------------------------------------------------------------

# Decided: the "\ No newline" after a hunk's last line belongs to that line (every walker used
# to leave it outside the hunk, so a patch that only drops a file's last newline was no change).
IN_HUNKS = [" a", "-b", "+B", " c", "+x", " one", "", " two", "-three", "+THREE",
            "-last", "\\ No newline at end of file", "+last", "-x", "+y", "\\ No newline at end of file"]


def test_the_walkers_read_the_same_hunk_lines():
    assert hunk_lines(DIFF.splitlines()) == IN_HUNKS
    assert hunk_lines(DIFF.splitlines(keepends=True)) == [f"{line}\n" for line in IN_HUNKS]
    changes, hunks = anatomy(MAIL)
    assert changes == (
        "diff --git a/a.c b/a.c", "--- a/a.c", "+++ b/a.c", "-b", "+B",
        "diff --git a/b.bin b/b.bin", "new file mode 100644", "GIT binary patch", "literal 4",
        "LcmZQzWMT#Y01f~L", "", "literal 0", "HcmV?d00001", "",
        'diff --git "a/caf\\303\\251.md" "b/caf\\303\\251.md"', "new file mode 100644", "--- /dev/null",
        '+++ "b/caf\\303\\251.md"', "+x",
        "diff --git a/eaten.c b/eaten.c", "--- a/eaten.c", "+++ b/eaten.c", "-three", "+THREE",
        "diff --git a/tail.txt b/tail.txt", "--- a/tail.txt", "+++ b/tail.txt",
        "-last", "\\ No newline at end of file", "+last",
        "diff --git a/end.txt b/end.txt", "--- a/end.txt", "+++ b/end.txt", "-x", "+y",
        "\\ No newline at end of file")
    assert [line for line in hunks if line == "@@"] == ["@@"] * 5
    assert hunks[hunks.index("diff --git a/eaten.c b/eaten.c") + 3:][:6] == ("@@", " one", "", " two", "-three", "+THREE")
    assert hunks[-2:] == ("+y", "\\ No newline at end of file")
    assert anatomy(MAIL) == anatomy(FOLDED)  # the message is no part of the diff


def test_the_parse_error_locator_names_the_short_hunk():
    assert failing_line(SHORT) == 3  # the `@@ -1,4 +1,4 @@` whose fourth line is missing
    assert failing_line(DIFF) == len(DIFF.splitlines()) - 1  # nothing short: the last line


def test_the_change_key_is_the_changed_lines_and_files(tmp_path):
    key = change_key(tmp_path, MAIL)
    assert change_key(tmp_path, FOLDED) == key  # headers and message are not the change
    assert change_key(tmp_path, MAIL.replace("\n c\n", "\n C\n")) == key  # nor is context
    assert change_key(tmp_path, MAIL.replace("+B\n", "+b2\n")) != key
    # Decided: the "\ No newline" after a hunk's last line is part of the change (it was not).
    assert change_key(tmp_path, MAIL.replace("+y\n\\ No newline at end of file\n", "+y\n")) != key


# -- headers and trailers ------------------------------------------------------------------------

def test_the_queue_reads_subject_body_and_trailers(tmp_path):
    patch = read(tmp_path, MAIL)
    assert patch.subject == "fix the thing" and patch.date == "1790599820 +0200"
    assert patch.body == ("Why the thing was broken.\n\nOrigin: vendor, https://example.org/fix\n"
                          "Reviewed-by: Ann Reviewer <ann@example.org>\nReviewed-by: Bo Reviewer <bo@example.org>\n"
                          "Forwarded: no")
    assert patch.trailers == {"Origin": "vendor, https://example.org/fix",
                              "Reviewed-by": "Bo Reviewer <bo@example.org>", "Forwarded": "no"}
    assert [f.path for f in patch.files] == ["a.c", "b.bin", "café.md", "eaten.c", "tail.txt", "end.txt"]

    folded = read(tmp_path, FOLDED)
    assert folded.subject == "a subject folded over two lines"
    # Decided: a continuation line is joined to its trailer's value (it was dropped).
    assert folded.trailers == {"Link": "https://example.org/a /continued", "Forwarded": "no"}

    prose = read(tmp_path, PROSE_LAST)
    assert prose.body == "Body.\n\nFrom the docs:\nNote: flags combine."
    # Decided: a last paragraph of prose is no trailer block, whatever colons it holds (a line
    # "Note: flags combine." was a trailer).
    assert prose.trailers == {}

    from_paragraph = read(tmp_path, FROM_PARAGRAPH)
    assert from_paragraph.body == "Why:\n\nFrom the docs, this is how it goes.\n\nForwarded: no"
    assert from_paragraph.trailers == {"Forwarded": "no"}

    # Decided: a patch without a Date reads (it was refused); the apply dates its commit at the
    # upstream commit, with a warning (tests/test_apply_malformed.py).
    dep3 = read(tmp_path, DEP3)
    assert (dep3.author.name, dep3.author.email, dep3.date) == ("Ada Lovelace", "ada@example.org", None)


def test_import_appends_trailers_to_a_trailer_block_only():
    added = [("Origin", "https://example.org/p")]
    assert with_trailers("Body.\n\nForwarded: no", added) == "Body.\n\nForwarded: no\nOrigin: https://example.org/p"
    assert with_trailers("Body.\n\nLink: https://example.org/a\n  /continued", added) == (
        "Body.\n\nLink: https://example.org/a\n  /continued\nOrigin: https://example.org/p")
    assert with_trailers("Body.\n\nFrom the docs:\nNote: x", added) == (
        "Body.\n\nFrom the docs:\nNote: x\n\nOrigin: https://example.org/p")
    # Decided: one trailer rule, `Key:` then blanks then a value ("Key:  two" was no trailer to
    # import, and was one to the queue).
    assert with_trailers("Key:  two spaces", added) == "Key:  two spaces\nOrigin: https://example.org/p"
    assert with_trailers("", added) == "Origin: https://example.org/p"
    assert with_trailers("Body.", []) == "Body."


def test_import_reads_a_dep3_header():
    draft = mail.parse(sources.PatchText(DEP3, "dep3.patch", None), now=1790600000)
    assert (draft.format, draft.name, draft.email, draft.subject) == (
        "dep3", "Ada Lovelace", "ada@example.org", "fix the thing")
    assert draft.body == ("It was broken.\n\nNow it is not.\n\nOrigin: upstream, https://example.org/fix\n"
                          "Bug-Debian: https://bugs.debian.org/1\nForwarded: not-needed\nLast-Update: 2026-01-01")


def test_refresh_moves_last_update_in_the_last_paragraph_only():
    today = date(2027, 1, 2)
    text = HEADER_ONLY + "\nBody.\n\nLast-Update: 2026-01-01\nForwarded: no\n---\n" + DIFF
    assert last_update(text, today) == text.replace("Last-Update: 2026-01-01", "Last-Update: 2027-01-02")
    inside = HEADER_ONLY + "\nLast-Update: 2026-01-01 is in prose.\n\nForwarded: no\n---\n" + DIFF
    assert last_update(inside, today) == inside
    prose = HEADER_ONLY + "\nBody.\n\nSee this.\nLast-Update: 2026-01-01\n---\n" + DIFF
    assert last_update(prose, today) == prose  # Decided: prose is no trailer block (it was changed)
    folded = HEADER_ONLY + "\nBody.\n\nLast-Update: 2026-01-01\n  (was late)\nForwarded: no\n---\n" + DIFF
    assert last_update(folded, today) == folded.replace("Last-Update: 2026-01-01\n  (was late)",
                                                        "Last-Update: 2027-01-02")


HEADER_ONLY = MAIL.split("\n\n", 1)[0] + "\n"


# -- git format-patch, three ways ----------------------------------------------------------------

FORMATTED_HEADER = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: =?UTF-8?q?Zo=C3=AB=20Packager?= <zoe@example.org>
Date: Mon, 28 Sep 2026 14:53:20 +0200
Subject: [PATCH] =?UTF-8?q?fix=20the=20th=C3=AFng?=
MIME-Version: 1.0
Content-Type: text/plain; charset=UTF-8
Content-Transfer-Encoding: 8bit

Why it was broken.

From the docs, a paragraph.

Link: https://example.org/a
Forwarded: no
"""

FORMATTED_DIFF = """\
diff --git a/a.c b/a.c
index 345a9c4d1262e11814b36ea8e93160c28cab7b33..c3db3616ce1054909d7f581df11edde0b428d472 100644
--- a/a.c
+++ b/a.c
@@ -2,7 +2,7 @@ line 1
 line 2
 
 line 3
-line 4
+line four
 line 5
 line 6
 line 7
@@ -10,7 +10,7 @@ line 8
 line 9
 line 10
 line 11
-line 12
+line twelve
 line 13
 line 14
 line 15
diff --git a/b.bin b/b.bin
new file mode 100644
index 0000000000000000000000000000000000000000..eaf36c1daccfdf325514461cd1a2ffbc139b5464
GIT binary patch
literal 4
LcmZQzWMT#Y01f~L

literal 0
HcmV?d00001

diff --git "a/caf\\303\\251.md" "b/caf\\303\\251.md"
new file mode 100644
index 0000000000000000000000000000000000000000..587be6b4c3f93f93c489c0111bba5596147a26cb
--- /dev/null
+++ "b/caf\\303\\251.md"
@@ -0,0 +1 @@
+x
diff --git a/moved.txt b/renamed.txt
similarity index 100%
rename from moved.txt
rename to renamed.txt
diff --git a/tail.txt b/tail.txt
index 1c1206e8bf4337e96dad9a6d139628852077558d..b25fa3fc473b6efd5ded03bcddbc4d37fc20674b 100644
--- a/tail.txt
+++ b/tail.txt
@@ -1 +1 @@
-last
\\ No newline at end of file
+last
"""


def test_the_three_format_patch_writers(tmp_path):
    first, second = commit_repo(tmp_path / "repo")
    refreshed = refresh_format(tmp_path / "repo", second)
    assert refreshed == FORMATTED_HEADER + "---\n" + FORMATTED_DIFF
    # Decided: --from-repo writes the `---` line too (it had none: git writes it with the stat).
    assert repository_format(tmp_path / "repo", first, second) == refreshed
    # import renders the header itself and keeps the diff as given.
    assert import_format(refreshed) == refreshed


def test_the_format_patch_writers_under_a_hostile_repository_config(tmp_path):
    repo = tmp_path / "repo"
    first, second = commit_repo(repo, HOSTILE_CONFIG)
    # Decided: the repository's config changes nothing (refresh failed on format.useAutoBase,
    # --from-repo on format.signOff; without those, both wrote what diff.noprefix, diff.context,
    # diff.interHunkContext, format.headers, format.subjectPrefix, ... said).
    (repo / "order").write_text("tail.txt\n")
    git.run(["config", "diff.orderFile", str(repo / "order")], cwd=repo)
    assert refresh_format(repo, second) == FORMATTED_HEADER + "---\n" + FORMATTED_DIFF
    assert repository_format(repo, first, second) == FORMATTED_HEADER + "---\n" + FORMATTED_DIFF


# -- DEP-3 export: the exact bytes ----------------------------------------------------------------

QUEUE_MESSAGES = {
    "folded-trailer": ("docs : a trailer continued\n\nWhy.\n\nLink: https://example.org/a\n  /continued\n"
                       "Forwarded: no\n"),
    "prose-last": "docs : prose last\n\nWhy.\n\nFrom the docs:\nNote: flags combine.\n",
    "reviewers": ("docs : two reviewers\n\nFrom the start, a paragraph.\n\n  Indented.\n\n"
                  "Reviewed-by: Ann Reviewer <ann@example.org>\nReviewed-by: Bo Reviewer <bo@example.org>\n"
                  "Last-Update: 2026-01-01\n"),
}

DEBIAN_PATCHES = {
    # Decided: the continuation line is part of the field (it was left in the description).
    "folded-trailer.patch": """\
Description: docs : a trailer continued
 Why.
Author: Zoë Packager <zoe@example.org>
Link: https://example.org/a /continued
Forwarded: no
---
diff --git a/docs/folded-trailer.md b/docs/folded-trailer.md
new file mode 100644
index 0000000000000000000000000000000000000000..96a1557ad3e8a2a992b3c4ef49eb3f30ed45606f
--- /dev/null
+++ b/docs/folded-trailer.md
@@ -0,0 +1 @@
+folded-trailer
""",
    # Decided: prose with a colon stays prose (its "Note:" line was lifted out as a field).
    "prose-last.patch": """\
Description: docs : prose last
 Why.
 .
 From the docs:
 Note: flags combine.
Author: Zoë Packager <zoe@example.org>
---
diff --git a/docs/prose-last.md b/docs/prose-last.md
new file mode 100644
index 0000000000000000000000000000000000000000..42db6a72570b0bc221136bdf8761f784df274f2e
--- /dev/null
+++ b/docs/prose-last.md
@@ -0,0 +1 @@
+prose-last
""",
    "reviewers.patch": """\
Description: docs : two reviewers
 From the start, a paragraph.
 .
   Indented.
Author: Zoë Packager <zoe@example.org>
Reviewed-by: Ann Reviewer <ann@example.org>
Reviewed-by: Bo Reviewer <bo@example.org>
Last-Update: 2026-01-01
---
diff --git a/docs/reviewers.md b/docs/reviewers.md
new file mode 100644
index 0000000000000000000000000000000000000000..064454b12d3e9a8538f07b3dfc08f68992d766f9
--- /dev/null
+++ b/docs/reviewers.md
@@ -0,0 +1 @@
+reviewers
""",
}


def queue_patches(tmp_path: Path, upstream: Path) -> list[Path]:
    work = tmp_path / "work"
    git.run(["clone", "--quiet", str(upstream), str(work)])
    (work / "docs").mkdir(exist_ok=True)
    patches = []
    for name, message in QUEUE_MESSAGES.items():
        (work / "docs" / f"{name}.md").write_text(f"{name}\n")
        git.run(["add", "-A"], cwd=work)
        git.run(["commit", "--quiet", "-F", "-"], cwd=work, input=message,
                env=git_identity("Zoë Packager", "zoe@example.org"))
        patches.append(tmp_path / f"{name}.patch")
        patches[-1].write_text(git.run(["format-patch", "-1", "--stdout", "--full-index"], cwd=work) + "\n")
    return patches


def test_export_debian_writes_these_bytes(tmp_path, upstream):
    project = Project.load(write_project(tmp_path / "fork", str(upstream.path), queue_patches(tmp_path, upstream.path)))
    out = tmp_path / "out"
    run_export(project, ExportOptions(Format.DEBIAN, out, "upstream@master"))
    assert (out / "patches" / "series").read_text() == (
        "# patchkit export debian: llama.cpp b4+pk3.a101fa89\n"
        "# upstream commit 246c10f18fb464e5c2251ea5883027c3cdc2ce58 (LLAMA_BUILD_NUMBER 4)\n"
        + "".join(f"{name}\n" for name in DEBIAN_PATCHES))
    for name, expected in DEBIAN_PATCHES.items():
        assert (out / "patches" / name).read_text() == expected, name
