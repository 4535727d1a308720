"""Witnesses of where a hunk goes: small pure functions, each one piece of evidence the apply ladder
(`apply._FileLadder`) weighs, on lists of lines. Each says what it saw, or None where it has nothing
to say; none decides alone."""

from __future__ import annotations

import re

from patchkit import ladder
from patchkit.queue import Hunk

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


def adopted_block_at(h: Hunk, lines: list[str]) -> int | None:
    """Where (0-based) upstream's LINES have the block hunk H adds, near where its context is:
    for a hunk that removes nothing and adds one run of at least two lines of code, once within
    the hunk's length of that place. None where it is not so."""
    lead, trail = h.leading_context, h.trailing_context
    added = h.new_lines[lead:len(h.new_lines) - trail]
    if len(h.old_lines) != lead + trail or sum(1 for line in added if re.search(r"\w", line)) < 2:
        return None  # the hunk removes lines, or adds a trivial block (a brace, a blank line)
    index = ladder.line_index(lines)
    near = ladder.nearest(h, lines, index)
    if near is None:
        return None
    lo, hi = near[0] - len(h.new_lines), near[0] + 2 * len(h.new_lines)
    found = [s for s in ladder.occurrences(added, lines, index) if lo <= s <= hi]
    return found[0] if len(found) == 1 else None
