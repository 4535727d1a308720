"""The ladder's line matching: unique places only, the function name narrows, fuzz is explicit."""

from __future__ import annotations

import pytest

from patchkit.apply import Base, Verdict, _FileLadder, _lines, apply_file
from patchkit.ladder import Place
from patchkit.queue import FileChange, Hunk
from patchkit.scopes import funcname_at


def hunk(old: list[str], new: list[str], start: int, section: str = "", index: int = 1) -> Hunk:
    old_t = tuple(f"{line}\n" for line in old)
    new_t = tuple(f"{line}\n" for line in new)
    shorter = min(len(old_t), len(new_t))
    lead = next((i for i, (a, b) in enumerate(zip(old_t, new_t)) if a != b), shorter)
    trail = next((i for i, (a, b) in enumerate(zip(reversed(old_t), reversed(new_t))) if a != b), shorter)
    return Hunk(index, start, start, section, old_t, new_t, lead, trail)


def text(lines: list[str]) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode()


def run(h: Hunk, lines: list[str], bases=lambda fc: None, fuzz: int = 0, path: str = "f.c"):
    fc = FileChange(path, path, None, None, (h,))
    verdicts, content = apply_file(fc, text(lines), bases, fuzz)
    return verdicts[0], content


BLOCK = ["    int a = 1;", "    int b = 2;", "    use(a);", "    done();"]
CHANGED = ["    int a = 1;", "    int b = 2;", "    use(a, b);", "    done();"]


def filler(n: int, tag: str) -> list[str]:
    return [f"// {tag} {i}" for i in range(n)]


def test_clean_at_the_recorded_line():
    lines = ["void f() {", *BLOCK, "}"]
    verdict, content = run(hunk(BLOCK, CHANGED, 2), lines)
    assert verdict.verdict is Verdict.CLEAN and verdict.actual_line == 2
    assert content == text(["void f() {", *CHANGED, "}"])


def test_offset_when_the_pre_image_is_unique_elsewhere():
    lines = filler(7, "new") + ["void f() {", *BLOCK, "}"]
    verdict, content = run(hunk(BLOCK, CHANGED, 2), lines)
    assert (verdict.verdict, verdict.actual_line, verdict.offset) == (Verdict.OFFSET, 9, 7)
    assert content == text(filler(7, "new") + ["void f() {", *CHANGED, "}"])


def test_two_candidates_are_ambiguous_and_nothing_is_written():
    lines = ["void f() {", *BLOCK, "}", "void g() {", *BLOCK, "}"] + filler(3, "x")
    verdict, content = run(hunk(BLOCK, CHANGED, 40), lines)
    assert verdict.verdict is Verdict.AMBIGUOUS and content is None
    assert "lines 2, 8" in verdict.detail


def test_the_function_name_narrows_candidates_to_one():
    lines = ["void f() {", *BLOCK, "}", "void g() {", *BLOCK, "}"]
    verdict, content = run(hunk(BLOCK, CHANGED, 40, section="void g() {"), lines)
    assert verdict.verdict is Verdict.OFFSET and verdict.actual_line == 8
    assert content == text(["void f() {", *BLOCK, "}", "void g() {", *CHANGED, "}"])


def test_candidates_in_other_functions_are_no_candidates():
    lines = ["void f() {", *BLOCK, "}", "void g() {", *BLOCK, "}"]
    verdict, content = run(hunk(BLOCK, CHANGED, 40, section="void h() {"), lines)
    assert verdict.verdict is Verdict.CONFLICT and content is None
    # one sentence, every place named (each is no longer called "the only" one)
    assert verdict.detail == ("the pre-image is found only in other functions: at line 2, in `void f() {`, "
                              "and at line 8, in `void g() {`; the patch names `void h() {`")


def test_post_image_present_is_already_applied():
    verdict, content = run(hunk(BLOCK, CHANGED, 2), ["void f() {", *CHANGED, "}"])
    assert verdict.verdict is Verdict.ALREADY_APPLIED and content == text(["void f() {", *CHANGED, "}"])


