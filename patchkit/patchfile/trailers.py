"""Trailers: the `Key: value` lines that end a commit message (git's `Signed-off-by:`, DEP-3's
`Origin:`, `Forwarded:`, `Last-Update:`), read, added and changed by one rule.

The last paragraph of a message is its trailer block when every line of it is a trailer or
continues the one before (starts with a space or a tab, as git interpret-trailers folds). A
paragraph of prose that happens to hold a colon ("Note: ...") is no trailer block, so nothing of
it is read as a field. A continued value is joined with single spaces.
"""

from __future__ import annotations

import re

_TRAILER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):[ \t]+(\S.*)$")

Trailers = tuple[tuple[str, str], ...]  # (key, value) in the message's order; a key may repeat


def _is_block(lines: list[str]) -> bool:
    return bool(lines) and all(_TRAILER.match(line) or (i and line[:1] in (" ", "\t") and line.strip())
                               for i, line in enumerate(lines))


def _pairs(lines: list[str]) -> Trailers:
    pairs: list[tuple[str, str]] = []
    for line in lines:
        m = _TRAILER.match(line)
        if m:
            pairs.append((m[1], m[2].strip()))
        else:
            key, value = pairs[-1]
            pairs[-1] = (key, f"{value} {line.strip()}")
    return tuple(pairs)


def split(message: str) -> tuple[str, Trailers]:
    """MESSAGE without its trailer block (newlines at either end dropped), and the block's trailers."""
    paragraphs = message.strip("\n").split("\n\n") if message.strip() else []
    if paragraphs and _is_block(paragraphs[-1].splitlines()):
        return "\n\n".join(paragraphs[:-1]), _pairs(paragraphs[-1].splitlines())
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
