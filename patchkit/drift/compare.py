"""One reliance against one file's declarations: the part of a declaration the reliance reaches
(its state), whether two states differ in a way the patch's line would feel, and how each reads.

The state is only what the added line can feel: the first N members for an initialiser of N
values (in each `#if` variant of the struct) (a member appended after them changes nothing), an enumerator's value, a macro's
definitions (its tokens: a comment or spacing is no change), the default arguments a call leaves
out and the types of the parameters it fills (where both types are numbers: any other change the
compiler reports; `const int` is `int` to a caller, `std::size_t` is `size_t`, and a typedef of a
number is the number).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from patchkit.drift.declarations import Declarations, Parameter, named
from patchkit.drift.relies import Reliance

# Built-in number types: a value of one converts to another without a word from the compiler.
_NUMBER = re.compile(r"^((un)?signed )?(bool|char|short|int|long|long int|long long|long long int|size_t|ssize_t|"
                     r"ptrdiff_t|u?int(8|16|32|64)_t|u?intptr_t|float|double|long double|unsigned|signed)$")
_STD_TYPEDEF = re.compile(r"\bstd::(?=(?:u?int(?:8|16|32|64)_t|size_t|ptrdiff_t|u?intptr_t)\b)")
_TYPE_NAME = re.compile(r"^[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*$")

Resolve = Callable[[str], "str | None"]  # a type's name -> the type its typedef names, or None


@dataclass(frozen=True)
class Entity:
    """What a reliance was found to rely on, in one file."""

    kind: str  # "members", "enumerator", "macro", "default-argument", "parameter-type"; "typedef"
    name: str  # what the report names: the struct, the enum, the macro, the function
    key: str  # the qualified name looked up: the struct, the enumerator, the macro, the function
    reach: int  # aggregate: values given; call: arguments passed


def entities(reliance: Reliance, found: Declarations | None) -> list[Entity] | None:
    """What RELIANCE relies on among FOUND's declarations: [] when FOUND does not declare it; None
    when it does but there is nothing to follow (several declarations the use can mean, a
    constructor a braced list calls, a call with nothing to feel)."""
    if found is None:
        return []
    kind, scope, name, reach = reliance.kind, reliance.scope, reliance.name, reliance.reach
    if kind == "typedef":
        keys = named(found, found.typedefs, scope, name)
        return _one(keys, lambda key: [Entity("typedef", key, key, 0)])
    if kind == "aggregate":
        keys = list(dict.fromkeys(found.records.get(k, k) for k in named(found, found.members, scope, name)))
        return _one(keys, lambda key: None if found.members[key] is None else [Entity("members", key, key, reach)])
    if kind in ("numeric", "name") and not scope and name in found.macros:
        return [Entity("macro", name, name, 0)]
    if kind == "numeric":
        keys = [k for k in found.names.get(name, ()) if k in found.enumerators and
                any(_means(k, scope, name) for k in (k, f"{found.enumerators[k][0]}::{name}"))]
        return _one(keys, lambda key: [Entity("enumerator", found.enumerators[key][0], key, 0)])
    if kind in ("call", "method"):
        def calls(key: str) -> list[Entity] | None:
            params = _fitting(found.functions[key], reach)
            if params is None:
                return None
            felt = ([Entity("default-argument", key, key, reach)] if len(params) > reach else []) + \
                ([Entity("parameter-type", key, key, reach)] if reach else [])
            return felt or None
        return _one(named(found, found.functions, scope, name), calls)
    return []


def _one(keys: list[str], entity: Callable[[str], list[Entity] | None]) -> list[Entity] | None:
    return [] if not keys else entity(keys[0]) if len(keys) == 1 else None


def _means(key: str, scope: str, name: str) -> bool:
    tail = f"{scope}::{name}" if scope else name
    return key == tail or key.endswith("::" + tail)


def _fitting(declarations: tuple[tuple[Parameter, ...], ...], passed: int) -> tuple[Parameter, ...] | None:
    """The one declaration a call of PASSED arguments can call; None for none, or for overloads
    that only the arguments' types tell apart."""
    fits = {params for params in declarations
            if len(params) >= passed and sum(p.default is None for p in params) <= passed}
    return next(iter(fits)) if len(fits) == 1 else None


