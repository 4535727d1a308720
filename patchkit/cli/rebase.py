"""`patchkit rebase`: parse, call patchkit.rebase, render."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from patchkit.cli.app import (JsonOpt, NoFetchOpt, OutputOpt, UpstreamOpt, app, check_reports, console, emit, is_quiet,
                              warn)
from patchkit.cli.progress import progress_display


@app.command("rebase")
def rebase_command(
    spec: Optional[str] = typer.Argument(None, metavar="[upstream@REF]",
                                         help="The target (default: HEAD): a branch, a tag, a commit id."),
    continue_: bool = typer.Option(False, "--continue", help="Take the fixed files as the stopped patch, go on."),
    skip: bool = typer.Option(False, "--skip", help="Disable the stopped patch in the series (its file stays), go on."),
    drop: bool = typer.Option(False, "--drop", help="Remove the stopped patch from the series and delete its file."),
    abort: bool = typer.Option(False, "--abort", help="Restore patches/, the lock and the checkout as before."),
    include: List[str] = typer.Option([], "--include", metavar="PATH",
                                      help="With --continue: a changed file outside the patch's own (repeats)."),
    output: Optional[Path] = OutputOpt,
    upstream: Optional[str] = UpstreamOpt,
    no_fetch: bool = NoFetchOpt,
    fuzz: int = typer.Option(0, "--fuzz", min=0, max=3, metavar="N",
                             help="Place with up to N lines of fuzz; a fuzzed patch stops for a look."),
    record: bool = typer.Option(False, "--record", help="Record the branch's commits not in patches/ yet "
                                                         "first (without it such commits are refused)."),
    json_out: Optional[str] = JsonOpt,
) -> None:
    """Apply the queue at upstream@REF in the checkout and stop at the first patch that needs a
    person; fix its files there, then `--continue`. At the end the patches are refreshed, the
    3-way bases recorded and the lock moved (forward only).

    Exit 0 done (or aborted); 1 stopped at a patch that needs a person; 2 bad input.

    Examples:\n
      patchkit rebase upstream@HEAD\n
      patchkit rebase --continue\n
      patchkit rebase --skip\n
      patchkit rebase --abort
    """
    from patchkit.errors import PatchkitError
    from patchkit.hooks import Hooks
    from patchkit.looplock import exclusive
    from patchkit.project import Project
    from patchkit.rebase.run import RebaseOptions, resume, start
    from patchkit.rebase.run import abort as abort_rebase
    from patchkit.report import rebase as render
    from patchkit.report import to_json
    from patchkit.upstream import parse_spec

    actions = [name for name, given in (("--continue", continue_), ("--skip", skip), ("--drop", drop),
                                        ("--abort", abort)) if given]
    if len(actions) > 1:
        raise PatchkitError(f"{' and '.join(actions)} cannot be given together", "give one of them")
    if actions and (spec or output or upstream or no_fetch or fuzz or record):
        raise PatchkitError(f"{actions[0]} goes on with the rebase in progress: upstream@REF, -o, --upstream, "
                            "--no-fetch, --fuzz and --record are the first step's", f"run `patchkit rebase {actions[0]}` alone")
    if include and not continue_:
        raise PatchkitError("--include goes with --continue", "run `patchkit rebase --continue --include PATH`")
    if spec:
        parse_spec(spec)
    project = Project.find()
    check_reports(project, json_out, checkout=output.resolve() if output else None)
    command = f"rebase {spec or ' '.join(actions)}".strip()
    with exclusive(project, command), progress_display(command) as progress:
        hooks = Hooks(progress=progress, warn=warn)
        if abort:
            report = abort_rebase(project, hooks)
        elif actions:
            report = resume(project, actions[0].removeprefix("--"), hooks, tuple(include))
        else:
            report = start(project, RebaseOptions(spec=spec or "upstream@HEAD", upstream=upstream,
                                                  fetch=not no_fetch, fuzz=fuzz, record=record,
                                                  output=output.resolve() if output else None), hooks)
    emit({json_out: lambda: to_json("rebase", report)},
         lambda: render.render_terminal(report, console()) if not is_quiet() else print(render.summary_line(report)))
    raise typer.Exit(report.exit_code)
