"""`patchkit check`: the patches' site rules on a tree, or on upstream as it is."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from patchkit.cli.app import JsonOpt, JunitOpt, MarkdownOpt, app, console, emit, is_quiet, is_verbose
from patchkit.errors import PatchkitError

if TYPE_CHECKING:
    from patchkit.checks import CheckReport, Rule
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
    sarif: Optional[str] = typer.Option(None, "--sarif", metavar="FILE",
                                        help="Write a SARIF 2.1.0 report to FILE (for code scanning)."),
    on_upstream: Optional[str] = typer.Option(
        None, "--on-upstream", metavar="upstream@REF",
        help="Check unpatched upstream instead, read from the mirror: does the intent already hold there?"),
    upstream: Optional[str] = typer.Option(None, "--upstream", metavar="URL_OR_PATH",
                                           help="Use this upstream for one run (a path or file:// works)."),
    no_fetch: bool = typer.Option(False, "--no-fetch", help="Use the mirror as it is."),
) -> None:
    """Check that each patch's intent holds at its call sites (exit 1 if a rule fails).

    Examples:\n
      patchkit check\n
      patchkit check /tmp/llama --sarif check.sarif --junit check.xml\n
      patchkit check --rules patches/NAME.checks.yaml ./llama.cpp --json -\n
      patchkit check --on-upstream upstream@HEAD
    """
    from patchkit.report import check as render
    from patchkit.report import to_json

    if on_upstream and tree:
        raise PatchkitError("give a DIR or --on-upstream, not both",
                            "DIR checks a tree on disk; --on-upstream reads upstream from the mirror")
    project = _project() if on_upstream or tree is None or not rules_files else None
    rules = _rules(rules_files, project)
    if on_upstream:
        assert project is not None
        report, root = _check_upstream(project, rules, on_upstream, upstream, not no_fetch), None
    else:
        if tree is None:
            assert project is not None
            tree = project.output_dir
        root = tree.resolve()
        if not root.is_dir():
            raise PatchkitError(f"{root}: no such directory",
                                "run `patchkit apply` first, or name the tree to check")
        report = _check_tree(rules, root)

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


def _check_tree(rules: list[Rule], root: Path) -> CheckReport:
    from patchkit.checks import run_checks

    def read(path: str) -> bytes | None:
        file = root / path
        return file.read_bytes() if file.is_file() else None

    return run_checks(rules, read, target=str(root))


def _check_upstream(project: Project, rules: list[Rule], spec: str, url: str | None,
                    fetch: bool) -> CheckReport:
    """The rules on upstream's own tree, read as git objects from the mirror (no checkout)."""
    from patchkit.checks import run_checks
    from patchkit.cli.app import progress_display, warn
    from patchkit.upstream import Mirror, parse_spec

    parse_spec(spec)  # a bad ref fails before any fetch
    mirror = Mirror.open(project, url)
    with mirror.locked():
        with progress_display(f"fetching {mirror.url}") as progress:
            revision = mirror.resolve(spec, fetch=fetch, progress=progress, warn=warn)
        with mirror.reader() as reader:
            return run_checks(rules, lambda path: reader.read(revision.commit, path),
                              target=f"{revision.spec} ({revision.commit[:12]})")
