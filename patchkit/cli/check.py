"""`patchkit check`: the patches' site rules on a tree, or on upstream as it is."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from patchkit.cli.app import (JsonOpt, JunitOpt, MarkdownOpt, NoFetchOpt, UpstreamOpt, app, check_reports, console,
                              emit, is_quiet, is_verbose, report_option, warn)
from patchkit.cli.progress import progress_display
from patchkit.errors import PatchkitError

if TYPE_CHECKING:
    from patchkit.checks import Rule
    from patchkit.project import Project


@app.command("check")
def check_command(
    tree: Optional[Path] = typer.Argument(None, metavar="[DIR]",
                                          help="Tree to check (default: the project's output tree)."),
    rules_files: Optional[List[Path]] = typer.Option(
        None, "--rules", metavar="FILE",
        help="Rules file (NAME.checks.yaml; repeats). Default: the rules of every patch in the "
             "series, and the checks in patchkit.yaml."),
    json_out: Optional[str] = JsonOpt,
    markdown: Optional[str] = MarkdownOpt,
    junit: Optional[str] = JunitOpt,
    sarif: Optional[str] = report_option("--sarif", "a SARIF 2.1.0 report (for code scanning)"),
    on_upstream: Optional[str] = typer.Option(
        None, "--on-upstream", metavar="upstream@REF",
        help="Check unpatched upstream instead, read from the mirror: does the intent already hold there?"),
    upstream: Optional[str] = UpstreamOpt,
    no_fetch: bool = NoFetchOpt,
) -> None:
    """Check that each patch's intent holds at its call sites (exit 1 if a rule fails).

    Examples:\n
      patchkit check\n
      patchkit check /tmp/llama --sarif check.sarif --junit check.xml\n
      patchkit check --rules patches/NAME.checks.yaml ./llama.cpp --json -\n
      patchkit check --on-upstream upstream@HEAD
    """
    from patchkit.checks.targets import check_directory, check_upstream
    from patchkit.report import check as render
    from patchkit.report import to_json

    if on_upstream and tree:
        raise PatchkitError("give a DIR or --on-upstream, not both",
                            "DIR checks a tree on disk; --on-upstream reads upstream from the mirror")
    project = _project() if on_upstream or tree is None or not rules_files else None
    check_reports(project, json_out, markdown, junit, sarif)
    rules = _rules(rules_files, project)
    if on_upstream:
        assert project is not None
        root = None
        with progress_display(f"check --on-upstream {on_upstream}") as progress:
            report = check_upstream(project, rules, on_upstream, upstream, not no_fetch, progress, warn)
    else:
        root = (tree or project.output_dir).resolve()
        report = check_directory(rules, root)

    def terminal() -> None:
        out = console()
        render.render_terminal(report, out, quiet=is_quiet(), verbose=is_verbose())
        if on_upstream:
            out.print(render.upstream_verdict(report))

    emit({json_out: lambda: to_json("check", report),
          markdown: lambda: render.to_markdown(report),
          junit: lambda: render.to_junit(report),
          sarif: lambda: render.to_sarif(report, root)},
         terminal)
    if not report.passed:
        raise typer.Exit(1)


def _project() -> Project:
    from patchkit.project import Project

    return Project.find()


def _rules(files: Optional[List[Path]], project: Project | None) -> list[Rule]:
    """The rules of FILES, or else of every patch in the series plus those in patchkit.yaml."""
    from patchkit.checks import combine_rules, load_rules, queue_rules

    if files:
        return combine_rules(load_rules(f) for f in files)
    from patchkit.queue import Queue

    assert project is not None
    return queue_rules(project, Queue.load(project).patches)
