"""Site rules: the schema of `patches/NAME.checks.yaml` (and `checks:` in patchkit.yaml).

Validated here, in one place, so that a bad rule fails before any analysis with the file, the
rule id and the key at fault.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from patchkit.errors import PatchkitError
from patchkit.project import read_yaml
from patchkit.git import validate_repo_path

if TYPE_CHECKING:
    from patchkit.project import Project
    from patchkit.queue import Patch

_HINT = "see 'Site checks' in patchkit's README for the rule keys"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KEYS = ("id", "class", "file", "calls", "receiver", "flags-arg", "require-flag", "forbid-flag",
         "expect-count", "runtime")
_RUNTIME_KEYS = ("require-reached",)
_RECEIVER_KEYS = ("bound-to", "not-bound-to")


@dataclass(frozen=True)
class Receiver:
    member: str  # the member the receiver is (or is not) bound to
    bound: bool  # True: bound-to, False: not-bound-to


@dataclass(frozen=True)
class Rule:
    id: str
    site_class: str  # how sites and messages name what this rule selects; the id by default
    file: str
    calls: tuple[str, ...]
    receiver: Receiver | None
    flags_arg: int  # index into the arguments, Python style: -1 is the last
    require_flag: str | None
    forbid_flag: str | None
    expect_count: int | None
    source: str  # where the rule was written, for messages
    # `patchkit smoke`: which of `calls` a running server must reach at one of the rule's sites
    require_reached: tuple[str, ...] = ()


def load_rules(path: Path) -> list[Rule]:
    """The rules of a NAME.checks.yaml file: a mapping with one key, `checks`, a list of rules."""
    data = read_yaml(path)
    if not isinstance(data, dict) or set(data) != {"checks"}:
        keys = ", ".join(map(str, data)) if isinstance(data, dict) else type(data).__name__
        raise PatchkitError(f"{path}: expected a mapping with the single key 'checks', got {keys}",
                            _HINT)
    return parse_rules(data["checks"], str(path))


def parse_rules(data: object, source: str) -> list[Rule]:
    """Validate a list of rules as read from YAML; SOURCE names their file in errors."""
    if not isinstance(data, list):
        raise PatchkitError(f"{source}: 'checks' must be a list of rules", _HINT)
    rules: list[Rule] = []
    seen: set[str] = set()
    for number, raw in enumerate(data, 1):
        rule = _rule(raw, source, number)
        if rule.id in seen:
            raise PatchkitError(f"{source}: rule '{rule.id}': key 'id': defined twice",
                                "give every rule its own id")
        seen.add(rule.id)
        rules.append(rule)
    return rules


def queue_rules(project: Project, patches: Iterable[Patch]) -> list[Rule]:
    """The rules of PATCHES (each one's NAME.checks.yaml, where there is one), then those in
    patchkit.yaml."""
    groups = [load_rules(p.checks_path) for p in patches if p.checks_path.is_file()]
    if project.checks:
        groups.append(parse_rules(project.checks, str(project.config_path)))
    return combine_rules(groups)


def combine_rules(groups: Iterable[list[Rule]]) -> list[Rule]:
    """Rules from several files as one list; an id may be used once across all of them, since
    reports (JUnit, SARIF) key on it."""
    combined: dict[str, Rule] = {}
    for rule in (r for group in groups for r in group):
        first = combined.setdefault(rule.id, rule)
        if first is not rule:
            raise PatchkitError(f"{rule.source}: rule '{rule.id}': key 'id': also defined in {first.source}",
                                "give every rule its own id")
    return list(combined.values())


def _rule(raw: object, source: str, number: int) -> Rule:
    if not isinstance(raw, dict):
        raise PatchkitError(f"{source}: rule #{number}: must be a mapping of keys", _HINT)
    rule_id = raw.get("id")
    if not isinstance(rule_id, str) or not _ID.match(rule_id):
        raise PatchkitError(f"{source}: rule #{number}: key 'id': required, letters, digits, '.', '_' or '-'",
                            _HINT)

    def bad(key: str, why: str) -> PatchkitError:
        return PatchkitError(f"{source}: rule '{rule_id}': key '{key}': {why}", _HINT)

    for key in raw:
        if key not in _KEYS:
            raise bad(str(key), f"unknown key (known: {', '.join(_KEYS)})")

    def name(key: str, value: object) -> str:
        if not isinstance(value, str) or not _NAME.match(value):
            raise bad(key, "must be a C++ identifier")
        return value

    def optional_name(key: str) -> str | None:
        return name(key, raw[key]) if key in raw else None

    file = raw.get("file")
    if not isinstance(file, str) or not file:
        raise bad("file", "required, a path relative to the tree root")
    try:
        validate_repo_path(file)
    except PatchkitError:
        raise bad("file", "must be relative to the tree root, without '..'") from None
    calls = raw.get("calls")
    if not isinstance(calls, list) or not calls:
        raise bad("calls", "required, a non-empty list of function names")
    site_class = raw.get("class", rule_id)
    if not isinstance(site_class, str) or not site_class.strip():
        raise bad("class", "must be a non-empty string")
    flags_arg = raw.get("flags-arg", -1)
    if not isinstance(flags_arg, int) or isinstance(flags_arg, bool):
        raise bad("flags-arg", "must be an integer (0 the first argument, -1 the last)")
    expect = raw.get("expect-count")
    if expect is not None and (not isinstance(expect, int) or isinstance(expect, bool) or expect < 0):
        raise bad("expect-count", "must be a whole number")
    require, forbid = optional_name("require-flag"), optional_name("forbid-flag")
    if require is not None and require == forbid:
        raise bad("forbid-flag", f"the same flag {require} is required and forbidden")
    receiver = None
    if "receiver" in raw:
        value = raw["receiver"]
        if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in _RECEIVER_KEYS:
            raise bad("receiver", "must be a mapping with exactly one of bound-to, not-bound-to")
        ((key, member),) = value.items()
        receiver = Receiver(member=name(f"receiver.{key}", member), bound=key == "bound-to")
    require_reached = _runtime(raw.get("runtime"), calls, bad)
    return Rule(
        id=rule_id,
        site_class=site_class.strip(),
        file=file,
        calls=tuple(dict.fromkeys(name("calls", c) for c in calls)),
        receiver=receiver,
        flags_arg=flags_arg,
        require_flag=require,
        forbid_flag=forbid,
        expect_count=expect,
        source=source,
        require_reached=require_reached,
    )


def _runtime(value: object, calls: list, bad) -> tuple[str, ...]:
    """`runtime: {require-reached: [...]}`: the minimum coverage of a smoke run, among the calls."""
    if value is None:
        return ()
    if not isinstance(value, dict) or set(value) - set(_RUNTIME_KEYS):
        raise bad("runtime", f"must be a mapping with the key {', '.join(_RUNTIME_KEYS)}")
    reached = value.get("require-reached", [])
    if not isinstance(reached, list) or any(c not in calls for c in reached):
        raise bad("runtime.require-reached", "must be a list of names from the rule's calls")
    return tuple(dict.fromkeys(reached))

