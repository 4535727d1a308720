"""Where a name is declared in an upstream commit: the files the patch's files include (and those
they include), then a search of the tree's headers for a line that declares it as the patch uses
it. Read from the mirror's objects, nothing checked out; each file's declarations are parsed once
per content, whichever commit it is read at.

The search is bounded: only names that look like the project's own are searched for (not a
method's, not a call of a plain word like `init`); a name found declared in more than one place
means nothing certain (which `cfg`?) and is not followed, nor is one whose declaring lines are in
more than a few headers (they are read before any is parsed), nor more than a few headers per
search in all.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from patchkit import git
from patchkit.drift.compare import Entity, entities
from patchkit.drift.declarations import Declarations, read, value
from patchkit.drift.relies import Reliance
from patchkit.scopes import is_cpp

_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*["<]([^">]+)[">]', re.M)
_HEADERS = ("*.h", "*.hh", "*.hpp", "*.hxx", "*.cuh", "*.inl")
_INCLUDE_DEPTH = 2  # the patch's files' includes, and theirs: where the things they use come from
_FILES_PER_NAME = 3  # headers with a line declaring one name; more: too common a name to follow
_FILES_PER_SEARCH = 12  # headers parsed by one search of the tree
# A line that declares NAME (`@`) as a reliance of each kind uses it, for `git grep` (PCRE, or
# POSIX ERE where git has no PCRE) and `re` alike: a struct for an initialiser, a #define or an
# enumerator for a constant, a function for a call, a typedef for a parameter's type.
_DECLARING = {
    "aggregate": (r"\b(struct|class|union)\s+@\s*(final\s*)?([{]|:([^:]|$)|$)", r"[}]\s*@\s*;"),
    "name": (r"^\s*#\s*define\s+@\b",),
    "numeric": (r"^\s*#\s*define\s+@\b", r"(^|[{,])\s*@\s*(=([^=]|$)|,|[}]|$)"),
    "call": (r"(^|\w\s+|[*&>]\s*)@\s*\(",),
    "method": (r"(^|\w\s+|[*&>]\s*)@\s*\(",),
    "typedef": (r"\btypedef\b.*\b@\s*;", r"\busing\s+@\s*="),
}


def declaring(reliance: Reliance) -> list[str]:
    """The patterns of a line that declares what RELIANCE relies on."""
    return [p.replace("@", re.escape(reliance.name)) for p in _DECLARING.get(reliance.kind, ())]


class Files:
    """The mirror's files at any commit, and their declarations, parsed once per content."""

    def __init__(self, repo: Path, reader: git.ObjectReader) -> None:
        self.repo = repo
        self.reader = reader
        self._parsed: dict[bytes, Declarations] = {}
        # Those whose enumerators take a value from an included file: read with the commit's includes.
        self._in_context: dict[tuple[str, str], Declarations] = {}
        self._reading: set[tuple[str, str]] = set()  # an include cycle reads no file twice
        self._paths: dict[str, tuple[frozenset[str], dict[str, list[str]]]] = {}  # commit -> paths, by name
        self._typedefs: dict[tuple[str, str, str], str | None] = {}

    def source(self, commit: str, path: str) -> bytes | None:
        return self.reader.read(commit, path)

    def declarations(self, commit: str, path: str, mentions: re.Pattern[bytes] | None = None) -> Declarations | None:
        """PATH's declarations at COMMIT; None when it has no such file, or (with MENTIONS) when
        no line of it is one MENTIONS finds (a parse spared: most included files declare none)."""
        data = self.reader.read(commit, path)
        if data is None or mentions is not None and not mentions.search(data):
            return None
        key = hashlib.sha1(data).digest()
        if (commit, path) in self._in_context:
            return self._in_context[(commit, path)]
        if key not in self._parsed:
            used_outside = []

            def outside(name: str) -> int | None:
                used_outside.append(name)
                return self.included_value(commit, path, data, name)

            self._reading.add((commit, path))
            try:
                found = read(data, outside)
            finally:
                self._reading.discard((commit, path))
            if used_outside:
                self._in_context[(commit, path)] = found
                return found
            self._parsed[key] = found
        return self._parsed[key]

    def included_value(self, commit: str, path: str, data: bytes, name: str) -> int | None:
        """NAME's number as the files PATH (DATA at COMMIT) includes declare it, nearest first."""
        for included in self.candidates(commit, [(path, data)]):
            if included == path or (commit, included) in self._reading:
                continue
            declared = self.declarations(commit, included)
            number = value(declared, name) if declared is not None else None
            if number is not None:
                return number
        return None

    def locate(self, commit: str, sources: Mapping[str, bytes], wanted: Mapping[tuple, Reliance]
               ) -> dict[tuple, tuple[list[Entity], str]]:
        """Where each WANTED reliance's declaration is at COMMIT: the first of SOURCES ((path,
        patched bytes)) and what they include that declares it, else the one header of the tree
        that does (for a name that looks like the project's own, `_own_looking`). An
        entry with no entity: declared there, but nothing to follow (several declarations it can
        mean, a constructor for a braced list)."""
        located: dict[tuple, tuple[list[Entity], str]] = {}
        pending = dict(wanted)
        for path in self.candidates(commit, sources.items()):
            if not pending:
                break
            declared = self.declarations(commit, path, _mentions(pending.values()))
            for key, r in list(pending.items()):
                found = entities(r, declared) if declared is not None else []
                if found != []:
                    located[key] = (found or [], path)
                    del pending[key]
        searched = {key: r for key, r in pending.items() if _own_looking(r)}
        places: dict[tuple, list[tuple[list[Entity], str]]] = {}
        for path in self.search(commit, searched.values()):
            declared = self.declarations(commit, path)
            for key, r in searched.items():
                found = entities(r, declared) if declared is not None else []
                if found != []:
                    places.setdefault(key, []).append((found or [], path))
        located.update((key, found[0]) for key, found in places.items() if len(found) == 1)
        return located

    def typedef(self, commit: str, path: str, name: str) -> str | None:
        """The type NAME stands for at COMMIT, as PATH (the declaring file of a function) sees
        it: a typedef in PATH, what it includes, or the one header of the tree that has it."""
        memo = (commit, path, name)
        if memo not in self._typedefs:
            scope, _, bare = name.rpartition("::")
            reliance = Reliance("typedef", bare, scope, 0, 0)
            source = self.source(commit, path) or b""
            found, where = self.locate(commit, {path: source}, {memo: reliance}).get(memo, ([], ""))
            declared = self.declarations(commit, where) if found else None
            self._typedefs[memo] = declared.typedefs.get(found[0].key) if declared is not None else None
        return self._typedefs[memo]

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

    def search(self, commit: str, wanted: Iterable[Reliance]) -> list[str]:
        """The headers at COMMIT with a line declaring one of WANTED, in path order: for each,
        at most a few (else it is too common a name to follow), and a few in all."""
        wanted = list({(r.kind, r.name): r for r in wanted}.values())
        patterns = [p for r in wanted for p in declaring(r)]
        if not patterns:
            return []
        out = ""
        for syntax in ("-P", "-E"):  # PCRE is ten times faster; not every git has it
            try:
                out = git.run(["grep", "-o", "-I", syntax, "--no-color", *(a for p in patterns for a in ("-e", p)),
                               commit, "--", *_HEADERS], cwd=self.repo)
            except git.GitFailed as failed:
                if failed.returncode != 1:  # 1: no line
                    continue
            break
        lines: dict[str, set[str]] = {}
        for line in out.splitlines():
            _, path, text = line.split(":", 2)
            lines.setdefault(path, set()).add(text)
        found: set[str] = set()
        for r in wanted:
            pattern = re.compile("|".join(declaring(r)))
            paths = [path for path, texts in lines.items() if any(pattern.search(t) for t in texts)]
            if len(paths) <= _FILES_PER_NAME:
                found.update(paths)
        return sorted(found)[:_FILES_PER_SEARCH]

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


def _own_looking(reliance: Reliance) -> bool:
    """Worth a search of the tree: a struct, a constant, a function named as a project names its
    own (`llama_n_ctx`, `tokenizeText`); not a method (`x.f()`: its name alone says too little),
    nor a call of a plain word (`init`, `format`, `json::parse`: a vendored library's, a class's)."""
    if reliance.kind == "method":
        return False
    return reliance.kind != "call" or not (reliance.name.isalpha() and reliance.name.islower())


def _mentions(wanted: Iterable[Reliance]) -> re.Pattern[bytes]:
    """A file with a line declaring one of WANTED."""
    return re.compile("|".join(p for r in wanted for p in declaring(r)).encode(), re.M)
