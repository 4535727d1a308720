"""Renderers of an `ApplyReport`: terminal, JSON, Markdown, JUnit."""

from __future__ import annotations

from patchkit.apply import HunkVerdict, PatchResult, Verdict
from patchkit.report import JUnitCase, junit_xml, md_table
from patchkit.untrusted import md_block, md_code, md_text

STYLE = {
    Verdict.CLEAN: "green", Verdict.OFFSET: "green", Verdict.MERGED: "cyan",
    Verdict.FUZZED: "yellow", Verdict.ALREADY_APPLIED: "magenta",
    Verdict.PARTIALLY_APPLIED: "magenta", Verdict.AMBIGUOUS: "red", Verdict.CONFLICT: "red",
    Verdict.MISSING_FILE: "red", Verdict.BLOCKED: "red", Verdict.MALFORMED: "red",
}


def hunk_where(h: HunkVerdict) -> str:
    if h.actual_line is None:
        return f"{h.file}:{h.expected_line}"
    shift = f" ({h.offset:+d})" if h.offset else ""
    return f"{h.file}:{h.actual_line}{shift}"


def hunk_lines(h: HunkVerdict) -> list[str]:
    """What a maintainer needs about one hunk that is not simply good."""
    lines = [f"hunk {h.hunk} {h.verdict.value} at {hunk_where(h)}" + (f": {h.detail}" if h.detail else "")]
    if h.nearest_line is not None:
        lines.append(f"  nearest upstream lines at {h.file}:{h.nearest_line} ('!' where they differ from the hunk):")
        lines += [f"  {'!' if i in h.nearest_differs else ' '} {text.rstrip()}" for i, text in enumerate(h.nearest)]
    return lines


def hunk_counts(p: PatchResult) -> str:
    """'5 clean, 1 ambiguous': the hunks' verdicts in order of first appearance."""
    counts: dict[str, int] = {}
    for h in p.hunks:
        counts[h.verdict.value] = counts.get(h.verdict.value, 0) + 1
    return ", ".join(f"{n} {v}" for v, n in counts.items())


def _noteworthy(p: PatchResult) -> list[HunkVerdict]:
    return [h for h in p.hunks if h.verdict not in (Verdict.CLEAN, Verdict.OFFSET)]


def summary_line(report) -> str:
    good = sum(p.good for p in report.patches)
    text = (f"{good}/{len(report.patches)} patches applied to {report.upstream_commit[:12]} "
            f"({report.ref}) on branch {report.branch}" + (f" in {report.output}" if report.output else ""))
    if report.checks is not None:
        text += "; checks " + ("passed" if report.checks.passed else "FAILED")
    drift = [d for d in report.drift if not d.reviewed]
    if drift:
        text += f"; DRIFT: {len(drift)} declaration{'' if len(drift) == 1 else 's'} the queue relies on changed"
    return text


def drift_line(d) -> str:
    """One drift as a maintainer acts on it: the patch, what changed and the commit that did it."""
    c = d.culprit
    by = f" by {c.commit[:12]} {c.subject} <{c.pull_url or c.url or c.commit}>" if c else ""
    state = f"reviewed ({d.entity} {c.commit[:8]}), silenced" if d.reviewed and c else "drift"
    after_a_look = f"; once a person has looked: `Reviewed-Drift: {d.entity} {c.commit[:8]}`" \
        if c and not d.reviewed else ""
    return f"{d.patch}: {state}{by}: {d.detail}{after_a_look}"


def render_terminal(report, console) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"patchkit apply {report.ref}", title_justify="left")
    for column in ("#", "patch", "verdict", "hunks", "commit"):
        table.add_column(column, no_wrap=column != "patch")
    for i, p in enumerate(report.patches, 1):
        table.add_row(str(i), p.name, f"[{STYLE[p.verdict]}]{p.verdict.value}[/]", hunk_counts(p),
                      (p.commit or "-")[:12])
    console.print(table)
    for p in report.patches:
        details = _noteworthy(p)
        if details or p.detail:
            # The detail quotes upstream's and the patch's text: never rich markup.
            console.print(f"[bold]{escape(p.name)}[/]: [{STYLE[p.verdict]}]{p.verdict.value}[/]"
                          + (f" — {escape(p.detail)}" if p.detail else ""), markup=True)
            for h in details:
                for line in hunk_lines(h):
                    console.print(f"  {line}", markup=False)
    if report.checks is not None:
        from patchkit.report.check import render_terminal as render_checks

        render_checks(report.checks, console)
    if report.builds is not None:
        from patchkit.report.build import render_terminal as render_builds

        render_builds(report.builds, console)
    if report.smoke is not None:
        from patchkit.report.smoke import render_terminal as render_smoke

        render_smoke(report.smoke, console)
    for d in report.drift:
        console.print(drift_line(d), markup=False)
    # report.warnings: each was said on stderr as it happened, the terminal's one copy
    style = "green" if report.passed else "red"
    console.print(f"[{style}]{summary_line(report)}[/]")


