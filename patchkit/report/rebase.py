"""Renderers of a `RebaseReport`: terminal (JSON is the generic `to_json`)."""

from __future__ import annotations

from rich.markup import escape

from patchkit.apply import Verdict
from patchkit.report import apply as render_apply
from patchkit.report import nightly as render_nightly
from patchkit.report.nightly import finding_line


def summary_line(report) -> str:
    target = f"{report.upstream_commit[:12]} ({report.spec})"
    if report.aborted:
        return f"rebase: aborted; patches/, the lock and {report.output} are as they were before"
    if report.stopped is not None:
        return f"rebase: STOPPED at {report.stopped.patch} ({report.stopped.kind}) on {target}"
    if report.finished is not None and report.finished.refreshes:
        return f"rebase: done; {render_nightly.summary_line(report.finished)}"
    return f"rebase: NEEDS ATTENTION on {target}: every patch applied, the night is not good; " \
           "fix what it says in patches/ or patchkit.yaml (not in the checkout: this step re-applies the queue), " \
           "then `patchkit rebase --continue`"


def render_terminal(report, console) -> None:
    for r in report.fixed:
        console.print(f"{r.name}: taken from {report.output}, refreshed: {r.change.value}", markup=False)
        if r.content_diff:
            console.print(r.content_diff.rstrip(), markup=False)
    for name in report.skipped:
        console.print(f"{name}: disabled in the series (its file is kept)", markup=False)
    for name in report.dropped:
        console.print(f"{name}: removed from the series, its file deleted", markup=False)
    stop = report.stopped
    if stop is not None:
        # The subject and the detail are upstream's or the user's text: never rich markup.
        console.print(f"[bold]{escape(stop.patch)}[/] ({escape(stop.subject)}) needs a person: [red]{stop.kind}[/]"
                      + (f" — {escape(stop.detail)}" if stop.detail else ""), markup=True, highlight=False)
        for h in stop.hunks:
            if not h.verdict.good or h.verdict is Verdict.FUZZED:
                for line in render_apply.hunk_lines(h):
                    console.print(f"  {line}", markup=False)
        if stop.checks is not None:
            from patchkit.report.check import render_terminal as render_checks

            render_checks(stop.checks, console)
        if stop.finding is not None:
            console.print(f"  {finding_line(stop.finding)}", markup=False)
        for d in stop.drift:
            console.print(f"  {render_apply.drift_line(d)}", markup=False)
        for m in stop.markers:
            console.print(f"  conflict markers: {report.output / m.file}:{m.line} (hunk {m.hunk})", markup=False)
        if stop.reject_file is not None:
            console.print(f"  no place fits {', '.join(stop.rejected)}: see {stop.reject_file}", markup=False)
        if report.rest:
            console.print("the rest of the queue at the target (a trial):", markup=False)
            for p in report.rest:
                console.print(f"  {p.name}: {p.verdict.value}" + (f" — {p.detail}" if p.detail else ""),
                              markup=False)
        console.print(f"next: {stop.next}", markup=False)
    if report.finished is not None:
        render_nightly.render_terminal(report.finished, console)
        if report.finished.refreshes:
            console.print("commit patches/ and patchkit.lock: the queue is good at the target again"
                          + (f", but for {', '.join(report.finished.disabled)}, disabled in the series: "
                             "it needs a person" if report.finished.disabled else ""), markup=False)
    console.print(f"[{'green' if report.passed else 'red'}]{summary_line(report)}[/]")
