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
# The C and C++ standard libraries' names as code uses them bare (`memcpy`, `min` after `using
# namespace std`, `SIZE_MAX`): upstream's declarations never change them, so a search for them
# would only read headers (a vendored `min(a, b, c = 0)`) for nothing.
_STANDARD = frozenset("""
    abort abs acos asin atan atan2 atexit atof atoi atol atoll bsearch calloc ceil clock cos cosh ctime
    exit exp exp2 expf fabs fabsf fclose feof ferror fflush fgetc fgets floor floorf fmax fmaxf fmin fminf
    fmod fopen fprintf fputc fputs fread free freopen frexp fscanf fseek fseeko ftell ftello fwrite getc
    getchar getenv gmtime isalnum isalpha isdigit isinf isnan isprint ispunct isspace isupper isxdigit
    labs ldexp llabs llround localtime log log10 log1p log2 logf lround malloc memchr memcmp memcpy
    memmove memset mktime perror pow powf printf putc putchar puts qsort rand realloc remove rename
    rewind round roundf scanf setvbuf signal sin sinf sinh snprintf sprintf sqrt sqrtf srand sscanf
    strcat strchr strcmp strcpy strcspn strdup strerror strftime strlen strncat strncmp strncpy strnlen
    strrchr strspn strstr strtod strtof strtok strtol strtoll strtoul strtoull system tan tanf tanh tanhf
    time tmpfile tolower toupper trunc truncf ungetc vfprintf vprintf vsnprintf vsprintf
    accumulate all_of any_of back_inserter begin binary_search clamp copy copy_n count count_if data
    distance end equal exchange fill fill_n find find_if find_if_not for_each forward generate get
    getline iota is_sorted lower_bound make_pair make_shared make_tuple make_unique max max_element
    min min_element minmax move next none_of nth_element partial_sort prev remove_if replace reverse
    rotate size sort stable_sort stod stof stoi stol stoll stoul stoull swap tie to_string transform
    unique upper_bound
    assert offsetof va_arg va_copy va_end va_start
    NULL EOF BUFSIZ CHAR_BIT CHAR_MAX CHAR_MIN DBL_EPSILON DBL_MAX DBL_MIN EXIT_FAILURE EXIT_SUCCESS
    FILENAME_MAX FLT_EPSILON FLT_MAX FLT_MIN INFINITY INT16_MAX INT16_MIN INT32_MAX INT32_MIN INT64_MAX
    INT64_MIN INT8_MAX INT8_MIN INT_MAX INT_MIN LLONG_MAX LLONG_MIN LONG_MAX LONG_MIN M_PI NAN PATH_MAX
    PRId32 PRId64 PRIu32 PRIu64 PRIx32 PRIx64 PTRDIFF_MAX RAND_MAX SEEK_CUR SEEK_END SEEK_SET SIZE_MAX
    SSIZE_MAX UINT16_MAX UINT32_MAX UINT64_MAX UINT8_MAX UINT_MAX ULLONG_MAX ULONG_MAX __FILE__ __LINE__
    __func__ stderr stdin stdout
""".split())


@dataclass(frozen=True)
class Reliance:
    """One thing an added line relies on."""

    # "aggregate" (initialised by position), "numeric" (a constant used as a number), "name" (any
    # other use of a constant: a macro's expansion), "call" (a function), "method" (`x.f()`)
    kind: str
    name: str  # the struct, the constant, the function
    scope: str  # its qualification as written (`ns` for `ns::cfg`, `a::b` for `a::b::f`); "" when bare
    reach: int  # aggregate: the values given; call: the arguments passed; else 0
    line: int  # 1-based, in the patched file


def reliances(source: bytes, added: list[int]) -> list[Reliance]:
    """What the lines ADDED (1-based, sorted) of the C/C++ file SOURCE rely on, each use once;
    never on the standard library (`std::` or a name of it used bare)."""
    rows = [a - 1 for a in added]
    return [r for node in _added_nodes(cpp_parser().parse(source).root_node, rows) for r in _read(node)
            if not _standard(r)]


