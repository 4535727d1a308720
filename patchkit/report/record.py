"""Renderers of a `RecordReport` (`record`, and `absorb`, which ends in one): terminal and JSON."""

from __future__ import annotations

from patchkit.report import to_json as envelope

_WHY = {"dropped": "no commit is it any more", "squashed": "squashed into {into}"}


def summary_line(report) -> str:
    counts: dict[str, int] = {}
    for p in report.patches:
        counts[p.action.value] = counts.get(p.action.value, 0) + 1
    moved = report.series != report.series_before and \
        [n for n in report.series if n in report.series_before] != [n for n in report.series_before if n in report.series]
    what = ", ".join(f"{n} {action}" for action, n in counts.items() if action != "unchanged") or "nothing changed"
    if moved:
        what += ", series reordered"
    where = f"{report.branch} at {report.upstream_commit[:12]}"
    if report.dry_run:
        return f"would record {where}: {what}; dry run: nothing written"
    lock = "patchkit.lock updated" if report.lock_updated else \
        "patchkit.lock not updated (site checks fail)" if not report.passed else "patchkit.lock unchanged"
    return f"recorded {where}: {what}; {lock}"


def render_terminal(report, console) -> None:
    from rich.markup import escape

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False)

    for p in report.patches:
        if p.action.value == "unchanged":
            continue
        line = f"{p.action.value:<9} {p.name}"
        if p.change is not None:
            line += f" ({p.change.value})"
        if p.commit and p.action.value in ("edited", "new"):
            line += f" from {p.commit[:12]} {p.subject}"
        if p.action.value in _WHY:
            line += f": {_WHY[p.action.value].format(into=p.into)}"
            line += "; file deleted" if p.name in report.pruned else "; file kept (--prune deletes it)" \
                if not report.dry_run else ""
        say(line)
        for diff_line in p.content_diff.splitlines()[2:]:
            say(f"    {diff_line}")
    if report.series != report.series_before:
        say("series: " + " ".join(report.series))
    if report.checks is not None and not report.checks.passed:
        from patchkit.report import check

        say("site checks of the new queue:")
        check.render_terminal(report.checks, console)
    style = "yellow" if not report.passed else "green"
    console.print(f"[{style}]{escape(summary_line(report))}[/]", highlight=False)


def to_json(report, kind: str = "record") -> str:
    return envelope(kind, report)


def absorb_summary(report) -> str:
    if report.refused:
        return (f"refused: {len(report.refused)} edit(s) no single patch owns; nothing changed "
                "(--new NAME makes them a new patch)")
    return f"absorbed {len(report.edits)} edit(s); " + summary_line(report.record)


def render_absorb(report, console) -> None:
    from rich.markup import escape

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False)

    for e in report.edits:
        say(f"{e.path}:{e.line}: into {e.patch or 'a new patch'} ({e.commit[:12]})")
    for e in report.refused:
        say(f"{e.path}:{e.line}: {e.why}" + (f": {', '.join(e.candidates)}" if e.candidates else ""))
    for path in report.untracked:
        say(f"{path}: untracked, not absorbed")
    if report.record is not None:
        render_terminal(report.record, console)
    else:
        console.print(f"[red]{escape(absorb_summary(report))}[/]", highlight=False)
