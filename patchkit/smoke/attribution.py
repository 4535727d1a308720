"""Attribution: recorded state calls mapped to source lines, joined to the static sites of the
site rules, and judged.

    symbolized = symbolize(read_log(log))
    result = attribute(rules, check_report, symbolized, required={"speculative-...": ["update_tgt"]})
    result.passed

A call belongs to a rule when its stack passes through one of the rule's `calls` (the last
component of the frame's function name); the frame outside that one, when it lies in the rule's
file, is the call site, and is joined to the static site whose call spans its line.
"""

from __future__ import annotations

import enum
import os
import shutil
import subprocess
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from patchkit.checks.results import CheckReport, SiteReport
from patchkit.checks.rules import Rule
from patchkit.errors import EnvironmentProblem, PatchkitError
from patchkit.smoke.interpose import ReturnAddress, StateCall

# llama.h's values; a rule names flags, the interposer records numbers.
FLAG_BITS: Mapping[str, int] = {
    "LLAMA_STATE_SEQ_FLAGS_NONE": 0,
    "LLAMA_STATE_SEQ_FLAGS_SWA_ONLY": 1,
    "LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY": 1,
    "LLAMA_STATE_SEQ_FLAGS_ON_DEVICE": 2,
}
SYMBOLIZERS = ("llvm-symbolizer", "addr2line")  # llvm-symbolizer names inlined functions more reliably


@dataclass(frozen=True)
class Frame:
    """One source-level frame; an address in inlined code gives several, innermost first."""

    module: str
    address: int  # the return address's offset in MODULE
    function: str  # demangled; "" when unknown
    file: str  # as the line table has it; "" when unknown
    line: int  # 0 when unknown


class RuntimeVerdict(str, enum.Enum):
    OK = "ok"
    MISSING_FLAG = "missing-flag"  # a call at a require-flag site lacked the flag
    FORBIDDEN_FLAG = "forbidden-flag"  # a call at a forbid-flag site had it
    NOT_REACHED = "not-reached"  # a static site no call came from: never counted as passed
    UNEXPECTED_SITE = "unexpected-site"  # a call through a rule's calls from a line no static site knows


_FAILING = (RuntimeVerdict.MISSING_FLAG, RuntimeVerdict.FORBIDDEN_FLAG, RuntimeVerdict.UNEXPECTED_SITE)


@dataclass(frozen=True)
class RuntimeSite:
    file: str
    line: int
    call: str  # the static site's short form, "ckpt.load_tgt(...)"; "load_tgt(...)" for an unexpected site
    site_class: str  # the rule's class; "unknown" for an unexpected site
    rule: str  # the rule's id; for an unexpected site, every rule it could belong to, comma-separated
    calls_seen: int
    flags_seen: tuple[int | None, ...]  # distinct, sorted; None: a call without a flags argument
    verdict: RuntimeVerdict
    message: str


@dataclass(frozen=True)
class OtherCall:
    """A state call no rule claims (the server's own saves, slot files), judged by nothing."""

    function: str
    where: str  # "file:line in function"
    flags: int | None
    count: int


@dataclass(frozen=True)
class Coverage:
    rule: str
    reached: tuple[str, ...]  # the rule's calls reached at one of its static sites
    required: tuple[str, ...]  # runtime: require-reached
    missing: tuple[str, ...]  # required and not reached: fails the run


@dataclass(frozen=True)
class Attribution:
    sites: tuple[RuntimeSite, ...]
    other: tuple[OtherCall, ...]
    coverage: tuple[Coverage, ...]
    passed: bool
    messages: tuple[str, ...]  # every reason the run failed, and what blinded it


def symbolize(calls: Iterable[StateCall], tool: str | None = None) -> list[tuple[StateCall, tuple[Frame, ...]]]:
    """CALLS with their frames mapped to source, one symbolizer run per module. TOOL is
    llvm-symbolizer or addr2line (default: the first of them found)."""
    calls = list(calls)
    program = _symbolizer(tool)
    offsets: dict[str, set[int]] = defaultdict(set)
    for call in calls:
        for frame in call.frames:
            offsets[frame.module].add(frame.offset)
    known: dict[tuple[str, int], tuple[Frame, ...]] = {}
    for module, wanted in offsets.items():
        ordered = sorted(wanted)
        for offset, chain in zip(ordered, _run(program, module, ordered)):
            known[module, offset] = tuple(Frame(module, offset, function, file, line)
                                          for function, file, line in chain)
    return [(call, tuple(f for r in call.frames for f in known[r.module, r.offset])) for call in calls]


