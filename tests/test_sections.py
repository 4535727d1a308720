"""A hunk's section as each tool writes it (issue 17, class 2): GNU `diff -p` cuts the line at 40
characters, git at 80 bytes (never inside a UTF-8 character), and git's cpp driver names another
line than its default rule. None of them vetoes a hunk that fits where it was recorded; a section
that names no function around the place, or a cut that several functions begin with, never lets
a hunk move (the twins). Every patch here is written by the tool itself, in the test."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import git_identity

from patchkit.apply import Base, Verdict, apply_file
from patchkit.git import git_env
from patchkit.queue import read_patch

HEADER = "From: Fork Dev <dev@fork.invalid>\nDate: Mon, 2 Nov 2026 10:00:00 +0000\nSubject: [PATCH] t\n\n---\n"
LONG = "static int a_really_long_function_name_that_goes_on_and_on_{}(int x) {{"


def sh(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, env=git_env(git_identity()), check=check)


def function(name: str, body: list[str]) -> list[str]:
    return [name, *body, "}", ""]


def long_functions(n: int, body=lambda i: [f"    int v{i} = x * {i};", f"    prepare_{i}(v{i});", f"    set_{i}(v{i});",
                                             f"    step_{i}(v{i});", f"    check_{i}(v{i});", f"    log_{i}(v{i});",
                                             f"    return v{i} + {i};"]) -> list[str]:
    return [line for i in range(n) for line in function(LONG.format(i), body(i))]


def text(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


def gnu_patch(tmp: Path, path: str, before: str, after: str) -> Path:
    """`diff -p -u` of the two texts, as a mail-headed patch file."""
    for side, content in (("a", before), ("b", after)):
        (tmp / side / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp / side / path).write_text(content)
    out = sh(tmp, "diff", "-p", "-u", f"a/{path}", f"b/{path}", check=False).stdout.decode()
    patch = tmp / "gnu.patch"
    patch.write_text(HEADER + out)
    return patch


def git_patch(tmp: Path, path: str, before: str, after: str, attributes: str = "") -> Path:
    """`git format-patch` of the change, the repository's attributes in force."""
    repo = tmp / "repo"
    repo.mkdir()
    sh(repo, "git", "init", "--quiet")
    if attributes:
        (repo / ".gitattributes").write_text(attributes)
    (repo / path).write_text(before)
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "--quiet", "-m", "base")
    (repo / path).write_text(after)
    sh(repo, "git", "commit", "--quiet", "-am", "change")
    return Path(sh(repo, "git", "format-patch", "-1", "-o", str(tmp / "out")).stdout.decode().strip())


def patchkit(patch: Path, upstream: str) -> tuple[list, bytes | None]:
    (fc,) = read_patch(patch).files
    return apply_file(fc, upstream.encode(), lambda f: None, 0)


def sections(patch: Path) -> list[str]:
    (fc,) = read_patch(patch).files
    return [h.section for h in fc.hunks]


def git_apply(tmp: Path, patch: Path, path: str, upstream: str) -> bytes | None:
    work = tmp / "git-apply"
    (work / path).parent.mkdir(parents=True, exist_ok=True)
    (work / path).write_text(upstream)
    done = sh(work, "git", "apply", "--unidiff-zero", str(patch), check=False)
    return (work / path).read_bytes() if done.returncode == 0 else None


def patch_f0(tmp: Path, patch: Path, path: str, upstream: str) -> bytes | None:
    work = tmp / "patch-F0"
    (work / path).parent.mkdir(parents=True, exist_ok=True)
    (work / path).write_text(upstream)
    done = sh(work, "patch", "-p1", "-F0", "--no-backup-if-mismatch", "-i", str(patch), check=False)
    return (work / path).read_bytes() if done.returncode == 0 else None


def edit(lines: list[str], changes: dict[str, str]) -> list[str]:
    return [changes.get(line, line) for line in lines]


# -- the right place is taken ------------------------------------------------------------------

