"""`repair`: mangled patches rebuilt against the upstream file, judged by what they do (the
post-image `git apply` makes), never by whether they parse; refusals name hunk and lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import git_identity, seed_patch_path
from import_helpers import clean_seed, web_copy
from patchkit.errors import PatchkitError
from patchkit.git import run
from patchkit.importing.repair import MBOX_LINE, RepairRefused, repair
from patchkit.queue import read_patch

SERVER = "tools/server/server-context.cpp"
MIKE = "Mike Lothian <mike@fireburn.co.uk>"
def diff_of(mail: str) -> str:
    """The hunks of a mail (from the first `@@`), without format-patch's signature."""
    return re.sub(r"\n-- \n.*\Z", "\n", mail[mail.index("\n@@ ") + 1:], flags=re.S)


def applied(tmp_path: Path, patch: bytes | str, path: str, pre: bytes) -> bytes:
    """PATH's bytes after `git apply` of PATCH (no fuzz, no offset tolerance needed) on PRE."""
    work = tmp_path / f"apply-{len(list(tmp_path.glob('apply-*')))}"
    (work / path).parent.mkdir(parents=True)
    (work / path).write_bytes(pre)
    run(["init", "--quiet"], cwd=work)
    run(["apply", "--whitespace=nowarn", "-"], cwd=work,
        input=patch.encode() if isinstance(patch, str) else patch)
    return (work / path).read_bytes()


def reader(files: dict[str, bytes]):
    return files.get


def format_patch(tmp_path: Path, path: str, before: str, after: str, subject: str = "fix: a change") -> str:
    """A real `git format-patch` mail changing PATH from BEFORE to AFTER."""
    repo = tmp_path / "made"
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    run(["init", "--quiet"], cwd=repo)
    env = git_identity("Ada Lovelace", "ada@example.org")
    for text, message in ((before, "base"), (after, subject)):
        (repo / path).write_text(text)
        run(["add", path], cwd=repo)
        run(["commit", "--quiet", "-m", message], cwd=repo, env=env)
    return run(["format-patch", "-1", "--stdout"], cwd=repo, env=env) + "\n"


@pytest.fixture(scope="module")
def server_pre(upstream) -> bytes:
    """server-context.cpp at b1000: the file the seed patch was made against."""
    return run(["show", f"b1000:{SERVER}"], cwd=upstream.path).encode("utf-8", "surrogateescape") + b"\n"


# A small C file indented with tabs, with trailing whitespace and arithmetic that looks like markers.
SMALL = "src/count.c"
SMALL_BEFORE = (
    "#include <stdio.h>\n"
    "\n"
    "static int next(int n)\n"
    "{\n"
    "\tif (n < 0) {\t\n"
    "\t\treturn -1;\n"
    "\t}\n"
    "\treturn n + 1;\n"
    "}\n"
    "\n"
    "int main(void)\n"
    "{\n"
    "\tint total = 0; \n"
    "\tfor (int i = 0; i < 10; i++) {\n"
    "\t\ttotal = next(total) - 1;\n"
    "\t}\n"
    "\tprintf(\"%d\\n\", total);\n"
    "\treturn 0;\n"
    "}\n"
)
SMALL_AFTER = (SMALL_BEFORE
               .replace("\t\treturn -1;\n", "\t\treturn -1 - n;\n")
               .replace("\treturn n + 1;\n", "\tint step = n - 1;\n\treturn n + 1 + step;\n")
               .replace("\t\ttotal = next(total) - 1;\n", "\t\ttotal = next(total) - 1;\n"
                        "\t\ttotal += i - 2;\n"))


def small_patch(tmp_path: Path) -> str:
    return format_patch(tmp_path, SMALL, SMALL_BEFORE, SMALL_AFTER, "count: step back")


def repaired_effect(tmp_path: Path, text: str, **options) -> bytes:
    fixed = repair(text, reader({SMALL: SMALL_BEFORE.encode()}), **options)
    return applied(tmp_path, fixed.data, SMALL, SMALL_BEFORE.encode())


# --- the seed ------------------------------------------------------------------------------------

