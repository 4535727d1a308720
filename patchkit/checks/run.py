"""Rules applied to parsed files: which sites each rule selects, and its verdict on each."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Callable, Mapping

from patchkit.checks.cpp import Binding, Call, CppFile, Flags
from patchkit.checks.results import CheckReport, Region, RuleResult, SiteReport, SiteStatus, flag_shortener
from patchkit.checks.rules import Rule

Reader = Callable[[str], "bytes | None"]  # path in the tree -> contents, None when absent


def run_checks(rules: list[Rule], read: Reader, *, target: str = "",
               renames: Mapping[str, str] | None = None) -> CheckReport:
    """Check RULES against the files READ returns; each file is parsed and queried once.
    RENAMES: old path -> new, for files the apply followed to where upstream moved them; a rule
    on such a file checks it there, and says so."""
    renames = renames or {}
    renamed_from = {rule.id: rule.file for rule in rules if rule.file in renames}
    rules = [replace(rule, file=renames.get(rule.file, rule.file)) for rule in rules]
    names: dict[str, set[str]] = defaultdict(set)
    for rule in rules:
        names[rule.file].update(rule.calls)
    files: dict[str, CppFile | None] = {}
    for path, calls in names.items():
        source = read(path)
        files[path] = CppFile(source, frozenset(calls)) if source is not None else None
    # Rules on one file ask about the same receivers (bound-to and not-bound-to): bind each once.
    bindings: dict[str, dict[int, Binding]] = defaultdict(dict)
    return CheckReport(target=target, rules=tuple(
        replace(_check(rule, files[rule.file], bindings[rule.file]), renamed_from=renamed_from.get(rule.id))
        for rule in rules))


def _check(rule: Rule, file: CppFile | None, bindings: dict[int, Binding]) -> RuleResult:
    if file is None:
        return _result(rule, (), (), [f"{rule.file} not found: the file moved or was removed; "
                                      f"point rule {rule.id} at its new place"])
    sites = []
    for call in file.calls:
        if call.name not in rule.calls:
            continue
        binding = None
        if rule.receiver is not None:
            if call.node.id not in bindings:
                bindings[call.node.id] = file.binding(call)
            binding = bindings[call.node.id]
            if binding.member is not None and (binding.member == rule.receiver.member) != rule.receiver.bound:
                continue
        sites.append(_site(rule, file, call, binding))
    problems = [f"{rule.file}: {p}" for p in _count_problems(rule, file, sites)]
    return _result(rule, tuple(sites), file.regions, problems)


def _result(rule: Rule, sites: tuple[SiteReport, ...], regions: tuple[Region, ...],
            problems: list[str]) -> RuleResult:
    return RuleResult(
        id=rule.id, site_class=rule.site_class, file=rule.file, source=rule.source,
        calls=rule.calls, require_flag=rule.require_flag, forbid_flag=rule.forbid_flag,
        expected=rule.expect_count, found=len(sites),
        passed=not problems and all(s.status is SiteStatus.OK for s in sites),
        messages=tuple(problems), sites=sites, regions=regions,
    )


def _site(rule: Rule, file: CppFile, call: Call, binding: Binding | None) -> SiteReport:
    line, column = file.position(call.node.start_byte)
    end_line, end_column = file.position(call.node.end_byte)
    flags = file.flags(call, rule.flags_arg) if rule.require_flag or rule.forbid_flag else None
    status, detail = _verdict(rule, file, call, binding, flags)
    names = tuple(sorted(flags.names)) if flags is not None else ()
    return SiteReport(
        rule=rule.id, file=rule.file, line=line, column=column, end_line=end_line,
        end_column=end_column, function=file.function_of(call.node), code=call.code,
        call=call.short, receiver=call.receiver_text,
        bound_to=binding.member if binding is not None else None,
        site_class=rule.site_class, flags=names, status=status,
        message=f"{rule.file}:{line}: {rule.site_class} site {call.short} {detail}",
    )


def _verdict(rule: Rule, file: CppFile, call: Call, binding: Binding | None,
             flags: Flags | None) -> tuple[SiteStatus, str]:
    errors = {*file.errors_at(call.node), *(binding.errors if binding else ()),
              *(flags.errors if flags else ())}
    if errors:
        where = ", ".join(f"{r.lines}: {r.text}" for r in sorted(errors, key=lambda r: (r.line, r.column)))
        return SiteStatus.PARSE_ERROR, (f"depends on code tree-sitter could not parse ({where}); "
                                    "check that code by hand or simplify it")
    if binding is not None and binding.member is None:
        wanted = f"{'' if rule.receiver.bound else 'not '}bound to {rule.receiver.member}"
        return SiteStatus.UNRESOLVED, f"has a receiver that cannot be shown {wanted}: {binding.reason}"
    if flags is None:
        if rule.require_flag or rule.forbid_flag:
            return SiteStatus.UNRESOLVED, f"has no argument {rule.flags_arg} to hold the flags"
        return SiteStatus.OK, "selected"
    flag = rule.require_flag or rule.forbid_flag or ""
    short = flag_shortener(flag, flags.names)
    shown = "{" + ", ".join(sorted(map(short, flags.names)) + ["<run-time value>"] * bool(flags.dynamic)
                            + ["<unresolved>"] * bool(flags.unresolved)) + "}"
    if rule.forbid_flag and rule.forbid_flag in flags.names:
        return SiteStatus.FORBIDDEN_FLAG, f"carries {short(rule.forbid_flag)}; it must not (flags {shown})"
    if rule.require_flag and rule.require_flag in flags.names:
        return SiteStatus.OK, f"has flags {shown}"
    if flags.unresolved:
        return SiteStatus.UNRESOLVED, f"has flags that cannot be resolved: {'; '.join(flags.unresolved)}"
    if flags.dynamic:
        return SiteStatus.DYNAMIC, (f"gets its flags at run time ({'; '.join(flags.dynamic)}), so "
                                f"{short(flag)} cannot be confirmed {'present' if rule.require_flag else 'absent'}; "
                                "upstream may have adopted a run-time choice: review the intent")
    if rule.require_flag:
        return SiteStatus.MISSING_FLAG, f"has flags {shown}; {short(rule.require_flag)} missing"
    return SiteStatus.OK, f"has flags {shown}"


def _count_problems(rule: Rule, file: CppFile, sites: list[SiteReport]) -> list[str]:
    problems = []
    found, expected = len(sites), rule.expect_count
    what = f"{rule.site_class} site{'s' if expected != 1 else ''}"
    if expected is not None and found != expected:
        problems.append(f"expected {expected} {what}, found {found}: {_count_detail(rule, sites, found - expected)}")
    elif expected is None and not sites:
        problems.append(f"no {rule.site_class} site found in {rule.file}: upstream renamed or "
                        "removed the calls; update the rule (or say expect-count: 0)")
    for region, hidden in sorted(file.hidden(frozenset(rule.calls)).items(), key=lambda h: (h[0].line, h[0].column)):
        problems.append(f"the count is uncertain: {region.lines} could not be parsed and name "
                        f"{', '.join(sorted(hidden))} ({region.text}); a call may hide there: fix or simplify that code")
    return problems


def _count_detail(rule: Rule, sites: list[SiteReport], surplus: int) -> str:
    """Which sites are new or gone. Without a record of the old sites, the patch's own work is
    the clue: sites the patch covered pass, so failing sites equal in number to the surplus are
    the ones upstream added."""
    failing = [s.line for s in sites if s.status is not SiteStatus.OK]
    lines = ", ".join(str(s.line) for s in sites) or "none"
    if surplus > 0 and len(failing) == surplus:
        return f"new site{'s' if surplus > 1 else ''} at line{'s' if surplus > 1 else ''} {', '.join(map(str, failing))}"
    if surplus > 0:
        return f"sites at lines {lines}; find the {surplus} new one{'s' if surplus > 1 else ''} and review the intent"
    return (f"sites at lines {lines}; {-surplus} {'is' if surplus == -1 else 'are'} gone or no longer "
            "selected by the rule (moved behind a helper?); review the intent")

