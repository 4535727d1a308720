"""The declarations a patch may rely on, read from one C/C++ file with the parse the site checks
use: struct members in order, enumerators with their values, macro definitions, function
parameters with their types and default arguments, and the typedefs of plain types. Bodies are
never read: a function's body, a member function's, an initialiser's, change nothing here.

Each is known by its qualified name (`ns::cfg`, `llama_context::decode`): `named` says which of
them a use, bare or qualified as the patch writes it, can mean.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from patchkit.drift.preprocess import readable
from patchkit.scopes import cpp_parser

if TYPE_CHECKING:
    from tree_sitter import Node

_RECORDS = frozenset({"struct_specifier", "class_specifier", "union_specifier"})
_FUNCTION_HOLDERS = frozenset({"declaration", "field_declaration", "function_definition"})
_PARAMETERS = frozenset({"parameter_declaration", "optional_parameter_declaration"})
_NAMES = frozenset({"identifier", "field_identifier", "type_identifier"})
# Where declarations sit besides namespace and extern "C" bodies: a preprocessor branch, a template.
_CONTAINERS = frozenset({"declaration_list", "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif",
                         "preproc_elifdef", "template_declaration"})
_PLAIN_TYPES = frozenset({"primitive_type", "sized_type_specifier", "type_identifier", "qualified_identifier"})


@dataclass(frozen=True)
class Parameter:
    type: str  # as written, without the name: `const char *`, `size_t`
    name: str
    default: str | None  # the default argument as written


@dataclass(frozen=True)
class Macro:
    text: str  # `#define NAME(params) body`, comments out, spaces squashed: as a report shows it
    tokens: tuple[str, ...]  # what the preprocessor sees: a comment or spacing changes none


@dataclass(frozen=True)
class Declarations:
    """What one file declares, by qualified name; the first declaration of a name wins (a second
    one in another preprocessor branch is the same entity for another configuration), but a
    macro keeps every definition, in order (`#ifdef _WIN32` … `#else` … are all the patch's)."""

    # struct -> (type, name) of each data member; None: no aggregate (a user-declared constructor).
    # Members in a preprocessor branch: the first branch of each (as a report shows the struct);
    # `variants` has every combination of branches (drift compares them all).
    members: dict[str, tuple[tuple[str, str], ...] | None]
    variants: dict[str, tuple[tuple[tuple[str, str], ...], ...]]
    enumerators: dict[str, tuple[str, tuple[str, ...], int | None]]  # name -> (enum, enumerators, value)
    macros: dict[str, tuple[Macro, ...]]  # name -> each definition
    functions: dict[str, tuple[tuple[Parameter, ...], ...]]  # name -> each declaration's parameters
    typedefs: dict[str, str]  # `typedef int32_t llama_pos;`, `using pos = int32_t;`: name -> the type
    names: dict[str, tuple[str, ...]]  # the last part of each qualified name above -> those names
    records: dict[str, str]  # `typedef struct tag {...} alias;`: alias -> tag, one struct by two names


def named(found: Declarations, table: dict, scope: str, name: str) -> list[str]:
    """The names of TABLE (one of FOUND's) that NAME, qualified by SCOPE as written ("" when
    bare), can mean: `cfg` means `a::cfg` and `b::cfg`, `b::cfg` only the second."""
    tail = f"{scope}::{name}" if scope else name
    return [k for k in found.names.get(name, ()) if k in table and (k == tail or k.endswith("::" + tail))]


def _text(node: Node) -> str:
    return " ".join(node.text.decode("utf-8", errors="replace").split())


def _squash(text: str) -> str:
    """Spaces only where C needs them, so that `char *p` and `char * p` read the same."""
    text = " ".join(text.split())
    return re.sub(r"\s*([*&,()\[\]<>])\s*", r"\1", text)


# A comment is one space (even one across lines, inside a #define); a literal keeps its `//`.
_COMMENT = re.compile(rb'("(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')|//[^\n]*|/\*.*?\*/', re.S)
_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)(\([^)]*\))?((?:\\\n|[^\n])*)", re.M)
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|\w+(?:\.\w+)*|->|\+\+|--|<<=?|>>=?|'
                    r'[<>=!+\-*/%&|^]=|&&|\|\||##|::|\.\.\.|\S')


Outside = Callable[[str], "int | None"]  # a name's value declared outside the file (in what it includes)


