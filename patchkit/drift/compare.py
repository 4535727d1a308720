"""One reliance against one file's declarations: the part of a declaration the reliance reaches
(its state), whether two states differ in a way the patch's line would feel, and how each reads.

The state is only what the added line can feel: the first N members for an initialiser of N
values (a member appended after them changes nothing), an enumerator's value, a macro's
definition, the default arguments a call leaves out and the types of the parameters it fills
(where both types are numbers: any other change the compiler reports).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from patchkit.drift.declarations import Declarations, Parameter
from patchkit.drift.relies import Reliance

# Built-in number types: a value of one converts to another without a word from the compiler.
_NUMBER = re.compile(r"^(const )?((un)?signed )?(bool|char|short|int|long|long int|long long|size_t|ssize_t|"
                     r"ptrdiff_t|u?int(8|16|32|64)_t|float|double|unsigned|signed)$")


@dataclass(frozen=True)
class Entity:
    """What a reliance was found to rely on, in one file."""

    kind: str  # "members", "enumerator", "macro", "default-argument", "parameter-type"
    name: str  # what the report names: the struct, the enum, the macro, the function
    key: str  # the name looked up: the struct, the enumerator, the macro, the function
    reach: int  # aggregate: values given; call: arguments passed


def entities(reliance: Reliance, found: Declarations) -> list[Entity]:
    """What RELIANCE relies on among FOUND's declarations (nothing when FOUND does not declare it)."""
    kind, name, reach = reliance.kind, reliance.name, reliance.reach
    if kind == "aggregate" and name in found.members:
        return [Entity("members", name, name, reach)]
    if kind in ("numeric", "name") and name in found.macros:
        return [Entity("macro", name, name, 0)]
    if kind == "numeric" and name in found.enumerators:
        return [Entity("enumerator", found.enumerators[name][0], name, 0)]
    if kind in ("call", "method") and _fitting(found.functions.get(name, ()), reach) is not None:
        params = _fitting(found.functions[name], reach) or ()
        return ([Entity("default-argument", name, name, reach)] if len(params) > reach else []) + \
            ([Entity("parameter-type", name, name, reach)] if reach else [])
    return []


def _fitting(declarations: tuple[tuple[Parameter, ...], ...], passed: int) -> tuple[Parameter, ...] | None:
    """The one declaration a call of PASSED arguments can call; None for none, or for overloads
    that only the arguments' types tell apart."""
    fits = {params for params in declarations
            if len(params) >= passed and sum(p.default is None for p in params) <= passed}
    return next(iter(fits)) if len(fits) == 1 else None


def state(entity: Entity, found: Declarations | None) -> tuple | None:
    """The part of ENTITY's declaration in FOUND its reliance reaches; None where FOUND does not
    declare it (as ENTITY's kind)."""
    if found is None:
        return None
    if entity.kind == "members":
        members = found.members.get(entity.key)
        return None if members is None else (members[:entity.reach], members)
    if entity.kind == "enumerator":
        enum = found.enumerators.get(entity.key)
        if enum is None:
            return None
        name, names, value = enum
        return (name, value if value is not None else f"the {names.index(entity.key) + 1}. enumerator"), names
    if entity.kind == "macro":
        macro = found.macros.get(entity.key)
        return None if macro is None else (macro, macro)
    params = _fitting(found.functions.get(entity.key, ()), entity.reach)
    if params is None:
        return None
    if entity.kind == "default-argument":
        left = tuple((p.name, p.default) for p in params[entity.reach:])
        return left, params
    passed = params[:entity.reach]
    return passed, params


def differs(entity: Entity, before: tuple, after: tuple) -> bool:
    """BEFORE and AFTER (states) differ where the patch's line feels it."""
    if entity.kind != "parameter-type":
        return before[0] != after[0]
    old, new = before[0], after[0]
    if len(old) != len(new):
        return False  # the call no longer fits: the compiler says so
    converts = [a.type != b.type and bool(_NUMBER.match(a.type)) and bool(_NUMBER.match(b.type))
                for a, b in zip(old, new)]
    names_old, names_new = [p.name for p in old], [p.name for p in new]
    swapped = names_old != names_new and sorted(names_old) == sorted(names_new) and \
        [p.type for p in old] == [p.type for p in new]  # same types, their meanings moved
    return any(converts) or swapped


def describe(entity: Entity, value: tuple, typed: bool = False) -> str:
    """A state as the report shows it: the whole member list (TYPED: with the members' types),
    the enumerators in order, the definition, the parameters."""
    whole = value[1]
    if entity.kind == "members":
        names = [f"{type_} {name}".strip() if typed else name or type_ for type_, name in whole]
        return ", ".join(names) if names else "(no members)"
    if entity.kind == "enumerator":
        (_, number), names = value
        return f"{', '.join(names)} ({entity.key} = {number})"
    if entity.kind == "macro":
        return whole
    if entity.kind == "default-argument":
        return ", ".join(f"{name} = {default}" for name, default in value[0])
    return ", ".join(f"{p.type} {p.name}".strip() for p in value[0])
