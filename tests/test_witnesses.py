"""The witnesses on their own: pure functions over lines, each one piece of evidence."""

from __future__ import annotations

from patchkit import ladder, witnesses
from patchkit.queue import Hunk


def hunk(old: list[str], new: list[str], start: int, lead: int, trail: int) -> Hunk:
    return Hunk(1, start, start, "", tuple(old), tuple(new), lead, trail)


def test_neighbours_pick_the_candidate_their_offset_points_at_and_only_then():
    h = hunk(["a\n", "b\n", "c\n"], ["a\n", "B\n", "c\n"], 100, 1, 1)
    places = tuple(ladder.Place(s, 1, ("B\n",), 1) for s in (30, 101, 160))  # fuzz 1: starts one line in
    assert witnesses.neighbours_pick(h, places, {1}) == (places[1], 1)  # the hunk at 100, moved by +1
    assert witnesses.neighbours_pick(h, places, {1, 2}) is None  # the other hunks disagree
    assert witnesses.neighbours_pick(h, places, set()) is None  # no other hunk placed
    assert witnesses.neighbours_pick(h, places, {40}) is None  # nothing near where they point
    close = places + (ladder.Place(115, 1, ("B\n",), 1),)
    assert witnesses.neighbours_pick(h, close, {1}) is None  # another candidate too close to tell


def test_an_adopted_block_stands_beside_the_place_of_a_hunk_that_only_adds_it():
    block = ["    for (int n : {1, 7}) {\n", "        run(n);\n", "    }\n"]
    h = hunk(["    one();\n", "    two();\n"], ["    one();\n", *block, "    two();\n"], 3, 1, 1)
    upstream = ["void f() {\n", "    zero();\n", *block, "    one();\n", "    two();\n", "}\n"]
    pre = ["void f() {\n", "    zero();\n", "    one();\n", "    two();\n", "}\n"]
    assert witnesses.adopted_block_at(h, upstream, pre) == 2
    assert witnesses.adopted_block_at(h, ["void f() {\n", "    one();\n", "    two();\n", "}\n"], pre) is None
    assert witnesses.adopted_block_at(h, upstream, upstream) is None  # the base had it there: not adopted
    removes = hunk(["    one();\n", "    gone();\n"], ["    one();\n", *block], 3, 1, 0)
    assert witnesses.adopted_block_at(removes, upstream, pre) is None  # it removes a line: no adoption to tell
    brace = hunk(["    one();\n", "    two();\n"], ["    one();\n", "    }\n", "    two();\n"], 3, 1, 1)
    assert witnesses.adopted_block_at(brace, upstream + ["    }\n"], pre) is None  # a trivial block proves nothing


def test_a_function_moved_whole_keeps_its_place_a_twin_that_slid_in_does_not():
    f = ["static int f(int x) {\n", "    int y = x;\n", "    y += 2;\n", "    return y;\n", "}\n", "\n"]
    g = ["static int g(int x) {\n", "    return x;\n", "}\n", "\n"]
    h = hunk(["    int y = x;\n", "    y += 2;\n", "    return y;\n"],
             ["    int y = x;\n", "    y += 3;\n", "    return y;\n"], 2, 1, 1)
    pre = f + g
    moved = g + f  # upstream put f after g, unchanged
    index = ladder.line_index(moved)
    assert witnesses.moved_whole(h, pre, moved, index, 5, "a.c")
    twin = g + ["static int f2(int x) {\n", *f[1:]]  # f gone, a copy under another name where it was
    assert not witnesses.moved_whole(h, pre, twin, ladder.line_index(twin), 5, "a.c")
    changed = g + [f[0], "    int z = 0;\n", *f[1:]]  # f moved and its body changed: not whole
    assert not witnesses.moved_whole(h, pre, changed, ladder.line_index(changed), 6, "a.c")
    assert witnesses.opening_line(h, pre, 1, "a.c", above=True) == 0
    assert witnesses.definitions(moved + ["int f(void);\n"], "f", "a.c") == 1  # a declaration defines nothing


