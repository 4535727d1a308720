"""Where does a hunk go? The line-matching steps of the apply ladder, on lists of lines.

Pure functions, no git and no files: `apply.py` feeds them upstream's lines and turns their
answers into verdicts. A step answers with a unique place or says why there is none; it never
picks one of several candidates.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from patchkit.queue import Hunk

Lines = list[str]

# git's default funcname rule: the nearest line above the hunk that starts with a letter, '_' or
# '$' (what it writes after the second "@@"), trimmed and cut at 80 bytes.
_FUNCNAME = re.compile(r"^[A-Za-z_$]")


@dataclass(frozen=True)
class Place:
    start: int  # 0-based index in the upstream lines where the matched block starts
    length: int  # how many upstream lines it covers
    lines: tuple[str, ...]  # what replaces them
    fuzz: int = 0


@dataclass(frozen=True)
class Search:
    """The outcome of one search: a unique place, or the candidates that made it ambiguous."""

    place: Place | None
    candidates: tuple[int, ...] = ()

    @property
    def ambiguous(self) -> bool:
        return self.place is None and len(self.candidates) > 1


def occurrences(block: tuple[str, ...], lines: Lines, index: dict[str, list[int]] | None = None) -> list[int]:
    """0-based starts of every exact occurrence of BLOCK in LINES."""
    if not block:
        return []
    starts = (index or line_index(lines)).get(block[0], [])
    n = len(block)
    return [s for s in starts if tuple(lines[s:s + n]) == block]


def line_index(lines: Lines) -> dict[str, list[int]]:
    index: dict[str, list[int]] = defaultdict(list)
    for i, line in enumerate(lines):
        index[line].append(i)
    return index


def funcname_at(lines: Lines, start: int) -> str:
    for i in range(start - 1, -1, -1):
        if _FUNCNAME.match(lines[i]):
            return lines[i].rstrip()[:80].rstrip()
    return ""


def _unique(found: list[int], hunk: Hunk, lines: Lines) -> tuple[int | None, tuple[int, ...]]:
    """The one candidate, after the hunk's function name narrowed them (never widened)."""
    if len(found) == 1:
        return found[0], tuple(found)
    if len(found) > 1 and hunk.section:
        named = [s for s in found if funcname_at(lines, s) == hunk.section]
        if len(named) == 1:
            return named[0], tuple(found)
    return None, tuple(found)


def find_exact(hunk: Hunk, lines: Lines) -> Place | None:
    """The pre-image at the line the hunk records.

    A hunk without any old line (`diff -U0` insertion) has nothing to compare: never placed here.
    """
    start = hunk.old_start - 1
    if hunk.old_lines and tuple(lines[start:start + len(hunk.old_lines)]) == hunk.old_lines:
        return Place(start, len(hunk.old_lines), hunk.new_lines)
    return None


def find_block(block: tuple[str, ...], replacement: tuple[str, ...], hunk: Hunk, lines: Lines,
               index: dict[str, list[int]], fuzz: int = 0) -> Search:
    start, found = _unique(occurrences(block, lines, index), hunk, lines)
    place = Place(start, len(block), replacement, fuzz) if start is not None else None
    return Search(place, found)


def find_offset(hunk: Hunk, lines: Lines, index: dict[str, list[int]]) -> Search:
    """The pre-image anywhere else, if in exactly one place."""
    return find_block(hunk.old_lines, hunk.new_lines, hunk, lines, index)


def find_applied(hunk: Hunk, lines: Lines, index: dict[str, list[int]]) -> Search:
    """The post-image, at the recorded line or in exactly one place: upstream has the change."""
    recorded = hunk.old_start - 1
    if tuple(lines[recorded:recorded + len(hunk.new_lines)]) == hunk.new_lines:
        return Search(Place(recorded, len(hunk.new_lines), hunk.new_lines), (recorded,))
    return find_block(hunk.new_lines, hunk.new_lines, hunk, lines, index)


def find_fuzzed(hunk: Hunk, lines: Lines, index: dict[str, list[int]], max_fuzz: int) -> Search:
    """GNU patch's fuzz: up to N context lines at each end may be ignored; still unique."""
    for fuzz in range(1, max_fuzz + 1):
        lead = min(fuzz, hunk.leading_context)
        trail = min(fuzz, hunk.trailing_context)
        old = hunk.old_lines[lead:len(hunk.old_lines) - trail]
        new = hunk.new_lines[lead:len(hunk.new_lines) - trail]
        if not old:
            break
        search = find_block(old, new, hunk, lines, index, fuzz)
        if search.place or search.ambiguous:
            return search
    return Search(None)


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
