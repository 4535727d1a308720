"""`patchkit demo`: the whole flow offline, for a first look without network."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Optional

import typer

from patchkit.cli.app import JsonOpt, app, console, emit, warn


@app.command("demo")
def demo_command(
    folder: Optional[Path] = typer.Argument(None, metavar="[DIR]",
                                            help="Where to write the demo (default: a new temp folder)."),
    json_out: Optional[str] = JsonOpt,
) -> None:
    """Apply this repository's queue to a generated llama.cpp-shaped upstream, offline.

    Shows the verdicts on upstream@HEAD and on one branch per verdict (offset, merged, conflict,
    ambiguous, already-applied, ...). Run it inside the patchkit repository.
    """
    from patchkit.demo import run_demo
    from patchkit.hooks import Hooks
    from patchkit.project import Project
    from patchkit.report import to_json
    from patchkit.report.demo import render_terminal

    target = folder.resolve() if folder else Path(tempfile.mkdtemp(prefix="patchkit-demo-"))
    result = run_demo(Project.find(), target, Hooks(warn=warn))
    emit({json_out: lambda: to_json("demo", result)}, lambda: render_terminal(result, console()))
    raise typer.Exit(result.head.exit_code)
