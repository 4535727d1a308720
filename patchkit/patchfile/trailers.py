"""Trailers: the `Key: value` lines that end a commit message (git's `Signed-off-by:`, DEP-3's
`Origin:`, `Forwarded:`, `Last-Update:`), read, added and changed by one rule.

The rule is git's (interpret-trailers, `git log --format=%(trailers)`): the last paragraph of a
message is its trailer block when every line of it is a trailer, or when a quarter of its lines
are and one of them is git's own (`Signed-off-by:`, `(cherry picked from commit ...)`); a line
starting with a space or a tab continues the one before, and a continued value is joined with
single spaces. A paragraph of prose that happens to hold a colon ("Note: ...") is no trailer
block, so nothing of it is read as a field; the other lines of a block ("[backported]") stay in
the message.
"""

from __future__ import annotations

import re

_TRAILER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):[ \t]+(\S.*)$")
_GITS_OWN = re.compile(r"^(?:Signed-off-by: |\(cherry picked from commit [0-9a-f]+\))")

Trailers = tuple[tuple[str, str], ...]  # (key, value) in the message's order; a key may repeat


def _is_continuation(lines: list[str], i: int) -> bool:
    return i > 0 and lines[i][:1] in (" ", "\t") and bool(lines[i].strip())


def _is_block(lines: list[str]) -> bool:
    trailers = others = 0
    gits_own = False
    for i, line in enumerate(lines):
        if _is_continuation(lines, i):
            continue
        trailers += bool(_TRAILER.match(line))
        others += not _TRAILER.match(line)
        gits_own = gits_own or bool(_GITS_OWN.match(line))
    return trailers > 0 and (others == 0 or gits_own and trailers * 3 >= others)


def _read_block(lines: list[str]) -> tuple[list[str], Trailers]:
    """The block's other lines, and its trailers with their continuation lines joined."""
    others: list[str] = []
    pairs: list[tuple[str, str]] = []
    continues = False  # the line before is a trailer's (or continues one)
    for i, line in enumerate(lines):
        m = _TRAILER.match(line)
        if _is_continuation(lines, i) and continues:
            key, value = pairs[-1]
            pairs[-1] = (key, f"{value} {line.strip()}")
        elif m:
            pairs.append((m[1], m[2].strip()))
            continues = True
        else:
            others.append(line)
            continues = False
    return others, tuple(pairs)


def split(message: str) -> tuple[str, Trailers]:
    """MESSAGE without its trailers (newlines at either end dropped), and the trailers."""
    paragraphs = message.strip("\n").split("\n\n") if message.strip() else []
    if paragraphs and _is_block(paragraphs[-1].splitlines()):
        others, pairs = _read_block(paragraphs[-1].splitlines())
        return "\n\n".join(paragraphs[:-1] + (["\n".join(others)] if others else [])), pairs
    return "\n\n".join(paragraphs), ()


def append(message: str, trailers: list[tuple[str, str]]) -> str:
    """MESSAGE with TRAILERS at its end: in its trailer block when it has one, else as a new one."""
    if not trailers:
        return message
    added = "\n".join(f"{key}: {value}" for key, value in trailers)
    paragraphs = message.strip("\n").split("\n\n") if message.strip() else []
    if paragraphs and _is_block(paragraphs[-1].splitlines()):
        paragraphs[-1] += "\n" + added
    else:
        paragraphs.append(added)
    return "\n\n".join(paragraphs)


def replace(message: str, key: str, value: str) -> str:
    """MESSAGE with the first KEY trailer of its trailer block set to VALUE (its continuation
    lines dropped); MESSAGE as it is when the block has no KEY. Every other byte is kept."""
    head, gap, last = message.rpartition("\n\n")
    lines = last.split("\n")
    if not _is_block([line for line in lines if line]):
        return message
    for i, line in enumerate(lines):
        m = _TRAILER.match(line)
        if m and m[1] == key:
            end = i + 1
            while end < len(lines) and lines[end][:1] in (" ", "\t") and lines[end].strip():
                end += 1
            lines[i:end] = [f"{key}: {value}"]
            return head + gap + "\n".join(lines)
    return message
