"""`patchkit nightly`: the fork's nightly CI job: parse, call patchkit.nightly, render, report."""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional

import typer

from patchkit.cli.app import (AllowRewindOpt, JsonOpt, JunitOpt, MarkdownOpt, NoFetchOpt, UpstreamOpt, app,
                              console, emit, is_quiet, warn)
from patchkit.cli.progress import build_progress, progress_display


@app.command("nightly")
def nightly_command(
    spec: str = typer.Argument("upstream@HEAD", metavar="[upstream@REF]", help="The target (default: HEAD)."),
    report_dir: Optional[Path] = typer.Option(None, "--report-dir", metavar="DIR",
                                              help="Where report.json, report.md, junit.xml and the refreshed "
                                                   "patches go (default: .patchkit/nightly)."),
    refresh: bool = typer.Option(True, "--refresh/--no-refresh", help="Refresh patches/ after a good night."),
    update_lock: bool = typer.Option(True, "--update-lock/--no-update-lock", help="Move the lock after a good night."),
    allow_rewind: bool = AllowRewindOpt,
    build: List[str] = typer.Option([], "--build", metavar="BACKEND", help="Build this backend too (repeats)."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", metavar="DIR", help="Output repository."),
    upstream: Optional[str] = UpstreamOpt,
    no_fetch: bool = NoFetchOpt,
    fuzz: int = typer.Option(0, "--fuzz", min=0, max=3, metavar="N",
                             help="Allow fuzz (a fuzzed patch is reported, never refreshed or locked)."),
    force: bool = typer.Option(False, "--force", help="As for apply: discard changes in the output tree."),
    github_issues: bool = typer.Option(False, "--github-issues",
                                       help="Open, update and close one GitHub issue per failing patch."),
    json_out: Optional[str] = JsonOpt,
    markdown: Optional[str] = MarkdownOpt,
    junit: Optional[str] = JunitOpt,
) -> None:
    """Apply the queue to upstream@REF, check and build; on a good night refresh the patches and
    move the lock, otherwise name the upstream commit that broke each patch.

    Exit 0 all good; 1 a human is needed (a fuzzed patch counts); 2/3 as everywhere else.

    Examples:\n
      patchkit nightly\n
      patchkit nightly --build cpu --report-dir reports --github-issues\n
      patchkit nightly upstream@b7421 --no-refresh --no-update-lock
    """
    from patchkit.fileio import atomic_write, ensure_writable
    from patchkit.nightly.night import NightlyOptions, run_nightly
    from patchkit.project import Project
    from patchkit.queue import Queue
    from patchkit.report import nightly as render
    from patchkit.report import to_json, write_output
    from patchkit.upstream import parse_spec
    from patchkit.hooks import Hooks

    parse_spec(spec)
    project = Project.find()
    folder = (report_dir or project.state_dir / "nightly").resolve()
    # Everything the night will write or need, checked before the work (a refusal afterwards
    # would come after the lock and the patches moved).
    ensure_writable(*(folder / name for name in ("report.json", "report.md", "junit.xml")),
                    *(folder / "patches" / patch.name for patch in Queue.load(project).patches))
    if github_issues:
        from patchkit.ci.github import GitHubConfig

        GitHubConfig.from_env()
    options = NightlyOptions(spec=spec, upstream=upstream, fetch=not no_fetch, fuzz=fuzz,
                             output=output.resolve() if output else None, force=force, refresh=refresh,
                             update_lock=update_lock, allow_rewind=allow_rewind, build=tuple(build))
    # One status line for the night: the fetch's progress, then the bisect's probes.
    with progress_display(f"nightly {spec}") as progress, \
            build_progress(bool(build)) as builds:
        report = run_nightly(project, options, Hooks(progress=progress, warn=warn, build_progress=builds))

    markdown_text = render.to_markdown(report)
    for name, text in (("report.json", to_json("nightly", report)), ("report.md", markdown_text),
                       ("junit.xml", render.to_junit(report))):
        write_output(folder / name, text)
    for entry in report.refreshed:  # the refreshed patches, for CI to upload
        atomic_write(folder / "patches" / entry.name, (project.patches_dir / entry.name).read_bytes())
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as summary:
            summary.write(markdown_text + "\n")
    exit_code = report.exit_code
    if github_issues:
        exit_code = _github_issues(report, markdown_text, exit_code)
    emit({json_out: lambda: to_json("nightly", report), markdown: lambda: markdown_text,
          junit: lambda: render.to_junit(report)},
         lambda: render.render_terminal(report, console()) if not is_quiet() else print(render.summary_line(report)))
    raise typer.Exit(exit_code)


def _github_issues(report, markdown_text: str, exit_code: int) -> int:
    """One issue per failing patch. An API failure on a bad night keeps exit 1 with a warning (the
    reports are written already); on a good night it is the run's failure."""
    from patchkit.errors import PatchkitError
    from patchkit.ci.github import GitHub, GitHubConfig, PatchProblem
    from patchkit.report import nightly as render

    findings = {f.patch: f for f in report.findings}
    problems = [PatchProblem(p.name, p.verdict.value, p.detail or p.verdict.value,
                             render.finding_line(findings[p.name]) if p.name in findings else p.detail)
                for p in report.apply.patches if not p.good or p.name in findings]
    good = [p.name for p in report.apply.patches if p.good and p.name not in findings]
    run_url = None
    if os.environ.get("GITHUB_RUN_ID") and os.environ.get("GITHUB_REPOSITORY"):
        run_url = (f"{os.environ.get('GITHUB_SERVER_URL', 'https://github.com')}/"
                   f"{os.environ['GITHUB_REPOSITORY']}/actions/runs/{os.environ['GITHUB_RUN_ID']}")
    try:
        GitHub(GitHubConfig.from_env()).sync_issues(problems, good, run_url)
    except PatchkitError as exc:
        if exit_code == 0:
            raise
        warn(f"GitHub issues not updated: {exc}")
    return exit_code
