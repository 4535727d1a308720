"""The diff part of a patch file: where it starts, git's signature after it, hunk headers, the
one walk through hunks every reader of a diff shares, and paths as git quotes them."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import AnyStr

# Not anchored: the walk matches it at a line's start; `--repair` searches text whose newlines
# a web page collapsed (see importing/repair.py).
HUNK_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_SIGNATURE = re.compile(r"\n-- \n[^\n]*\n*\Z")  # git format-patch's "-- \n<version>" (and blank lines)


def lines_of(text: AnyStr, keepends: bool = False) -> list[AnyStr]:
    """TEXT's lines (of text or bytes) as git and patch count them: ended by LF only
    (str.splitlines also ends one at a lone CR, which is inside a line of a file)."""
    end = "\n" if isinstance(text, str) else b"\n"
    lines = text.split(end)
    last = lines.pop()
    if keepends:
        lines = [line + end for line in lines]
    return lines + [last] if last else lines


def diff_start(lines: list[str]) -> int | None:
    """Index of the line where the diff begins: `diff --git`, or a `---`/`+++` pair (an `Index:`
    line and its `====` rule before them belong to the diff's header, not to the message)."""
    for i, line in enumerate(lines):
        if line.startswith("diff --git ") or (line.startswith("--- ") and i + 1 < len(lines)
                                               and lines[i + 1].startswith("+++ ")):
            return i
    return None


def strip_signature(diff: str) -> str:
    """DIFF less git format-patch's signature ("-- \\n2.39.5") and the blank lines after it."""
    return _SIGNATURE.sub("\n", diff)


class Part(enum.Enum):
    """What a line of a diff is, as the hunk headers count lines."""

    OUTSIDE = "outside"  # file headers, `index`, binary data: anything not in a hunk
    HEADER = "header"  # a hunk's `@@ -a,b +c,d @@` line
    CONTEXT = " "  # also an empty line inside a hunk: a context line whose space a mailer ate
    REMOVED = "-"
    ADDED = "+"
    NO_NEWLINE = "\\"  # "\ No newline at end of file": the line before it has none


_BODY = {" ": Part.CONTEXT, "": Part.CONTEXT, "\n": Part.CONTEXT, "-": Part.REMOVED, "+": Part.ADDED}
_HUNK_PARTS = (Part.CONTEXT, Part.REMOVED, Part.ADDED, Part.NO_NEWLINE)


@dataclass(frozen=True)
class DiffLine:
    text: str  # as given (with its newline, when the lines were split keeping them)
    part: Part
    changed: bool  # a + or - line, or the "\ No newline" marker of one
    old_left: int  # the pre-image lines its hunk still counts after this line
    new_left: int

    @property
    def in_hunk(self) -> bool:
        return self.part in _HUNK_PARTS


def walk(lines: Iterable[str]) -> Iterator[DiffLine]:
    """Each line of a diff, read as its hunk headers count lines. A hunk ends when its counts
    are used up (a "\\ No newline" right after its last line still belongs to it) or at a line
    that cannot be in a hunk (the hunk is short: `short_hunk` names it)."""
    old_left = new_left = 0
    last = Part.OUTSIDE
    for text in lines:
        kind = text[:1]
        if kind == "\\" and last in (Part.CONTEXT, Part.REMOVED, Part.ADDED):
            part, changed = Part.NO_NEWLINE, last is not Part.CONTEXT
        elif (old_left > 0 or new_left > 0) and kind in _BODY:
            part = _BODY[kind]
            changed = part is not Part.CONTEXT
            old_left -= part is not Part.ADDED
            new_left -= part is not Part.REMOVED
        else:
            header = HUNK_HEADER.match(text)
            part, changed = (Part.HEADER if header else Part.OUTSIDE), False
            old_left, new_left = (int(header[2] or 1), int(header[4] or 1)) if header else (0, 0)
        last = part
        yield DiffLine(text, part, changed, old_left, new_left)


def short_hunk(lines: list[str]) -> int:
    """Index in LINES of the header of the first hunk whose body is short or malformed, else of
    the last line (for a parse error's message)."""
    header = 0
    awaiting = False
    for i, line in enumerate(walk(lines)):
        if awaiting and not line.in_hunk:
            return header
        if line.part is Part.HEADER:
            header = i
        awaiting = line.old_left > 0 or line.new_left > 0
    return header if awaiting else max(len(lines) - 1, 0)


def eaten_blank_lines(lines: list[str]) -> list[int]:
    """Where a hunk's body stops one line short of its header's counts, that line being context
    (one pre-image and one post-image line left): the index in LINES where it is missing. That is
    how a blank context line looks once a mailer or an editor dropped it from a hunk's end; GNU
    patch reads it so, git apply refuses the patch."""
    eaten = []
    left, changed = (0, 0), False  # what the hunk being read still counts; whether it changes a line
    for i, line in enumerate(walk(lines)):
        if left == (1, 1) and changed and not line.in_hunk:
            eaten.append(i)
        changed = line.changed or (changed and line.in_hunk)
        left = (line.old_left, line.new_left) if line.in_hunk or line.part is Part.HEADER else (0, 0)
    return eaten + ([len(lines)] if left == (1, 1) and changed else [])


_C_ESCAPE = re.compile(rb'\\([0-7]{3}|[abtnvfr"\\])')
_C_ESCAPES = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13, b'"': 34, b"\\": 92}


def unquote(name: str) -> str:
    """A path as git quotes it when it has bytes outside printable ASCII ("a/caf\\303\\251.md"),
    back to its text (UTF-8; other bytes as surrogate escapes, as every path patchkit reads)."""
    if len(name) < 2 or name[0] != '"' or name[-1] != '"':
        return name

    def byte(m: re.Match) -> bytes:
        code = m.group(1)
        return bytes([int(code, 8) if len(code) == 3 else _C_ESCAPES[code]])

    return _C_ESCAPE.sub(byte, name[1:-1].encode("utf-8")).decode("utf-8", errors="surrogateescape")
