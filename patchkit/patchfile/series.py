"""The quilt `series` file: one patch file name a line, in the order they apply, `#` comments,
and per-patch options (only `-p1`, git's a/ and b/ prefixes, is taken)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from patchkit.errors import PatchkitError
from patchkit.fileio import atomic_write
from patchkit.git import validate_repo_path


@dataclass(frozen=True)
class Entry:
    lineno: int  # 1-based
    name: str  # as written
    options: tuple[str, ...]  # what follows the name (quilt's -pN, ...)

    @property
    def path(self) -> str:
        """The name with `./` and `a//b` made plain (quilt takes both)."""
        return posixpath.normpath(self.name)


def read_text(series: Path) -> str:
    try:
        return series.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PatchkitError(f"{series}: not UTF-8 text (byte {exc.start})", "save it as UTF-8") from None


def entries(text: str) -> Iterator[Entry]:
    """Each line of TEXT that names a patch (not blank, not only a comment)."""
    for lineno, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if words:
            yield Entry(lineno, words[0], tuple(words[1:]))


def parse_series(series: Path) -> list[str]:
    """Patch file names in order, each once, each a file next to SERIES; `-p1` is accepted, no
    other option is."""
    seen: dict[str, int] = {}
    for entry in entries(read_text(series)):
        name = entry.path
        where = f"{series}:{entry.lineno}"
        if entry.options not in ((), ("-p1",)):
            raise PatchkitError(f"{where}: unsupported series option {' '.join(entry.options)!r}",
                                "patches must be -p1 (a/ and b/ prefixes)")
        validate_repo_path(name)
        if name in seen:
            raise PatchkitError(f"{where}: {entry.name} is listed twice (first at line {seen[name]})",
                                "remove the duplicate line")
        if not (series.parent / name).is_file():
            raise PatchkitError(f"{where}: {name} does not exist in {series.parent}",
                                "fix the name or remove the line")
        seen[name] = entry.lineno
    return list(seen)


def insert_into_series(text: str, names: list[str], after: str | None) -> str:
    """TEXT (a series file) with NAMES listed after the line of AFTER, else at the end; every other
    line (comments, options) as it was."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    added = [f"{n}\n" for n in names]
    if after is None:
        return "".join(lines + added)
    for entry in entries(text):
        if entry.path == after:
            return "".join(lines[:entry.lineno] + added + lines[entry.lineno:])
    raise AssertionError(f"{after} vanished from the series")


def write_series(series: Path, text: str) -> None:
    """SERIES replaced by TEXT in one rename: a reader sees the old list or the new one."""
    atomic_write(series, text.encode("utf-8"))
