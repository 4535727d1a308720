"""Which function a line belongs to: git's funcname rule, and for C and C++ a real parse.

The apply ladder asks this of every candidate place, so that a hunk never moves into another
function because its own site changed upstream and a twin elsewhere still matches. git's rule
(the `@@ ... @@ section` of a hunk) is cheap but weak in C++, where every method of a class gets
the same `private:` line; the parse names the enclosing function itself.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

# git's default funcname rule: the nearest line above the hunk that starts with a letter, '_' or
# '$' (what it writes after the second "@@"), trimmed and cut at 80 bytes.
_FUNCNAME = re.compile(r"^[A-Za-z_$]")
_CPP_SUFFIXES = (".c", ".h", ".cc", ".hh", ".cpp", ".hpp", ".cxx", ".hxx", ".c++", ".h++",
                 ".cu", ".cuh", ".inl", ".ipp", ".tpp", ".m", ".mm")
_NAMED_SCOPES = {"namespace_definition", "class_specifier", "struct_specifier", "union_specifier"}


def funcname_at(lines: list[str], start: int) -> str:
    """git's section for a hunk whose pre-image starts at 0-based line START."""
    for i in range(start - 1, -1, -1):
        if _FUNCNAME.match(lines[i]):
            # git cuts at 80 bytes, not characters
            cut = lines[i].rstrip().encode("utf-8", errors="surrogateescape")[:80]
            return cut.decode("utf-8", errors="surrogateescape").rstrip()
    return ""


def starts_function(line: str) -> bool:
    """A line git's funcname rule would name as a section."""
    return bool(_FUNCNAME.match(line))


def is_cpp(path: str) -> bool:
    return path.lower().endswith(_CPP_SUFFIXES)


@functools.cache
def _parser() -> Parser:
    from tree_sitter import Language, Parser
    import tree_sitter_cpp

    return Parser(Language(tree_sitter_cpp.language()))


class CppScopes:
    """The named scopes (namespaces, classes, functions) around each line of one C/C++ file."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines
        self._source = "".join(lines).encode("utf-8", errors="surrogateescape")
        self._root: Node | None = None

    def scope_at(self, line: int) -> str:
        """`ns::S::f` for 0-based LINE ("" at file scope); lambdas and blocks count as their host."""
        if self._root is None:
            self._root = _parser().parse(self._source).root_node
        text = self._lines[line] if 0 <= line < len(self._lines) else ""
        column = len(text.encode("utf-8", errors="surrogateescape")) - len(text.lstrip().encode(
            "utf-8", errors="surrogateescape"))
        node = self._root.descendant_for_point_range((line, column), (line, column))
        names = []
        while node is not None:
            name = _scope_name(node)
            if name:
                names.append(name)
            node = node.parent
        return "::".join(reversed(names))


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