def test_pre_and_post_image_both_present_is_ambiguous():
    lines = ["void f() {", *CHANGED, "}"] + filler(3, "x") + ["void g() {", *BLOCK, "}"]
    verdict, _ = run(hunk(BLOCK, CHANGED, 40), lines)
    assert verdict.verdict is Verdict.AMBIGUOUS


def test_conflict_names_the_nearest_upstream_lines():
    upstream = ["void f() {", "    int a = 1;", "    int b = 3;", "    use(a);", "    done();", "}"]
    verdict, content = run(hunk(BLOCK, CHANGED, 2), upstream)
    assert verdict.verdict is Verdict.CONFLICT and content is None
    assert verdict.nearest_line == 2 and verdict.nearest[1] == "    int b = 3;\n"


def test_fuzz_only_when_asked_and_marked():
    upstream = ["void f() {", "    int a = 0;", "    int b = 2;", "    use(a);", "    done();", "}"]
    assert run(hunk(BLOCK, CHANGED, 2), upstream)[0].verdict is Verdict.CONFLICT
    verdict, content = run(hunk(BLOCK, CHANGED, 2), upstream, fuzz=1)
    assert verdict.verdict is Verdict.FUZZED and verdict.fuzz == 1
    assert content == text(["void f() {", "    int a = 0;", "    int b = 2;", "    use(a, b);", "    done();", "}"])


@pytest.mark.parametrize("use_line, verdict", [
    ("    use(a);", Verdict.MERGED),  # upstream changed a context line: the merge adds the change
    ("    use(a, b);", Verdict.ALREADY_APPLIED),  # upstream also has the change: the merge adds nothing
])
def test_three_way_merge_from_a_base(use_line, verdict):
    base, patched = ["void f() {", *BLOCK, "}"], ["void f() {", *CHANGED, "}"]
    upstream = ["void f() {", "    int a = 10;", "    int b = 2;", use_line, "    done();", "}"]
    result, content = run(hunk(BLOCK, CHANGED, 2), upstream, bases=lambda fc: Base("base", text(base), text(patched)))
    assert result.verdict is verdict
    assert content == text(["void f() {", "    int a = 10;", "    int b = 2;", "    use(a, b);", "    done();", "}"])


def test_funcname_follows_gits_default_rule():
    lines = ["struct s {", "    int x;", "private:", "    void f();", "    int y;"]
    assert funcname_at(lines, 4) == "private:"
    assert funcname_at(lines, 1) == "struct s {"


def test_a_hunk_without_context_is_never_placed_by_line_number():
    """`git diff -U0` insertions carry no old line: the recorded number alone proves nothing."""
    bare = Hunk(1, 3, 4, "", (), ("    added();\n",), 0, 0)
    verdict, content = run(bare, filler(2, "new") + ["void f() {", *BLOCK, "}"])
    assert verdict.verdict is Verdict.AMBIGUOUS and content is None
    assert "no context lines" in verdict.detail


# -- a hunk never moves to another function ---------------------------------------------------

@pytest.mark.parametrize("upstream, where", [
    # the real site changed one context line; the twin kept the pre-image
    (["void first() {", *BLOCK, "}", "", "void second() {", "    int a = 10;", *BLOCK[1:], "}"], 2),
    # the real site's function is gone; the twin remains
    (["void first() {", *BLOCK, "}"], 2),
    # the real site only gained trailing whitespace on a context line
    (["void first() {", *BLOCK, "}", "", "void second() {", "    int a = 1;  ", *BLOCK[1:], "}"], 2),
])
def test_the_only_match_in_another_function_is_refused(upstream, where):
    verdict, content = run(hunk(BLOCK, CHANGED, 9, section="void second() {"), upstream)
    assert verdict.verdict is Verdict.CONFLICT and content is None
    assert verdict.detail == (f"the pre-image is only found at line {where}, in `void first() {{`; "
                              "the patch names `void second() {`")


