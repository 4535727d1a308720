"""Renderers of a `VerifyReport`: terminal, JSON, Markdown, JUnit."""

from __future__ import annotations

from patchkit.report import JUnitCase, junit_xml, md_table, plain
from patchkit.report import apply as render_apply
from patchkit.report import to_json as envelope

_STYLE = {"unchanged": "green", "format-only": "yellow", "line-numbers-only": "yellow",
          "context-changed": "yellow", "content-changed": "red"}


def summary_line(report) -> str:
    where = f"at the locked commit {report.upstream_commit[:12]}"
    parts = ([f"{len(report.files)} patch file(s)"] if report.files else []) + (["patchkit.lock"] if report.lock else [])
    if report.series:  # the cause: the lock's drift and a patch that does not apply may follow from it
        text = f"stale: patchkit.lock and {report.series.path} list different patches"
        if not report.applies:
            text += f", and the queue does not apply {where}"
    elif not report.applies:
        text = f"stale: the queue does not apply {where}"
    elif parts:
        text = f"stale: refreshing the queue {where} changes {' and '.join(parts)}"
    elif not report.apply.passed:
        text = f"fresh {where}, but the site checks fail"
    else:
        text = f"fresh: refreshing the queue {where} changes nothing"
    if report.output_dir and report.applies:  # written even for an empty queue
        text += f"; regenerated files in {report.output_dir}"
    return text


def series_lines(report) -> list[str]:
    """One line per patch the lock lists and the series does not, or the reverse."""
    series = report.series
    if series is None:
        return []
    if series.empty:
        count = len(series.not_in_series)
        return [f"{series.path} is empty, but patchkit.lock lists {count} patch{'' if count == 1 else 'es'}"]
    return ([f"patchkit.lock lists {name}, {series.path} does not" for name in series.not_in_series]
            + [f"{series.path} lists {name}, patchkit.lock does not" for name in series.not_in_lock])


def lock_lines(report) -> list[str]:
    return [f"patchkit.lock {d.field}: {d.old or '-'} -> {d.new or '-'}" for d in report.lock]


def render_terminal(report, console) -> None:
    from rich.table import Table

    if not report.apply.passed:
        render_apply.render_terminal(report.apply, console)
    if report.refreshed:
        table = Table(title=f"patchkit verify (locked {report.upstream_commit[:12]})", title_justify="left")
        for column in ("patch", "refresh", "sha256"):
            table.add_column(column, no_wrap=column != "patch")
        for r in report.refreshed:
            sha = r.old_sha256[:12] if r.old_sha256 == r.new_sha256 else f"{r.old_sha256[:12]} -> {r.new_sha256[:12]}"
            table.add_row(r.name, f"[{_STYLE[r.change.value]}]{r.change.value}[/]", sha)
        console.print(table)
    for f in report.files:
        console.print(f.diff, markup=False, highlight=False, end="")
    for line in (*lock_lines(report), *series_lines(report)):
        console.print(line, markup=False, highlight=False)
    console.print(f"[{'green' if report.passed else 'red'}]{summary_line(report)}[/]")


def to_json(report) -> str:
    return envelope("verify", {
        "upstream_url": report.upstream_url,
        "upstream_commit": report.upstream_commit,
        "series": plain(report.series),
        "patches": plain(report.refreshed),
        "files": plain(report.files),
        "lock": plain(report.lock),
        "output_dir": str(report.output_dir) if report.output_dir else None,
        "apply": plain(report.apply),
        "passed": report.passed,
    })


def to_markdown(report) -> str:
    parts = [f"# patchkit verify\n\nUpstream `{report.upstream_url}` at the locked commit "
             f"`{report.upstream_commit}`.\n\n"]
    if not report.apply.passed:
        parts.append(render_apply.to_markdown(report.apply) + "\n")
    if report.refreshed:
        parts.append(md_table(["patch", "refresh", "sha256"],
                              [[f"`{r.name}`", r.change.value, f"`{r.new_sha256[:12]}`"] for r in report.refreshed]))
    for f in report.files:
        parts.append(f"\n## {f.path}\n\n```diff\n{f.diff}```\n")
    if report.lock:
        parts.append("\n## patchkit.lock\n\n" + md_table(
            ["field", "committed", "regenerated"], [[d.field, *(f"`{v}`" if v else "-" for v in (d.old, d.new))] for d in report.lock]))
    if report.series:
        parts.append(f"\n## {report.series.path}\n\n" + "".join(f"- {line}\n" for line in series_lines(report)))
    parts.append(f"\n**{summary_line(report)}**\n")
    return "".join(parts)


def to_junit(report) -> str:
    diffs = {f.name: f.diff for f in report.files}
    cases = [JUnitCase("patchkit.verify", r.name,
                       failure=None if r.name not in diffs else f"refreshing gives other bytes ({r.change.value})",
                       details=diffs.get(r.name, r.content_diff))
             for r in report.refreshed]
    cases.append(JUnitCase("patchkit.verify", "patchkit.lock",
                           failure="refreshing changes the lock" if report.lock else None,
                           details="\n".join(lock_lines(report))))
    if report.series:
        cases.append(JUnitCase("patchkit.verify", report.series.path,
                               failure="patchkit.lock and the series list different patches",
                               details="\n".join(series_lines(report))))
    if not report.apply.passed:
        cases += render_apply.junit_cases(report.apply)
    return junit_xml("patchkit verify", cases)
