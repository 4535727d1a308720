"""`patchkit smoke`: the runtime smoke test of a tree: parse, call patchkit.smoke, render."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from patchkit.cli.app import JsonOpt, JunitOpt, MarkdownOpt, app, console, emit, is_quiet
from patchkit.cli.progress import build_progress, progress_display


@app.command("smoke")
def smoke_command(
    tree: Optional[Path] = typer.Argument(None, metavar="[TREE]",
                                          help="The patched tree (default: the project's output tree)."),
    backend: str = typer.Option("cpu", "--backend", "-b", metavar="NAME", help="The recipe to build the server with."),
    rules_files: Optional[List[Path]] = typer.Option(None, "--rules", metavar="FILE",
                                                     help="Rules file (repeats); default: the queue's."),
    deadline: float = typer.Option(120.0, "--deadline", min=10, metavar="SECONDS",
                                   help="Bound on the server runs (the build is not counted)."),
    json_out: Optional[str] = JsonOpt,
    markdown: Optional[str] = MarkdownOpt,
    junit: Optional[str] = JunitOpt,
) -> None:
    """Run a real llama-server on the tree and check, at the libllama boundary, that the flags
    reach every speculative checkpoint save/load and no prompt-cache one.

    Builds BACKEND's recipe with shared libraries and line tables into build/BACKEND-smoke
    (ccache makes rebuilds cheap), writes two tiny models, runs the server with speculative
    decoding under an LD_PRELOAD interposer, and joins each recorded call to the sites
    `patchkit check` finds. Linux with glibc only.

    Examples:\n
      patchkit smoke\n
      patchkit smoke /tmp/llama.cpp --json smoke.json --junit smoke.xml
    """
    from patchkit.backends.recipe import default_recipes_dir, load_recipes, select
    from patchkit.cli.check import _project, _rules
    from patchkit.report import smoke as render
    from patchkit.report import to_json
    from patchkit.smoke.run import require_platform, run_smoke

    require_platform()
    project = _project() if tree is None or not rules_files else None
    rules = _rules(rules_files, project)
    (recipe,) = select(load_recipes(default_recipes_dir(project)), [backend])
    root = (tree or project.output_dir).resolve()
    lock = project.lock() if project else None
    with progress_display(f"smoke {root}") as progress, build_progress() as builds:
        report = run_smoke(root, rules, recipe, upstream_commit=lock.upstream_commit if lock else None,
                           progress=progress, build_progress=builds, deadline=deadline)
    emit({json_out: lambda: to_json("smoke", report), markdown: lambda: render.to_markdown(report),
          junit: lambda: render.to_junit(report)},
         lambda: render.render_terminal(report, console()) if not is_quiet() else print(render.summary_line(report)))
    raise typer.Exit(report.exit_code)
