"""Reading CMake and Ninja output: progress, unused `-D` variables, and the first error."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Sequence

from patchkit.backends.result import FirstError

# patchkit sets NINJA_STATUS to this format, so the progress line does not depend on the user's.
NINJA_STATUS = "[%f/%t] "
_PROGRESS_RE = re.compile(r"^\[(\d+)/(\d+)\] ")
_UNUSED_HEADER = "Manually-specified variables were not used by the project:"
# gcc and clang: `file:line:col: error: msg`; nvcc: `file(line): error: msg`.
_COMPILER_RES = (
    re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.+)$"),
    re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?:catastrophic )?error: (?P<msg>.+)$"),
)
_CMAKE_ERROR_RE = re.compile(r"^CMake Error(?: at (?P<file>[^:]+):(?P<line>\d+) \([^)]*\))?:?")
_LINK_ERROR_RE = re.compile(r"undefined reference to|\bld(?:\.\w+)?: error|ld returned \d+ exit")


def ninja_progress(line: str) -> tuple[int, int] | None:
    """(finished, total) from a Ninja status line, or None for any other line."""
    m = _PROGRESS_RE.match(line)
    return (int(m.group(1)), int(m.group(2))) if m else None


def unused_variables(lines: Iterable[str]) -> list[str]:
    """The names in CMake's "Manually-specified variables were not used" block, in its order."""
    names: list[str] = []
    inside = False
    for line in lines:
        if _UNUSED_HEADER in line:
            inside = True
        elif inside and line.strip():
            if not line.startswith("    "):
                break
            names.append(line.strip())
        elif inside and names:  # the blank line that ends the list
            break
    return names


def first_error(lines: Sequence[str], tree: Path) -> FirstError | None:
    """The first compiler error, else the first CMake error, else the first linker error."""
    for pattern in _COMPILER_RES:
        for line in lines:
            m = pattern.match(line.rstrip())
            if m:
                return FirstError(_relative(m.group("file"), tree), int(m.group("line")),
                                  m.group("msg").strip())
    for i, line in enumerate(lines):
        m = _CMAKE_ERROR_RE.match(line)
        if m:
            message = next((s.strip() for s in lines[i + 1:] if s.strip()), line.strip())
            return FirstError(m.group("file"), int(m.group("line")) if m.group("line") else None,
                              message)
    for line in lines:
        if _LINK_ERROR_RE.search(line):
            return FirstError(None, None, line.strip())
    return None


def _relative(file: str, tree: Path) -> str:
    """Paths under the tree as the tree's own (what a patch names), others as printed."""
    try:
        return Path(file).resolve().relative_to(tree.resolve()).as_posix()
    except (ValueError, OSError):
        return file