def test_a_clean_merge_is_the_one_candidate_only_without_twins_in_base_or_upstream():
    pre = ["int f() {\n", "    a();\n", "    b();\n", "    c();\n", "}\n"]
    h = Hunk(1, 2, 2, "int f() {", ("    a();\n", "    b();\n", "    c();\n"),
             ("    a();\n", "    B();\n", "    c();\n"), 1, 1)
    upstream = ["int f() {\n", "    a();\n", "    added();\n", "    b();\n", "    c();\n", "}\n"]
    change = [(3, 4, 3, 4)]  # the merge changed b() in upstream's line 4
    assert witnesses.merge_only_candidate([h], pre, upstream, ladder.line_index(upstream), change)
    twin = upstream + ["int f() {\n", "    a();\n", "    added();\n", "    b();\n", "    c();\n", "}\n"]
    assert not witnesses.merge_only_candidate([h], pre, twin, ladder.line_index(twin), change)  # its sides twice
    gone = ["int g() {\n", *upstream[1:]]
    assert not witnesses.merge_only_candidate([h], pre, gone, ladder.line_index(gone), change)  # the section gone
    quoted = ["// was int f() { once\n", *gone]  # its text only inside another line: no section line
    assert not witnesses.merge_only_candidate([h], pre, quoted, ladder.line_index(quoted), [(4, 5, 4, 5)])


def test_a_hunk_without_a_section_is_named_by_its_base():
    h = hunk(["    x();\n"], ["    y();\n"], 2, 0, 0)
    pre = ["void f() {\n", "    x();\n", "}\n"]
    assert not witnesses.named_elsewhere_in_base(h, pre, ["int a;\n", *pre], 2)
    slid = ["void g() {\n", "    x();\n", "}\n"]  # f gone, a twin slid into its lines
    assert witnesses.named_elsewhere_in_base(h, pre, slid, 1)


def test_a_sections_fate_is_asked_cheap_questions_first():
    asked: list[str] = []

    def ever_had(text: str) -> bool:
        asked.append(text)
        return text == "int gone(void)"

    def fate(section: str, lines: list[str], renamed: witnesses.Renamed | None = None):
        return witnesses.section_fate(section, lines, ["int gone(void)\n"], lambda: renamed, ever_had)

    assert fate("", ["int f(void)\n"]) is None  # no section: nothing to ask
    assert fate("int f(void)", ["  int f(void) {\n"]).fate is witnesses.Fate.STANDS and asked == []
    quoted = ["// int f(void) was here\n"]  # its text in a comment is no section line
    assert fate("int f(void)", quoted).fate is witnesses.Fate.NEVER and asked == ["int f(void)"]
    assert fate("int gone(void)", quoted).fate is witnesses.Fate.DELETED  # the base had it
    renamed = witnesses.Renamed(0, 3, "int g(void)\n", "abc123def4567890")
    followed = fate("int gone(void)", quoted, renamed)
    assert followed.fate is witnesses.Fate.RENAMED
    assert str(followed) == "the section `int gone(void)` was renamed `int g(void)` in abc123def456; followed"
    unknown = witnesses.section_fate("int h(void)", [], [], lambda: None, None)
    assert unknown.fate is witnesses.Fate.DELETED  # no history to ask: it may have had it


def test_the_merge_touches_a_twin_by_a_change_inside_it_or_lines_put_at_its_ends():
    changes = [(11, 12, 11, 12), (30, 30, 30, 32)]
    assert witnesses.touched([10, 20, 28], 3, changes) == [10, 28]  # a line changed in one, lines inserted after another
    assert witnesses.touched([10, 20], 3, []) == []


def test_the_base_confirms_a_twin_picked_in_the_same_order_only():
    body = ["    a();\n", "    b();\n", "    c();\n"]
    h = Hunk(1, 7, 7, "", tuple(body), ("    a();\n", "    B();\n", "    c();\n"), 1, 1)
    pre = ["f() {\n", *body, "}\n", "g() {\n", *body, "}\n"]  # the patch's own place is the 2nd (line 6)
    assert witnesses.places_in_base(h, pre) == [1, 6]
    assert witnesses.in_base_order(h, pre, [3, 9]) == 9  # upstream kept both, in order: the 2nd
    assert witnesses.in_base_order(h, pre, [3, 9, 15]) is None  # upstream added a twin: order says nothing
    sectioned = Hunk(1, 7, 7, "f() {", h.old_lines, h.new_lines, 1, 1)
    assert witnesses.in_base_order(sectioned, pre, [3, 9]) is None  # its own place is not in its section