def test_a_diff_p_patch_with_cut_sections_applies_as_recorded(tmp_path):
    """The issue's minimal case: functions named past 40 characters, `diff -p -u` against that very
    file: every hunk clean, the bytes git apply and patch -F0 make."""
    before = long_functions(4)
    after = edit(before, {f"    step_{i}(v{i});": f"    step_{i}(v{i}, {i});" for i in range(4)})
    patch = gnu_patch(tmp_path, "src/long.c", text(before), text(after))
    assert sections(patch) == [LONG.format(i)[:40] for i in range(4)]  # cut, so git's rule differs
    verdicts, content = patchkit(patch, text(before))
    assert [v.verdict for v in verdicts] == [Verdict.CLEAN] * 4
    assert content == text(after).encode()
    assert content == git_apply(tmp_path, patch, "src/long.c", text(before))
    assert content == patch_f0(tmp_path, patch, "src/long.c", text(before))


def test_a_diff_p_cut_that_names_one_function_may_move(tmp_path):
    """A cut that begins one function's line only still names it: the hunk moves with it."""
    before = ["static int short_helper(void) {", "    return 0;", "}", "",
              *function(LONG.format(7), ["    int v = x;", "    step(v);", "    check(v);", "    return v;"])]
    after = edit(before, {"    step(v);": "    step(v, 7);"})
    patch = gnu_patch(tmp_path, "long.c", text(before), text(after))
    upstream = ["// a comment upstream added", "// and another", *before]
    verdicts, content = patchkit(patch, text(upstream))
    assert [(v.verdict, v.offset) for v in verdicts] == [(Verdict.OFFSET, 2)]
    assert content == text(["// a comment upstream added", "// and another", *after]).encode()
    assert content == patch_f0(tmp_path, patch, "long.c", text(upstream))


CLASS = ["#include <vector>", "", "struct slot_pool {", "public:",
         "    void reset() {", "        count = 0;", "        grow(0);", "        shrink(0);", "        done();", "    }",
         "", "    void fill(int n) {", "        count = n;", "        grow(n);", "        mark(n);", "        done();", "    }",
         "private:", "    int count = 0;", "};", ""]


def test_git_cpp_driver_sections_apply(tmp_path):
    """With `diff=cpp`, git names a method's hunk by its class, skipping `public:` (its default rule
    would name `public:`): clean where recorded, and it moves with its class."""
    after = edit(CLASS, {"        mark(n);": "        mark(n, true);"})
    patch = git_patch(tmp_path, "pool.cpp", text(CLASS), text(after), "*.cpp diff=cpp\n")
    assert sections(patch) == ["struct slot_pool {"]
    verdicts, content = patchkit(patch, text(CLASS))
    assert [v.verdict for v in verdicts] == [Verdict.CLEAN] and content == text(after).encode()
    moved = ["#include <map>", *CLASS]
    verdicts, content = patchkit(patch, text(moved))
    assert [(v.verdict, v.offset) for v in verdicts] == [(Verdict.OFFSET, 1)]
    assert content == text(["#include <map>", *after]).encode()
    assert content == git_apply(tmp_path, patch, "pool.cpp", text(moved))


PYTHON = ["import os", "", "", "class Pool:", "    size = 0", "",
          "    def reset(self):", "        self.size = 0", "        self.grow(0)", "        self.shrink(0)",
          "        self.done()", "",
          "    def fill(self, n):", "        self.size = n", "        self.grow(n)", "        self.shrink(0)",
          "        self.done()", ""]


def test_git_python_driver_sections_apply_and_twins_stay_refused(tmp_path):
    """With `diff=python`, git names an indented method (its default rule names the class)."""
    after = edit(PYTHON[:12], {}) + edit(PYTHON[12:], {"        self.done()": "        self.done(n)"})
    patch = git_patch(tmp_path, "pool.py", text(PYTHON), text(after), "*.py diff=python\n")
    assert sections(patch) == ["def fill(self, n):"]
    verdicts, content = patchkit(patch, text(PYTHON))
    assert [v.verdict for v in verdicts] == [Verdict.CLEAN] and content == text(after).encode()
    moved = ["import sys", *PYTHON]
    verdicts, content = patchkit(patch, text(moved))
    assert [(v.verdict, v.offset) for v in verdicts] == [(Verdict.OFFSET, 1)]
    assert content == text(["import sys", *after]).encode()
    # fill() renamed upstream, and no base shows it: the section names no function in the file
    gone = [line.replace("def fill(self, n):", "def refill(self, n):") for line in PYTHON]
    verdicts, content = patchkit(patch, text(gone))
    assert [v.verdict for v in verdicts] == [Verdict.CONFLICT] and content is None
    assert "in `class Pool:`; the patch names `def fill(self, n):`" in verdicts[0].detail


