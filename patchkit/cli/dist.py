"""`patchkit dist`: the patched tree as a reproducible source tarball."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from patchkit.cli.app import JsonOpt, NoFetchOpt, UpstreamOpt, app, check_reports, console, emit, is_quiet, warn
from patchkit.cli.progress import progress_display


def _tarball_name(ctx: typer.Context, value: Optional[Path]) -> Optional[Path]:
    """The name's ending is checked while parsing, so a wrong one fails before any work."""
    from patchkit.export.tarball import compression_of

    if value is not None and not ctx.resilient_parsing:  # resilient: shell completion
        compression_of(value.name)
    return value


@app.command("dist")
def dist_command(
    spec: str = typer.Argument("upstream@locked", metavar="[upstream@REF]",
                               help="The upstream commit to patch (default: the locked one)."),
    output: Path = typer.Option(..., "--output", "-o", metavar="FILE", callback=_tarball_name,
                                help="The tarball: FILE.tar, FILE.tar.gz or FILE.tar.xz; SHA256SUMS goes beside it."),
    upstream: Optional[str] = UpstreamOpt,
    no_fetch: bool = NoFetchOpt,
    json_out: Optional[str] = JsonOpt,
) -> None:
    """Write the patched tree as a reproducible source tarball, under llama.cpp-<version>/.

    The queue is applied (nothing is checked out) and must be fully good there (exit 2 otherwise,
    nothing written). The tarball adds PATCHKIT-SOURCE (version, upstream commit, build number and
    commit, the queue) at its top; every entry is dated SOURCE_DATE_EPOCH when set, else at the
    upstream commit. SHA256SUMS beside FILE lists it and the uncompressed .tar, whose sum is the
    same on any machine.

    Examples:\n
      patchkit dist -o llama.cpp-patched.tar.xz\n
      SOURCE_DATE_EPOCH=1700000000 patchkit dist upstream@b7421 -o dist/llama.cpp.tar.gz --json -
    """
    from patchkit.errors import PatchkitError
    from patchkit.export.dist import SUMS_FILE, DistOptions, check_options, make_dist
    from patchkit.fileio import target_identity
    from patchkit.hooks import Hooks
    from patchkit.project import Project
    from patchkit.report import dist as render
    from patchkit.targets import Target, check

    from patchkit.rebase.state import refuse_while_rebasing
    project = Project.find()
    refuse_while_rebasing(project)
    options = DistOptions(output=output, spec=spec, upstream=upstream, fetch=not no_fetch,
                          source_date_epoch=os.environ.get("SOURCE_DATE_EPOCH"))
    check_options(options)  # before any progress line
    places = check_reports(project, json_out)
    tarball = check(output, Target.FILE, places)
    sums = check(tarball.parent / SUMS_FILE, Target.FILE, places)
    if json_out and target_identity(json_out) in (target_identity(tarball), target_identity(sums)):
        raise PatchkitError(f"--json {json_out} is where the tarball or its {SUMS_FILE} goes",
                            "give the report its own file")
    with progress_display(f"dist {output.name}") as progress:
        result = make_dist(project, options, Hooks(progress=progress, warn=warn))
    emit({json_out: lambda: render.to_json(result)},
         lambda: render.render_terminal(result, console()) if not is_quiet() else print(render.summary_line(result)))