def test_a_cpp_twin_in_another_method_of_the_same_class_is_refused_and_the_merge_places_it():
    """git names both methods `private:`; the parse of the pre-image tells them apart."""
    def cls(first: list[str], second: list[str]) -> list[str]:
        return ["struct S {", "private:", "    void first() {", *first, "    }",
                "    void second() {", *second, "    }", "};"]

    pre, post = cls(BLOCK, BLOCK), cls(BLOCK, CHANGED)
    moved_site = ["    int a = 10;", *BLOCK[1:]]
    h = hunk(BLOCK, CHANGED, 10, section="private:")
    fc = FileChange("s.cpp", "s.cpp", None, None, (h,))
    verdicts, content = apply_file(fc, text(cls(BLOCK, moved_site)), lambda f: Base("b", text(pre), text(post)), 0)
    assert verdicts[0].verdict is Verdict.MERGED
    assert content == text(cls(BLOCK, ["    int a = 10;", *CHANGED[1:]]))
    # Without the merge's help (a base whose post-image cannot merge) it is a conflict, never the twin.
    clash = cls(BLOCK, ["    int a = 10;", "    int b = 2;", "    use(a, c);", "    done();"])
    verdicts, content = apply_file(fc, text(clash), lambda f: Base("b", text(pre), text(post)), 0)
    assert verdicts[0].verdict is Verdict.CONFLICT and content is None
    # named by the hunk's section, the parse beside it (the section does not name the method)
    assert "the pre-image is only found at line 4, in `S::first` (by a C++ parse); the patch's own place " \
           "is under `private:` (in `S::second` by a C++ parse of its base)" in verdicts[0].detail


PRE_FG = ["void f() {", *BLOCK, "}", "void g() {", *BLOCK, "}"]
POST_FG = ["void f() {", *BLOCK, "}", "void g() {", *CHANGED, "}"]
UPSTREAM_FG = ["void f() {", *BLOCK, "}", "void g() {", "    int a = 10;", *BLOCK[1:], "}"]


def test_line_steps_and_merge_must_agree():
    """A section-less hunk, in a file without the C++ parse, finds the twin by lines; the merge puts
    it at the real site: refused."""
    h = hunk(BLOCK, CHANGED, 8)
    verdict, content = run(h, UPSTREAM_FG, bases=lambda fc: Base("the base", text(PRE_FG), text(POST_FG)),
                           path="f.txt")
    assert verdict.verdict is Verdict.CONFLICT and content is None
    assert verdict.detail == ("the line steps put it at line 2, the 3-way merge from the base elsewhere: "
                              "they disagree, so neither is trusted")
    verdict, content = run(h, UPSTREAM_FG, path="f.txt")  # no base, no second opinion: today's rules
    assert verdict.verdict is Verdict.OFFSET


def test_a_section_less_hunk_in_c_is_judged_by_the_parse_of_its_base():
    """The same in C: the parse of the base says the hunk is g's, so the twin in f is no candidate,
    and the merge places it in g."""
    h = hunk(BLOCK, CHANGED, 8)
    verdict, content = run(h, UPSTREAM_FG, bases=lambda fc: Base("the base", text(PRE_FG), text(POST_FG)))
    assert verdict.verdict is Verdict.MERGED
    assert content == text(["void f() {", *BLOCK, "}", "void g() {", "    int a = 10;", *CHANGED[1:], "}"])


def test_already_applied_at_the_recorded_line_wins_over_a_twin():
    upstream = ["void first() {", *BLOCK, "}", "", "void second() {", *CHANGED, "}"]
    for section in ("", "void second() {"):
        verdict, content = run(hunk(BLOCK, CHANGED, 9, section=section), upstream)
        assert verdict.verdict is Verdict.ALREADY_APPLIED and verdict.actual_line == 9
        assert content == text(upstream)


def test_deleting_the_blank_last_line_is_one_place_not_ambiguous():
    tail = ["    done();", "}", "// end", ""]
    h = hunk(tail, tail[:-1], 20)  # no trailing context: its post-image is a prefix of its pre-image
    upstream = filler(30, "x") + ["void f() {", *BLOCK[:-1], *tail]
    verdict, content = run(h, upstream)
    assert (verdict.verdict, verdict.actual_line) == (Verdict.OFFSET, 35)
    assert content == text(upstream[:-1])
    twice = ["void f() {", *tail[:-1], "void g() {", *tail]
    verdict, _ = run(hunk(tail, tail[:-1], 40), twice)
    assert verdict.verdict is Verdict.AMBIGUOUS  # pre-image at 6, post-image at 2: two places
    assert verdict.detail == "the pre-image occurs at line 6 and the post-image at line 2; refusing to guess"