def to_markdown(report) -> str:
    # Upstream's text (its file names, lines and declarations, the details that quote them) goes
    # through md_text, md_code and md_block like every other report's.
    rows = [[str(i), md_code(p.name), f"**{p.verdict.value}**" if not p.good else p.verdict.value,
             md_text(", ".join(f"{h.hunk}: {h.verdict.value} @ {hunk_where(h)}" for h in p.hunks)),
             f"`{p.commit[:12]}`" if p.commit else "-"]
            for i, p in enumerate(report.patches, 1)]
    parts = [f"# patchkit apply `{report.ref}`\n",
             f"Upstream `{report.upstream_url}` at `{report.upstream_commit}`; branch "
             f"`{report.branch}` (tip `{report.tip[:12]}`).\n\n",
             md_table(["#", "patch", "verdict", "hunks", "commit"], rows)]
    for p in report.patches:
        details = _noteworthy(p)
        if details or not p.good:  # a malformed patch has no hunks, only its detail
            parts.append(f"\n## {md_text(p.name)}: {p.verdict.value}\n\n{md_text(p.detail)}\n"
                         + ("\n" + md_block("\n".join(line for h in details for line in hunk_lines(h)))
                            if details else ""))
    if report.checks is not None:
        from patchkit.report.check import to_markdown as checks_markdown

        parts.append("\n" + checks_markdown(report.checks))
    if report.builds is not None:
        from patchkit.report.build import to_markdown as builds_markdown

        parts.append("\n" + builds_markdown(report.builds))
    if report.smoke is not None:
        from patchkit.report.smoke import to_markdown as smoke_markdown

        parts.append("\n" + smoke_markdown(report.smoke))
    if report.drift:
        parts += ["\n## Semantic drift since the lock\n\n",
                  md_table(["patch", "relies on", "before → after", "upstream commit", "lines", "reviewed"],
                           [[md_code(d.patch), f"{d.kind} {md_code(d.entity)} ({md_text(d.declared_in)})",
                             f"{md_code(d.before)} → {md_code(d.after)}", commit_md(d.culprit),
                             md_text(", ".join(d.lines)), "yes" if d.reviewed else "**no**"] for d in report.drift])]
        parts += [f"\n- {md_code(d.patch)}: after a look, add "
                  f"{md_code(f'Reviewed-Drift: {d.entity} {d.culprit.commit[:12]}')}\n"
                  for d in report.drift if d.culprit and not d.reviewed]
    parts += [f"\n> warning: {md_text(w)}\n" for w in report.warnings]
    parts.append(f"\n**{summary_line(report)}**\n")
    return "".join(parts)


def commit_md(c) -> str:
    """An upstream commit (a Culprit) in Markdown: its id linked, and its subject (upstream's text)
    as text, each `#N` in it linked to upstream's pull request."""
    if c is None:
        return "-"
    commit = f"[`{c.commit[:12]}`]({c.url})" if c.url else f"`{c.commit[:12]}`"
    return f"{commit} {md_text(c.subject, c.pulls)}"


def junit_cases(report) -> list[JUnitCase]:
    cases = []
    for p in report.patches:
        details = "\n".join(line for h in p.hunks for line in hunk_lines(h))
        drift = [d for d in report.drift if d.patch == p.name and not d.reviewed]
        failure = f"{p.verdict.value}: {p.detail}" if not p.good else \
            f"drift: {drift[0].detail}" if drift else None
        cases.append(JUnitCase(
            classname="patchkit.apply", name=p.name, failure=failure,
            details="\n".join([*(drift_line(d) for d in drift), details]).strip()))
    return cases


def to_junit(report) -> str:
    cases = junit_cases(report)
    if report.checks is not None:
        from patchkit.report.check import junit_cases as check_cases

        cases += check_cases(report.checks)
    if report.builds is not None:
        from patchkit.report.build import junit_cases as build_cases

        cases += build_cases(report.builds)
    if report.smoke is not None:
        from patchkit.report.smoke import junit_cases as smoke_cases

        cases += smoke_cases(report.smoke)
    return junit_xml("patchkit apply", cases)