def test_the_web_copy_repairs_into_the_clean_patch(tmp_path, server_pre):
    fixed = repair(web_copy(clean_seed()), reader({SERVER: server_pre}), author=MIKE)

    clean_effect = applied(tmp_path, clean_seed(), SERVER, server_pre)
    assert applied(tmp_path, fixed.data, SERVER, server_pre) == clean_effect
    text = fixed.data.decode()
    assert diff_of(text) == diff_of(clean_seed())  # every hunk byte for byte, headers included
    assert text.startswith(f"{MBOX_LINE}\nFrom: {MIKE}\nDate: Sun, 27 Sep 2026 15:06:40 +0100\n"
                           "Subject: [PATCH 06/18] server : keep speculative checkpoints on device\n\n"
                           "Assisted-by: Claude Code (Claude Opus 5.5)\n---\ndiff --git ")
    assert [(h.index, h.upstream_line) for h in fixed.hunks] == [
        (1, 255), (2, 3020), (3, 3059), (4, 3078), (5, 3090), (6, 3942)]
    assert fixed.hunks[0].notes == ("newlines restored from upstream",
                                    "context taken from upstream (1 line differed only in whitespace/markup)",
                                    "added lines re-indented")
    assert fixed.notes == ("header newlines restored", "diffstat dropped",
                           "author e-mail stripped: taken from --author")

    patch = tmp_path / "repaired.patch"
    patch.write_bytes(fixed.data)
    read = read_patch(patch)
    assert (read.author.name, read.author.email) == ("Mike Lothian", "mike@fireburn.co.uk")
    assert read.subject == "server : keep speculative checkpoints on device"
    assert read.body == "Assisted-by: Claude Code (Claude Opus 5.5)"


def test_index_line_names_full_blob_ids(tmp_path, server_pre):
    fixed = repair(web_copy(clean_seed()), reader({SERVER: server_pre}), author=MIKE)
    post = applied(tmp_path, clean_seed(), SERVER, server_pre)
    ids = [run(["hash-object", "--stdin"], cwd=tmp_path, input=data) for data in (server_pre, post)]

    assert f"\nindex {ids[0]}..{ids[1]} 100644\n" in fixed.data.decode()


def test_a_hunk_whose_context_is_found_twice_is_refused(server_pre):
    lines = server_pre.decode().splitlines(keepends=True)
    copied = "".join(lines[3075:3086])  # hunk 4's pre-image is lines 3078-3084
    with pytest.raises(RepairRefused) as refused:
        repair(web_copy(clean_seed()), reader({SERVER: server_pre + copied.encode()}), author=MIKE)

    assert refused.value.exit_code == 1
    assert refused.value.message == (f"hunk 4 ({SERVER}): its context matches upstream at several "
                                     f"places (lines 3078, {len(lines) + 3})")


def test_a_removed_line_that_upstream_does_not_have_is_refused(server_pre):
    web = web_copy(clean_seed()).replace("- ckpt.update_tgt(ctx_tgt, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL",
                                         "- ckpt.update_tgt(ctx_tgt, slot.id, LLAMA_STATE_SEQ_FLAGS_NONE")
    assert web != web_copy(clean_seed())
    with pytest.raises(RepairRefused, match=rf"^hunk 4 \({SERVER}\): its context and removed lines match nowhere"):
        repair(web, reader({SERVER: server_pre}), author=MIKE)


def test_the_queue_seed_collapsed_needs_its_subject(tmp_path, server_pre):
    """Collapsed, the subject runs into the message: where it ends is asked for, not guessed."""
    web = web_copy(seed_patch_path().read_text())
    with pytest.raises(PatchkitError, match="cannot tell where the subject ends") as refused:
        repair(web, reader({SERVER: server_pre}), author=MIKE)
    assert refused.value.exit_code == 2

    subject = "server : keep speculative checkpoints on device"
    fixed = repair(web, reader({SERVER: server_pre}), author=MIKE, subject=f"[PATCH] {subject}")
    patch = tmp_path / "repaired.patch"
    patch.write_bytes(fixed.data)
    read = read_patch(patch)
    assert read.subject == subject
    assert read.body.startswith("Keep the six speculative-decoding checkpoint save/load calls")
    assert read.trailers["Last-Update"] == "2026-11-29"
    seed_effect = applied(tmp_path, seed_patch_path().read_bytes(), SERVER, server_pre)
    assert applied(tmp_path, fixed.data, SERVER, server_pre) == seed_effect


