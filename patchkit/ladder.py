"""Where does a hunk go? The line-matching steps of the apply ladder, on lists of lines.

Pure functions, no git and no files: `apply.py` feeds them upstream's lines and turns their
answers into verdicts. A step answers with every candidate place it accepts and every one it
refused (a place in another function); it never picks one of several candidates.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Callable

from patchkit.queue import Hunk
from patchkit.scopes import starts_function

Lines = list[str]

# Says where a candidate place for HUNK starting at a 0-based line is, when that is another
# function than the hunk's own (the candidate is then no candidate): (where, why that is not the
# hunk's own); None when it may go there.
Judge = Callable[[Hunk, int], "tuple[str, str] | None"]


@dataclass(frozen=True)
class Refused:
    """A candidate place in another function than the hunk's own."""

    start: int  # 0-based
    where: str  # the function it is in
    why: str = ""  # how the hunk's own is known to differ ("the patch names `f`")


@dataclass(frozen=True)
class Place:
    start: int  # 0-based index in the upstream lines where the matched block starts
    length: int  # how many upstream lines it covers
    lines: tuple[str, ...]  # what replaces them
    fuzz: int = 0


@dataclass(frozen=True)
class Search:
    """The candidates of one search: those accepted, and those refused as in another function."""

    places: tuple[Place, ...] = ()
    refused: tuple[Refused, ...] = ()

    @property
    def place(self) -> Place | None:
        return self.places[0] if len(self.places) == 1 else None

    @property
    def ambiguous(self) -> bool:
        return len(self.places) > 1


def occurrences(block: tuple[str, ...], lines: Lines, index: dict[str, list[int]]) -> list[int]:
    """0-based starts of every exact occurrence of BLOCK in LINES."""
    if not block:
        return []
    n = len(block)
    return [s for s in index.get(block[0], []) if tuple(lines[s:s + n]) == block]


def line_index(lines: Lines) -> dict[str, list[int]]:
    index: dict[str, list[int]] = defaultdict(list)
    for i, line in enumerate(lines):
        index[line].append(i)
    return index


def find_exact(hunk: Hunk, lines: Lines) -> Place | None:
    """The pre-image at the line the hunk records.

    A hunk without any old line (`diff -U0` insertion) has nothing to compare: never placed here.
    """
    start = hunk.old_start - 1
    if hunk.old_lines and tuple(lines[start:start + len(hunk.old_lines)]) == hunk.old_lines:
        return Place(start, len(hunk.old_lines), hunk.new_lines)
    return None


def applied_at_recorded_line(hunk: Hunk, lines: Lines) -> Place | None:
    """The post-image where the patch put it: upstream has the change (what else is in the file
    does not matter). Call it after find_exact, so that the pre-image is not there too."""
    start = hunk.old_start - 1
    if hunk.new_lines and tuple(lines[start:start + len(hunk.new_lines)]) == hunk.new_lines:
        return Place(start, len(hunk.new_lines), hunk.new_lines)
    return None


def _judged(starts: list[int], block_len: int, replacement: tuple[str, ...], hunk: Hunk,
            judge: Judge, fuzz: int = 0) -> Search:
    places, refused = [], []
    for start in starts:
        verdict = judge(hunk, start)
        if verdict is None:
            places.append(Place(start, block_len, replacement, fuzz))
        else:
            refused.append(Refused(start, *verdict))
    return Search(tuple(places), tuple(refused))


def find_moved(hunk: Hunk, lines: Lines, index: dict[str, list[int]], judge: Judge) -> Search:
    """The pre-image anywhere in the file."""
    starts = occurrences(hunk.old_lines, lines, index)
    return _judged(starts, len(hunk.old_lines), hunk.new_lines, hunk, judge)