def test_an_ambiguous_message_names_every_place():
    lines = ["void f() {", *BLOCK, "}", "void g() {", *BLOCK, "}"]
    verdict, _ = run(hunk(BLOCK, CHANGED, 40), lines)
    assert verdict.detail == "the pre-image occurs at lines 2, 8; refusing to guess"


def test_fuzz_never_moves_to_another_function():
    upstream = ["void first() {", "    int a = 0;", *BLOCK[1:], "}", "void second() {", "    gone();", "}"]
    verdict, content = run(hunk(BLOCK, CHANGED, 8, section="void second() {"), upstream, fuzz=1)
    assert verdict.verdict is Verdict.CONFLICT and content is None
    assert "the fuzzed pre-image is only found at line 2, in `void first() {`" in verdict.detail


def test_nearest_lines_mark_what_differs():
    upstream = ["void f() {", "    int a = 1;", "    int b = 3;", "    use(a);", "    done();", "}"]
    verdict, _ = run(hunk(BLOCK, CHANGED, 2), upstream)
    assert verdict.nearest_differs == (1,)


def test_fuzz_never_carries_a_hunk_across_a_function_boundary():
    h = hunk(["  x();", "  a();", "  y();"], ["  x();", "  A();", "  y();"], 3, section="void f() {")
    upstream = ["void top() {", "}", "void f() {", "  gone();", "}", "void g() {", "  a();", "  y2();", "}"]
    verdict, content = run(h, upstream, fuzz=1)
    assert verdict.verdict is Verdict.CONFLICT and content is None
    assert "a function that begins in the ignored context" in verdict.detail


def test_a_twin_at_the_recorded_line_in_another_section_is_not_clean():
    upstream = ["void g() {", *BLOCK, "}", "void f() {", *BLOCK, "}"]
    verdict, content = run(hunk(BLOCK, CHANGED, 2, section="void f() {"), upstream)
    assert (verdict.verdict, verdict.actual_line) == (Verdict.OFFSET, 8)
    assert content == text(["void g() {", *BLOCK, "}", "void f() {", *CHANGED, "}"])


def test_lines_are_split_at_newlines_only():
    """A form feed inside a line is no line break for a patch (str.splitlines thinks it is)."""
    fc = FileChange("f.c", "f.c", None, None, (hunk(["x1", "x2", "x3"], ["x1", "X2", "x3"], 3),))
    (verdict,), content = apply_file(fc, b"a\x0cb\nq\nx1\nx2\nx3\n", lambda f: None, 0)
    assert verdict.verdict is Verdict.CLEAN and content == b"a\x0cb\nq\nx1\nX2\nx3\n"


def test_gits_section_is_cut_at_80_bytes_not_characters():
    line = "static void " + "\u00e9" * 50 + "() {"
    assert funcname_at([line, "x"], 1).encode("utf-8", errors="surrogateescape") == line.encode()[:80]


def test_a_hunks_own_merge_vouches_for_its_place_only_with_one_place_in_its_base():
    """`_merged_alone` (the witness that keeps a moved hunk where the whole file's merge
    conflicts): with the pre-image twice in the base, the merge may take either twin."""
    twin = ["{", *BLOCK, "}"]
    pre = ["void f()", *twin, "void g()", *twin]
    h = hunk(BLOCK, CHANGED, 3)
    post = ["void f()", "{", *CHANGED, "}", "void g()", *twin]
    base = Base("the base", text(pre), text(post))
    upstream = ["#include <a.h>", "#include <b.h>", *pre]  # two lines added above: both places moved
    fc = FileChange("f.c", "f.c", None, None, (h,))
    file_ladder = _FileLadder(fc, text(upstream), lambda f: base, 0)
    file_ladder.places[h.index] = Place(4, len(BLOCK), h.new_lines)
    assert _lines(text(upstream))[4] == BLOCK[0] + "\n"
    assert not file_ladder._merged_alone(h, base)
    once = ["void f()", *twin, "void g()", "{", "    other();", "}"]
    file_ladder = _FileLadder(fc, text(["#include <a.h>", "#include <b.h>", *once]),
                              lambda f: Base("the base", text(once), text(post[:7] + once[7:])), 0)
    file_ladder.places[h.index] = Place(4, len(BLOCK), h.new_lines)
    assert file_ladder._merged_alone(h, file_ladder.base())