def test_a_missing_email_without_author_is_exit_2_asking_for_it(server_pre):
    with pytest.raises(PatchkitError) as refused:
        repair(web_copy(clean_seed()), reader({SERVER: server_pre}))

    assert refused.value.exit_code == 2
    assert str(refused.value) == ("the author's e-mail address is missing (From: Mike Lothian), probably "
                                  'stripped with the angle brackets; pass --author "Name <email>"')


# --- each kind of damage on a small tab-indented file ----------------------------------------------

def test_an_undamaged_patch_comes_out_with_the_same_effect(tmp_path):
    patch = small_patch(tmp_path)
    fixed = repair(patch, reader({SMALL: SMALL_BEFORE.encode()}))

    assert applied(tmp_path, fixed.data, SMALL, SMALL_BEFORE.encode()) == SMALL_AFTER.encode()
    assert diff_of(fixed.data.decode()) == diff_of(patch)
    assert [h.notes for h in fixed.hunks] == [(), ()]
    assert fixed.notes == ("diffstat dropped",)


def line_damage(patch: str, damage: str) -> str:
    """PATCH as a mailer or an editor left it, lines kept."""
    lines = patch.split("\n")
    if damage == "crlf":
        return "\r\n".join(lines)
    if damage == "tabs expanded":
        return "\n".join(line.expandtabs(8) for line in lines)
    if damage == "trailing whitespace lost":
        return "\n".join(line.rstrip() for line in lines)
    return "\r\n".join(line.expandtabs(8).rstrip() for line in lines)


@pytest.mark.parametrize("damage", ["crlf", "tabs expanded", "trailing whitespace lost", "all three"])
def test_line_damage_is_undone(tmp_path, damage):
    fixed = repair(line_damage(small_patch(tmp_path), damage), reader({SMALL: SMALL_BEFORE.encode()}))

    assert applied(tmp_path, fixed.data, SMALL, SMALL_BEFORE.encode()) == SMALL_AFTER.encode()
    assert diff_of(fixed.data.decode()) == diff_of(small_patch(tmp_path))
    assert ("CRLF removed" in fixed.notes) == (damage in ("crlf", "all three"))


def test_trailing_whitespace_of_context_comes_back_from_upstream(tmp_path):
    fixed = repair(line_damage(small_patch(tmp_path), "trailing whitespace lost"),
                   reader({SMALL: SMALL_BEFORE.encode()}))

    assert "\n \tif (n < 0) {\t\n" in fixed.data.decode()
    assert [h.notes for h in fixed.hunks] == [
        ("context taken from upstream (1 line differed only in whitespace/markup)",),
        ("context taken from upstream (1 line differed only in whitespace/markup)",)]


def test_expanded_tabs_come_back_from_upstream_and_added_lines_get_tabs(tmp_path):
    fixed = repair(line_damage(small_patch(tmp_path), "all three"), reader({SMALL: SMALL_BEFORE.encode()}))

    text = fixed.data.decode()
    assert "\n \tif (n < 0) {\t\n" in text and "\n \tint total = 0; \n" in text  # context as upstream has it
    assert "\n+\tint step = n - 1;\n" in text and "\n+\t\ttotal += i - 2;\n" in text  # re-indented with tabs
    assert [h.notes for h in fixed.hunks] == [
        (f"context taken from upstream ({n} lines differed only in whitespace/markup)", "added lines re-indented")
        for n in (4, 6)]


def test_collapsed_newlines_with_arithmetic_that_looks_like_markers(tmp_path):
    """`n + 1`, `-1`, `- 1`, `i - 2` in code: upstream's lines and the header's counts decide."""
    web = web_copy(small_patch(tmp_path))
    assert "return -1; + return -1 - n; } - return n + 1; + int step = n - 1;" in web

    fixed = repair(web, reader({SMALL: SMALL_BEFORE.encode()}), author=MIKE)

    assert applied(tmp_path, fixed.data, SMALL, SMALL_BEFORE.encode()) == SMALL_AFTER.encode()
    assert fixed.hunks[0].notes[0] == "newlines restored from upstream"