OBJC_BODY = ["    _size = 0;", "    [self grow:0];", "    [self shrink:0];", "    [self done];", "    [self log];",
             "    [self flush];", "    [self sync];"]
OBJC = ["#import <Foundation/Foundation.h>", "", "@implementation Pool", "",
        "- (void)reset {", *OBJC_BODY, "}", "", "- (void)fill:(int)n {", *OBJC_BODY, "}", "", "@end", ""]


def test_a_section_no_known_rule_gives_fits_where_it_opens_the_block(tmp_path):
    """git's objc driver names an Objective-C method; none of the rules patchkit knows does. At its
    recorded line the hunk applies when the section's line opens the block around it; the twin
    method's lines sliding there (the method gone, or still below) are refused."""
    after = OBJC[:14] + edit(OBJC[14:], {"    [self done];": "    [self done:n];"})
    patch = git_patch(tmp_path, "pool.m", text(OBJC), text(after), "*.m diff=objc\n")
    assert sections(patch) == ["- (void)fill:(int)n {"]
    verdicts, content = patchkit(patch, text(OBJC))
    assert [v.verdict for v in verdicts] == [Verdict.CLEAN] and content == text(after).encode()
    filler = [f"// upstream's line {i}" for i in range(10)]
    gone = filler + OBJC[:14] + OBJC[23:]
    assert gone[15:22] == OBJC[15:22]  # reset()'s body where fill()'s was recorded
    verdicts, content = patchkit(patch, text(gone))
    assert [v.verdict for v in verdicts] == [Verdict.CONFLICT] and content is None
    below = filler + OBJC[:14] + ["- (void)fill:(int)n {", "    _size = n;", "    [self grow:n];", "}", ""] + OBJC[24:]
    verdicts, content = patchkit(patch, text(below))
    assert [v.verdict for v in verdicts] == [Verdict.CONFLICT] and content is None


def test_a_section_git_cut_inside_a_utf8_character_applies(tmp_path):
    """git leaves out the character its 80-byte cut would split."""
    name = "void " + "x" * 74 + "ééé() {"
    before = [name, "    zero();", "    one();", "    two();", "    three();", "    four();", "}"]
    after = edit(before, {"    three();": "    three(3);"})
    patch = git_patch(tmp_path, "u.c", text(before), text(after))
    assert sections(patch) == ["void " + "x" * 74]
    verdicts, content = patchkit(patch, text(before))
    assert [v.verdict for v in verdicts] == [Verdict.CLEAN] and content == text(after).encode()


# -- the twins stay refused ---------------------------------------------------------------------

BLOCK = ["    int a = 1;", "    int b = 2;", "    use(a);", "    done();"]
CHANGED = ["    int a = 1;", "    int b = 2;", "    use(a, b);", "    done();"]
BODY = ["    setup();", *BLOCK, "    finish();", "    finish2();", "    finish3();"]
PRE = ("    setup();", *BLOCK, "    finish();", "    finish2();")  # the pre-image of use(a)'s hunk
ORIGINAL = ["void first() {", *BODY, "}", "", "void second() {", *BODY, "}", ""]


def second_patch(tmp: Path) -> Path:
    """A patch of second()'s twin block (first() has the same lines)."""
    after = edit(ORIGINAL[:10], {}) + edit(ORIGINAL[10:], {"    use(a);": "    use(a, b);"})
    patch = git_patch(tmp, "t.c", text(ORIGINAL), text(after))
    assert sections(patch) == ["void second() {"]
    return patch