def test_twins_the_evidence_disagrees_on_are_refused_naming_it():
    """The merge and the base's twin order point at the first twin; upstream deleted the 40 lines
    above it, so the recorded line now points at the second (where git am -3's `git apply` step
    puts it, wrongly). The evidence disagrees: refused, the detail naming which points where
    (the next test is the same disagreement where the merge is the wrong one)."""
    twin = ["    for (int i = 0; i < n; i++) {", "        x[i] = y[i];", "        y[i] = 0;", "    }"]
    x = [f"    step_x{i}();" for i in range(40)]
    pre = ["void f(void) {", *x, *twin, *[f"    step_y{i}();" for i in range(35)], *twin, "}"]
    patched = [*pre[:42], "        x[i] = y[i] + 1;", *pre[43:]]
    h = hunk(pre[41:45], patched[41:45], 42, "void f(void) {")
    upstream = [pre[0], *pre[41:]]  # the 40 lines above the first twin gone
    base = Base("the base", text(pre), text(patched))
    verdict, content = run(h, upstream, lambda fc: base)
    assert verdict.verdict is Verdict.AMBIGUOUS and content is None
    assert verdict.detail.endswith("; the evidence disagrees: the 3-way merge from the base at line 2; "
                                   "the base's twin order at line 2; the recorded line at line 41"), verdict.detail


def test_twins_the_merge_aligns_in_order_while_upstream_replaced_one_are_refused():
    """Two identical blocks in one function, the patch changing the second; upstream drops the
    first and adds a third below the second, and 22 lines above the function. The merge aligns
    the identical blocks in order and changes the third; the base's order (two twins, the second)
    agrees with it; the recorded line points at the patch's own block (git am -3 is right here).
    They disagree: refused, never the third."""
    body = [f"    step_{i}(ctx, {i});" for i in range(22)]

    def block(tag: str, change: bool = False) -> list[str]:
        return [f"    // {tag}", *body[:11], "    step_11(ctx, 1100);" if change else body[11], *body[12:]]

    def fn(*blocks: list[str]) -> list[str]:
        return ["void s(struct ctx *ctx)", "{", *(line for b in blocks for line in b), "}"]

    pre, patched = fn(block("first"), block("second")), fn(block("first"), block("second", True))
    upstream = [f"int g_{i};" for i in range(22)] + fn(block("second"), block("third"))
    h = hunk(pre[34:41], patched[34:41], 35, "void s(struct ctx *ctx)")
    verdict, content = run(h, upstream, lambda fc: Base("the base", text(pre), text(patched)))
    assert verdict.verdict is Verdict.AMBIGUOUS and content is None, verdict
    assert "the evidence disagrees" in verdict.detail and "the recorded line at line 34" in verdict.detail, verdict.detail


def test_twins_the_other_hunks_offset_disputes_are_refused_naming_the_evidence():
    """As above, with another hunk of the patch above the lines upstream deleted, found unmoved:
    the offset of the patch's other hunks (+0) points at the second twin, the merge and the base's
    order at the first. The evidence disagrees: refused, the detail naming which points where."""
    twin = ["    for (int i = 0; i < n; i++) {", "        x[i] = y[i];", "        y[i] = 0;", "    }"]
    head = [f"    head{i}();" for i in range(8)]
    x = [f"    step_x{i}();" for i in range(40)]
    pre = ["void f(void) {", *head, *x, *twin, *[f"    step_y{i}();" for i in range(35)], *twin, "}"]
    patched = [*pre[:4], "    head3(1);", *pre[5:50], "        x[i] = y[i] + 1;", *pre[51:]]
    top = hunk(pre[1:8], patched[1:8], 2, "void f(void) {", index=0)
    first = hunk(pre[49:53], patched[49:53], 50, "void f(void) {")
    upstream = [*pre[:9], *pre[49:]]  # the 40 lines above the first twin gone
    base = Base("the base", text(pre), text(patched))
    fc = FileChange("f.c", "f.c", None, None, (top, first))
    verdicts, content = _FileLadder(fc, text(upstream), lambda f: base, 0).run()
    assert verdicts[0].verdict is Verdict.CLEAN and content is None, verdicts
    assert verdicts[1].verdict is Verdict.AMBIGUOUS, verdicts[1]
    assert "the evidence disagrees: the 3-way merge from the base at line 10; the base's twin order at line 10; " \
        "the recorded line at line 49; the offset of the patch's other hunks (+0) at line 49" in verdicts[1].detail, \
        verdicts[1].detail


