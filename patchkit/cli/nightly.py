"""`patchkit nightly`: the fork's nightly CI job: parse, call patchkit.nightly (the night, then its
outputs: nightly/publish.py), render."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from patchkit.cli.app import (AllowRewindOpt, JsonOpt, JunitOpt, MarkdownOpt, NoFetchOpt, OutputOpt, UpstreamOpt, app,
                              check_reports, console, emit, is_quiet, warn)
from patchkit.cli.progress import build_progress, progress_display


@app.command("nightly")
def nightly_command(
    spec: str = typer.Argument("upstream@HEAD", metavar="[upstream@REF]", help="The target (default: HEAD)."),
    report_dir: Optional[Path] = typer.Option(None, "--report-dir", metavar="DIR",
                                              help="Where report.json, report.md, junit.xml and the refreshed "
                                                   "patches go, replacing what an earlier run wrote there "
                                                   "(default: .patchkit/nightly)."),
    refresh: bool = typer.Option(True, "--refresh/--no-refresh", help="Refresh patches/ after a good night."),
    update_lock: bool = typer.Option(True, "--update-lock/--no-update-lock", help="Move the lock after a good night."),
    allow_rewind: bool = AllowRewindOpt,
    build: List[str] = typer.Option([], "--build", metavar="BACKEND", help="Build this backend too (repeats)."),
    output: Optional[Path] = OutputOpt,
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
    from patchkit.hooks import Hooks
    from patchkit.nightly.night import NightlyOptions, run_nightly
    from patchkit.nightly.publish import Destinations, Rendered, publish
    from patchkit.project import Project
    from patchkit.queue import Queue
    from patchkit.report import nightly as render
    from patchkit.report import to_json
    from patchkit.upstream import parse_spec

    parse_spec(spec)
    from patchkit.rebase.state import refuse_while_rebasing
    project = Project.find()
    refuse_while_rebasing(project)
    places = check_reports(project, json_out, markdown, junit, checkout=output)
    queue = Queue.load(project)
    where = Destinations.check(project, queue, report_dir, github_issues, places, backends=build)
    options = NightlyOptions(spec=spec, upstream=upstream, fetch=not no_fetch, fuzz=fuzz,
                             output=output.resolve() if output else None, force=force, refresh=refresh,
                             update_lock=update_lock, allow_rewind=allow_rewind, build=tuple(build))
    # One status line for the night: the fetch's progress, then the bisect's probes.
    with progress_display(f"nightly {spec}") as progress, \
            build_progress(bool(build)) as builds:
        report = run_nightly(project, options, Hooks(progress=progress, warn=warn, build_progress=builds),
                             queue=queue)

    rendered = Rendered(json=to_json("nightly", report), markdown=render.to_markdown(report),
                        junit=render.to_junit(report),
                        findings=render.finding_lines(report.findings, markdown=True))
    with progress_display("nightly") as progress:
        publish(project, report, rendered, where, warn, progress)
    emit({json_out: lambda: rendered.json, markdown: lambda: rendered.markdown, junit: lambda: rendered.junit},
         lambda: render.render_terminal(report, console()) if not is_quiet() else print(render.summary_line(report)))
    raise typer.Exit(report.exit_code)
