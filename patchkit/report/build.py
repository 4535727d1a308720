"""Renderers of a `BuildReport` (terminal, JSON, Markdown, JUnit), the recipes list, live progress."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from patchkit.backends.probe import Availability
from patchkit.backends.recipe import Recipe, Requirement
from patchkit.backends.result import BuildReport, BuildResult, Status
from patchkit.report import JUnitCase, junit_xml, md_table, to_json
from patchkit.untrusted import md_text

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID

_STYLE = {Status.OK: "green", Status.FAILED: "bold red", Status.SKIPPED: "yellow",
          Status.NOT_RUN: "dim"}
_HEADERS = ["backend", "status", "configure", "build", "artifacts", "first error / reason"]


def to_markdown(report: BuildReport) -> str:
    # Upstream's CMake names the artifacts and its compilers write the first error: text, not Markdown.
    rows = [[f"`{r.backend}`", r.status.value, *_markdown_row(_row(r))] for r in report.results]
    return f"## Builds\n\n{md_table(_HEADERS, rows)}\n{verdict(report)}\n"


def to_junit(report: BuildReport) -> str:
    return junit_xml("patchkit.backends", junit_cases(report))


def junit_cases(report: BuildReport) -> list[JUnitCase]:
    """One testcase per backend (also for reports that embed builds, such as apply's)."""
    return [_case(r) for r in report.results]


def render_terminal(report: BuildReport, console: Console, *, quiet: bool = False) -> None:
    """The terminal view: one row per backend, where the failed logs are, the verdict line."""
    from rich.markup import escape
    from rich.table import Table

    if not quiet:
        table = Table(*_HEADERS, title="Builds", title_justify="left")
        for r in report.results:
            table.add_row(escape(r.backend), f"[{_STYLE[r.status]}]{r.status.value}[/]",
                          *map(escape, _row(r)))
        console.print(table)
        for r in report.results:
            if r.status is Status.FAILED and r.log:
                console.print(f"{r.backend}: full log in {r.log}", markup=False)
    console.print(verdict(report), markup=False)


def verdict(report: BuildReport) -> str:
    counts = ", ".join(f"{report.count(s)} {s.value}" for s in Status if report.count(s))
    line = f"builds: {counts or 'none'}"
    if report.interrupted:
        not_run = [r.backend for r in report.results if r.status is Status.NOT_RUN]
        line += f"; interrupted, did not run: {', '.join(not_run) or 'none'}"
    return line


def draw_recipes(recipes: Sequence[Recipe], available: dict[str, Availability],
                  console: Console) -> None:
    """Each backend: what it needs, and whether this machine has it (and why not)."""
    from rich.markup import escape
    from rich.table import Table

    table = Table("backend", "from", "here", "needs", "probe", "CI", title="Recipes", title_justify="left")
    for recipe in recipes:
        av = available[recipe.name]
        here = "[green]yes[/]" if av.ok else "[yellow]no[/]"
        source = escape(_origin(recipe))
        ci = escape(ci_line(recipe))
        findings = av.findings or ()
        for i, f in enumerate(findings):
            mark = "[green]\u2713[/]" if f.ok else "[red]\u2717[/]"
            table.add_row(escape(recipe.name) if i == 0 else "", source if i == 0 else "",
                          here if i == 0 else "", escape(_need(f.requirement)),
                          f"{mark} {escape(f.detail)}", ci if i == 0 else "", end_section=i == len(findings) - 1)
        if not findings:
            table.add_row(escape(recipe.name), source, here, "-", "-", ci, end_section=True)
    console.print(table)


def ci_line(recipe: Recipe) -> str:
    """Where the backend builds in CI, in one line: "ubuntu-24.04 in nvidia/cuda:12.6.2-devel-ubuntu24.04
    + rocblas-dev, hipblas-dev"; "-" without a ci: section."""
    ci = recipe.ci
    if ci is None:
        return "-"
    where = f"{ci.runs_on} in {ci.container}" if ci.container else ci.runs_on
    packages = f" + {', '.join(ci.packages)}" if ci.packages else ""
    setup = f" + {len(ci.setup)} setup command{'' if len(ci.setup) == 1 else 's'}" if ci.setup else ""
    return where + packages + setup + (f", sources {ci.source}" if ci.source else "")


def _origin(recipe: Recipe) -> str:
    """Where a recipe comes from: "shipped", "project", or "project (overrides shipped)"."""
    return f"{recipe.source} (overrides shipped)" if recipe.overrides else recipe.source


def render_recipes_json(recipes: Sequence[Recipe], available: dict[str, Availability],
                        tree: Path | None) -> str:
    return to_json("recipes", {"tree": tree, "recipes": [
        {"name": r.name, "description": r.description, "path": r.path, "source": r.source,
         "overrides": r.overrides, "available": available[r.name].ok,
         "reason": available[r.name].reason, "ci": r.ci,
         "requirements": [{"kind": f.requirement.kind, "value": f.requirement.value,
                           "name": f.requirement.name, "minimum": f.requirement.minimum,
                           "ok": f.ok, "detail": f.detail} for f in available[r.name].findings]}
        for r in recipes]})


class LiveProgress:
    """A BuildProgress drawing one progress bar per backend on a console (stderr)."""

    def __init__(self, console: Console) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._console = console
        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), console=console, transient=True)
        self._tasks: dict[str, TaskID] = {}

    def __enter__(self) -> LiveProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def phase(self, backend: str, phase: str) -> None:
        if backend not in self._tasks:
            self._tasks[backend] = self._progress.add_task(backend, total=None)
        self._progress.update(self._tasks[backend], description=f"{backend}: {phase}")

    def step(self, backend: str, done: int, total: int) -> None:
        self._progress.update(self._tasks[backend], completed=done, total=total)

    def finished(self, result: BuildResult) -> None:
        from rich.markup import escape

        task = self._tasks.pop(result.backend, None)
        if task is not None:
            self._progress.remove_task(task)
        detail = f": {result.reason}" if result.reason else ""
        self._console.print(f"[{_STYLE[result.status]}]{result.status.value}[/] "
                            f"{escape(result.backend + detail)}", highlight=False)