def read(source: bytes, outside: Outside | None = None) -> Declarations:
    """SOURCE's declarations; OUTSIDE gives the value of a name an enumerator's value uses that
    SOURCE does not declare (`LLAMA_ROPE_TYPE_NEOX = GGML_ROPE_TYPE_NEOX`, from ggml.h)."""
    found = Declarations({}, {}, {}, {}, {}, {}, {}, {})
    uncommented = _COMMENT.sub(lambda m: m.group(1) or b" ", source)
    for m in _DEFINE.finditer(uncommented):  # the preprocessor's own reading: lines, not a parse
        name, params = m.group(1).decode("utf-8", errors="replace"), m.group(2) or b""
        params_text = params.decode("utf-8", errors="replace")
        body = " ".join(m.group(3).replace(b"\\\n", b" ").decode("utf-8", errors="replace").split())
        text = f"#define {name}{_squash(params_text)}{' ' + body if body else ''}"
        # "" parts a function-like macro's parameters from its body: `F(x)` is not `F (x)`.
        tokens = (*_TOKEN.findall(params_text), "", *_TOKEN.findall(body))
        found.macros[name] = found.macros.get(name, ()) + (Macro(text, tokens),)
    _walk(cpp_parser().parse(readable(source)).root_node, found, "", lambda name: _value(found, name, outside))
    names: dict[str, list[str]] = {}
    for table in (found.members, found.enumerators, found.functions, found.typedefs):
        for key in table:
            names.setdefault(key.rsplit("::", 1)[-1], []).append(key)
    found.names.update((k, tuple(dict.fromkeys(v))) for k, v in names.items())
    return found


def _qualify(scope: str, name: str) -> str:
    return f"{scope}::{name}" if scope else name


def _walk(node: Node, found: Declarations, scope: str, value: Outside) -> None:
    for child in node.named_children:
        kind = child.type
        if kind in _FUNCTION_HOLDERS:
            _function(child, found, scope)
        elif kind in ("type_definition", "alias_declaration"):
            _typedef(child, found, scope)
        spec = child if kind in _RECORDS or kind == "enum_specifier" else child.child_by_field_name("type")
        if spec is not None and spec.type in _RECORDS | {"enum_specifier"}:
            alias = _typedef_name(child) if spec is not child else None
            if spec.type == "enum_specifier":
                _enum(spec, alias, found, scope, value)
            else:
                inner = _record(spec, alias, found, scope)
                body = spec.child_by_field_name("body")
                if body is not None and inner:
                    _walk(body, found, inner, value)  # nested types and member functions
        if kind in _CONTAINERS:
            _walk(child, found, scope, value)
        elif kind in ("namespace_definition", "linkage_specification"):
            body = child.child_by_field_name("body")
            name = child.child_by_field_name("name") if kind == "namespace_definition" else None
            if body is not None and body.type != "declaration_list" and kind == "linkage_specification":
                _walk(child, found, scope, value)  # `extern "C" int f(void);`: one declaration, no braces
            elif body is not None:
                _walk(body, found, _qualify(scope, _text(name).replace(" ", "")) if name is not None else scope, value)


def _typedef(node: Node, found: Declarations, scope: str) -> None:
    """`typedef int32_t llama_pos;`, `using llama_pos = int32_t;`: a plain type's other name (a
    struct's, a pointer's, a function's are not followed)."""
    if node.type == "alias_declaration":
        name, type_node = node.child_by_field_name("name"), node.child_by_field_name("type")
        if type_node is not None and type_node.type == "type_descriptor" and len(type_node.named_children) == 1:
            type_node = type_node.child_by_field_name("type")
        else:
            type_node = None
    else:
        name, type_node = node.child_by_field_name("declarator"), node.child_by_field_name("type")
    if name is not None and name.type == "type_identifier" and type_node is not None \
            and type_node.type in _PLAIN_TYPES:
        prefix = node.text[type_node.start_byte - node.start_byte:type_node.end_byte - node.start_byte]
        if node.type == "type_definition":  # `typedef const int x;`, `typedef unsigned int x;`
            first = node.child_by_field_name("declarator")
            prefix = node.text[len(b"typedef"):first.start_byte - node.start_byte] if first is not None else prefix
        found.typedefs.setdefault(_qualify(scope, _text(name)), _squash(prefix.decode("utf-8", errors="replace")))


def _typedef_name(holder: Node) -> str | None:
    """`typedef struct {...} NAME;`: the NAME an anonymous struct or enum is known by."""
    if holder.type != "type_definition":
        return None
    declarator = holder.child_by_field_name("declarator")
    return _text(declarator) if declarator is not None and declarator.type == "type_identifier" else None


def _record(node: Node, alias: str | None, found: Declarations, scope: str) -> str:
    """The members of a struct, class or union; its qualified name (the scope of what it nests)."""
    body = node.child_by_field_name("body")
    name = node.child_by_field_name("name")
    own = _text(name) if name is not None else alias or ""
    if body is None:
        return ""
    variants = _members(body.named_children, own)
    for key in (_text(name) if name is not None else None, alias):
        if key:
            found.members.setdefault(_qualify(scope, key), variants[0] if variants is not None else None)
            if variants is not None:
                found.variants.setdefault(_qualify(scope, key), tuple(dict.fromkeys(variants)))
    if name is not None and alias:
        found.records.setdefault(_qualify(scope, alias), _qualify(scope, _text(name)))
    return _qualify(scope, own) if own else ""


