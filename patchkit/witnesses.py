"""Witnesses of where a hunk goes: small pure functions, each one piece of evidence the apply ladder
(`apply._FileLadder`) weighs, on lists of lines. Each says what it saw, or None where it has nothing
to say; none decides alone."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from patchkit import ladder
from patchkit.queue import Hunk
from patchkit.scopes import NOT_CODE, Sections, defined_name, funcname_at, section_texts

NEAR, FAR = 3, 20  # lines: a fuzz candidate its neighbours corroborate, and how far every other one must be


def neighbours_pick(h: Hunk, places: tuple[ladder.Place, ...], offsets: set[int]) -> tuple[ladder.Place, int] | None:
    """Of fuzz's several candidate PLACES for H, the one the patch's other hunks in the file point
    at, as GNU patch takes the one nearest the line it expects: every other hunk placed at one
    offset (OFFSETS), one candidate within NEAR lines of H's recorded line moved by it, every other
    FAR or more away. The place and the offset; None where that does not hold."""
    if len(offsets) != 1:
        return None
    (offset,) = offsets
    expected = h.old_start - 1 + offset

    def distance(place: ladder.Place) -> int:  # from where the whole hunk would start
        return abs(place.start - min(place.fuzz, h.leading_context) - expected)

    near = [p for p in places if distance(p) <= NEAR]
    if len(near) != 1 or any(distance(p) < FAR for p in places if p is not near[0]):
        return None
    return near[0], offset


def adopted_block_at(h: Hunk, lines: list[str], pre: list[str] | None) -> int | None:
    """Where (0-based) upstream's LINES have the block hunk H adds, near where its context is:
    for a hunk that removes nothing and adds one run of at least two lines of code, once within
    the hunk's length of that place, and once more in LINES than in the base's pre-image PRE (a
    block the base already had there is its own, not the patch's adopted); without a base (None),
    once in LINES. None where it is not so."""
    lead, trail = h.leading_context, h.trailing_context
    added = h.new_lines[lead:len(h.new_lines) - trail]
    if len(h.old_lines) != lead + trail or sum(1 for line in added if re.search(r"\w", line)) < 2:
        return None  # the hunk removes lines, or adds a trivial block (a brace, a blank line)
    index = ladder.line_index(lines)
    near = ladder.nearest(h, lines, index)
    if near is None:
        return None
    lo, hi = near[0] - len(h.new_lines), near[0] + 2 * len(h.new_lines)
    everywhere = ladder.occurrences(added, lines, index)
    if len(everywhere) != (len(ladder.occurrences(added, pre, ladder.line_index(pre))) if pre is not None else 0) + 1:
        return None
    found = [s for s in everywhere if lo <= s <= hi]
    return found[0] if len(found) == 1 else None


def place_in(h: Hunk, pre: list[str]) -> int | None:
    """H's 0-based place in its base's pre-image PRE: at its recorded line, else its one place
    under its section (a base from the last good run is another upstream commit)."""
    place = ladder.find_exact(h, pre)
    if place is not None:
        return place.start
    sections = Sections(pre)
    starts = [s for s in ladder.occurrences(h.old_lines, pre, ladder.line_index(pre))
              if not h.section or sections.named(h.section, s) is not None]
    return starts[0] if len(starts) == 1 else None


def named_elsewhere_in_base(h: Hunk, pre: list[str], lines: list[str], start: int) -> bool:
    """For a hunk without a section: whether git's rule names another function at its place in
    its base's pre-image PRE than at 0-based START of upstream's LINES. A quilt or plain diff
    hunk names none; its base does."""
    at = place_in(h, pre)
    return at is not None and funcname_at(pre, at + anchor(h)) != funcname_at(lines, start + anchor(h))


def anchor(h: Hunk) -> int:
    """The line of the hunk's block that decides which function it is in: its first change."""
    return max(min(h.leading_context, len(h.old_lines) - 1), 0)


def moved_whole(h: Hunk, pre: list[str], lines: list[str], index: dict[str, list[int]], start: int,
                path: str) -> bool:
    """Whether H's pre-image, found at 0-based START of upstream's LINES (INDEX: their
    `ladder.line_index`), is the hunk's own place because its whole function moved there unchanged
    (upstream reordered functions, or moved one with its neighbours): in the base's pre-image PRE,
    the lines from the section line at or above the hunk's first change down to the next section
    line (less the blank and comment lines that lead into it) occur once, and once in LINES, START
    where the hunk sits in them. The section after `@@` names the line above the hunk, so a hunk
    that begins at its function's first line names the function before it, wherever that one went.
    A twin that slid into the place, a same-named variant whose body changed, a split into copies:
    none keeps the whole function's lines, its name among them; and a name defined twice
    (same-named variants under #if, methods of two classes, its old signature in one place and a
    new one in another) says no move."""
    starts = ladder.occurrences(h.old_lines, pre, ladder.line_index(pre))
    if len(starts) != 1:
        return False
    first = starts[0] + anchor(h)
    last = starts[0] + len(h.old_lines) - h.trailing_context - 1
    top = opening_line(h, pre, starts[0], path, above=True)
    end = next((i for i in range(max(first, last) + 1, len(pre)) if section_texts(pre[i])), len(pre))
    while end - 1 > max(first, last) and (not pre[end - 1].strip() or pre[end - 1].lstrip().startswith(NOT_CODE)):
        end -= 1
    name = defined_name(pre[top], path) if top is not None else None
    if name is None or definitions(pre, name, path) != 1 or definitions(lines, name, path) != 1:
        return False  # a same-named variant (#if/#else) or method (another class) is no move
    block = tuple(pre[top:end])
    return ladder.occurrences(block, pre, ladder.line_index(pre)) == [top] and \
        ladder.occurrences(block, lines, index) == [start - (starts[0] - top)]


def opening_line(h: Hunk, pre: list[str], start: int, path: str, above: bool = False) -> int | None:
    """The 0-based line of PRE (a version of file PATH) that opens H's function, H's pre-image
    being at START there: the last line a section rule names from H's first change up through its
    leading context (ABOVE: on up through the lines above H too), where it defines something (a
    closing `endfunction()`, `else()`, a string's text are lines the default rule names too) and
    H's first change is in the block it opens: the line itself where H changes it, not where H only
    inserts lines before it."""
    first = start + anchor(h)
    at = next((i for i in range(first, -1 if above else start - 1, -1) if section_texts(pre[i])), None)
    if at is None or defined_name(pre[at], path) is None:
        return None
    inserts_only = len(h.old_lines) == h.leading_context + h.trailing_context
    return at if (at == first and not inserts_only) or _opens(pre, at, first) else None


def definitions(lines: list[str], name: str, path: str) -> int:
    """How many of LINES (a version of file PATH) define NAME (`defined_name`)."""
    return sum(1 for line in lines if name in line and section_texts(line) and defined_name(line, path) == name)


def _opens(lines: list[str], at: int, first: int) -> bool:
    """Whether 0-based line FIRST is inside the block line AT opens: the first line after AT that
    is not blank, up to FIRST, is indented deeper."""
    depth = len(lines[at]) - len(lines[at].lstrip())
    return next((len(line) - len(line.lstrip()) > depth for line in lines[at + 1:first + 1] if line.strip()), False)


def merge_only_candidate(unresolved: list[Hunk], pre: list[str], lines: list[str], index: dict[str, list[int]],
                         changes: list[tuple[int, int, int, int]]) -> bool:
    """Whether a clean 3-way merge's place is the only one the UNRESOLVED hunks could have, their
    base's pre-image being PRE, upstream's file LINES (INDEX: their `ladder.line_index`) and the
    merge's CHANGES to LINES its (i1, i2, j1, j2) differences: each hunk's pre-image is once in the
    base and at most once upstream, every line of it still in upstream's file (upstream only added
    lines among them), its section (if any) too, and the lines on each side of every change the
    merge made are once upstream and at most once in the base. A function deleted and a copy slid
    into its place, twins upstream made: each leaves one of these twice, or a line of the
    pre-image or the section gone. A section stands where a whole line, stripped, begins with it
    (a comment or a string quoting its text is none)."""
    stripped = [line.strip() for line in lines]
    pre_index = ladder.line_index(pre)
    for h in unresolved:
        if len(ladder.occurrences(h.old_lines, pre, pre_index)) != 1 or \
                len(ladder.occurrences(h.old_lines, lines, index)) > 1 or \
                any(line not in index for line in h.old_lines) or \
                (h.section and not any(line.startswith(h.section.strip()) for line in stripped)):
            return False
    for i1, i2, _, _ in changes:
        for side in (tuple(lines[max(0, i1 - 3):i1]), tuple(lines[i2:i2 + 3])):
            if side and (len(ladder.occurrences(side, lines, index)) != 1 or
                         len(ladder.occurrences(side, pre, pre_index)) > 1):
                return False
    return True


class Fate(str, enum.Enum):
    """What became of the section a hunk's `@@` names, in the file's history."""

    STANDS = "stands"  # a line of the target begins with it
    RENAMED = "renamed"  # a commit replaced its line with another
    NEVER = "never"  # no version of the file had it: hand-written, or another tool's funcname rule
    DELETED = "deleted"  # some version had it, the target has not


@dataclass(frozen=True)
class Renamed:
    """A section line one line replaced: its 0-based line in the base's pre-image, the line that
    replaced it in upstream's file, and the upstream commit that did (None: only the difference
    of the two files shows it)."""

    was_at: int
    now_at: int
    line: str
    commit: str | None


@dataclass(frozen=True)
class SectionFate:
    fate: Fate
    section: str
    renamed: Renamed | None = None

    def __str__(self) -> str:
        """The fate as a verdict's detail says it."""
        if self.fate is Fate.RENAMED and self.renamed is not None:
            where = f" in {self.renamed.commit[:12]}" if self.renamed.commit else " (by the base's difference)"
            return f"the section `{self.section}` was renamed `{self.renamed.line.strip()}`{where}; followed"
        return {Fate.STANDS: f"the section `{self.section}` stands in the file",
                Fate.NEVER: f"the section `{self.section}` is in no version of the file: it says nothing",
                Fate.DELETED: f"the section `{self.section}` was in the file's history and is gone"}[self.fate]


def defines_section(lines: list[str], section: str) -> bool:
    """Whether a whole line of LINES, stripped, begins with SECTION (a comment or a string quoting
    its text is no section line)."""
    wanted = section.strip()
    return any(line.strip().startswith(wanted) for line in lines if wanted in line)


def section_fate(section: str, lines: list[str], pre: list[str], renamed: Callable[[], Renamed | None],
                 ever_had: Callable[[str], bool] | None) -> SectionFate | None:
    """What became of SECTION (None: the hunk names none) in upstream's file LINES: RENAMED asks
    whether a commit replaced the line that opens the hunk's function (the section's, or the
    hunk's own first line: a hunk that begins at its function's first line names the one before),
    with the base's pre-image PRE; else it stands where a line of LINES begins with it; else
    EVER_HAD tells whether any version of the file had its text (None: not known, taken as yes)."""
    if not section:
        return None
    found = renamed()
    if found is not None:
        return SectionFate(Fate.RENAMED, section, found)
    if defines_section(lines, section):
        return SectionFate(Fate.STANDS, section)
    had = defines_section(pre, section) or ever_had is None or "\0" in section or ever_had(section.strip())
    return SectionFate(Fate.DELETED if had else Fate.NEVER, section)


Change = tuple[int, int, int, int]  # (i1, i2, j1, j2): lines i1..i2 of one text are j1..j2 of another


def stands_in_hunks(added: list[str], hunks: Sequence[Hunk]) -> Iterator[tuple[tuple[str, ...], tuple[str, ...], Hunk, int]]:
    """Each place the lines ADDED stand in a post-image of HUNKS: (its lines before, its lines
    after, the hunk, the index there)."""
    n = len(added)
    for h in hunks:
        new = h.new_lines
        for k in (k for k in range(len(new) - n + 1) if list(new[k:k + n]) == added):
            yield new[:k], new[k + n:], h, k


def moved_apart(changes: list[Change], merged: list[str], hunks: Sequence[Hunk], lines: list[str],
                index: dict[str, list[int]], pre: list[str]) -> int | None:
    """Where (0-based, in MERGED) a merge whose CHANGES to upstream's LINES (INDEX: their
    `ladder.line_index`) gave MERGED put lines a hunk of HUNKS adds beside one side of its context
    while the other side, once in the base's pre-image PRE, is found in LINES but not beside them:
    upstream moved a neighbour away (a function the patch adds after another goes with neither).
    A side the base has twice says nothing: its twin may be what is left. None: no such place."""
    pre_index = ladder.line_index(pre)

    def moved(side: tuple[str, ...], beside: int) -> bool:  # once in the base, elsewhere now
        found = ladder.occurrences(side, lines, index) if side else []
        return bool(found) and beside not in found and len(ladder.occurrences(side, pre, pre_index)) == 1

    for i1, i2, j1, j2 in changes:
        if i1 == i2 and any(moved(before, i1 - len(before)) or moved(after, i1)
                            for before, after, _, _ in stands_in_hunks(merged[j1:j2], hunks)):
            return j1
    return None


def touched(places: Sequence[int], size: int, changes: list[Change]) -> list[int]:
    """Which of PLACES (0-based starts of SIZE lines) CHANGES touch: a change inside one, or lines
    inserted within or at its ends."""
    return [s for s in places if any((i1 < s + size and s < i2) or (i1 == i2 and s <= i1 <= s + size)
                                     for i1, i2, _, _ in changes)]


def in_base_order(h: Hunk, pre: list[str], places: Sequence[int]) -> int | None:
    """Which of H's twin PLACES upstream the base's pre-image PRE points at by their order: the
    base has as many places for the hunk (in its section) as upstream, and the patch's own (at its
    recorded line) is the k-th of them: the k-th upstream. None where that does not hold
    (upstream added, removed or moved a twin: the order says nothing)."""
    own = ladder.find_exact(h, pre)
    in_base = places_in_base(h, pre)
    if own is None or own.start not in in_base or len(in_base) != len(places):
        return None
    return places[in_base.index(own.start)]


def places_in_base(h: Hunk, pre: list[str]) -> list[int]:
    """H's places (0-based) in its base's pre-image PRE, under its section where it names one."""
    sections = Sections(pre)
    return [s for s in ladder.occurrences(h.old_lines, pre, ladder.line_index(pre))
            if not h.section or sections.named(h.section, s) is not None]


def placed_differently(ranges: dict[int, tuple[int, int]], changes: list[Change]) -> set[int]:
    """The hunks (their RANGES in a text, hunk index -> [lo, hi)) that CHANGES between that text
    and another touch: a change overlapping one, or lines inserted inside it."""
    return {index for index, (lo, hi) in ranges.items() for i1, i2, _, _ in changes
            if (i1 < hi and lo < i2) or (i1 == i2 and lo < i1 < hi)}


@dataclass(frozen=True)
class Vote:
    """One witness's say on which of a hunk's twin places upstream is the patch's: the places
    (0-based) it points at, none where it says nothing."""

    witness: str
    places: tuple[int, ...]

    def __str__(self) -> str:
        lines = ", ".join(str(p + 1) for p in self.places)
        return f"{self.witness} at line{'s' if len(self.places) > 1 else ''} {lines}"


def merged_into(h: Hunk, places: Sequence[int], changes: list[Change], merged: list[str]) -> tuple[int, ...]:
    """Which of H's twin PLACES in upstream's file a merge whose CHANGES to it gave MERGED turned
    into H's post-image; where it turned none so, the one it touched, if one (a merge aligns
    lines: of twins it may change any, and a patch fixing both copies changes both)."""
    size = len(h.old_lines)
    into = []
    for s in places:
        shift = sum((j2 - j1) - (i2 - i1) for i1, i2, j1, j2 in changes if i2 <= s and (i1, i2) != (s, s))
        if any(i1 < s + size and s < i2 or (i1 == i2 and s <= i1 <= s + size) for i1, i2, _, _ in changes) and \
                tuple(merged[s + shift:s + shift + len(h.new_lines)]) == h.new_lines:
            into.append(s)
    picked = touched(places, size, changes)
    return tuple(into) if into else tuple(picked) if len(picked) == 1 else ()


def near_vote(witness: str, expected: int, places: Sequence[int]) -> Vote:
    """WITNESS's vote for the one of PLACES within NEAR lines of EXPECTED, every other FAR or
    more away (as `neighbours_pick`); none otherwise."""
    near = [p for p in places if abs(p - expected) <= NEAR]
    if len(near) != 1 or any(abs(p - expected) < FAR for p in places if p != near[0]):
        return Vote(witness, ())
    return Vote(witness, (near[0],))


def ranked_twin(merge: Vote, order: Vote, others: Sequence[Vote]) -> int | None:
    """The twin the evidence agrees on: the one the base's twin ORDER points at, among those the
    exact base's MERGE turned into the hunk's post-image, and no OTHER vote (the recorded line,
    the other hunks' offset) pointing elsewhere. None: they disagree, or a required one is silent.
    The recorded line is a witness too: it points where `git apply` goes wrong after upstream
    removed lines above a twin, and the merge goes wrong where upstream dropped one twin and added
    another below (it aligns identical blocks in order); where they disagree, neither is known."""
    if len(order.places) != 1 or order.places[0] not in merge.places:
        return None
    pick = order.places[0]
    return pick if all(v.places in ((), (pick,)) for v in others) else None