def _symbolizer(tool: str | None) -> str:
    for name in (tool,) if tool else SYMBOLIZERS:
        path = shutil.which(name)
        if path:
            return path
    raise EnvironmentProblem(f"no symbolizer to map the recorded addresses to source lines "
                             f"({tool or ' or '.join(SYMBOLIZERS)} not found)",
                             "install binutils (addr2line) or llvm")


_Chain = list[tuple[str, str, int]]  # (function, file, line), innermost first


def _run(program: str, module: str, offsets: list[int]) -> list[_Chain]:
    """The source chain of each of OFFSETS in MODULE; unknown (no chain) when the module is gone."""
    if not Path(module).is_file():
        return [[] for _ in offsets]
    # A return address is the instruction after the call: one byte back is the call itself.
    queries = "".join(f"{max(offset - 1, 0):#x}\n" for offset in offsets)
    llvm = Path(program).name.startswith("llvm-symbolizer")
    command = ([program, f"--obj={module}", "--inlining", "--demangle", "--functions=linkage"] if llvm
               else [program, "--addresses", "--functions", "--demangle", "--inlines", "-e", module])
    result = subprocess.run(command, input=queries, capture_output=True, text=True)
    if result.returncode != 0:
        raise EnvironmentProblem(f"{Path(program).name} failed on {module}: "
                                 f"{(result.stderr.strip().splitlines() or ['no message'])[-1]}",
                                 "check that the file is an ELF object of this machine")
    chains = _llvm_chains(result.stdout) if llvm else _addr2line_chains(result.stdout)
    if len(chains) != len(offsets):
        raise EnvironmentProblem(f"{Path(program).name} answered {len(chains)} of {len(offsets)} addresses "
                                 f"in {module}", f"try the other symbolizer ({' or '.join(SYMBOLIZERS)})")
    return chains


def _llvm_chains(output: str) -> list[_Chain]:
    # Blocks separated by a blank line; each a (function, file:line:column) pair per inline level.
    chains = []
    for block in output.strip("\n").split("\n\n"):
        lines = block.splitlines()
        chains.append([(fn, *_location(where.rsplit(":", 1)[0])) for fn, where in zip(lines[::2], lines[1::2])])
    return chains


def _addr2line_chains(output: str) -> list[_Chain]:
    # --addresses starts each answer with the address, the only way to tell where one ends; then
    # a function line and a location line per inline level.
    chains: list[_Chain] = []
    function = None
    for line in output.splitlines():
        if function is None and line.startswith("0x"):
            chains.append([])
        elif function is None:
            function = line
        else:
            chains[-1].append((function, *_location(line.split(" (discriminator")[0])))
            function = None
    return chains


def _location(text: str) -> tuple[str, int]:
    file, _, line = text.rpartition(":")
    if file in ("", "??") or not line.isdigit():
        return "", 0
    return file, int(line)


