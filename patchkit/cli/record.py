"""`patchkit record` and `patchkit absorb`: the checked-out branch, edited, back into the queue."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator, Optional

import typer

from patchkit.cli.app import (AllowRewindOpt, JsonOpt, OutputOpt, UpstreamOpt, app, check_reports, console, emit,
                              is_quiet, warn)
from patchkit.cli.progress import progress_display

DryRunOpt = typer.Option(False, "--dry-run", help="List what would change; write nothing.")
PruneOpt = typer.Option(False, "--prune", help="Delete the files of patches that leave the series "
                                               "(and their .checks.yaml).")
AbortOpt = typer.Option(False, "--abort", help="Undo a record or absorb that was interrupted while writing, "
                                                "byte for byte.")
SquashOpt = typer.Option(False, "--squash", help="Record a commit that is several patches (a squash) as the "
                                                 "first of them in the series; the others leave it.")


@app.command("record")
def record_command(
    output: Optional[Path] = OutputOpt,
    dry_run: bool = DryRunOpt,
    prune: bool = PruneOpt,
    squash: bool = SquashOpt,
    allow_rewind: bool = AllowRewindOpt,
    upstream: Optional[str] = UpstreamOpt,
    abort: bool = AbortOpt,
    json_out: Optional[str] = JsonOpt,
) -> None:
    """Regenerate patches/ and the series from the edited branch in the checkout.

    Edit the branch with git (commit --amend, new commits, rebase -i to reorder, squash, drop
    or reword), then record: each commit is matched to its patch by a git note patchkit wrote,
    never by its subject. Then the bases and the lock are where a good `apply --update-lock`
    at the branch's upstream commit would put them. Refused (exit 2, nothing written): merge
    commits, a branch moved off its upstream commit, a commit that changes nothing, changes not
    committed yet (see `patchkit absorb`).

    Examples:\n
      patchkit record --dry-run\n
      patchkit record --prune\n
      patchkit record -o /tmp/llama --json record.json
    """
    from patchkit.branch.record import RecordOptions, run_record
    from patchkit.hooks import Hooks
    from patchkit.project import Project
    from patchkit.report import record as render

    project = Project.find()
    with _loop_turn(project, "record", abort):
        out = output.resolve() if output else None
        check_reports(project, json_out, checkout=out)
        options = RecordOptions(output=out, dry_run=dry_run, prune=prune, squash=squash, allow_rewind=allow_rewind,
                                upstream=upstream)
        with progress_display("record") as progress:
            report = run_record(project, options, Hooks(progress=progress, warn=warn))
    emit({json_out: lambda: render.to_json(report)},
         lambda: render.render_terminal(report, console()) if not is_quiet() else print(render.summary_line(report)))
    raise typer.Exit(report.exit_code)


@app.command("absorb")
def absorb_command(
    output: Optional[Path] = OutputOpt,
    new: Optional[str] = typer.Option(None, "--new", metavar="NAME",
                                      help="Make the edits no single patch owns a new patch NAME (needs --author)."),
    author: Optional[str] = typer.Option(None, "--author", metavar='"NAME <EMAIL>"', help="The author of --new."),
    dry_run: bool = DryRunOpt,
    prune: bool = PruneOpt,
    squash: bool = SquashOpt,
    allow_rewind: bool = AllowRewindOpt,
    upstream: Optional[str] = UpstreamOpt,
    abort: bool = AbortOpt,
    json_out: Optional[str] = JsonOpt,
) -> None:
    """Fold the checkout's uncommitted edits into the patches that own those lines, then record.

    Each edit (staged or not) goes to the branch commit that last changed its lines, or, for
    new lines and edits of upstream's lines, wrote the lines right next to them; no later
    commit may change them too. An edit no patch owns, or two could own, is refused (exit 1)
    with its file:line and the candidates, and nothing changes. Untracked files are named,
    never absorbed.

    Examples:\n
      patchkit absorb --dry-run\n
      patchkit absorb --new fix-the-build.patch --author "Ada Lovelace <ada@example.org>"
    """
    from patchkit.branch.absorb import AbsorbOptions, run_absorb
    from patchkit.hooks import Hooks
    from patchkit.project import Project
    from patchkit.report import record as render

    project = Project.find()
    with _loop_turn(project, "absorb", abort):
        out = output.resolve() if output else None
        check_reports(project, json_out, checkout=out)
        options = AbsorbOptions(output=out, new=new, author=author, dry_run=dry_run, prune=prune, squash=squash,
                                allow_rewind=allow_rewind, upstream=upstream)
        with progress_display("absorb") as progress:
            report = run_absorb(project, options, Hooks(progress=progress, warn=warn))
    emit({json_out: lambda: render.to_json(report, "absorb")},
         lambda: render.render_absorb(report, console()) if not is_quiet() else print(render.absorb_summary(report)))
    raise typer.Exit(report.exit_code)


@contextlib.contextmanager
def _loop_turn(project, command: str, abort: bool) -> Iterator[None]:
    """COMMAND's turn in the human loop: the loop lock held, and no rebase in progress (checked
    holding it, so that none starts in between). ABORT: the interrupted run undone instead; exit 0."""
    from patchkit import testpoint
    from patchkit.looplock import exclusive
    from patchkit.rebase.state import refuse_while_rebasing

    with exclusive(project, f"{command} --abort" if abort else command):
        refuse_while_rebasing(project, journal_ok=True)
        testpoint.pause("loop-guarded")
        if abort:
            _abort(project)
        yield


def _abort(project) -> None:
    """`--abort`: the interrupted record's or absorb's writes undone; exit 0."""
    from patchkit.journal import undo

    plan = undo(project)
    print(f"undid the interrupted `patchkit {plan.command}` of {plan.tip[:12]}: patches/, the lock, the notes and "
          f"the refs and index of {plan.checkout} are as they were before it")
    raise typer.Exit(0)