def _standard(reliance: Reliance) -> bool:
    """A name of the standard library; a method's name (`x.find()`) is the class's, whatever it is."""
    scope = reliance.scope
    return scope == "std" or scope.startswith("std::") or \
        (not scope and reliance.kind != "method" and reliance.name in _STANDARD)


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
            scope, name = _aggregate_type(node.parent)
            if name:
                yield Reliance("aggregate", name, scope, len(values), line)
    elif node.type == "call_expression":
        scope, name = _callee(node.child_by_field_name("function"))
        arguments = node.child_by_field_name("arguments")
        if name and arguments is not None and not _CONSTANT.match(name):
            method = node.child_by_field_name("function").type in ("field_expression", "template_method")
            yield Reliance("method" if method else "call", name, scope,
                           sum(c.type != "comment" for c in arguments.named_children), line)
    elif node.type == "identifier" or (node.type == "qualified_identifier" and node.parent is not None
                                       and node.parent.type != "qualified_identifier"):
        scope, name = _qualified(node)
        if _CONSTANT.match(name) and not (node.parent is not None and node.parent.type == "qualified_identifier"):
            yield Reliance("numeric" if _numeric(node) else "name", name, scope, 0, line)


def _qualified(node: Node) -> tuple[str, str]:
    """(scope, name) of an identifier, `ns::name` or `a::b::name` as written (templates' arguments
    left out: `std::vector<int>` is `std`, `vector`)."""
    scopes = []
    while node.type == "qualified_identifier":
        scope = node.child_by_field_name("scope")
        if scope is not None:
            scopes.append(_bare(scope))
        node = node.child_by_field_name("name")
        if node is None:
            return "", ""
    return "::".join(scopes), _bare(node)


def _bare(node: Node) -> str:
    """A name without its template arguments."""
    if node.type in ("template_type", "template_function", "template_method") \
            and node.child_by_field_name("name") is not None:
        node = node.child_by_field_name("name")
    return node.text.decode("utf-8", errors="replace").strip()


def _aggregate_type(host: Node) -> tuple[str, str]:
    """The type a braced list initialises, (scope, name): `new T{...}`, `T{...}`, `(struct T){...}`,
    `T x = {...}`, `T x{...}`, `ns::T{...}`."""
    holder = host.parent if host.type == "init_declarator" else host
    type_node = holder.child_by_field_name("type") if holder is not None else None
    if type_node is not None and type_node.type == "type_descriptor":  # C's `(struct T){...}`
        type_node = type_node.child_by_field_name("type")
    if type_node is not None and type_node.type in ("struct_specifier", "class_specifier", "union_specifier"):
        type_node = type_node.child_by_field_name("name")
    if type_node is None or type_node.type not in ("type_identifier", "qualified_identifier"):
        return "", ""
    scope, name = _qualified(type_node)
    innermost = type_node
    while innermost is not None and innermost.type == "qualified_identifier":
        innermost = innermost.child_by_field_name("name")
    return (scope, name) if innermost is not None and innermost.type == "type_identifier" else ("", "")


def _callee(function: Node | None) -> tuple[str, str]:
    """(scope, name) of what a call calls: `f(...)`, `ns::f(...)`, `x.f(...)`, `x->f(...)`,
    `f<T>(...)`, `std::vector<int>(...)`."""
    if function is None:
        return "", ""
    if function.type in ("field_expression", "template_method"):
        field = function.child_by_field_name("field") or function.child_by_field_name("name")
        return ("", _bare(field)) if field is not None else ("", "")
    if function.type in ("qualified_identifier", "template_function", "identifier"):
        scope, name = _qualified(function)
        return (scope, name) if name.isidentifier() else ("", "")
    return "", ""


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
