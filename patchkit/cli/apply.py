"""`patchkit apply`, and the two commands around it: `init` and `status`."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from patchkit.cli.app import (AllowRewindOpt, BaseOpt, JsonOpt, JunitOpt, MarkdownOpt, NoFetchOpt, OutputOpt, UpstreamOpt, app,
                              check_reports, console, emit, is_quiet, warn)
from patchkit.cli.progress import build_progress, progress_display


@app.command("apply")
def apply_command(
    spec: str = typer.Argument("upstream@HEAD", metavar="[upstream@REF]",
                               help="HEAD, a branch, a tag (b7421, v0.7.0), a commit id, or locked."),
    output: Optional[Path] = OutputOpt,
    upstream: Optional[str] = UpstreamOpt,
    no_fetch: bool = NoFetchOpt,
    fuzz: int = typer.Option(0, "--fuzz", min=0, max=3, metavar="N",
                             help="Allow ignoring up to N context lines at each end (reported as fuzzed)."),
    base: Optional[str] = BaseOpt,
    force: bool = typer.Option(False, "--force", help=(
        "Take the output tree as it is: uncommitted changes and untracked or ignored files in "
        "the way are LOST; commits patchkit did not write are kept under refs/patchkit/saved/.")),
    update_lock: bool = typer.Option(False, "--update-lock", help="Write patchkit.lock after a fully good run."),
    allow_rewind: bool = AllowRewindOpt,
    no_check: bool = typer.Option(False, "--no-check", help="Skip the site checks of the applied patches."),
    build: List[str] = typer.Option([], "--build", metavar="BACKEND", help="Build this backend afterwards (repeats)."),
    smoke: bool = typer.Option(False, "--smoke", help="Then run the runtime smoke test (implies --build cpu "
                                                      "unless a backend is given)."),
    json_out: Optional[str] = JsonOpt,
    markdown: Optional[str] = MarkdownOpt,
    junit: Optional[str] = JunitOpt,
) -> None:
    """Apply the queue to upstream@REF as branch patchkit/REF, one commit per patch.

    Examples:\n
      patchkit apply upstream@HEAD\n
      patchkit apply upstream@b7421 -o /tmp/llama --json report.json\n
      patchkit apply upstream@locked --no-fetch
    """
    from patchkit.hooks import Hooks
    from patchkit.pipeline import ApplyOptions, run_apply
    from patchkit.project import Project
    from patchkit.report import apply as render
    from patchkit.report import to_json
    from patchkit.upstream import parse_spec

    parse_spec(spec)  # bad refs fail before any work
    if base is not None:
        parse_spec(base)
    from patchkit.rebase.state import refuse_while_rebasing
    project = Project.find()
    refuse_while_rebasing(project)
    options = ApplyOptions(spec=spec, upstream=upstream, fetch=not no_fetch, fuzz=fuzz, base=base,
                           output=output.resolve() if output else None, force=force,
                           update_lock=update_lock, allow_rewind=allow_rewind, check=not no_check,
                           build=tuple(build or (["cpu"] if smoke else [])), smoke=smoke)
    check_reports(project, json_out, markdown, junit, checkout=options.output)
    with progress_display(f"apply {spec}") as progress, \
            build_progress(bool(options.build)) as builds:
        report = run_apply(project, options, Hooks(progress=progress, warn=warn, build_progress=builds))
    emit({json_out: lambda: to_json("apply", report),
          markdown: lambda: render.to_markdown(report),
          junit: lambda: render.to_junit(report)},
         lambda: render.render_terminal(report, console()) if not is_quiet()
         else print(render.summary_line(report)))
    raise typer.Exit(report.exit_code)


@app.command("init")
def init_command(
    directory: Path = typer.Argument(Path("."), help="The fork repository to set up."),
    upstream: str = typer.Option("https://github.com/ggml-org/llama.cpp.git", "--upstream", metavar="URL"),
    branch: str = typer.Option("master", "--branch", help="Upstream branch that HEAD means."),
) -> None:
    """Scaffold patchkit.yaml, patches/series and recipes/ in a fork repository."""
    from patchkit.scaffold import init_project

    for path in init_project(directory.resolve(), upstream, branch):
        print(f"created {path}")


@app.command("status")
def status_command(json_out: Optional[str] = JsonOpt) -> None:
    """Show the queue, the files each patch touches, the locked base and the last result."""
    from patchkit.project import Project
    from patchkit.queue import Queue
    from patchkit.report.status import render_terminal, to_json
    from patchkit.status import QueueStatus

    project = Project.find()
    check_reports(project, json_out)
    status = QueueStatus.gather(project, Queue.load(project))
    emit({json_out: lambda: to_json(status)}, lambda: render_terminal(status, console()))