def attribute(rules: list[Rule], static: CheckReport, symbolized: Iterable[tuple[StateCall, tuple[Frame, ...]]],
              required: Mapping[str, Iterable[str]] | None = None, root: str = "",
              flag_bits: Mapping[str, int] = FLAG_BITS) -> Attribution:
    """Join the SYMBOLIZED calls to the STATIC sites of RULES and judge them. REQUIRED maps a
    rule id to the calls that must be reached at one of its sites (`runtime: require-reached`).
    ROOT is the tree the program was built from; without it a file matches a rule's file by its
    path's ending."""
    required = {rule: tuple(names) for rule, names in (required or {}).items()}
    _validate(rules, required, flag_bits)
    ids = {rule.id for rule in rules}
    static_sites = [site for result in static.rules if result.id in ids for site in result.sites]
    seen: dict[SiteReport, list[tuple[str, StateCall]]] = defaultdict(list)
    unexpected: dict[tuple[str, int, str, tuple[str, ...]], list[StateCall]] = defaultdict(list)
    other: Counter[tuple[str, str, int | None]] = Counter()
    symbolized = list(symbolized)
    for call, frames in symbolized:
        name, caller, owners = _through_rule(frames, rules, root)
        if owners:
            file = owners[0].file
            site = _site_at([s for s in static_sites if s.rule in {r.id for r in owners} and s.file == file],
                            caller.line)
            if site is not None:
                seen[site].append((name, call))
            else:
                unexpected[file, caller.line, name, tuple(r.id for r in owners)].append(call)
        else:
            other[call.function, _where(caller, frames, call, root), call.flags] += 1
    by_id = {rule.id: rule for rule in rules}
    sites = [_judged(site, by_id[site.rule], seen.get(site, []), flag_bits) for site in static_sites]
    sites += [_unexpected(file, line, name, owners, calls)
              for (file, line, name, owners), calls in unexpected.items()]
    sites.sort(key=lambda s: (s.file, s.line, s.rule))
    coverage = [_coverage(rule, seen, required.get(rule.id, ())) for rule in rules]
    messages = [s.message for s in sites if s.verdict in _FAILING]
    messages += [f"rule {c.rule}: {', '.join(c.missing)} never reached at a {by_id[c.rule].site_class} site "
                 "(runtime: require-reached)" for c in coverage if c.missing]
    if symbolized and not any(f.file for _, frames in symbolized for f in frames):
        messages.append("no recorded call could be mapped to a source line: build with line tables (-g1)")
    return Attribution(
        sites=tuple(sites),
        other=tuple(OtherCall(function, where, flags, count)
                    for (function, where, flags), count in sorted(other.items(), key=lambda o: o[0][:2])),
        coverage=tuple(coverage),
        passed=not messages,
        messages=tuple(messages),
    )


def _validate(rules: list[Rule], required: Mapping[str, tuple[str, ...]], flag_bits: Mapping[str, int]) -> None:
    by_id = {rule.id: rule for rule in rules}
    for rule_id, names in required.items():
        if rule_id not in by_id:
            raise PatchkitError(f"require-reached names rule '{rule_id}', which is not among the rules",
                                "name a rule of the queue's checks")
        for name in set(names) - set(by_id[rule_id].calls):
            raise PatchkitError(f"{by_id[rule_id].source}: rule '{rule_id}': key 'runtime.require-reached': "
                                f"{name} is not one of the rule's calls", "list only names from 'calls'")
    for rule in rules:
        for flag in filter(None, (rule.require_flag, rule.forbid_flag)):
            if flag not in flag_bits:
                raise PatchkitError(f"{rule.source}: rule '{rule.id}': flag {flag} has no known value at "
                                    "run time", f"the smoke test knows {', '.join(flag_bits)}")


def _through_rule(frames: tuple[Frame, ...], rules: list[Rule],
                  root: str) -> tuple[str, Frame | None, list[Rule]]:
    """The innermost of the rules' calls the stack passes through, the frame that called it, and
    the rules it belongs to: those with that call whose file the caller is in (none: a call
    through the wrapper from elsewhere)."""
    for index, frame in enumerate(frames):
        name = _base_name(frame.function)
        candidates = [rule for rule in rules if name in rule.calls]
        if candidates and index + 1 < len(frames):
            caller = frames[index + 1]
            file = _tree_path(caller.file, root, {rule.file for rule in candidates})
            return name, caller, [rule for rule in candidates if rule.file == file]
    return "", None, []


def _base_name(function: str) -> str:
    """The last component of a demangled name: `common_prompt_checkpoint::update_tgt(llama_context*,
    int, unsigned int) const` -> update_tgt."""
    name = function.removesuffix(" const")
    if name.endswith(")"):
        depth = 0
        for index in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[index], 0)
            if depth == 0:
                name = name[:index]
                break
    return name.rpartition("::")[2]