_Members = tuple[tuple[str, str], ...]
_VARIANTS = 16  # combinations of a struct's preprocessor branches read; more are not told apart


def _members(nodes: list[Node], record: str) -> list[_Members] | None:
    """The data members NODES (a struct body's) declare, one tuple per combination of the
    preprocessor branches they stand in (the first branches' first); None for a constructor."""
    variants: list[_Members] = [()]
    for node in nodes:
        if record and _constructor(node, record):
            return None  # `T{a, b}` calls a constructor: the members' order is no one's business
        if node.type in _BRANCHING:
            options: list[_Members] = []
            for branch in _branches(node):
                inner = _members(branch, record)
                if inner is None:
                    return None
                options += inner
            variants = [v + o for v in variants for o in dict.fromkeys(options)][:_VARIANTS]
        elif node.type == "field_declaration" and not _is_static(node):
            variants = [v + _fields(node) for v in variants]
    return variants


_BRANCHING = frozenset({"preproc_if", "preproc_ifdef"})
_ALTERNATIVES = frozenset({"preproc_elif", "preproc_elifdef"})


def _branches(node: Node) -> list[list[Node]]:
    """The nodes of each branch of a preprocessor conditional; an empty one when it has no `#else`."""
    alternative = node.child_by_field_name("alternative")
    own = [c for c in node.named_children if c != alternative and c != node.child_by_field_name("condition")
           and c != node.child_by_field_name("name")]
    if alternative is None:
        return [own, []]
    if alternative.type in _ALTERNATIVES:
        return [own, *_branches(alternative)]
    return [own, list(alternative.named_children)]


def _fields(field: Node) -> _Members:
    """The (type, name) of each data member FIELD declares: `int a, *b;`, an anonymous union."""
    out = []
    type_node = field.child_by_field_name("type")
    for declarator in field.children_by_field_name("declarator"):
        if _has_function_declarator(declarator):
            continue  # a member function: no member of the aggregate
        ident = _declared_name(declarator)
        shape = _squash(_text(declarator).replace(ident, "", 1)) if ident else ""
        out.append((_squash(f"{_prefix(field, type_node)}{shape}"), ident))
    if field.child_by_field_name("declarator") is None and type_node is not None \
            and type_node.type in _RECORDS and type_node.child_by_field_name("body") is not None:
        out.append((_squash(_text(type_node)), ""))  # an anonymous struct/union member
    return tuple(out)


def _constructor(node: Node, record: str) -> bool:
    """NODE (in RECORD's body) declares a constructor: `T(int);`, `T(int a) : a(a) {}`, `T() = default;`."""
    if node.type == "template_declaration":
        return any(_constructor(c, record) for c in node.named_children)
    if node.type not in _FUNCTION_HOLDERS:
        return False
    for declarator in node.children_by_field_name("declarator"):
        if declarator.type == "function_declarator":
            inner = declarator.child_by_field_name("declarator")
            if inner is not None and _text(inner) == record:
                return True
    return False


def _prefix(field: Node, type_node: Node | None) -> str:
    """The field's type with its qualifiers (`const char`), as written before its declarators."""
    first = field.child_by_field_name("declarator")
    end = first.start_byte if first is not None else (type_node.end_byte if type_node is not None else field.end_byte)
    return field.text[: end - field.start_byte].decode("utf-8", errors="replace")


def _is_static(field: Node) -> bool:
    return any(c.type == "storage_class_specifier" and c.text == b"static" for c in field.children)


def _has_function_declarator(node: Node) -> bool:
    """A member function's declarator; `int (*cb)(int)` is a pointer member."""
    while node is not None:
        if node.type == "function_declarator":
            inner = node.child_by_field_name("declarator")
            return inner is not None and inner.type != "parenthesized_declarator"
        node = node.child_by_field_name("declarator")
    return False


def _declared_name(node: Node | None) -> str:
    node = _name_node(node)
    return _text(node) if node is not None else ""


def _name_node(node: Node | None) -> Node | None:
    """The identifier a declarator declares: `p` of `*p`, `(&p)[4]`, `p[N]`."""
    while node is not None and node.type not in _NAMES:
        inner = node.child_by_field_name("declarator")
        if inner is None:
            inner = next((c for c in node.named_children if c.type in _NAMES or "declarator" in c.type), None)
        node = inner
    return node


