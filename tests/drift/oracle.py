"""The compiler's reading of a header, as the declarations reader's oracle in tests: libclang
(a test dependency, never a runtime one) parses it as C++17, with gcc's builtin headers (the
wheel ships none: without them `stdbool.h` is missing and `size_t` reads as `int`)."""

from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

cindex = pytest.importorskip("clang.cindex")
K = cindex.CursorKind

# A llama.cpp tree's public headers, and the folders they include from.
INCLUDES = ("include", "ggml/include", "tools/mtmd", "common")


def public_headers(root: Path) -> list[str]:
    """include/*.h, ggml/include/*.h, tools/mtmd/mtmd.h and common/common.h, relative to ROOT."""
    return [str(p.relative_to(root)) for d in ("include", "ggml/include") for p in sorted((root / d).glob("*.h"))] + \
        ["tools/mtmd/mtmd.h", "common/common.h"]


def parse(path: Path, includes: list[Path] = (), defines: tuple[str, ...] = (), strict: bool = True):
    """PATH's translation unit as the compiler reads it (C++17); STRICT: an error names the first
    problems (a census that changed a struct breaks the code initialising it: not STRICT)."""
    args = ["-x", "c++", "-std=c++17", "-isystem", _builtin_headers(), *(f"-I{p}" for p in includes), *defines]
    unit = cindex.Index.create().parse(str(path), args=args)
    errors = [str(d) for d in unit.diagnostics if d.severity >= cindex.Diagnostic.Error]
    assert not (strict and errors), f"the oracle cannot read {path}: {errors[:3]}"
    return unit


_RECORDS = (K.STRUCT_DECL, K.CLASS_DECL, K.UNION_DECL)
_SCOPES = (K.NAMESPACE, K.STRUCT_DECL, K.CLASS_DECL, K.UNION_DECL, K.ENUM_DECL)


@dataclass
class Seen:
    """What the compiler sees declared in one file (not in what it includes)."""

    structs: dict[str, list[str]] = field(default_factory=dict)  # aggregate -> member names in order ("": anonymous)
    enumerators: dict[str, int] = field(default_factory=dict)  # qualified enumerator -> value
    functions: dict[str, list[tuple[tuple[str, bool], ...]]] = field(default_factory=dict)  # -> (type, has default)


@functools.cache
def _builtin_headers() -> str:
    return subprocess.run(["gcc", "-print-file-name=include"], capture_output=True, text=True,
                          check=True).stdout.strip()


def squash(type_: str, number=lambda name: None) -> str:
    """A type as both readers compare it: no `struct`/`enum` keyword, spaces only where C needs
    them, `T const` as `const T`, an array's extent as its NUMBER (the compiler's way)."""
    type_ = re.sub(r"\b(struct|enum|union|class)\s+", "", " ".join(type_.split()))
    type_ = re.sub(r"^([\w:]+(?: [\w:]+)*?) const\b", r"const \1", type_)
    type_ = re.sub(r"\[(\w+)\]", lambda m: f"[{number(m.group(1)) if number(m.group(1)) is not None else m.group(1)}]",
                   type_)
    return re.sub(r"\s*([*&,()\[\]<>])\s*", r"\1", type_)


def read(path: Path, includes: list[Path] = (), defines: tuple[str, ...] = (), strict: bool = True) -> Seen:
    unit = parse(path, includes, defines, strict)
    seen = Seen()
    _walk(unit.cursor, seen, str(path))
    return seen


def qualified(cursor) -> str:
    """CURSOR's name as C++ qualifies it: `ns::outer::inner`, a scoped enum's enumerator `e::x`."""
    parts = []
    parent = cursor.semantic_parent
    while parent is not None and parent.kind in _SCOPES:
        if parent.kind != K.ENUM_DECL or parent.is_scoped_enum():
            parts.append(parent.spelling)
        parent = parent.semantic_parent
    return "::".join([*reversed(parts), cursor.spelling])


def _members(children) -> list[str]:
    """The names of the data members, in order; "" for an anonymous struct or union (libclang
    shows it as a record with no field after it of its type)."""
    out = []
    for i, c in enumerate(children):
        if c.kind == K.FIELD_DECL:
            out.append(c.spelling)
        elif c.kind in _RECORDS and c.is_anonymous():
            following = children[i + 1] if i + 1 < len(children) else None
            if following is None or following.kind != K.FIELD_DECL or \
                    following.type.get_declaration().get_usr() != c.get_usr():
                out.append("")
    return out


def _walk(cursor, seen: Seen, main: str) -> None:
    for child in cursor.get_children():
        if child.location.file is None or child.location.file.name != main:
            continue
        if child.kind in _RECORDS and child.is_definition() and child.spelling and not child.is_anonymous():
            children = list(child.get_children())
            if not any(c.kind in (K.CONSTRUCTOR, K.CXX_BASE_SPECIFIER) or c.is_virtual_method() for c in children):
                seen.structs[qualified(child)] = _members(children)
            _walk(child, seen, main)
        elif child.kind == K.ENUM_DECL:
            for e in child.get_children():
                if e.kind == K.ENUM_CONSTANT_DECL:
                    seen.enumerators[qualified(e)] = e.enum_value
        elif child.kind in (K.FUNCTION_DECL, K.CXX_METHOD) and child.type.kind != cindex.TypeKind.FUNCTIONNOPROTO:
            if child.type.is_function_variadic():
                continue
            params = tuple((squash(p.type.spelling), any(t.spelling == "=" for t in p.get_tokens()))
                           for p in child.get_arguments())
            seen.functions.setdefault(qualified(child), []).append(params)
        elif child.kind in (K.NAMESPACE, K.LINKAGE_SPEC, K.UNEXPOSED_DECL):
            _walk(child, seen, main)


def mismatches(seen: Seen, found, number=lambda name: None) -> list[str]:
    """Where FOUND (the declarations reader's) reads otherwise than SEEN (the compiler's): every
    aggregate with all its members in order, every enumerator with its value, every function's
    parameters (their types, which have a default; NUMBER: a macro's value, for an array's extent)."""
    out = []
    for name, members in seen.structs.items():
        variants = [[n for _, n in v] for v in found.variants.get(name, ())]  # the compiler's is one of them
        if members not in variants:
            out.append(f"struct {name}: {variants} (the compiler: {members})")
    for name, value in seen.enumerators.items():
        entry = found.enumerators.get(name)
        if entry is None or entry[2] != value:
            out.append(f"enumerator {name}: {entry and entry[2]} (the compiler: {value})")
    for name, declarations in seen.functions.items():
        read_as = {tuple((squash(p.type, number), p.default is not None) for p in params)
                   for params in found.functions.get(name, ())}
        for params in declarations:
            if params not in read_as:
                out.append(f"function {name}: {sorted(read_as)} (the compiler: {params})")
    return out
