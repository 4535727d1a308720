"""Where a name is declared in an upstream commit: the files the patch's files include (and those
they include), then a search of the tree's headers. Read from the mirror's objects, nothing
checked out; each file's declarations are parsed once per content, whichever commit it is read at.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from pathlib import Path
from typing import Iterable, Iterator

from patchkit import git
from patchkit.drift.declarations import Declarations, read
from patchkit.scopes import is_cpp

_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*["<]([^">]+)[">]', re.M)
_HEADERS = ("*.h", "*.hh", "*.hpp", "*.hxx", "*.cuh", "*.inl")
_INCLUDE_DEPTH = 2  # the patch's files' includes, and theirs: where the things they use come from


class Files:
    """The mirror's files at any commit, and their declarations, parsed once per content."""

    def __init__(self, repo: Path, reader: git.ObjectReader) -> None:
        self.repo = repo
        self.reader = reader
        self._parsed: dict[bytes, Declarations] = {}
        self._paths: dict[str, tuple[frozenset[str], dict[str, list[str]]]] = {}  # commit -> paths, by name

    def source(self, commit: str, path: str) -> bytes | None:
        return self.reader.read(commit, path)

    def declarations(self, commit: str, path: str, names: Iterable[str] = ()) -> Declarations | None:
        """PATH's declarations at COMMIT; None when it has no such file, or (with NAMES) when
        none of NAMES is in its text (a parse spared: most included files mention none)."""
        data = self.reader.read(commit, path)
        if data is None or names and not any(name.encode() in data for name in names):
            return None
        key = hashlib.sha1(data).digest()
        if key not in self._parsed:
            self._parsed[key] = read(data)
        return self._parsed[key]

    def candidates(self, commit: str, sources: Iterable[tuple[str, bytes]]) -> Iterator[str]:
        """The files to look in, nearest first: each of SOURCES ((path, patched bytes)) as upstream
        has it at COMMIT, then what they include, then what those include."""
        seen: set[str] = set()
        level = []
        for path, data in sources:
            if path not in seen:
                seen.add(path)
                yield path
            level.append((path, data))
        for _ in range(_INCLUDE_DEPTH):
            following = []
            for path, data in level:
                for include in _INCLUDE.findall(data or b""):
                    found = self._resolve(commit, path, include.decode("utf-8", errors="replace"))
                    if found and found not in seen:
                        seen.add(found)
                        yield found
                        following.append((found, self.reader.read(commit, found) or b""))
            level = following

    def search(self, commit: str, names: Iterable[str]) -> list[str]:
        """The headers at COMMIT that hold one of NAMES as a word, in path order."""
        names = sorted(set(names))
        if not names:
            return []
        patterns = [arg for name in names for arg in ("-e", name)]
        out = git.run(["grep", "-l", "-w", "-F", "--no-color", *patterns, commit, "--", *_HEADERS],
                      cwd=self.repo, check=False)
        return [line.split(":", 1)[1] for line in out.splitlines() if ":" in line]

    def _resolve(self, commit: str, including: str, include: str) -> str | None:
        """The path of INCLUDE as written in INCLUDING: beside it, else the one file of the tree
        whose path ends with it (llama.cpp's include directories)."""
        beside = posixpath.normpath(posixpath.join(posixpath.dirname(including), include))
        paths, by_name = self._listing(commit)
        if beside in paths:
            return beside
        ending = [p for p in by_name.get(posixpath.basename(include), ()) if p.endswith("/" + include)]
        return ending[0] if len(ending) == 1 else None

    def _listing(self, commit: str) -> tuple[frozenset[str], dict[str, list[str]]]:
        if commit not in self._paths:
            out = git.run(["ls-tree", "-r", "--name-only", "-z", commit], cwd=self.repo)
            paths = frozenset(p for p in out.split("\0") if p and is_cpp(p))
            by_name: dict[str, list[str]] = {}
            for path in sorted(paths):
                by_name.setdefault(posixpath.basename(path), []).append(path)
            self._paths[commit] = paths, by_name
        return self._paths[commit]