def _enum(node: Node, alias: str | None, found: Declarations, scope: str, value: Outside) -> None:
    """Each enumerator by its qualified name: in the enum's scope, an `enum class`'s in its own."""
    body = node.child_by_field_name("body")
    if body is None:
        return
    name = node.child_by_field_name("name")
    enum = _text(name) if name is not None else alias or "(anonymous enum)"
    inner = _qualify(scope, enum) if any(c.type in ("class", "struct") for c in node.children) else scope
    entries = [e for e in body.named_children if e.type == "enumerator"]
    names = tuple(_text(e.child_by_field_name("name")) for e in entries)
    values: dict[str, int | None] = {}
    last: int | None = -1
    for entry, ident in zip(entries, names):
        value_node = entry.child_by_field_name("value")
        last = _evaluate(_text(value_node), lambda n: values[n] if n in values else value(n)) \
            if value_node is not None else (
            None if last is None else last + 1)
        values[ident] = last
    for ident in names:
        found.enumerators.setdefault(_qualify(inner, ident), (_qualify(scope, enum), names, values[ident]))


_INTEGER = re.compile(r"^(0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)[uUlL]*$")


def value(found: Declarations, name: str) -> int | None:
    """NAME's number in FOUND: an enumerator's value, or an object-like macro's that is one."""
    return _value(found, name, None)


def _value(found: Declarations, name: str, outside: Outside | None, depth: int = 0) -> int | None:
    if name in found.enumerators:
        return found.enumerators[name][2]
    macros = found.macros.get(name)
    if macros and macros[0].tokens[:1] == ("",) and depth < 8:  # the first definition, as `#ifdef X` ... reads
        return _evaluate("".join(macros[0].tokens[1:]), lambda n: _value(found, n, outside, depth + 1))
    return outside(name) if outside is not None and not macros else None


def _evaluate(text: str, known: Outside) -> int | None:
    """An enumerator's value when it is integers, names of a value (earlier enumerators, macros)
    and C operators; else None (then only its position and text are compared)."""
    tokens = re.findall(r"0[xX][0-9a-fA-F]+[uUlL]*|0[bB][01]+[uUlL]*|\d+[uUlL]*|[A-Za-z_]\w*|<<|>>|[-+*/%|&^~()]", text)
    if "".join(tokens) != "".join(text.split()):
        return None
    out = []
    for token in tokens:
        if _INTEGER.match(token):
            out.append(str(int(token.rstrip("uUlL"), 0)))
        elif token[0].isalpha() or token[0] == "_":
            number = known(token)
            if number is None:
                return None
            out.append(str(number))
        else:
            out.append("//" if token == "/" else token)
    try:
        value = eval("".join(out), {"__builtins__": {}})  # digits and operators only, checked above
    except (SyntaxError, ZeroDivisionError, TypeError):
        return None
    return value if isinstance(value, int) else None


def _function(node: Node, found: Declarations, scope: str) -> None:
    """A function's (or member function's) parameters, from its declarator alone."""
    for declarator in node.children_by_field_name("declarator"):
        while declarator is not None and declarator.type != "function_declarator":
            if declarator.type in ("init_declarator",):
                break
            declarator = declarator.child_by_field_name("declarator") or (
                declarator.named_children[-1] if declarator.type == "reference_declarator"
                and declarator.named_children else None)
        if declarator is None or declarator.type != "function_declarator":
            continue
        name_node = declarator.child_by_field_name("declarator")
        params = declarator.child_by_field_name("parameters")
        if name_node is None or params is None or name_node.type == "parenthesized_declarator":
            continue  # a function pointer: no function of that name
        name = _qualify(scope, _text(name_node).replace(" ", ""))
        if any(p.type == "variadic_parameter" or p.text == b"..." for p in params.named_children):
            continue
        parameters = tuple(_parameter(p) for p in params.named_children if p.type in _PARAMETERS)
        if parameters == (Parameter("void", "", None),):
            parameters = ()  # `f(void)`: C's way of saying no parameter
        found.functions.setdefault(name, ())
        found.functions[name] += (parameters,)


def _parameter(node: Node) -> Parameter:
    default = node.child_by_field_name("default_value")
    ident = _name_node(node.child_by_field_name("declarator"))
    end = default.start_byte if default is not None else node.end_byte
    written = node.text[: end - node.start_byte]
    if ident is not None:  # the type without the name, wherever the declarator has it: `bool (&)[N]`
        written = written[: ident.start_byte - node.start_byte] + written[ident.end_byte - node.start_byte:]
    written_text = written.decode("utf-8", errors="replace").rstrip().rstrip("=")
    return Parameter(_squash(written_text), _text(ident) if ident is not None else "",
                     _text(default) if default is not None else None)
