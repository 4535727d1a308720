"""Renderers of a `SmokeReport`: the per-site table of what a running server really passed."""

from __future__ import annotations

from patchkit.report import JUnitCase, junit_xml, md_table
from patchkit.untrusted import md_text

_STYLE = {"ok": "green", "not-reached": "yellow"}
_HEADERS = ["site", "call", "class", "calls", "flags seen", "verdict"]


# llama.h's state flags as the server passes them (SWA_ONLY shares PARTIAL_ONLY's bit).
_FLAG_NAMES = ((1, "PARTIAL_ONLY"), (2, "ON_DEVICE"))


def flag_names(flags: int | None) -> str:
    """3 -> '3 (PARTIAL_ONLY|ON_DEVICE)'; None, a call without a flags argument -> 'none'."""
    if flags is None:
        return "none"
    names = [name for bit, name in _FLAG_NAMES if flags & bit]
    return f"{flags} ({'|'.join(names)})" if names else str(flags)


def site_rows(report) -> list[list[str]]:
    return [[f"{s.file.rsplit('/', 1)[-1]}:{s.line}", s.call, s.site_class, str(s.calls_seen),
             ", ".join(flag_names(f) for f in s.flags_seen) or "-", s.verdict.value]
            for s in (report.attribution.sites if report.attribution else ())]


def other_rows(report) -> list[list[str]]:
    return [[o.where, o.function, flag_names(o.flags), str(o.count)]
            for o in (report.attribution.other if report.attribution else ())]


def summary_line(report) -> str:
    if report.detail:
        return f"smoke {report.backend}: NOT RUN: {report.detail}"
    a = report.attribution
    reached = sum(s.calls_seen > 0 for s in a.sites) if a else 0
    verdict = "passed" if report.passed else "FAILED"
    return (f"smoke {report.backend}: {verdict}: {reached}/{len(a.sites) if a else 0} sites reached, "
            f"{len(a.other) if a else 0} other call sites, {report.seconds:.1f} s of server time")


def _problems(report) -> list[str]:
    lines = [f"{r.name}: {r.detail}" for r in report.runs if not r.ok]
    if report.attribution:
        lines += list(report.attribution.messages)
    return lines


def render_terminal(report, console) -> None:
    from rich.table import Table

    if report.attribution is not None:
        table = Table(title="Runtime sites", title_justify="left")
        for header in _HEADERS:
            table.add_column(header)
        for row in site_rows(report):
            style = _STYLE.get(row[-1], "red")
            table.add_row(*row[:-1], f"[{style}]{row[-1]}[/]")
        console.print(table)
        if report.attribution.other:
            other = Table(title="Other state calls (judged by nothing)", title_justify="left")
            for header in ("where", "function", "flags", "calls"):
                other.add_column(header)
            for row in other_rows(report):
                other.add_row(*row)
            console.print(other)
    for line in _problems(report):
        console.print(line, markup=False)
    console.print(f"[{'green' if report.passed else 'red'}]{summary_line(report)}[/]")


def to_markdown(report) -> str:
    # Upstream's files, functions and calls, its server's messages and its build's error: text.
    parts = [f"## patchkit smoke ({report.backend})\n\n"]
    if report.attribution is not None:
        parts.append(md_table(_HEADERS, [list(map(md_text, row)) for row in site_rows(report)]))
        if report.attribution.other:
            parts += ["\nOther state calls (judged by nothing):\n\n",
                      md_table(["where", "function", "flags", "calls"],
                               [list(map(md_text, row)) for row in other_rows(report)])]
    parts += [f"\n- {md_text(line)}\n" for line in _problems(report)]
    parts.append(f"\n**{md_text(summary_line(report))}**\n")
    return "".join(parts)


def junit_cases(report) -> list[JUnitCase]:
    """One testcase per runtime site (not reached: skipped), per rule short of its required
    coverage, and per server run."""
    cases = [JUnitCase("patchkit.smoke", f"{s.file}:{s.line} {s.call}",
                       None if s.verdict.value in ("ok", "not-reached") else s.verdict.value,
                       skipped="not reached" if s.verdict.value == "not-reached" else None,
                       details=f"{s.site_class}: {s.calls_seen} call(s), flags "
                               + (", ".join(flag_names(f) for f in s.flags_seen) or "-"))
             for s in (report.attribution.sites if report.attribution else ())]
    cases += [JUnitCase("patchkit.smoke.coverage", c.rule, f"never reached: {', '.join(c.missing)}")
              for c in (report.attribution.coverage if report.attribution else ()) if c.missing]
    cases += [JUnitCase("patchkit.smoke.run", r.name, None if r.ok else r.detail) for r in report.runs]
    if report.detail:
        cases.append(JUnitCase("patchkit.smoke", "smoke", report.detail))
    return cases


def to_junit(report) -> str:
    return junit_xml("patchkit smoke", junit_cases(report))