@pytest.mark.parametrize(("added", "what"), [
    ("#include <stdlib.h>", "#include without a header name"),
    ("static_cast<long>(total);", "a cast without its type"),
    ("std::vector<int> seen;", "a std:: template without arguments"),
    ("template <typename T> T twice(T x);", "`template` without its parameter list"),
])
def test_an_added_line_that_lost_its_angle_brackets_is_refused(tmp_path, added, what):
    after = SMALL_BEFORE.replace("#include <stdio.h>\n", f"#include <stdio.h>\n{added}\n")
    web = web_copy(format_patch(tmp_path, SMALL, SMALL_BEFORE, after))
    stripped = web_copy(added)

    with pytest.raises(RepairRefused) as refused:
        repair(web, reader({SMALL: SMALL_BEFORE.encode()}), author=MIKE)

    assert refused.value.message == (f"hunk 1 ({SMALL}): added line {stripped!r} lost its text in "
                                     f"angle brackets ({what})")


def test_a_collapsed_plain_diff_takes_author_and_subject_from_the_options(tmp_path):
    patch = small_patch(tmp_path)
    web = web_copy(patch[patch.index("diff --git "):])
    fixed = repair(web, reader({SMALL: SMALL_BEFORE.encode()}), author=MIKE, subject="count: step back")

    assert applied(tmp_path, fixed.data, SMALL, SMALL_BEFORE.encode()) == SMALL_AFTER.encode()
    assert fixed.data.decode().startswith(f"{MBOX_LINE}\nFrom: {MIKE}\nDate: ")
    assert "\nSubject: count: step back\n\n---\ndiff --git " in fixed.data.decode()
    assert fixed.notes == ("author taken from --author", "subject taken from --subject",
                           "no Date: the import time used")


@pytest.mark.parametrize("encoding", ["quoted-printable", "base64"])
def test_a_transfer_encoded_mail_is_refused_not_rebuilt_encoded(tmp_path, encoding):
    """`x =3D 1` in a quoted-printable diff is `x = 1`: kept as given, it would be added as is."""
    import base64
    import quopri

    head, _, rest = small_patch(tmp_path).partition("\n\n")
    encode = {"quoted-printable": quopri.encodestring, "base64": base64.encodebytes}[encoding]
    mail = (f"{head}\nMIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\n"
            f"Content-Transfer-Encoding: {encoding}\n\n{encode(rest.encode()).decode()}")
    with pytest.raises(PatchkitError) as refused:
        repair(mail, reader({SMALL: SMALL_BEFORE.encode()}))

    assert refused.value.exit_code == 2
    assert refused.value.message == f"the mail is {encoding}-encoded, which --repair does not decode"


# --- the fixture upstream's scenarios: the same web copy against moved or twinned code -----------

def upstream_file(upstream, ref: str) -> bytes:
    return run(["show", f"{ref}:{SERVER}"], cwd=upstream.path).encode("utf-8", "surrogateescape") + b"\n"


def test_the_web_copy_repairs_where_upstream_moved_the_code(tmp_path, upstream):
    pre = upstream_file(upstream, upstream.scenarios["offset"].ref)
    fixed = repair(web_copy(clean_seed()), reader({SERVER: pre}), author=MIKE)

    assert applied(tmp_path, fixed.data, SERVER, pre).decode() == upstream.expected_patched("offset")
    moved = {h.index: h.notes[-1] for h in fixed.hunks if h.notes[-1].startswith("found at line")}
    assert sorted(moved) == [1, 2, 3, 4, 5, 6]
    assert moved[1] == f"found at line {fixed.hunks[0].upstream_line} (the header said 255)"


def test_the_web_copy_is_refused_where_upstream_twinned_a_hunks_code(upstream):
    pre = upstream_file(upstream, upstream.scenarios["ambiguous"].ref)
    with pytest.raises(RepairRefused, match=rf"^hunk 6 \({SERVER}\): its context matches upstream at "
                                            r"several places \(lines \d+, \d+\);"):
        repair(web_copy(clean_seed()), reader({SERVER: pre}), author=MIKE)


def test_the_web_copy_is_refused_where_upstream_changed_a_removed_line(upstream):
    pre = upstream_file(upstream, upstream.scenarios["conflict"].ref)
    with pytest.raises(RepairRefused, match=rf"^hunk 4 \({SERVER}\): its context and removed lines match nowhere"):
        repair(web_copy(clean_seed()), reader({SERVER: pre}), author=MIKE)


def moved_on(before: str) -> bytes:
    """BEFORE as upstream has it later: one line more, far from the hunk, so that the patch's
    `index` line names neither the file nor the file the patch makes of it."""
    return (before + "/* later */\n").encode()