def state(entity: Entity, found: Declarations | None, resolve: Resolve | None = None) -> tuple | None:
    """The part of ENTITY's declaration in FOUND its reliance reaches, and the whole of it (for
    the report); None where FOUND does not declare it (as ENTITY's kind). RESOLVE gives a
    parameter's typedef at FOUND's commit."""
    if found is None:
        return None
    if entity.kind == "members":
        members = found.members.get(entity.key)
        if members is None:
            return None
        # Every combination of the struct's preprocessor branches: a configuration the lock's
        # reading cannot choose may be the one that drifted.
        variants = found.variants.get(entity.key, (members,))
        return tuple(dict.fromkeys(v[:entity.reach] for v in variants)), members
    if entity.kind == "enumerator":
        enum = found.enumerators.get(entity.key)
        if enum is None:
            return None
        name, names, value = enum
        bare = entity.key.rsplit("::", 1)[-1]
        return (name, value if value is not None else f"the {names.index(bare) + 1}. enumerator"), names
    if entity.kind == "macro":
        macros = found.macros.get(entity.key)
        return None if macros is None else (tuple(m.tokens for m in macros), tuple(m.text for m in macros))
    params = _fitting(found.functions.get(entity.key, ()), entity.reach)
    if params is None:
        return None
    if entity.kind == "default-argument":
        return tuple((p.name, p.default) for p in params[entity.reach:]), params
    passed = params[:entity.reach]
    types = [_plain(p.type) for p in passed]
    return tuple((type_, _resolved(type_, resolve), p.name) for type_, p in zip(types, passed)), passed


def _plain(written: str) -> str:
    """A parameter's type as a caller's value meets it: no top-level const, `std::size_t` as `size_t`."""
    return _unqualified(_STD_TYPEDEF.sub("", written))


def _resolved(type_: str, resolve: Resolve | None) -> str:
    """TYPE_, or the number type it names by a typedef (one level: `llama_pos` is `int32_t`)."""
    if resolve is not None and _TYPE_NAME.match(type_) and not _NUMBER.match(type_):
        aliased = resolve(type_)
        if aliased is not None and _NUMBER.match(_plain(aliased)):
            return _plain(aliased)
    return type_


def _unqualified(type_: str) -> str:
    """TYPE_ without its top-level const/volatile (`const int` → `int`, `char*const` → `char*`;
    `const char*` keeps its const: it is the pointee's)."""
    if not any(c in type_ for c in "*&[("):
        return " ".join(w for w in type_.split() if w not in ("const", "volatile"))
    return re.sub(r"(?<=\*)\s*(?:const|volatile)(?:\s+(?:const|volatile))*$", "", type_).strip()


def differs(entity: Entity, before: tuple, after: tuple) -> bool:
    """BEFORE and AFTER (states) differ where the patch's line feels it."""
    if entity.kind != "parameter-type":
        return before[0] != after[0]
    old, new = before[0], after[0]
    if len(old) != len(new):
        return False  # the call no longer fits: the compiler says so
    # A type written otherwise that still converts; a typedef that changed under the same
    # written name is its own declaration's change, not this one's.
    converts = [a != b and a_number != b_number and bool(_NUMBER.match(a_number)) and bool(_NUMBER.match(b_number))
                for (a, a_number, _), (b, b_number, _) in zip(old, new)]
    names_old, names_new = [name for *_, name in old], [name for *_, name in new]
    swapped = names_old != names_new and sorted(names_old) == sorted(names_new) and \
        [t for t, *_ in old] == [t for t, *_ in new]  # same types, their meanings moved
    return any(converts) or swapped


def describe(entity: Entity, value: tuple, typed: bool = False) -> str:
    """A state as the report shows it: the whole member list (TYPED: with the members' types),
    the enumerators in order, the definitions, the defaults left out, the parameters passed
    (a typedef's number type beside its name)."""
    if entity.kind == "members":
        names = [f"{type_} {name}".strip() if typed else name or type_ for type_, name in value[1]]
        return ", ".join(names) if names else "(no members)"
    if entity.kind == "enumerator":
        (_, number), names = value
        return f"{', '.join(names)} ({entity.key.rsplit('::', 1)[-1]} = {number})"
    if entity.kind == "macro":
        return "; ".join(value[1])
    if entity.kind == "default-argument":
        return ", ".join(f"{name} = {default}" for name, default in value[0])
    return ", ".join(f"{p.type}{f' ({number})' if number != type_ else ''} {p.name}".strip()
                     for (type_, number, _), p in zip(value[0], value[1]))