def find_applied(hunk: Hunk, lines: Lines, index: dict[str, list[int]], judge: Judge) -> Search:
    """The post-image anywhere in the file, except where the pre-image matches as well: a hunk
    that only deletes lines at the end of its block has a post-image that is a prefix of its
    pre-image, and one place must not count as both."""
    pre = set(occurrences(hunk.old_lines, lines, index))
    starts = [s for s in occurrences(hunk.new_lines, lines, index) if s not in pre]
    return _judged(starts, len(hunk.new_lines), hunk.new_lines, hunk, judge)


def find_fuzzed(hunk: Hunk, lines: Lines, index: dict[str, list[int]], max_fuzz: int, judge: Judge) -> Search:
    """GNU patch's fuzz: up to N context lines at each end may be ignored; the least fuzz that
    finds any candidate decides."""
    for fuzz in range(1, max_fuzz + 1):
        lead = min(fuzz, hunk.leading_context)
        trail = min(fuzz, hunk.trailing_context)
        old = hunk.old_lines[lead:len(hunk.old_lines) - trail]
        new = hunk.new_lines[lead:len(hunk.new_lines) - trail]
        if not old:
            break
        # The judge looks at where the whole hunk would start, ignored context included; and a
        # function that begins in the ignored context means the hunk would cross into it.
        starts = [s - lead for s in occurrences(old, lines, index)]
        search = _judged(starts, len(old), new, hunk, judge, fuzz)
        if hunk.section:
            crossing = [p for p in search.places if _crosses_function(hunk, lines, p.start, lead, trail)]
            search = Search(tuple(p for p in search.places if p not in crossing),
                            search.refused + tuple(Refused(p.start, "a function that begins in the ignored context")
                                                   for p in crossing))
        if search.places or search.refused:
            return Search(tuple(Place(p.start + lead, p.length, p.lines, fuzz) for p in search.places),
                          search.refused)
    return Search()


def _crosses_function(hunk: Hunk, lines: Lines, start: int, lead: int, trail: int) -> bool:
    """Whether an upstream line under the ignored context starts a function the hunk's line there
    does not (fuzz must never carry a hunk across a function boundary)."""
    end = start + lead + len(hunk.old_lines) - lead - trail
    ignored = [(i, start + i) for i in range(lead)] + \
        [(len(hunk.old_lines) - trail + i, end + i) for i in range(trail)]
    return any(0 <= at < len(lines) and starts_function(lines[at]) and lines[at] != hunk.old_lines[i]
               for i, at in ignored)


def nearest(hunk: Hunk, lines: Lines, index: dict[str, list[int]]) -> tuple[int, tuple[str, ...]] | None:
    """The upstream window that matches most of the hunk's pre-image lines (for conflict reports).

    Ties go to the window closest to the recorded line.
    """
    scores: dict[int, int] = defaultdict(int)
    for offset, line in enumerate(hunk.old_lines):
        if line.strip():
            for pos in index.get(line, ()):
                scores[pos - offset] += 1
    if not scores:
        return None
    recorded = hunk.old_start - 1
    best = max(scores, key=lambda s: (scores[s], -abs(s - recorded)))
    start = max(best, 0)
    return start, tuple(lines[start:start + len(hunk.old_lines)])


def splice(lines: Lines, places: list[Place]) -> Lines | None:
    """LINES with every place replaced; None if two places overlap."""
    out = list(lines)
    previous_start = len(lines) + 1
    for place in sorted(places, key=lambda p: p.start, reverse=True):
        if place.start + place.length > previous_start:
            return None
        out[place.start:place.start + place.length] = place.lines
        previous_start = place.start
    return out


def spliced_ranges(places: dict[int, Place]) -> dict[int, tuple[int, int]]:
    """Where each place's lines end up in the spliced file: key -> [start, end) there."""
    ranges, shift = {}, 0
    for key, place in sorted(places.items(), key=lambda item: item[1].start):
        ranges[key] = (place.start + shift, place.start + shift + len(place.lines))
        shift += len(place.lines) - place.length
    return ranges