def test_the_deleted_function_twin_is_refused_also_when_it_slides_into_the_recorded_lines(tmp_path):
    patch = second_patch(tmp_path)
    # second() is gone; first()'s twin block now sits exactly where second()'s was recorded
    slid = [f"// upstream's new line {i}" for i in range(11)] + ["void first() {", *BODY, "}", ""]
    assert tuple(slid[12:19]) == tuple(ORIGINAL[12:19]) == PRE
    verdicts, content = patchkit(patch, text(slid))
    assert [v.verdict for v in verdicts] == [Verdict.CONFLICT] and content is None
    assert verdicts[0].detail == ("the pre-image is only found at line 13, in `void first() {`; "
                                  "the patch names `void second() {`")
    assert git_apply(tmp_path, patch, "t.c", text(slid)) is not None  # git takes the twin: wrong
    # A base shows second() deleted, not renamed: still refused.
    (fc,) = read_patch(patch).files
    after = edit(ORIGINAL[:10], {}) + edit(ORIGINAL[10:], {"    use(a);": "    use(a, b);"})
    base = Base("the patch's index blob", text(ORIGINAL).encode(), text(after).encode())
    verdicts, content = apply_file(fc, text(slid).encode(), lambda f: base, 0)
    assert [v.verdict for v in verdicts] == [Verdict.CONFLICT] and content is None


def test_a_twin_sliding_into_the_recorded_lines_of_a_function_still_there_is_refused(tmp_path):
    patch = second_patch(tmp_path)
    changed_site = edit(BODY, {"    int a = 1;": "    int a = 10;"})
    slid = [f"// upstream's new line {i}" for i in range(11)] + ["void first() {", *BODY, "}", "",
                                                                  "void second() {", *changed_site, "}", ""]
    assert tuple(slid[12:19]) == PRE
    verdicts, content = patchkit(patch, text(slid))
    assert [v.verdict for v in verdicts] == [Verdict.CONFLICT] and content is None
    assert "in `void first() {`; the patch names `void second() {`" in verdicts[0].detail


def test_a_cut_section_that_begins_both_functions_never_moves_the_hunk(tmp_path):
    """Both functions begin with the 40 characters diff -p wrote: the only match left is a twin in
    the other one, and the section cannot tell; patch -F0 takes it."""
    twin = ["    int v = x;", "    prepare(v);", "    set(v);", "    step(v);", "    check(v);", "    log(v);",
            "    return v;"]
    before = long_functions(2, body=lambda i: twin)
    after = before[:10] + edit(before[10:], {"    step(v);": "    step(v, 1);"})
    patch = gnu_patch(tmp_path, "long.c", text(before), text(after))
    assert sections(patch) == [LONG.format(1)[:40]]
    upstream = before[:10] + edit(before[10:], {"    prepare(v);": "    prepare(v + 1);"})
    verdicts, content = patchkit(patch, text(upstream))
    assert [v.verdict for v in verdicts] == [Verdict.CONFLICT] and content is None
    assert verdicts[0].detail == (
        f"the pre-image is only found at line 2, in `{LONG.format(0)}`; the patch names "
        f"`{LONG.format(1)[:40]}`, cut short: 2 functions' lines begin so, and it does not say which")
    assert patch_f0(tmp_path, patch, "long.c", text(upstream)) == text(
        edit(upstream[:10], {"    step(v);": "    step(v, 1);"}) + upstream[10:]).encode()  # the twin: wrong
    # As recorded, but with its twin still there, the cut cannot tell them apart either.
    verdicts, content = patchkit(patch, text(before))
    assert [v.verdict for v in verdicts] == [Verdict.AMBIGUOUS] and content is None
    assert verdicts[0].detail == ("the pre-image occurs at lines 2, 12; refusing to guess; one is at the recorded "
                                  "line 12: if the patch was made from this very commit, rerun with `--base` naming it")