def test_twins_are_ranked_by_the_evidence_that_agrees():
    body = ("    a();\n", "    b();\n", "    c();\n")
    h = Hunk(1, 7, 7, "", body, ("    a();\n", "    B();\n", "    c();\n"), 1, 1)
    lines = ["f() {\n", *body, "}\n", "g() {\n", *body, "}\n"]
    both = ["f() {\n", *h.new_lines, "}\n", "g() {\n", *h.new_lines, "}\n"]  # a patch that fixes both copies
    changes = [(2, 3, 2, 3), (7, 8, 7, 8)]
    assert witnesses.merged_into(h, [1, 6], changes, both) == (1, 6)
    one = lines[:6] + list(h.new_lines) + lines[9:]
    assert witnesses.merged_into(h, [1, 6], [(7, 8, 7, 8)], one) == (6,)
    first = Hunk(1, 2, 2, "", body, ("    z();\n", *body), 0, 3)  # it only adds a line above its lines
    above = lines[:6] + ["    z();\n"] + lines[6:]
    assert witnesses.merged_into(first, [1, 6], [(6, 6, 6, 7)], above) == (6,)
    merge = witnesses.Vote("the merge", (1, 6))
    order = witnesses.Vote("the base's twin order", (6,))
    assert witnesses.ranked_twin(merge, order, []) == 6
    assert witnesses.ranked_twin(merge, order, [witnesses.Vote("the other hunks' offset", (6,))]) == 6
    assert witnesses.ranked_twin(merge, order, [witnesses.Vote("the other hunks' offset", ())]) == 6  # silent
    assert witnesses.ranked_twin(merge, order, [witnesses.Vote("the other hunks' offset", (1,))]) is None  # disagrees
    assert witnesses.ranked_twin(witnesses.Vote("the merge", (1,)), order, []) is None
    assert witnesses.ranked_twin(merge, witnesses.Vote("the base's twin order", ()), []) is None  # order required
    assert str(witnesses.Vote("the merge", (1, 6))) == "the merge at lines 2, 7"
    assert witnesses.near_vote("the recorded line", 7, [8, 40]).places == (8,)
    assert witnesses.near_vote("the recorded line", 7, [8, 20]).places == ()  # another too close to tell


def test_hunks_placed_differently_are_those_a_difference_touches():
    ranges = {1: (10, 15), 2: (40, 42)}
    assert witnesses.placed_differently(ranges, [(12, 13, 12, 14)]) == {1}
    assert witnesses.placed_differently(ranges, [(41, 41, 41, 43), (15, 15, 15, 16)]) == {2}  # inserted inside; at an end is not
    assert witnesses.placed_differently(ranges, []) == set()


def test_added_lines_merged_beside_one_side_while_the_other_moved_away_are_apart():
    added = ["int added(void) {\n", "    return 1;\n", "}\n"]
    h = Hunk(1, 3, 3, "", ("int a;\n", "int b;\n"), ("int a;\n", *added, "int b;\n"), 1, 1)
    pre = ["// top\n", "int a;\n", "int b;\n", "// end\n"]
    apart = ["// top\n", "int a;\n", "// end\n", "int b;\n"]  # upstream moved `int b;` away
    merged = apart[:2] + added + apart[2:]
    change = [(2, 2, 2, 5)]
    assert witnesses.moved_apart(change, merged, [h], apart, ladder.line_index(apart), pre) == 2
    together = ["// top\n", "int a;\n", "int b;\n", "// end\n"]
    merged = together[:2] + added + together[2:]
    assert witnesses.moved_apart(change, merged, [h], together, ladder.line_index(together), pre) is None
    twice = pre + ["int b;\n"]  # the base had the other side twice: its twin may be what is left
    merged = apart[:2] + added + apart[2:]
    assert witnesses.moved_apart(change, merged, [h], apart, ladder.line_index(apart), twice) is None
