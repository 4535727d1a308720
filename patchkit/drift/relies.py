"""What a patch's added lines rely on that a compiler will not check: aggregates they initialise
by position, names they use as numbers (enumerators in casts, arithmetic, comparisons of order,
array indices), macros they expand, and the functions they call (whose default arguments fill in
what the call leaves out, and whose parameter types convert what it passes).

Read from the patched file with the C++ parse the site checks use; only the nodes that start on an
added line are looked at. What each name is (an enumerator or a macro, a struct) is for the
declarations to say (declarations.py): here a name is only a candidate.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from patchkit.scopes import cpp_parser

if TYPE_CHECKING:
    from tree_sitter import Node

# Operators whose result depends on an operand's number, not only its identity (== and != do not).
_NUMERIC_OPERATORS = frozenset({"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "<", ">", "<=", ">="})
_CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]*$")  # how C and C++ code names enumerators and macros
_AGGREGATE_HOSTS = frozenset({"new_expression", "compound_literal_expression", "init_declarator"})


@dataclass(frozen=True)
class Reliance:
    """One thing an added line relies on."""

    # "aggregate" (initialised by position), "numeric" (a constant used as a number), "name" (any
    # other use of a constant: a macro's expansion), "call" (a function), "method" (`x.f()`)
    kind: str
    name: str  # the struct, the constant, the function
    reach: int  # aggregate: the values given; call: the arguments passed; else 0
    line: int  # 1-based, in the patched file


def reliances(source: bytes, added: list[int]) -> list[Reliance]:
    """What the lines ADDED (1-based, sorted) of the C/C++ file SOURCE rely on, each use once."""
    rows = [a - 1 for a in added]
    return [r for node in _added_nodes(cpp_parser().parse(source).root_node, rows) for r in _read(node)]


def _added_nodes(root: Node, rows: list[int]) -> Iterator[Node]:
    """The nodes that start on one of ROWS (0-based), found without visiting the rest of the file."""
    stack = [root]
    while stack:
        node = stack.pop()
        first = bisect.bisect_left(rows, node.start_point[0])
        if first == len(rows) or rows[first] > node.end_point[0]:
            continue  # no added row inside
        if node.start_point[0] in rows[first:first + 1]:
            yield node
        stack.extend(reversed(node.named_children))


def _read(node: Node) -> Iterator[Reliance]:
    line = node.start_point[0] + 1
    if node.type == "initializer_list" and node.parent is not None and node.parent.type in _AGGREGATE_HOSTS:
        values = [c for c in node.named_children if c.type != "comment"]
        if values and not any(c.type == "initializer_pair" for c in values):
            name = _aggregate_type(node.parent)
            if name:
                yield Reliance("aggregate", name, len(values), line)
    elif node.type == "call_expression":
        name = _callee(node.child_by_field_name("function"))
        arguments = node.child_by_field_name("arguments")
        if name and arguments is not None and not _CONSTANT.match(name):
            method = node.child_by_field_name("function").type in ("field_expression", "template_method")
            yield Reliance("method" if method else "call", name,
                           sum(c.type != "comment" for c in arguments.named_children), line)
    elif node.type == "identifier" or (node.type == "qualified_identifier" and node.parent is not None
                                       and node.parent.type != "qualified_identifier"):
        name = node.text.decode("utf-8", errors="replace").rsplit("::", 1)[-1].strip()
        if _CONSTANT.match(name) and not (node.parent is not None and node.parent.type == "qualified_identifier"):
            yield Reliance("numeric" if _numeric(node) else "name", name, 0, line)


def _aggregate_type(host: Node) -> str:
    """The type a braced list initialises: `new T{...}`, `T{...}`, `(struct T){...}`, `T x = {...}`,
    `T x{...}`."""
    holder = host.parent if host.type == "init_declarator" else host
    type_node = holder.child_by_field_name("type") if holder is not None else None
    if type_node is not None and type_node.type == "type_descriptor":  # C's `(struct T){...}`
        type_node = type_node.child_by_field_name("type")
    if type_node is None:
        return ""
    if type_node.type in ("struct_specifier", "class_specifier", "union_specifier"):
        type_node = type_node.child_by_field_name("name")
    if type_node is not None and type_node.type == "qualified_identifier":
        type_node = type_node.child_by_field_name("name")
    return type_node.text.decode("utf-8", errors="replace") if type_node is not None and \
        type_node.type == "type_identifier" else ""


def _callee(function: Node | None) -> str:
    """The name a call calls: `f(...)`, `ns::f(...)`, `x.f(...)`, `x->f(...)`, `f<T>(...)`."""
    while function is not None and function.type in ("qualified_identifier", "template_function",
                                                      "field_expression", "template_method"):
        function = function.child_by_field_name("name") or function.child_by_field_name("field")
    if function is not None and function.type in ("identifier", "field_identifier"):
        return function.text.decode("utf-8", errors="replace")
    return ""


def _numeric(node: Node) -> bool:
    """NODE's value is used as a number: cast, computed with, compared by order, or an index."""
    child, parent = node, node.parent
    while parent is not None and parent.type == "parenthesized_expression":
        child, parent = parent, parent.parent
    if parent is None:
        return False
    if parent.type == "cast_expression":
        return True
    if parent.type == "binary_expression":
        operator = parent.child_by_field_name("operator")
        return operator is not None and operator.type in _NUMERIC_OPERATORS
    if parent.type == "unary_expression":
        operator = parent.child_by_field_name("operator")
        return operator is not None and operator.type in ("-", "~", "+")
    if parent.type in ("subscript_argument_list", "subscript_expression", "array_declarator"):
        return child != parent.child_by_field_name("argument")
    if parent.type == "argument_list" and parent.parent is not None:
        callee = parent.parent.child_by_field_name("function")
        return callee is not None and callee.type == "template_function" and \
            callee.child_by_field_name("name") is not None and \
            callee.child_by_field_name("name").text in (b"static_cast", b"reinterpret_cast")
    return False
