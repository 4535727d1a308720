"""Renderers of an `ExportReport`: terminal and JSON."""

from __future__ import annotations

from patchkit.report import plain
from patchkit.report import to_json as envelope


def summary_line(report) -> str:
    return (f"exported {len(report.patches)} patch(es) as {report.format.value} to {report.out}: "
            f"llama.cpp {report.version} (upstream {report.upstream_commit[:12]})")


def render_terminal(report, console) -> None:
    from rich.table import Table

    table = Table(title=f"patchkit export {report.format.value}", title_justify="left")
    for column in ("file", "sha256", "patch"):
        table.add_column(column, no_wrap=column == "sha256")
    patches = {p.file: p.name for p in report.patches}
    subjects = {p.name: p.subject for p in report.patches}
    for f in report.files:
        name = patches.get(f.path)
        table.add_row(f.path, f.sha256[:12], subjects[name] if name else "")
    console.print(table)
    console.print(f"cmake: -DLLAMA_BUILD_NUMBER={report.build_number} -DLLAMA_BUILD_COMMIT={report.build_commit}",
                  markup=False, highlight=False)
    console.print(f"[green]{summary_line(report)}[/]", highlight=False)


def to_json(report) -> str:
    return envelope("export", plain(report))
