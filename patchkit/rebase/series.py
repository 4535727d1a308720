"""What a rebase does to the series: a skipped patch's line becomes a comment saying it was
disabled, when and why (`status` lists it, as needing attention); a dropped patch's line goes."""

from __future__ import annotations

import re

from patchkit.patchfile.series import entries

_DISABLED = re.compile(r"^# disabled: (\S+) \((.*)\)$")


def disabled_line(name: str, day: str, why: str) -> str:
    return f"# disabled: {name} (on {day} by `patchkit rebase --skip`: {why})"


def disable(text: str, name: str, replacement: str | None) -> str:
    """TEXT (a series) with NAME's line replaced by REPLACEMENT, or removed (None); the same TEXT
    when NAME is not listed, so that doing it twice changes nothing."""
    lines = text.splitlines(keepends=True)
    for entry in entries(text):
        if entry.path == name:
            lines[entry.lineno - 1] = f"{replacement}\n" if replacement is not None else ""
            return "".join(lines)
    return text


def disabled(text: str) -> list[tuple[str, str]]:
    """The patches TEXT lists as disabled: (name, why)."""
    return [(m.group(1), m.group(2)) for m in map(_DISABLED.match, text.splitlines()) if m]
