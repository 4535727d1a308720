"""Renderer of `patchkit demo`."""

from __future__ import annotations

from patchkit.demo import DemoResult
from patchkit.report.apply import STYLE, hunk_counts, render_terminal as render_apply


def render_terminal(result: DemoResult, console) -> None:
    from rich.table import Table

    console.print(f"[bold]1. The queue on the demo upstream's HEAD[/] ({result.folder / 'upstream'})")
    render_apply(result.head, console)
    table = Table(title="2. The same queue on each scenario branch", title_justify="left")
    for column in ("upstream ref", "what upstream did", "verdict", "hunks", "site checks"):
        table.add_column(column, no_wrap=column != "what upstream did")
    for scenario, report in result.tour:
        (patch, *_) = report.patches
        table.add_row(scenario.ref, scenario.description, f"[{STYLE[patch.verdict]}]{patch.verdict.value}[/]",
                      hunk_counts(patch), _checks(report))
    console.print(table)
    console.print(f"Try it yourself:  cd {result.fork} && patchkit status && "
                  f"patchkit apply upstream@scenario/new-site", markup=False)


def _checks(report) -> str:
    """Expected and found sites per rule; '-' when nothing was applied to check."""
    if report.checks is None:
        return "-"
    counts = ", ".join(f"{r.found}/{r.expected}" for r in report.checks.rules)
    return f"[green]{counts} ok[/]" if report.checks.passed else f"[red]{counts} FAILED[/]"
