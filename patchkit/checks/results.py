"""The report vocabulary of site checks: what was found where, and the verdict on it.

Frozen dataclasses, JSON-ready through `patchkit.report.plain`; renderers in
`patchkit.report.check` take these and nothing else.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from typing import Callable


class SiteStatus(str, enum.Enum):
    OK = "ok"
    MISSING_FLAG = "missing-flag"  # require-flag not among the resolved flags
    FORBIDDEN_FLAG = "forbidden-flag"  # forbid-flag among them
    DYNAMIC = "dynamic"  # flags chosen at run time: cannot satisfy require-flag nor prove forbid-flag absent
    UNRESOLVED = "unresolved"  # a receiver or a name the analysis cannot follow
    PARSE_ERROR = "parse-error"  # the site, or a declaration it depends on, overlaps a parse error


@dataclass(frozen=True)
class Region:
    """Source the analysis did not read as code: `#if 0` blocks and parse-error ranges."""

    kind: str  # "disabled" or "parse-error"
    line: int  # 1-based; columns are 1-based characters
    column: int
    end_line: int
    end_column: int
    text: str  # the first characters, whitespace collapsed

    @property
    def lines(self) -> str:
        return f"line {self.line}" if self.end_line == self.line else f"lines {self.line}-{self.end_line}"


@dataclass(frozen=True)
class SiteReport:
    rule: str
    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    function: str  # enclosing function, "" at file scope
    code: str  # the whole call, whitespace collapsed
    call: str  # short form: "ckpt.load_tgt(...)"
    receiver: str  # "" for a call without one
    bound_to: str | None  # the member the receiver is bound to, None when unknown
    site_class: str  # the selecting rule's class: "speculative", "prompt-cache", ...
    flags: tuple[str, ...]  # resolved flag names, sorted
    status: SiteStatus
    message: str


@dataclass(frozen=True)
class RuleResult:
    id: str
    site_class: str
    file: str
    source: str  # the rules file that defined the rule
    calls: tuple[str, ...]
    require_flag: str | None
    forbid_flag: str | None
    expected: int | None
    found: int
    passed: bool
    messages: tuple[str, ...]  # problems of the rule as a whole (count, file); sites carry their own
    sites: tuple[SiteReport, ...]
    regions: tuple[Region, ...]  # of the rule's file
    renamed_from: str | None = None  # the rule's own file, when the apply followed upstream's move of it to `file`


@dataclass(frozen=True)
class CheckReport:
    target: str  # what was checked: a directory, or "upstream@REF (commit)"
    rules: tuple[RuleResult, ...]
    passed: bool = field(init=False)  # a field, not a property, so the JSON report carries it

    def __post_init__(self) -> None:
        object.__setattr__(self, "passed", all(r.passed for r in self.rules))

    @property
    def sites(self) -> tuple[SiteReport, ...]:
        return tuple(s for r in self.rules for s in r.sites)

    @property
    def failing(self) -> tuple[RuleResult, ...]:
        return tuple(r for r in self.rules if not r.passed)


def flag_shortener(flag: str, names: frozenset[str] | tuple[str, ...]) -> Callable[[str], str]:
    """Flag names without the prefix FLAG shares with the others, as people say them
    (LLAMA_STATE_SEQ_FLAGS_ON_DEVICE -> ON_DEVICE); whole names when there is nothing to compare."""
    others = [n for n in names if n != flag]
    prefix = os.path.commonprefix([flag, *others]) if others and flag else ""
    prefix = prefix[: prefix.rfind("_") + 1]
    return lambda name: name[len(prefix):] if prefix and name.startswith(prefix) and name != prefix else name