def _row(r: BuildResult) -> list[str]:
    ran = r.status in (Status.OK, Status.FAILED)
    return [_seconds(r.configure_seconds) if ran else "-",
            _seconds(r.build_seconds) if ran and r.build_seconds else "-",
            "\n".join(f"{Path(a.path).name} ({_size(a.size)})" for a in r.artifacts) or "-",
            _problem(r) or "-"]


def _markdown_row(row: list[str]) -> list[str]:
    """ROW (`_row`'s) in Markdown: its artifacts and problem (upstream's text) as text, line by line."""
    *seconds, artifacts, problem = row
    return [*seconds, *("\n".join(map(md_text, cell.split("\n"))) if cell != "-" else cell
                        for cell in (artifacts, problem))]


def _problem(r: BuildResult) -> str:
    if r.first_error is None:
        return r.reason
    e = r.first_error
    where = ":".join(str(p) for p in (e.file, e.line) if p is not None)
    return f"{where}: error: {e.message}" if where else e.message


def _case(r: BuildResult) -> JUnitCase:
    seconds = r.configure_seconds + r.build_seconds
    if r.status is Status.FAILED:
        details = "\n".join(filter(None, [r.reason, _problem(r), f"log: {r.log}" if r.log else ""]))
        return JUnitCase("build", r.backend, failure=_problem(r), details=details, seconds=seconds)
    if r.status in (Status.SKIPPED, Status.NOT_RUN):
        return JUnitCase("build", r.backend, skipped=f"{r.status.value}: {r.reason}")
    artifacts = "\n".join(f"{a.path} ({a.size} bytes)" for a in r.artifacts)
    return JUnitCase("build", r.backend, details=artifacts, seconds=seconds)


def _need(req: Requirement) -> str:
    version = f" >= {req.minimum}" if req.minimum else ""
    return f"{req.name}{version}" if req.name != req.value else f"{req.kind} {req.value}{version}"


def _seconds(s: float) -> str:
    return f"{s:.1f}s"


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KiB" if n < 1024 ** 2 else f"{n / 1024 ** 2:.1f} MiB"
