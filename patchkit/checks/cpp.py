"""C++ structural analysis with tree-sitter: call sites, what their receivers are bound to, and
the flag names a flags argument resolves to.

Each file is parsed once and queried once. Names are looked up the way C++ scopes them, walking
outwards from the use (blocks, loops, lambdas, parameters, the class body, namespaces), so that a
constant dropped into a function body is not mistaken for the class member of the same name.
Code in `#if 0` never counts; parse errors stay local: they taint only what overlaps them.
The cost grows linearly with nesting depth: nothing recurses per level, parents are remembered
(tree-sitter finds one by descending from the root), and name lookups share their walks out.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from patchkit.checks.results import Region
from patchkit.scopes import cpp_parser, function_declarator

if TYPE_CHECKING:
    from tree_sitter import Node, Query

# Calls that hand back an element of (or an iterator into) the container they are called on, and
# algorithms whose result points into their first argument: a receiver obtained through them is
# bound to the container's member.
_ACCESSORS = frozenset({"begin", "end", "rbegin", "rend", "cbegin", "cend", "front", "back", "at",
                        "emplace_back", "emplace_front", "emplace", "data", "find"})
_ALGORITHMS = frozenset({"find", "find_if", "find_if_not", "lower_bound", "upper_bound",
                         "min_element", "max_element", "prev", "next", "begin", "end"})
_WRAPPERS = frozenset({"unique_ptr", "shared_ptr", "weak_ptr", "optional", "reference_wrapper"})
_CASTS = frozenset({"static_cast", "reinterpret_cast", "const_cast"})
_SCOPES_WITH_STATEMENTS = frozenset({"compound_statement", "translation_unit", "declaration_list"})
_PREPROC_BLOCKS = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif",
                             "preproc_elifdef"})
_SCOPE_KINDS = {"compound_statement": "local", "field_declaration_list": "member",
                "translation_unit": "global", "declaration_list": "global"}
_STATEMENT_PARENTS = _SCOPES_WITH_STATEMENTS | _PREPROC_BLOCKS | {"field_declaration_list"}
_MAX_DEPTH = 32  # alias and macro chains longer than this are not code anyone writes

_QUERY = """
(call_expression
  function: [(field_expression field: [(field_identifier) @call.name
                                       (template_method name: (field_identifier) @call.name)])
             (identifier) @call.name
             (qualified_identifier name: (identifier) @call.name)]
  (#any-of? @call.name {names})) @call
(preproc_if) @if
(preproc_def name: (identifier) @define.name) @define
(struct_specifier name: (type_identifier) @class.name body: (field_declaration_list) @class.body)
(class_specifier name: (type_identifier) @class.name body: (field_declaration_list) @class.body)
"""


@functools.cache
def _query(names: frozenset[str]) -> Query:
    from tree_sitter import Query

    quoted = " ".join(f'"{n}"' for n in sorted(names))
    return Query(cpp_parser().language, _QUERY.format(names=quoted))


@dataclass(frozen=True)
class Call:
    node: Node
    name: str
    name_node: Node
    receiver: Node | None  # `x` of `x.f(...)` / `x->f(...)`
    operator: str  # ".", "->" or "" without a receiver

    @property
    def code(self) -> str:
        return _squash(self.node.text)

    @property
    def receiver_text(self) -> str:
        return _squash(self.receiver.text) if self.receiver is not None else ""

    @property
    def short(self) -> str:
        """`ckpt.load_tgt(...)`: how messages name the call."""
        return f"{self.receiver_text}{self.operator}{self.name}(...)"


@dataclass(frozen=True)
class Binding:
    """What a call's receiver refers to: a member name, or why that cannot be told."""

    member: str | None
    reason: str  # when member is None
    errors: tuple[Region, ...]  # parse errors overlapping a declaration on the way


@dataclass(frozen=True)
class Flags:
    """A flags argument resolved: known names, plus whatever part is not known statically."""

    names: frozenset[str] = frozenset()
    dynamic: tuple[str, ...] = ()  # run-time parts, each with its reason
    unresolved: tuple[str, ...] = ()  # names the analysis cannot follow, each with its reason
    errors: tuple[Region, ...] = ()

    def __or__(self, other: Flags) -> Flags:
        return Flags(self.names | other.names, self.dynamic + other.dynamic,
                     self.unresolved + other.unresolved, self.errors + other.errors)


@dataclass(frozen=True)
class _Decl:
    name: str
    node: Node  # the whole declaration: its line, and the parse errors it overlaps
    kind: str  # "local", "global", "member", "parameter", "range" (a range-for variable)
    type: Node | None  # None for `auto`
    value: Node | None  # the initialiser, or the range of a range-for
    constant: bool  # const or constexpr


@dataclass
class _Trace:
    """The parse errors met on the way to an answer: those the declarations it used overlap."""

    errors: dict[tuple[int, int], Region] = field(default_factory=dict)  # keyed by position

    def add(self, region: Region) -> None:
        self.errors[region.line, region.column] = region


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    node: Node  # the `#if` or the statement with the parse error
    region: Region


class _Parents:
    """The parent of a node, remembered. tree-sitter keeps no parent links: `Node.parent`
    descends from the root, so a walk up N levels through it costs N² steps. Here the first
    question about a node descends once and remembers the parent of every node on the way, so
    that walking on up from it, or from its neighbours, costs one step per level."""

    def __init__(self, root: Node) -> None:
        self._root = root
        self._known: dict[int, Node | None] = {root.id: None}  # by node id

    def __call__(self, node: Node) -> Node | None:
        if node.id not in self._known:
            step = self._root  # what ts_node_parent does, remembering each step
            while (child := step.child_with_descendant(node)) is not None and child.id != node.id:
                self._known[child.id] = step
                step = child
            self._known[node.id] = step
        return self._known[node.id]

    def children(self, node: Node) -> list[Node]:
        """NODE's children, remembering their parent: walks down then need no descent to go up."""
        children = node.children
        self._known.update((child.id, node) for child in children)
        return children


class CppFile:
    """One parsed C++ file and the questions the checks ask of it."""

    def __init__(self, source: bytes, call_names: frozenset[str]) -> None:
        self.source = source
        self._tree = cpp_parser().parse(source)
        self._line_starts: list[int] | None = None
        self._macros: dict[int, Node | None] = {}
        root = self._tree.root_node
        self._parent = _Parents(root)
        self._lookups: dict[tuple[str, int], _Decl | None] = {}  # (name, id of the node it is used at)
        self._kinds: dict[int, str] = {}  # _statement_kind of `#ifdef` blocks, by node id
        calls: list[Node] = []
        ifs: list[Node] = []
        self._defines: dict[str, list[Node]] = {}
        classes: dict[str, list[Node]] = {}
        from tree_sitter import QueryCursor

        for _, found in QueryCursor(_query(call_names)).matches(root):
            if "call" in found:
                calls.append(found["call"][0])
            elif "if" in found:
                ifs.append(found["if"][0])
            elif "define" in found:
                self._defines.setdefault(found["define.name"][0].text.decode(), []).append(found["define"][0])
            else:
                classes.setdefault(found["class.name"][0].text.decode(), []).append(found["class.body"][0])
        self._disabled = _merge([s for node in ifs for s in self._dead_branches(node)])
        self._disabled_starts = [s.start for s in self._disabled]
        self._errors = [s for s in self._error_spans(root) if not self.disabled(s.start, s.end)]
        self._classes = {name: [b for b in bodies if not self.disabled(b.start_byte, b.end_byte)]
                         for name, bodies in classes.items()}
        self.calls = tuple(_call(n) for n in sorted(calls, key=lambda n: n.start_byte)
                           if not self.disabled(n.start_byte, n.end_byte))
        self._call_names = {c.name_node.start_byte for c in self.calls}

    # -- regions -----------------------------------------------------------------------------

    @property
    def regions(self) -> tuple[Region, ...]:
        return tuple(s.region for s in sorted([*self._disabled, *self._errors], key=lambda s: s.start))

    def disabled(self, start: int, end: int) -> bool:
        from bisect import bisect_right

        i = bisect_right(self._disabled_starts, start) - 1
        return i >= 0 and self._disabled[i].end >= end

    def errors_at(self, node: Node) -> tuple[Region, ...]:
        return tuple(s.region for s in self._errors if _overlaps(s, node.start_byte, node.end_byte))

    def hidden(self, names: frozenset[str], within: Node | None = None) -> dict[Region, set[str]]:
        """Parse-error statements (inside WITHIN) that hold one of NAMES as a name which is not
        that of a call found: the code there may hide a call, or a declaration, of that name."""
        found: dict[Region, set[str]] = {}
        for span in self._errors:
            if within is not None and not _overlaps(span, within.start_byte, within.end_byte):
                continue
            stack = [span.node]
            while stack:
                node = stack.pop()
                if node.type in ("identifier", "field_identifier") and node.text.decode() in names \
                        and node.start_byte not in self._call_names:
                    found.setdefault(span.region, set()).add(node.text.decode())
                stack.extend(node.children)
        return found

    def _dead_branches(self, node: Node) -> list[_Span]:
        """`#if 0` bodies and the `#else` side of `#if 1`, following `#elif` chains."""
        spans = []
        while node is not None:
            cond = node.child_by_field_name("condition")
            alt = node.child_by_field_name("alternative")
            value = _literal_truth(cond)
            end = alt.start_byte if alt is not None else node.end_byte
            if value is False:
                spans.append(self._span("disabled", node, _squash(self.source[node.start_byte:end]), end))
            if value is True and alt is not None:
                spans.append(self._span("disabled", alt, _squash(alt.text)))
                break
            node = alt if alt is not None and alt.type == "preproc_elif" else None
        return spans

    def _error_spans(self, root: Node) -> list[_Span]:
        """One span per statement or declaration holding ERROR or MISSING nodes.

        tree-sitter keeps an ERROR node small but may misread the code around it (a conflict
        marker turns the next call into a declaration), so the whole statement is suspect;
        the statements before and after it are not. Only subtrees with an error are visited."""
        spans: dict[int, _Span] = {}
        stack = [root]
        while stack:
            node = stack.pop()
            if node.is_error or node.is_missing:
                statement = self._statement(node)
                if statement.start_byte not in spans:
                    what = f"missing '{node.type}'" if node.is_missing else _squash(node.text)
                    if statement != node:
                        what = f"{what} in: {_squash(statement.text)}"
                    spans[statement.start_byte] = self._span("parse-error", statement, what)
                continue
            stack.extend(c for c in self._parent.children(node) if c.has_error)
        return _merge(list(spans.values()))

    def _span(self, kind: str, node: Node, text: str, end: int | None = None) -> _Span:
        end = node.end_byte if end is None else end
        line, column = self.position(node.start_byte)
        end_line, end_column = self.position(end)
        return _Span(node.start_byte, end, node,
                     Region(kind, line, column, end_line, end_column, _shorten(text, 60)))

    def position(self, byte: int) -> tuple[int, int]:
        """1-based line and 1-based character column of a byte offset."""
        line_start = self.source.rfind(b"\n", 0, byte) + 1
        column = len(self.source[line_start:byte].decode("utf-8", errors="replace")) + 1
        return self._line_of(line_start), column

    def _line_of(self, line_start: int) -> int:
        from bisect import bisect_right

        if self._line_starts is None:  # built once, on the first position asked
            self._line_starts = [0] + [m.end() for m in re.finditer(rb"\n", self.source)]
        return bisect_right(self._line_starts, line_start)

    # -- receivers ---------------------------------------------------------------------------

    def binding(self, call: Call) -> Binding:
        trace = _Trace()
        if call.receiver is None:
            member, reason = None, f"{call.name}(...) has no receiver"
        else:
            member, reason = self._bind(call.receiver, call.receiver, trace, 0)
        return Binding(member, reason, tuple(trace.errors.values()))

    def _bind(self, e: Node, anchor: Node, trace: _Trace, depth: int) -> tuple[str | None, str]:
        text = _squash(e.text)
        if depth > _MAX_DEPTH:
            return None, f"{text}: alias chain too long"
        kind = e.type
        if kind in ("parenthesized_expression", "pointer_expression", "subscript_expression"):
            inner = e.child_by_field_name("argument") or _kids(e)[-1]
            return self._bind(inner, anchor, trace, depth + 1)
        if kind == "field_expression":
            return e.child_by_field_name("field").text.decode(), ""
        if kind == "call_expression":
            inner = _accessed(e)
            if inner is None:
                return None, f"{text} is returned by a function"
            return self._bind(inner, anchor, trace, depth + 1)
        if kind != "identifier":
            return None, f"cannot follow {text}"
        decl = self._lookup(text, anchor)
        if decl is None:
            return None, f"{text} is not declared in this file"
        self._touch(trace, decl.node)
        if decl.kind == "member":
            return text, ""  # an implicit this->member
        if decl.value is None or decl.kind == "parameter":
            return None, f"{text} is a {_describe(decl.kind)} (line {self._line(decl.node)}) not bound in this file"
        return self._bind(decl.value, decl.value, trace, depth + 1)

    # -- flags -------------------------------------------------------------------------------

    def flags(self, call: Call, index: int) -> Flags | None:
        """The flags of argument INDEX (Python indexing); None when the call has no such argument."""
        args = _kids(call.node.child_by_field_name("arguments"))
        if not -len(args) <= index < len(args):
            return None
        trace = _Trace()
        value = self._eval(args[index], args[index], trace, 0)
        return Flags(value.names, value.dynamic, value.unresolved, tuple(trace.errors.values()))

    def _eval(self, e: Node, anchor: Node, trace: _Trace, depth: int) -> Flags:
        """ANCHOR is where names in E are looked up: E itself, or the use of the macro E came from."""
        text = _squash(e.text)
        if depth > _MAX_DEPTH:
            return Flags(unresolved=(f"{text}: chain of names too long",))
        kind = e.type
        if kind == "parenthesized_expression":
            return self._eval(_kids(e)[-1], anchor, trace, depth + 1)
        if kind == "cast_expression":
            return self._eval(e.child_by_field_name("value"), anchor, trace, depth + 1)
        if kind == "binary_expression":
            op = e.child_by_field_name("operator").type
            if op != "|":
                return Flags(unresolved=(f"operator {op} in {text}",))
            return (self._eval(e.child_by_field_name("left"), anchor, trace, depth + 1)
                    | self._eval(e.child_by_field_name("right"), anchor, trace, depth + 1))
        if kind == "number_literal":
            return Flags() if re.fullmatch(r"0+[uUlL]*", text) else Flags(frozenset({text}))
        if kind == "identifier":
            return self._eval_name(text, anchor, trace, depth)
        if kind in ("field_expression", "qualified_identifier"):
            return self._eval_member(e, anchor, trace, depth)
        if kind == "call_expression":
            fn = e.child_by_field_name("function")
            args = _kids(e.child_by_field_name("arguments"))
            # static_cast<T>(x); and `(T) (x)`, which tree-sitter reads as a call of `(T)`
            cast = (fn.type == "template_function" and _name(fn) in _CASTS
                    or fn.type == "parenthesized_expression" and _kids(fn)[-1].type == "identifier")
            if cast and len(args) == 1:
                return self._eval(args[0], anchor, trace, depth + 1)
            return Flags(dynamic=(f"the result of {_squash(fn.text)}(...)",))
        if kind == "conditional_expression":
            return Flags(dynamic=(f"chosen at run time by {_shorten(text, 60)}",))
        return Flags(unresolved=(f"cannot read {_shorten(text, 60)}",))

    def _eval_name(self, name: str, anchor: Node, trace: _Trace, depth: int) -> Flags:
        define = self._define(name, anchor)
        if define is not None:
            self._touch(trace, define)
            if define.id not in self._macros:
                self._macros[define.id] = _macro_body(define)
            body = self._macros[define.id]
            if body is None:
                return Flags(unresolved=(f"macro {name} (line {self._line(define)}) is not a plain expression",))
            return self._eval(body, anchor, trace, depth + 1)
        decl = self._lookup(name, anchor)
        if decl is None:
            return Flags(frozenset({name}))  # declared elsewhere (llama.h): a flag name itself
        return self._eval_decl(decl, trace, depth)

    def _eval_member(self, e: Node, anchor: Node, trace: _Trace, depth: int) -> Flags:
        text = _squash(e.text)
        if e.type == "qualified_identifier":
            scope, member = e.child_by_field_name("scope"), _name(e)
            cls = _squash(scope.text) if scope is not None else None
            if cls not in self._classes:
                return Flags(frozenset({member}))  # a namespace-qualified name from elsewhere
        else:
            member = e.child_by_field_name("field").text.decode()
            cls = self._class_of(e.child_by_field_name("argument"), anchor, trace, depth + 1)
            if cls is None:
                obj = _squash(e.child_by_field_name("argument").text)
                return Flags(unresolved=(f"cannot tell which struct {obj} is, for {text}",))
        bodies = self._classes.get(cls, [])
        if len(bodies) != 1:
            where = "is not defined in this file" if not bodies else f"is defined {len(bodies)} times"
            return Flags(unresolved=(f"{text}: struct {cls} {where}",))
        decl = self._member(bodies[0], member)
        if decl is None:
            for region in self.hidden(frozenset({member}), bodies[0]):
                trace.add(region)  # the member may be there, in code that could not be parsed
            return Flags(unresolved=(f"{text}: {cls} has no member {member} declared at class scope"
                                     + self._elsewhere(member),))
        return self._eval_decl(decl, trace, depth)

    def _eval_decl(self, decl: _Decl, trace: _Trace, depth: int) -> Flags:
        self._touch(trace, decl.node)
        where = f"line {self._line(decl.node)}"
        if decl.kind == "parameter":
            return Flags(dynamic=(f"{decl.name} is a parameter ({where})",))
        if not decl.constant:
            what = "a non-constant member" if decl.kind == "member" else "a variable, not a constant"
            return Flags(dynamic=(f"{decl.name} is {what} ({where})",))
        if decl.value is None:
            return Flags(unresolved=(f"{decl.name} ({where}) has no initialiser here",))
        return self._eval(decl.value, decl.value, trace, depth + 1)

    def _elsewhere(self, name: str) -> str:
        """Where declarations of NAME are, if not at class scope: what a misplaced hunk leaves."""
        places = []
        for m in re.finditer(rb"\b" + re.escape(name.encode()) + rb"\b", self.source):
            node = self._tree.root_node.named_descendant_for_byte_range(m.start(), m.end())
            decl = self._enclosing_declaration(node)
            if decl is not None and not self.disabled(decl.start_byte, decl.end_byte):
                places.append(f"line {self._line(decl)} {self._context(decl)}")
        return f" (declared at {', '.join(places)})" if places else ""

    def _context(self, node: Node) -> str:
        function = self.function_of(node)
        if function:
            return f"inside the body of {function}()"
        body = self._parent(node)
        owner = self._parent(body) if body is not None else None
        if owner is not None and body.type == "field_declaration_list":
            return f"in {owner.type.split('_')[0]} {_name(owner)}"
        return "at namespace scope"

    # -- types -------------------------------------------------------------------------------

    def _class_of(self, e: Node, anchor: Node, trace: _Trace, depth: int) -> str | None:
        t = self._type_of(e, anchor, trace, depth)
        return _class_name(t) if t is not None else None

    def _type_of(self, e: Node, anchor: Node, trace: _Trace, depth: int) -> Node | None:
        """The declared type node of expression E, following `auto` to its initialiser; an
        iterator is taken as its element (we need only the struct, to look up members)."""
        if depth > _MAX_DEPTH:
            return None
        kind = e.type
        if kind in ("parenthesized_expression", "pointer_expression"):
            inner = e.child_by_field_name("argument") or _kids(e)[-1]
            return self._type_of(inner, anchor, trace, depth + 1)
        if kind == "cast_expression":
            return e.child_by_field_name("type")
        if kind == "this":
            return self._enclosing_class_name(anchor)
        if kind == "subscript_expression":
            return _element_type(self._type_of(e.child_by_field_name("argument"), anchor, trace, depth + 1))
        if kind == "call_expression":
            inner = _accessed(e)
            if inner is None:
                return None
            inner_type = self._type_of(inner, anchor, trace, depth + 1)
            if e.child_by_field_name("function").type == "field_expression":
                return _element_type(inner_type)  # x.back(), x.begin(): an element of x
            return inner_type  # find_if(first, ...): what `first` already points at
        if kind == "field_expression":
            cls = self._class_of(e.child_by_field_name("argument"), anchor, trace, depth + 1)
            bodies = self._classes.get(cls or "", [])
            decl = self._member(bodies[0], e.child_by_field_name("field").text.decode()) if len(bodies) == 1 else None
        elif kind == "identifier":
            decl = self._lookup(e.text.decode(), anchor)
        else:
            return None
        if decl is None:
            return None
        self._touch(trace, decl.node)
        if decl.type is not None:
            return decl.type
        if decl.value is None:
            return None
        value_type = self._type_of(decl.value, decl.value, trace, depth + 1)
        return _element_type(value_type) if decl.kind == "range" else value_type

    def _enclosing_class_name(self, node: Node) -> Node | None:
        while node is not None:
            if node.type == "field_declaration_list":
                return self._parent(node).child_by_field_name("name")
            if node.type == "function_definition":
                owner = _qualified_owner(node)
                if owner is not None:
                    return owner
            node = self._parent(node)
        return None

    # -- name lookup -------------------------------------------------------------------------

    def _lookup(self, name: str, at: Node) -> _Decl | None:
        """The declaration NAME refers to at AT, walking the enclosing scopes outwards.

        Where the name is not declared in a scope before the node walked from, the answer is that
        for the scope itself: remembered for each scope passed, so lookups of one name from
        deep inside nested blocks walk out through each level once between them."""
        walked: list[tuple[str, int]] = []
        node, found = at, None
        while (key := (name, node.id)) not in self._lookups and (scope := self._parent(node)) is not None:
            walked.append(key)
            found = self._declared_in(scope, name, node)
            if found is not None:
                break
            node = scope
        else:
            found = self._lookups.get(key)
        for key in walked:
            self._lookups[key] = found
        return found

    def _declared_in(self, scope: Node, name: str, child: Node) -> _Decl | None:
        kind = scope.type
        if kind in _SCOPES_WITH_STATEMENTS or kind in _PREPROC_BLOCKS:
            decl_kind = self._statement_kind(scope)
            for sibling in reversed(scope.named_children):
                if sibling.end_byte <= child.start_byte:
                    found = self._declared_among(sibling, name, decl_kind)
                    if found is not None:
                        return found
            return None
        if kind == "for_statement":
            init = scope.child_by_field_name("initializer")
            return _declaration(init, name, "local") if init is not None and init.type == "declaration" else None
        if kind == "for_range_loop":
            if _declarator_name(scope.child_by_field_name("declarator"))[0] == name:
                return _Decl(name, scope, "range", _declared_type(scope), scope.child_by_field_name("right"),
                             constant=False)
            return None
        if kind in ("function_definition", "lambda_expression"):
            found = self._parameter(scope, name)
            owner = _qualified_owner(scope) if kind == "function_definition" else None
            if found is None and owner is not None:
                bodies = self._classes.get(owner.text.decode(), [])
                found = self._member(bodies[0], name) if len(bodies) == 1 else None
            return found
        if kind == "field_declaration_list":
            return self._member(scope, name)
        return None

    def _declared_among(self, node: Node, name: str, kind: str) -> _Decl | None:
        """NAME declared by NODE, or inside the `#ifdef X` blocks it is (they open no scope):
        the last such declaration, searched with a stack, since those blocks may nest deep."""
        stack = [node]
        while stack:
            node = stack.pop()
            if self.disabled(node.start_byte, node.end_byte):
                continue
            if node.type in ("declaration", "field_declaration"):
                found = _declaration(node, name, kind)
                if found is not None:
                    return found
            elif node.type in _PREPROC_BLOCKS:
                stack.extend(node.named_children)  # popped last first
        return None

    def _member(self, body: Node, name: str) -> _Decl | None:
        """A member declared at class scope of BODY (never inside a member function)."""
        for child in body.named_children:
            found = self._declared_among(child, name, "member")
            if found is not None:
                return found
        return None

    def _parameter(self, function: Node, name: str) -> _Decl | None:
        declarator = function_declarator(function, ("function_declarator", "abstract_function_declarator"))
        params = declarator.child_by_field_name("parameters") if declarator is not None else None
        for param in _kids(params) if params is not None else []:
            if _declarator_name(param.child_by_field_name("declarator"))[0] == name:
                return _Decl(name, param, "parameter", _declared_type(param), None, constant=False)
        return None

    def _define(self, name: str, at: Node) -> Node | None:
        """The last live `#define NAME` before AT."""
        live = [d for d in self._defines.get(name, ())
                if d.start_byte < at.start_byte and not self.disabled(d.start_byte, d.end_byte)]
        return live[-1] if live else None

    def _statement_kind(self, scope: Node | None) -> str:
        """What declarations directly in SCOPE are: that of the scope around an `#ifdef` block,
        remembered for the blocks passed, since they may nest deep."""
        passed, kind = [], "global"
        while scope is not None:
            if scope.id in self._kinds:
                kind = self._kinds[scope.id]
                break
            if scope.type in _SCOPE_KINDS:
                kind = _SCOPE_KINDS[scope.type]
                break
            passed.append(scope.id)
            scope = self._parent(scope)
        for scope_id in passed:
            self._kinds[scope_id] = kind
        return kind

    def _statement(self, node: Node) -> Node:
        """The statement, declaration or member around NODE (NODE itself when it is one)."""
        while (parent := self._parent(node)) is not None and parent.type not in _STATEMENT_PARENTS:
            node = parent
        return node

    def _enclosing_declaration(self, node: Node | None) -> Node | None:
        """The declaration whose declarator NODE names, or None when NODE is a mere use."""
        child = node
        while child is not None and (parent := self._parent(child)) is not None:
            if parent.type in ("declaration", "field_declaration"):
                return parent if parent.field_name_for_child(_index(parent, child)) == "declarator" else None
            if parent.type not in ("init_declarator", "reference_declarator", "pointer_declarator",
                                   "array_declarator") or parent.child_by_field_name("value") == child:
                return None
            child = parent
        return None

    def _touch(self, trace: _Trace, node: Node) -> None:
        for s in self._errors:
            if _overlaps(s, node.start_byte, node.end_byte):
                trace.add(s.region)

    def _line(self, node: Node) -> int:
        return node.start_point.row + 1

    def function_of(self, node: Node) -> str:
        """`S::f` for the function around NODE ("" at file scope); lambdas count as their host."""
        while node is not None and node.type != "function_definition":
            node = self._parent(node)
        if node is None:
            return ""
        name = _squash(_function_name(node).text) if _function_name(node) is not None else ""
        owner = self._enclosing_class_name(self._parent(node))
        return f"{owner.text.decode()}::{name}" if owner is not None and "::" not in name else name


# -- helpers on nodes ------------------------------------------------------------------------


def _call(node: Node) -> Call:
    fn = node.child_by_field_name("function")
    name = _name_node(fn)
    if fn.type == "field_expression":
        op = fn.child_by_field_name("operator")
        return Call(node, name.text.decode(), name, fn.child_by_field_name("argument"),
                    op.type if op is not None else ".")
    return Call(node, name.text.decode(), name, None, "")


def _accessed(call: Node) -> Node | None:
    """For `x.back()` or `std::find_if(x.begin(), ...)`: the expression whose element is returned."""
    fn = call.child_by_field_name("function")
    if fn.type == "field_expression":
        return fn.child_by_field_name("argument") if _name(fn) in _ACCESSORS else None
    args = _kids(call.child_by_field_name("arguments"))
    return args[0] if fn.type in ("identifier", "qualified_identifier") and _name(fn) in _ALGORITHMS and args else None


def _name(node: Node) -> str:
    """The last plain name of an identifier, a qualified name, a field or a template."""
    return _name_node(node).text.decode()


def _name_node(node: Node) -> Node:
    for key in ("field", "name"):
        inner = node.child_by_field_name(key)
        if inner is not None:
            return _name_node(inner)
    return node


def _kids(node: Node) -> list[Node]:
    return [c for c in node.named_children if c.type != "comment"]


def _declaration(node: Node, name: str, kind: str) -> _Decl | None:
    for declarator in node.children_by_field_name("declarator"):
        found, value = _declarator_name(declarator)
        if found == name:
            if value is None:
                value = node.child_by_field_name("default_value")  # `T m = x;` in a class body
            constant = any(c.type == "type_qualifier" and c.text in (b"const", b"constexpr")
                           for c in node.children)
            return _Decl(name, node, kind, _declared_type(node), _unbrace(value), constant)
    return None


def _declarator_name(node: Node | None) -> tuple[str | None, Node | None]:
    """(declared name, initialiser) of a declarator; no name for a function declarator."""
    value = None
    while node is not None:
        kind = node.type
        if kind in ("identifier", "field_identifier"):
            return node.text.decode(), value
        if kind == "init_declarator":
            value = node.child_by_field_name("value")
            node = node.child_by_field_name("declarator")
        elif kind in ("reference_declarator", "pointer_declarator", "array_declarator"):
            node = node.child_by_field_name("declarator") or _kids(node)[-1]
        else:
            return None, None
    return None, None


def _unbrace(value: Node | None) -> Node | None:
    """`T x{v}` and `T x(v)` initialise from v."""
    if value is not None and value.type in ("initializer_list", "argument_list"):
        kids = _kids(value)
        return kids[0] if len(kids) == 1 else value
    return value


def _declared_type(node: Node) -> Node | None:
    t = node.child_by_field_name("type")
    return None if t is None or t.type == "placeholder_type_specifier" else t


def _function_name(function: Node) -> Node | None:
    declarator = function_declarator(function)
    return declarator.child_by_field_name("declarator") if declarator is not None else None


def _qualified_owner(function: Node) -> Node | None:
    """For `void S::f()`: the node naming S."""
    name = _function_name(function)
    return name.child_by_field_name("scope") if name is not None and name.type == "qualified_identifier" else None


def _index(parent: Node, child: Node) -> int:
    return next(i for i, c in enumerate(parent.children) if c == child)


def _class_name(t: Node | None) -> str | None:
    if t is None:
        return None
    kind = t.type
    if kind == "type_descriptor":
        return _class_name(t.child_by_field_name("type"))
    if kind in ("type_identifier", "namespace_identifier"):
        return t.text.decode()
    if kind == "qualified_identifier":
        return _class_name(t.child_by_field_name("name"))
    if kind == "template_type":
        name = _name(t.child_by_field_name("name"))
        return _class_name(_first_type_argument(t)) if name in _WRAPPERS else name
    if kind in ("struct_specifier", "class_specifier"):
        return _name(t)
    return None


def _element_type(t: Node | None) -> Node | None:
    """The element type of a container type node (`std::vector<server_slot>` -> server_slot)."""
    if t is None:
        return None
    if t.type in ("type_descriptor", "qualified_identifier"):
        return _element_type(t.child_by_field_name("type") or t.child_by_field_name("name"))
    return _first_type_argument(t) if t.type == "template_type" else None


def _first_type_argument(t: Node) -> Node | None:
    args = t.child_by_field_name("arguments")
    first = next((a for a in _kids(args) if a.type == "type_descriptor"), None) if args is not None else None
    return first.child_by_field_name("type") if first is not None else None


def _literal_truth(cond: Node | None) -> bool | None:
    if cond is None:
        return None
    text = _squash(cond.text)
    if cond.type == "number_literal" or text in ("true", "false"):
        return text not in ("0", "false")
    return None


def _macro_body(define: Node) -> Node | None:
    """The expression a simple `#define` stands for; None when its body is not one."""
    value = define.child_by_field_name("value")
    if value is None:
        return None
    root = cpp_parser().parse(b"int __patchkit_macro = (" + value.text + b"\n);").root_node
    if root.has_error:
        return None
    declarator = root.named_children[0].child_by_field_name("declarator")
    return declarator.child_by_field_name("value") if declarator is not None else None


def _merge(spans: list[_Span]) -> list[_Span]:
    """Sorted, without the spans nested in another (an `#if 0` inside an `#if 0`)."""
    merged: list[_Span] = []
    for s in sorted(spans, key=lambda s: (s.start, -s.end)):
        if not merged or s.end > merged[-1].end:
            merged.append(s)
    return merged


def _overlaps(span: _Span, start: int, end: int) -> bool:
    if span.start == span.end:  # a MISSING token: a point
        return start <= span.start <= end
    return span.start < end and start < span.end


def _describe(kind: str) -> str:
    return {"parameter": "parameter", "range": "loop variable", "member": "member"}.get(kind, "variable")


def _squash(text: bytes | None) -> str:
    return " ".join((text or b"").decode("utf-8", errors="replace").split())


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
