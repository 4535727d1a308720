"""Which function a line belongs to: the section rules of the tools that write patches, and for
C and C++ a real parse.

The apply ladder asks this of every candidate place, so that a hunk never moves into another
function because its own site changed upstream and a twin elsewhere still matches. The text after
a hunk's `@@` depends on the tool that wrote it (git's default rule, a git diff driver's, GNU
`diff -p`, each with its own cut), so a section is compared under each of them. Those rules are
cheap but weak in C++, where every method of a class gets the same `private:` line; the parse
names the enclosing function itself.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import hashlib
import itertools
import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from patchkit.errors import PatchkitError
from patchkit.fileio import atomic_write

if TYPE_CHECKING:
    from tree_sitter import Node, Parser, Tree

# git's default funcname rule, and GNU `diff -p`'s: the nearest line above the hunk that starts
# with a letter, '_' or '$'. git writes it trimmed and cut at 80 bytes, diff at 40.
_FUNCNAME = re.compile(r"^[A-Za-z_$]")
# git's `cpp` diff driver (userdiff.c): a jump target or access specifier (`private:`) is never a
# section; any other line starting with a letter, '_' or '::' is.
_CPP_SKIP = re.compile(r"^[ \t]*[A-Za-z_][A-Za-z_0-9]*:\s*($|/[/*])")
_CPP_FUNCNAME = re.compile(r"^(::\s*)?[A-Za-z_]")
# git's `python` diff driver: a class or def, indented or not, named without its indent.
_PYTHON_FUNCNAME = re.compile(r"^[ \t]*((class|(async[ \t]+)?def)[ \t].*)$")
NOT_CODE = ("//", "/*", "*", "#")
_CUTS = (80, 40)  # git's cut, GNU diff's (bytes)
# The files the C++ parse may veto a place in; all others (Objective-C, Metal, CMake, Python, shell)
# have git's section rule and the 3-way cross-check only. tree-sitter-cpp misreads Objective-C: in
# llama.cpp's .m files 9 lines in 10 get no function or another's, and adding a method renames them.
# CUDA stays: its parse misnames some kernels, but the same way after upstream's edits (1 in 768
# simulated edits renamed an untouched line), and in .cuh it alone tells apart functions that share
# a section (58 of 98).
_CPP_SUFFIXES = (".c", ".h", ".cc", ".hh", ".cpp", ".hpp", ".cxx", ".hxx", ".c++", ".h++",
                 ".cu", ".cuh", ".inl", ".ipp", ".tpp")
_NAMED_SCOPES = {"namespace_definition", "class_specifier", "struct_specifier", "union_specifier"}


def _default_rule(line: str) -> str | None:
    return line if _FUNCNAME.match(line) else None


def _cpp_rule(line: str) -> str | None:
    return line if _CPP_FUNCNAME.match(line) and not _CPP_SKIP.match(line) else None


def _python_rule(line: str) -> str | None:
    found = _PYTHON_FUNCNAME.match(line.rstrip("\n"))
    return found.group(1) if found else None


# What each tool's rule takes from a line as its section (None: the line is none): git's default
# (and GNU `diff -p`'s), git's cpp driver, git's python driver.
_RULES: tuple[Callable[[str], "str | None"], ...] = (_default_rule, _cpp_rule, _python_rule)


def funcname_at(lines: list[str], start: int) -> str:
    """git's section for a hunk whose pre-image starts at 0-based line START."""
    line = _nearest(lines, start, _default_rule)
    return _cut(line, 80) if line else ""