def test_added_lines_that_split_in_several_ways_are_refused(tmp_path):
    """Prose has no line ends to go by: `+ one + two + three` as two lines is asked for."""
    before = "alpha\nbeta\ngamma\ndelta\n"
    after = "alpha\nbeta\none + two\nthree\ngamma\ndelta\n"
    web = web_copy(format_patch(tmp_path, "notes.txt", before, after))

    with pytest.raises(RepairRefused) as refused:
        repair(web, reader({"notes.txt": moved_on(before)}), author=MIKE)

    assert refused.value.message == ("hunk 1 (notes.txt): at line 1 its text splits into lines in several "
                                     "ways: '+one / +two +three' or '+one + two / +three'")


@pytest.mark.parametrize(("path", "added"), [
    ("src/count.c", "\tbool ok = n &&\n\t\tnext(n) + 1 > 0;\n"),  # a condition continued
    ("src/count.c", "\t*out = n + 1;\n\tok = n &&\n\t\tdone;\n"),  # `*p` is no comment
    ("src/count.c", "\t// next = n + 1;\n\tok = n &&\n\t\tdone;\n"),  # a comment may hold ` + `
    ("src/count.py", "\ttotal = f(n) + 1\n\tcount = g(n)\n"),  # no `;` to go by
])
def test_an_operator_read_as_a_marker_is_refused_not_chosen(tmp_path, path, added):
    """A ` + ` of code read as a marker makes code the patch never had (`total = f(n)` and `1 +
    count = g(n)`); where the stream also reads right, the hunk is refused, never guessed."""
    before = SMALL_BEFORE.replace("\tint total = 0; \n", "\tint total = 0;\n")
    after = before.replace("\tint total = 0;\n", f"\tint total = 0;\n{added}")
    web = web_copy(format_patch(tmp_path, path, before, after))

    with pytest.raises(RepairRefused, match=rf"^hunk 1 \({path}\): at line \d+ its text splits into lines "
                                            r"in several ways: '\+"):
        repair(web, reader({path: moved_on(before)}), author=MIKE)


@pytest.mark.parametrize(("path", "before", "after"), [
    ("notes.txt", "alpha\nbeta\ngamma\ndelta\n", "alpha\nbeta\none + two\nthree\ngamma\ndelta\n"),
    ("src/count.py", "def f(n):\n    x = 1\n    return x\n",
     "def f(n):\n    x = 1\n    total = f(n) + 1\n    count = g(n)\n    return x\n"),
    # a line moved across a blank line at the file's start: where the blank goes is not in the stream
    ("src/a.c", "A;\nB;\nold;\n\nY;\nZ;\nW;\n", "A;\nB;\n\nnew;\nY;\nZ;\nW;\n"),
    ("src/a.c", "X;\n\nY;\nZ;\nW;\nV;\n", "X;\nnew;\n\nY;\nZ;\nW;\nV;\n"),
])
def test_where_a_hunk_reads_several_ways_the_index_line_decides(tmp_path, path, before, after):
    """On the very file the patch was made against, the one reading that makes the file its
    `index` line names is the patch; on any other, the hunk is refused."""
    web = web_copy(format_patch(tmp_path, path, before, after))

    fixed = repair(web, reader({path: before.encode()}), author=MIKE)
    assert applied(tmp_path, fixed.data, path, before.encode()) == after.encode()
    assert fixed.hunks[0].notes[1].endswith("the one the index line's blob id names")

    with pytest.raises(RepairRefused, match="splits into lines in several ways"):
        repair(web, reader({path: moved_on(before)}), author=MIKE)


def test_blank_lines_go_where_git_would_have_put_them(tmp_path):
    """Mid-file, git's hunks have as much context before as after: `-old`, blank, `+new` is
    read so even where the index line cannot help; an edit in place stays in place."""
    before = "P;\nQ;\nR;\nS;\nA;\nB;\nC;\nf(a, x);\n\nY;\nZ;\nW;\nT;\nU;\n"
    for after in (before.replace("f(a, x);\n\nY;", "\nnew;\nY;"), before.replace("f(a, x);\n\nY;", "f(a, y);\n\nY;")):
        web = web_copy(format_patch(tmp_path / str(len(after)), "src/a.c", before, after))
        fixed = repair(web, reader({"src/a.c": moved_on(before)}), author=MIKE)
        assert applied(tmp_path, fixed.data, "src/a.c", moved_on(before)) == moved_on(after)
