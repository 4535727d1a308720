"""Renderers of a `NightlyReport`: terminal, Markdown, JUnit (JSON is the generic `to_json`)."""

from __future__ import annotations

from patchkit.nightly.refresh import Change
from patchkit.report import JUnitCase, junit_xml, md_table
from patchkit.report import apply as render_apply
from patchkit.untrusted import md_block, md_code, md_text


def finding_line(f, markdown: bool = False) -> str:
    """One line a maintainer acts on: what happened to the patch, and which upstream commit did it.
    MARKDOWN: for an issue, upstream's subject, author and the detail shown as text (untrusted)."""
    def text(value: str, pulls: str | None = None) -> str:
        return md_text(value, pulls) if markdown else value

    patch = md_code(f.patch) if markdown else f.patch
    if f.culprit is None:
        return f"{patch}: {f.kind}: {text(f.detail)}"
    c = f.culprit
    commit = render_apply.commit_md(c) if markdown else f"{c.commit[:12]} {c.subject}"
    where = "" if markdown else f" <{c.pull_url or c.url or c.commit}>"
    return f"{patch}: {f.kind} by {commit}, {text(c.author)}, {c.date}{where}: {text(f.detail, c.pulls)}"


def finding_lines(findings, markdown: bool = False) -> dict[str, str]:
    """Each patch's findings, one line each: a conflict and the drift under it are both its."""
    lines: dict[str, list[str]] = {}
    for f in findings:
        lines.setdefault(f.patch, []).append(finding_line(f, markdown))
    return {patch: "\n\n".join(found) for patch, found in lines.items()}


def rebase_command(report) -> str | None:
    """The one command that walks a bad night's patches to a fix, where a patch needs a person."""
    a = report.apply
    if any(not p.good for p in a.patches) or report.fuzzed or len(report.findings) > len(report.disabled):
        return f"patchkit rebase upstream@{a.upstream_commit}"
    return None


def summary_line(report) -> str:
    a = report.apply
    if report.refreshes:
        changed = sum(r.change is not Change.UNCHANGED for r in report.refreshed)
        good = (f"nightly: {len(a.patches)} patch{'' if len(a.patches) == 1 else 'es'} good on {a.upstream_commit[:12]} ({a.ref}); "
                f"{changed} refreshed; lock {'moved' if report.lock_moved else 'not moved'}")
        return good if report.passed else f"{good}; NEEDS ATTENTION: disabled in the series: {', '.join(report.disabled)}"
    bad = [p.name for p in a.patches if not p.good]
    why = [f"{len(bad)} of {len(a.patches)} patches not good"] if bad else []
    why += ["checks failed"] if a.checks is not None and not a.checks.passed else []
    drifted = sorted({d.patch for d in a.drift if not d.reviewed})
    why += [f"drift since the lock: {', '.join(drifted)}"] if drifted else []
    why += ["builds failed"] if a.builds is not None and a.builds.exit_code else []
    why += ["smoke failed"] if a.smoke is not None and not a.smoke.passed else []
    why += [f"fuzzed (never refreshed or locked): {', '.join(report.fuzzed)}"] if report.fuzzed else []
    return f"nightly: NEEDS ATTENTION on {a.upstream_commit[:12]} ({a.ref}): " + "; ".join(why)


def render_terminal(report, console) -> None:
    render_apply.render_terminal(report.apply, console)
    for f in report.findings:
        console.print(finding_line(f), markup=False)
        if f.applied_upstream:
            console.print(f"  add to the patch, then drop it: {f.applied_upstream}", markup=False)
    for b in report.build_blame:
        console.print(f"build {b.backend}: {b.fault}'s fault: {b.detail}", markup=False)
    for r in report.refreshed:
        if r.change is not Change.UNCHANGED:
            console.print(f"refreshed {r.name}: {r.change.value}", markup=False)
            if r.content_diff:
                console.print(r.content_diff.rstrip(), markup=False)
    # report.warnings: each was said on stderr as it happened, the terminal's one copy
    if rebase_command(report):
        console.print(f"to fix it: {rebase_command(report)} (stops at each patch that needs a person; "
                      "edit, then `patchkit rebase --continue`)", markup=False)
    console.print(f"[{'green' if report.passed else 'red'}]{summary_line(report)}[/]")


def to_markdown(report) -> str:
    parts = [f"# patchkit nightly: {'good' if report.passed else 'needs attention'}\n\n",
             f"**{summary_line(report)}**\n\n"]
    if rebase_command(report):
        parts.append(f"To fix it: `{rebase_command(report)}`, edit, `patchkit rebase --continue`.\n\n")
    if report.findings:
        rows = [[f"`{f.patch}`", f.kind, _culprit_md(f), f"{f.probes}/{f.bound}", md_text(f.detail)]
                for f in report.findings]
        parts += ["## What upstream did to the queue\n\n",
                  md_table(["patch", "finding", "upstream commit", "probes", "detail"], rows), "\n"]
        parts += [f"- `{f.patch}`: add `{f.applied_upstream}`, then drop it\n" for f in report.findings
                  if f.applied_upstream]
    if report.build_blame:
        parts += ["## Failed builds\n\n", md_table(["backend", "whose fault", "why"],
                                                    [[b.backend, b.fault, md_text(b.detail)] for b in report.build_blame]), "\n"]
    if report.refreshed:
        parts += ["## Refresh\n\n", md_table(["patch", "change"], [[f"`{r.name}`", r.change.value] for r in report.refreshed])]
        # A fence no line of the diff (upstream's text) can close.
        parts += [f"\n### {r.name}\n\n{md_block(r.content_diff.rstrip(), 'diff')}\n" for r in report.refreshed
                  if r.content_diff]
        parts.append("\n")
    parts.append(render_apply.to_markdown(report.apply).replace("# patchkit apply", "## patchkit apply", 1))
    parts += [f"\n> warning: {w}\n" for w in report.warnings]
    return "".join(parts)


def _culprit_md(f) -> str:
    c = f.culprit
    return "-" if c is None else f"{render_apply.commit_md(c)}, {md_text(c.author)}, {c.date}"


def to_junit(report) -> str:
    """One testcase per patch; a failing one carries its finding."""
    first = {}
    for f in report.findings:
        first.setdefault(f.patch, f)
    lines = finding_lines(report.findings)
    cases = []
    for case in render_apply.junit_cases(report.apply):
        f = first.get(case.name)
        if f is not None:
            case = JUnitCase(case.classname, case.name, case.failure or f"{f.kind}: {f.detail}",
                             f"{lines[case.name]}\n{case.details}".strip())
        cases.append(case)
    if report.fuzzed:
        cases = [JUnitCase(c.classname, c.name, c.failure or "fuzzed: refresh it", c.details)
                 if c.name in report.fuzzed else c for c in cases]
    return junit_xml("patchkit nightly", cases)