def test_a_function_renamed_upstream_takes_the_hunk_only_when_a_base_shows_the_rename(tmp_path):
    patch = second_patch(tmp_path)
    after = edit(ORIGINAL[:10], {}) + edit(ORIGINAL[10:], {"    use(a);": "    use(a, b);"})
    renamed = edit(ORIGINAL, {"void second() {": "void second_renamed() {"})
    (fc,) = read_patch(patch).files
    base = Base("the patch's index blob", text(ORIGINAL).encode(), text(after).encode())
    verdicts, content = apply_file(fc, text(renamed).encode(), lambda f: base, 0)
    assert [v.verdict for v in verdicts] == [Verdict.MERGED]
    assert content == text(edit(after, {"void second() {": "void second_renamed() {"})).encode()
    # Without a base, nothing shows the rename: the section names no function in the file.
    verdicts, content = patchkit(patch, text(renamed))
    assert [v.verdict for v in verdicts] == [Verdict.CONFLICT] and content is None
    assert verdicts[0].detail == ("the pre-image is found only in other functions: at line 2, in `void first() {`, "
                                  "and at line 13, in `void second_renamed() {`; the patch names `void second() {`")


def test_a_function_split_into_twins_is_no_rename_even_with_a_base(tmp_path):
    # Found by benchmarks/reach_bench.py: upstream made two copies of the patched function under new
    # names; the merge aligned the old name's line with one of them and took it for a rename.
    patch = second_patch(tmp_path)
    after = edit(ORIGINAL[:10], {}) + edit(ORIGINAL[10:], {"    use(a);": "    use(a, b);"})
    base = Base("the patch's index blob", text(ORIGINAL).encode(), text(after).encode())
    split = ORIGINAL[:10] + ["void second_f16() {", *BODY, "}", "", "void second_bf16() {", *BODY, "}", ""]
    (fc,) = read_patch(patch).files
    verdicts, content = apply_file(fc, text(split).encode(), lambda f: base, 0)
    assert [v.verdict for v in verdicts] != [Verdict.MERGED] and not verdicts[0].verdict.good
    assert content is None


# -- messages ---------------------------------------------------------------------------------

def test_a_refusal_names_every_place_in_one_sentence(tmp_path):
    patch = second_patch(tmp_path)
    upstream = ["void first() {", *BODY, "}", "", "void third() {", *BODY, "}", ""]
    verdicts, _ = patchkit(patch, text(upstream))
    assert verdicts[0].verdict is Verdict.CONFLICT
    assert verdicts[0].detail == ("the pre-image is found only in other functions: at line 2, in "
                                  "`void first() {`, and at line 13, in `void third() {`; "
                                  "the patch names `void second() {`")



def test_a_cut_that_began_two_functions_in_the_base_takes_no_twin_that_slid_into_the_recorded_lines(tmp_path):
    """Found in review: `diff -p`'s 40-character cut begins `..._impl` and `..._fast`; upstream
    deleted `_impl`, the patch's, and `_fast` (same body) slid into the recorded lines. Upstream's
    file alone has one function for the cut; the base still shows two, so the cut says nothing."""
    impl = "static void ggml_compute_forward_add_f32_impl(struct ggml_tensor * dst, const float * src) {"
    fast = "static void ggml_compute_forward_add_f32_fast(struct ggml_tensor * dst, const float * src) {"
    body = ["    const int n = dst->ne[0];", "    float sum = 0.0f;", "    for (int i = 0; i < n; i++) {",
            "        sum += src[i];", "    }", "    dst->data[0] = sum;", "    finish(dst);", "}", ""]
    head = ['#include "ops.h"', "", "static int helper(int x) {", "    return x + 1;", "}", ""]
    before = head + [impl, *body, fast, *body]
    after = head + [impl, *edit(body, {"        sum += src[i];": "        sum += 2 * src[i];"}), fast, *body]
    patch = gnu_patch(tmp_path, "ops.c", text(before), text(after))
    upstream = head + [fast, *body]
    (fc,) = read_patch(patch).files
    base = Base("the patch's index blob", text(before).encode(), text(after).encode())
    verdicts, content = apply_file(fc, text(upstream).encode(), lambda f: base, 0)
    assert not verdicts[0].verdict.good and content is None