def test_twins_under_a_cut_section_at_the_recorded_line_name_the_option_that_says_it_is_the_own_base():
    """`diff -p`'s 40-character section begins both functions' lines, which hold the same block:
    without index lines the recorded line is one twin among others; the refusal says how to say
    the file is the patch's own base."""
    block = ["    const int ith = params->ith;", "    const int nth = params->nth;", "    run(ith, nth);"]
    lines = ["static void ggml_compute_forward_swiglu_f32(int x) {", *block, "}",
             "static void ggml_compute_forward_swiglu_f16(int x) {", *block, "}"]
    h = hunk(block, [block[0] + " // downstream", *block[1:]], 7, "static void ggml_compute_forward_swiglu_")
    verdict, content = run(h, lines, lambda fc: None)
    assert verdict.verdict is Verdict.AMBIGUOUS and content is None
    assert verdict.detail.endswith("; one is at the recorded line 7: if the patch was made from this very commit, "
                                   "rerun with `--base` naming it"), verdict.detail


def test_a_section_no_version_had_places_no_twin_that_slid_into_the_lines_of_one_the_base_had():
    """A hand-written section (in no version of the file) over a hunk in f(); upstream deleted f()
    and its twin g() slid into its lines. The section says nothing, but the base had the pre-image
    twice, upstream once: its merge decides (it conflicts), never a clean place in g()."""
    body = [f"    x{i} = load({i})" for i in range(6)] + ["    return x0"]
    fn = lambda name: [f"def {name}():", *body, "", ""]
    pre = ["import os", "", "", *fn("f"), *fn("g"), "def h():", "    return 7"]
    patched = [line.replace("x3 = load(3)", "x3 = load(33)") if i < 12 else line for i, line in enumerate(pre)]
    h = hunk(pre[4:11], patched[4:11], 5, "fix_the_loader (hand-written)")
    upstream = ["import os", "", "", *fn("g"), "def h():", "    return 7"]
    fc = FileChange("m.py", "m.py", None, None, (h,))
    base = Base("the base", text(pre), text(patched))
    verdicts, content = apply_file(fc, text(upstream), lambda f: base, 0, ever_had=lambda section: False)
    assert content is None and verdicts[0].verdict is Verdict.CONFLICT, verdicts
    never = apply_file(fc, text(upstream), lambda f: None, 0, ever_had=lambda section: False)
    assert never[0][0].verdict is Verdict.OFFSET or never[0][0].verdict is Verdict.CLEAN  # no base: one place, as git am -3


def test_twins_under_a_section_no_version_had_are_ambiguous_not_refused_by_it():
    """Three functions with the same body, a hand-written section over a hunk in the first: the
    section is in no version of the file, so it says nothing: the twins stay candidates
    (ambiguous, the refusal naming --base), where a section the file once had refuses them."""
    body = [f"    x{i} = load({i})" for i in range(6)] + ["    return x0"]
    lines = [line for name in ("f", "g", "k") for line in (f"def {name}():", *body, "", "")]
    patched = [*lines[:4], "    x3 = load(33)", *lines[5:]]
    h = hunk(lines[1:8], patched[1:8], 2, "fix_the_loader (hand-written)")
    fc = FileChange("m.py", "m.py", None, None, (h,))
    never, _ = apply_file(fc, text(lines), lambda f: None, 0, ever_had=lambda section: False)
    assert never[0].verdict is Verdict.AMBIGUOUS and "rerun with `--base` naming it" in never[0].detail, never[0]
    once, _ = apply_file(fc, text(lines), lambda f: None, 0, ever_had=lambda section: True)
    assert once[0].verdict is Verdict.CONFLICT and "the patch names `fix_the_loader" in once[0].detail, once[0]