def _tree_path(file: str, root: str, candidates: set[str]) -> str:
    """FILE relative to the tree: under ROOT when given, else the candidate it ends with."""
    file = os.path.normpath(file) if file else ""
    if root:
        prefix = os.path.normpath(root) + os.sep
        return file[len(prefix):] if file.startswith(prefix) else file
    return next((c for c in candidates if file == c or file.endswith(os.sep + c)), file)


def _site_at(sites: list[SiteReport], line: int) -> SiteReport | None:
    """The site whose call spans LINE (a multi-line call may return to a later line than the
    one it starts on); the innermost, when calls nest."""
    spanning = [site for site in sites if site.line <= line <= site.end_line]
    return max(spanning, key=lambda site: (site.line, site.column)) if spanning else None


def _judged(site: SiteReport, rule: Rule, calls: list[tuple[str, StateCall]],
            flag_bits: Mapping[str, int]) -> RuntimeSite:
    flags = _distinct(call.flags for _, call in calls)
    where = f"{site.file}:{site.line}: {site.site_class} site {site.call}"
    if not calls:
        verdict, message = RuntimeVerdict.NOT_REACHED, f"{where} not reached"
    elif rule.require_flag and any(f is None or not f & flag_bits[rule.require_flag] for f in flags):
        verdict = RuntimeVerdict.MISSING_FLAG
        message = (f"{where} reached {_times(len(calls))} with {_flags_text(flags)}, without "
                   f"{rule.require_flag} ({flag_bits[rule.require_flag]})")
    elif rule.forbid_flag and any(f is not None and f & flag_bits[rule.forbid_flag] for f in flags):
        verdict = RuntimeVerdict.FORBIDDEN_FLAG
        message = (f"{where} reached {_times(len(calls))} with {_flags_text(flags)}, which include "
                   f"{rule.forbid_flag} ({flag_bits[rule.forbid_flag]})")
    else:
        verdict, message = RuntimeVerdict.OK, f"{where} reached {_times(len(calls))} with {_flags_text(flags)}"
    return RuntimeSite(file=site.file, line=site.line, call=site.call, site_class=site.site_class,
                       rule=site.rule, calls_seen=len(calls), flags_seen=flags, verdict=verdict, message=message)


def _unexpected(file: str, line: int, name: str, owners: tuple[str, ...], calls: list[StateCall]) -> RuntimeSite:
    flags = _distinct(call.flags for call in calls)
    return RuntimeSite(
        file=file, line=line, call=f"{name}(...)", site_class="unknown", rule=", ".join(owners),
        calls_seen=len(calls), flags_seen=flags, verdict=RuntimeVerdict.UNEXPECTED_SITE,
        message=(f"{file}:{line}: {name} reached {_times(len(calls))} with {_flags_text(flags)} from a line "
                 f"no static site of {', '.join(owners)} knows: the site checks missed this call"),
    )


def _coverage(rule: Rule, seen: Mapping[SiteReport, list[tuple[str, StateCall]]],
              required: tuple[str, ...]) -> Coverage:
    reached = {name for site, calls in seen.items() if site.rule == rule.id for name, _ in calls}
    return Coverage(rule=rule.id, reached=tuple(c for c in rule.calls if c in reached), required=required,
                    missing=tuple(c for c in required if c not in reached))


def _where(caller: Frame | None, frames: tuple[Frame, ...], call: StateCall, root: str) -> str:
    """Where an unclaimed call came from: the wrapper's caller when it went through one, else the
    innermost frame with a source line, else a module and offset."""
    frame = caller or next((f for f in frames if f.file), None)
    if frame is not None and frame.file:
        return f"{_tree_path(frame.file, root, set())}:{frame.line} in {frame.function or '??'}"
    first: ReturnAddress | None = call.frames[0] if call.frames else None
    return f"{first.module}+{first.offset:#x}" if first else "unknown"


def _distinct(flags: Iterable[int | None]) -> tuple[int | None, ...]:
    return tuple(sorted(set(flags), key=lambda f: -1 if f is None else f))


def _flags_text(flags: tuple[int | None, ...]) -> str:
    return "flags " + ", ".join("none (no flags argument)" if f is None else str(f) for f in flags)


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"