class Sections:
    """The section rules over the lines of one file, asked at many places."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines
        self._defs: list[int] | None = None  # lines the python rule names, found once

    def at(self, start: int) -> Iterator[str]:
        """What a tool may name as the section of a hunk starting at 0-based line START, whole
        (before any cut): one text for each rule (git's default and GNU `diff -p`, git's cpp and
        python drivers). Lazily, the default first: the first that fits usually ends the search."""
        for rule in (_default_rule, _cpp_rule):
            found = _nearest(self._lines, start, rule)
            if found:
                yield found.rstrip()
        # A file without a def or class would be read to its top at every place: index them.
        if self._defs is None:
            self._defs = [i for i, line in enumerate(self._lines)
                          if ("def" in line or "class" in line) and _python_rule(line)]
        k = bisect.bisect_left(self._defs, min(start, len(self._lines))) - 1
        if k >= 0:
            yield (_python_rule(self._lines[self._defs[k]]) or "").rstrip()

    def named(self, section: str, start: int) -> str | None:
        """What SECTION was written for above 0-based START by one of the rules, whole; None when
        no rule gives SECTION there."""
        return next((text for text in self.at(start) if section in written_as(text)), None)


def section_texts(line: str) -> tuple[str, ...]:
    """What the rules take from LINE as a section, whole (nothing when no rule names it)."""
    return tuple(dict.fromkeys(found.rstrip() for rule in _RULES if (found := rule(line))))


def opened_by(lines: list[str], start: int, section: str) -> str | None:
    """The line above 0-based START that SECTION was written for, stripped, when START is inside
    the block that line opens: every line between them is indented deeper (blank lines, comments
    and preprocessor lines aside). For sections no known rule gives (another diff driver's, a
    tool's own); a `}` or another definition at the line's indent ends its block."""
    deepest = None  # the least indent of the lines passed
    for i in range(min(start, len(lines)) - 1, -1, -1):
        text = lines[i].strip()
        if not text or text.startswith(NOT_CODE):
            continue
        indent = len(lines[i]) - len(lines[i].lstrip())
        if section in written_as(text):
            return text if deepest is None or indent < deepest else None
        deepest = indent if deepest is None else min(deepest, indent)
        if deepest == 0:
            return None
    return None


# Lines a section rule names that open no definition: control statements at column 0 (CMake's
# `else()`, `endfunction()`, a Python `if` at module level).
_CONTROL = re.compile(r"\s*(?:if|else|elif|elseif|endif|for|foreach|endforeach|while|endwhile|switch|do|case"
                      r"|default|return|try|except|finally|with|endfunction|endmacro)\b")
_PYTHON_DEFINITION = re.compile(r"\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")
_CMAKE_DEFINITION = re.compile(r"\s*(?:function|macro)\s*\(\s*([A-Za-z_][\w-]*)", re.IGNORECASE)
_NAME_CALLED = re.compile(r"((?:\w+::)*~?[A-Za-z_]\w*)\s*\(")
# Words before a signature's name that take parentheses of their own: attributes, and macros
# written in capitals (`GGML_TARGET("avx2") static void f(`).
_NOT_THE_NAME = re.compile(r"(?:__attribute__|__declspec|alignas|decltype|[A-Z][A-Z0-9_]*)$")


def defined_name(line: str, path: str) -> str | None:
    """The name LINE of file PATH defines, where it opens a definition: a def or class in Python,
    function() or macro() in CMake, elsewhere the (qualified) name before the first `(` of a
    signature, past attributes and capitalised macros; None for a line that defines nothing (a
    closer, `else()`, a declaration ending in `;`, text of a string that begins a line)."""
    lower = path.lower()
    if lower.endswith(".py"):
        found = _PYTHON_DEFINITION.match(line)
    elif lower.endswith((".cmake", "cmakelists.txt")):
        found = _CMAKE_DEFINITION.match(line)
    elif _CONTROL.match(line) or line.rstrip().endswith(";"):
        found = None  # a control statement, or a declaration: `void f(int);` defines nothing
    else:
        found = next((m for m in _NAME_CALLED.finditer(line) if not _NOT_THE_NAME.match(m.group(1))), None)
    return found.group(1) if found else None


def written_as(line: str) -> frozenset[str]:
    """Every section a tool writes for the section text LINE: whole, cut at git's 80 bytes or at
    diff's 40 (bytes, or characters in a multibyte locale)."""
    whole = line.rstrip()
    return frozenset({whole, whole[:40].rstrip(), *(_cut(whole, n) for n in _CUTS)})


def starts_function(line: str) -> bool:
    """A line git's funcname rule would name as a section."""
    return _default_rule(line) is not None


def _nearest(lines: list[str], start: int, rule: Callable[[str], "str | None"]) -> str:
    """What RULE takes from the nearest line above 0-based START it names ("" when none)."""
    for i in range(min(start, len(lines)) - 1, -1, -1):
        found = rule(lines[i])
        if found:
            return found
    return ""


def _cut(line: str, size: int) -> str:
    """LINE trimmed and cut at SIZE bytes; a UTF-8 character the cut would split is left out
    whole, as git does."""
    data = line.rstrip().encode("utf-8", errors="surrogateescape")
    cut = len(data) if len(data) <= size else size
    while 0 < cut < len(data) and data[cut] & 0xC0 == 0x80:  # data[cut] continues a character
        cut -= 1
    return data[:cut].decode("utf-8", errors="surrogateescape").rstrip()


def is_cpp(path: str) -> bool:
    return path.lower().endswith(_CPP_SUFFIXES)


@functools.cache
def cpp_parser() -> Parser:
    """The one tree-sitter C++ parser (apply's scopes, the site checks, drift)."""
    from tree_sitter import Language, Parser
    import tree_sitter_cpp

    return Parser(Language(tree_sitter_cpp.language()))


Differences = Callable[[], "list[tuple[int, int, int, int]]"]  # (i1, i2, j1, j2) line ranges, asked lazily


class ScopeMemo:
    """What earlier parses answered, by file content: a file's sha256 -> {0-based line: scope}.

    A rerun at the same commits (the maintainer's next apply, a benchmark's next run) asks the
    same lines of the same files, and a nightly asks yesterday's bases again: those answers are
    read, not parsed. They hold for one parser and one patchkit (the file names them: another
    one reads none of it), and a file's answers go when no run asked of it for `KEPT_DAYS`. Runs
    that apply without the mirror's lock (verify, export, drift) may write it too: each write
    merges what the file holds then and renames, so at worst a run's new answers are lost; a
    file that cannot be read or written is no cache, never an error."""

    KEPT_DAYS = 14

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._used: dict[str, dict[str, str]] = {}
        self._earlier: dict[str, dict] | None = None  # read when first asked: an apply without a parse never is

    def answers(self, source: bytes) -> dict[str, str]:
        """The answers for file content SOURCE (line as text -> scope), for the caller to add to."""
        if self._earlier is None:
            self._earlier = self._load()
        digest = hashlib.sha256(source).hexdigest()
        if digest not in self._used:
            self._used[digest] = dict(self._earlier.get(digest, {}).get("answers", {}))
        return self._used[digest]

    def save(self) -> None:
        if self._path is None or not self._used:
            return
        today = int(time.time() // 86400)
        files = {digest: kept for digest, kept in self._load().items() if kept["day"] > today - self.KEPT_DAYS}
        for digest, answers in self._used.items():
            files[digest] = {"day": today, "answers": {**files.get(digest, {}).get("answers", {}), **answers}}
        with contextlib.suppress(OSError, PatchkitError):
            atomic_write(self._path, json.dumps({"for": _parser_versions(), "files": files}, sort_keys=True).encode())

    def _load(self) -> dict[str, dict]:
        """The file's answers, where they are this parser's and well formed; else none."""
        if self._path is None:
            return {}
        try:
            loaded = json.loads(self._path.read_bytes())
        except (OSError, ValueError):
            return {}
        files = loaded.get("files") if isinstance(loaded, dict) and loaded.get("for") == _parser_versions() else None
        return {digest: {"day": kept["day"], "answers": kept["answers"]}
                for digest, kept in (files.items() if isinstance(files, dict) else ())
                if isinstance(kept, dict) and isinstance(kept.get("day"), int) and isinstance(kept.get("answers"), dict)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in kept["answers"].items())}


@functools.cache
def _parser_versions() -> str:
    """What a parse's answers depend on besides the file: patchkit's naming and the parser's."""
    from importlib.metadata import PackageNotFoundError, version

    from patchkit import __version__

    def of(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "?"

    return f"patchkit {__version__}, tree-sitter {of('tree-sitter')}, tree-sitter-cpp {of('tree-sitter-cpp')}"


class CppScopes:
    """The named scopes (namespaces, classes, functions) around each line of one C/C++ file.

    The parse dominates a refused-heavy apply (a long file takes a tenth of a second), and the
    ladder parses two or three versions of one file (the base, upstream's, the merge) that differ
    in a few places: given the scopes of another version already parsed (LIKE) and the line
    differences from it, the parse reuses that tree (tree-sitter's incremental parse) and only
    reads again around the edits. Only between trees without a syntax error: where error recovery
    runs, a reused part may be read otherwise than a fresh parse reads it (on the October tree,
    `sgemm.cpp` with an unbalanced brace added: 600 lines named otherwise), so there the parse
    starts from nothing."""

    def __init__(self, lines: list[str], like: "tuple[CppScopes, Differences] | None" = None,
                 memo: ScopeMemo | None = None) -> None:
        self.lines = lines
        self._source = "".join(lines).encode("utf-8", errors="surrogateescape")
        self._like = like
        self._tree: Tree | None = None
        self._memo = memo
        self._answers: dict[str, str] | None = None  # from MEMO, read when first asked

    def scope_at(self, line: int) -> str:
        """`ns::S::f` for 0-based LINE ("" at file scope); lambdas and blocks count as their host."""
        if self._memo is None:
            return self._scope_at(line)
        if self._answers is None:
            self._answers = self._memo.answers(self._source)
        key = str(line)
        if key not in self._answers:
            self._answers[key] = self._scope_at(line)
        return self._answers[key]

    def _scope_at(self, line: int) -> str:
        text = self.lines[line] if 0 <= line < len(self.lines) else ""
        column = len(text.encode("utf-8", errors="surrogateescape")) - len(text.lstrip().encode(
            "utf-8", errors="surrogateescape"))
        node = self._parsed().root_node.descendant_for_point_range((line, column), (line, column))
        names = []
        while node is not None:
            name = _scope_name(node)
            if name:
                names.append(name)
            node = node.parent
        return "::".join(reversed(names))

    @property
    def parsed(self) -> bool:
        return self._tree is not None

    def _parsed(self) -> Tree:
        if self._tree is None:
            like, differences = self._like or (None, None)
            if like is not None and like.parsed and differences is not None and not like._parsed().root_node.has_error:
                old = like._parsed().copy()
                _edit(old, like.lines, self.lines, differences())
                self._tree = cpp_parser().parse(self._source, old)
                if self._tree.root_node.has_error:
                    self._tree = None  # error recovery may read reused parts otherwise than afresh
            if self._tree is None:
                self._tree = cpp_parser().parse(self._source)
            self._like = None  # the other version's tree is no longer needed
        return self._tree


def _edit(tree: Tree, old: list[str], new: list[str], differences: list[tuple[int, int, int, int]]) -> None:
    """Tell TREE, parsed from OLD, of each line range where NEW differs: from the last one up, so
    that every edit's position is still where OLD has it."""
    def offsets(lines: list[str]) -> list[int]:
        sizes = map(len, lines) if all(map(str.isascii, lines)) else \
            (len(line.encode("utf-8", errors="surrogateescape")) for line in lines)
        return list(itertools.accumulate(sizes, initial=0))

    was, now = offsets(old), offsets(new)
    for i1, i2, j1, j2 in reversed(differences):
        start = was[i1]
        tree.edit(start_byte=start, old_end_byte=was[i2], new_end_byte=start + now[j2] - now[j1],
                  start_point=(i1, 0), old_end_point=(i2, 0), new_end_point=(i1 + j2 - j1, 0))


def function_declarator(function: Node, kinds: tuple[str, ...] = ("function_declarator",)) -> Node | None:
    """The declarator of FUNCTION (a function_definition) that holds its name and parameters,
    under those of a pointer or reference return (`int & f()`, `T *& g()`)."""
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type not in kinds:
        # tree-sitter-cpp's reference_declarator has no `declarator` field: the declarator is its
        # last named child
        declarator = declarator.child_by_field_name("declarator") or (
            declarator.named_children[-1] if declarator.type == "reference_declarator" and
            declarator.named_children else None)
    return declarator


def _scope_name(node: Node) -> str:
    if node.type == "function_definition":
        declarator = function_declarator(node)
        name = declarator.child_by_field_name("declarator") if declarator is not None else None
        return " ".join(name.text.decode(errors="replace").split()) if name is not None else "(function)"
    if node.type in _NAMED_SCOPES and node.child_by_field_name("body") is not None:
        name = node.child_by_field_name("name")
        return name.text.decode(errors="replace") if name is not None else ""
    return ""
