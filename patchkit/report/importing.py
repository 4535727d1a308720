"""Renderers of an `ImportReport`: terminal and JSON."""

from __future__ import annotations

from patchkit.report import plain
from patchkit.report import to_json as envelope
from patchkit.report.apply import STYLE, hunk_counts, hunk_lines


def summary_line(report) -> str:
    n = len(report.entries)
    where = f"at {report.upstream_commit[:12]} ({report.ref})"
    place = f"after {report.after}" if report.after else "at the end of the series"
    bad = [e for e in report.entries if not e.good]
    if report.refused:
        parts = []
        if bad:
            parts.append(f"{len(bad)} of {n} new patch(es) do not apply cleanly {where}")
        if report.broken:
            parts.append(f"the import breaks {', '.join(b.name for b in report.broken)}")
        return f"refused: {'; '.join(parts)}; patches/ is unchanged (--allow-failing imports anyway)"
    verb = "would import" if report.dry_run else "imported"
    text = f"{verb} {n} patch(es) into {report.series} {place}; they apply {where}"
    if bad or report.broken:
        text = (f"{verb} {n} patch(es) into {report.series} {place}, "
                f"{len(bad) + len(report.broken)} needing attention {where} (--allow-failing)")
    if report.dry_run:
        text += "; dry run: nothing written"
    return text


def render_terminal(report, console) -> None:
    from rich.markup import escape
    from rich.table import Table

    title = f"patchkit import at {report.upstream_commit[:12]} ({escape(report.ref)})"
    table = Table(title=title + (" — dry run" if report.dry_run else ""), title_justify="left")
    for column in ("#", "patch", "source", "verdict", "hunks"):
        table.add_column(column, no_wrap=column in ("#", "verdict"))
    for e in report.entries:
        verdict = e.verdict.value if e.verdict else "-"
        style = STYLE.get(e.verdict, "white") if e.verdict else "white"
        table.add_row(str(e.position), escape(e.name), escape(e.source), f"[{style}]{verdict}[/]", hunk_counts(e))
    console.print(table)

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False)

    for e in report.entries:
        say(f"{e.name}: {e.subject}")
        say(f"  {e.kind} · {e.author} · Date: {e.date}" + (" (the import time)" if e.date_set else ""))
        for r in e.repairs:
            say(f"  repaired hunk {r.index} ({r.file}, upstream line {r.upstream_line}): " + "; ".join(r.notes))
        for note in e.repair_notes:
            say(f"  repaired: {note}")
        if not e.good:
            if e.detail:
                say(f"  {e.detail}")
            for line in _failing(e.hunks):
                say(f"  {line}")
    for b in report.broken:
        say(f"{b.name} (in the queue): {b.verdict.value} after the import" + (f" — {b.detail}" if b.detail else ""))
        for line in _failing(b.hunks):
            say(f"  {line}")
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    style = "red" if report.refused else "yellow" if not report.passed else "green"
    console.print(f"[{style}]{escape(summary_line(report))}[/]", highlight=False)


def _failing(hunks) -> list[str]:
    return [line for h in hunks if h.verdict.value not in ("clean", "offset") for line in hunk_lines(h)]


def to_json(report) -> str:
    return envelope("import", {
        "upstream_url": report.upstream_url,
        "ref": report.ref,
        "upstream_commit": report.upstream_commit,
        "series": str(report.series),
        "after": report.after,
        "dry_run": report.dry_run,
        "written": report.written,
        "entries": [{
            "name": e.name, "position": e.position, "source": e.source, "kind": e.kind, "format": e.format,
            "subject": e.subject, "author": e.author, "date": e.date, "date_set": e.date_set,
            "sha256": e.sha256, "verdict": e.verdict.value if e.verdict else None, "good": e.good,
            "hunks": plain(e.hunks), "blocked_by": list(e.blocked_by), "detail": e.detail,
            "repairs": plain(e.repairs), "repair_notes": list(e.repair_notes), "warnings": list(e.warnings),
        } for e in report.entries],
        "broken": plain(report.broken),
        "warnings": list(report.warnings),
        "passed": report.passed,
        "refused": report.refused,
    })
