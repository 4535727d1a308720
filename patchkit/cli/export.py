"""`patchkit export`: the queue in a distribution's patch format, for packagers."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from patchkit.cli.app import JsonOpt, NoFetchOpt, UpstreamOpt, app, check_reports, console, emit, is_quiet, warn
from patchkit.cli.progress import progress_display
from patchkit.export.formats import Format


@app.command("export")
def export_command(
    fmt: Format = typer.Argument(..., metavar="FORMAT", help="debian, quilt, rpm, nix, arch, gentoo or mbox."),
    out: Path = typer.Argument(..., metavar="OUT", help="The folder to write (new or empty, or --force)."),
    at: str = typer.Option("upstream@locked", "--at", metavar="upstream@REF",
                           help="Export the queue as it applies here (default: the locked commit)."),
    upstream: Optional[str] = UpstreamOpt,
    no_fetch: bool = NoFetchOpt,
    force: bool = typer.Option(False, "--force", help="Replace OUT even if it has files in it (ALL are lost)."),
    json_out: Optional[str] = JsonOpt,
) -> None:
    """Write the queue as FORMAT's patches and build fragments into OUT, regenerated from the
    queue as it applies at the locked commit: each patch applies with fuzz 0 exactly where
    patchkit puts it, and applying them all gives the tree `patchkit apply` gives.

    Refused (exit 2, OUT untouched) unless every patch is good there without fuzz and passes its
    site checks, for a binary patch in any format but mbox, and for a patch name rpm or makepkg
    would misread (rpm: letters, digits and . _ + , = @ - only). OUT is written whole or not at
    all, never inside patches/, the cache, the patched checkout or a .git, nor a folder holding one
    of them. Every fragment's first lines name the version (b<N>+pk<count>.<hash>) and the
    upstream commit. Layouts (NAME: each patch's name in patches/series, listed in series order):

      debian  patches/series, patches/NAME with DEP-3 headers, patchkit.mk (PATCHKIT_CMAKE_FLAGS)\n
      quilt   series, NAME (the format-patch mails as they are)\n
      rpm     NAME, patchkit-preamble.spec (PatchNNNN:), patchkit-prep.spec (%autosetup -p1), patchkit-build.spec (%cmake)\n
      nix     NAME, patches.nix (patches = import ./patches.nix;)\n
      arch    NAME, PKGBUILD.patchkit (source+=, sha256sums+=, _patchkit_prepare, _patchkit_cmake_flags)\n
      gentoo  files/NAME, ebuild.patchkit (PATCHES=( ... ), patchkit_cmake_args)\n
      mbox    patches.mbox (for git am)

    Examples:\n
      patchkit export debian out/debian && cp -r out/debian/* debian/\n
      patchkit export rpm ~/rpmbuild/SOURCES/llama.cpp --at upstream@b7421 --force\n
      patchkit export mbox out --json export.json
    """
    from patchkit.export.run import ExportOptions, run_export
    from patchkit.project import Project
    from patchkit.report import export as render
    from patchkit.upstream import parse_spec
    from patchkit.hooks import Hooks

    parse_spec(at)  # a bad ref fails before any work
    from patchkit.rebase.state import refuse_while_rebasing
    project = Project.find()
    refuse_while_rebasing(project)
    check_reports(project, json_out)  # OUT: run_export checks it
    options = ExportOptions(fmt, out, at, upstream, not no_fetch, force)
    with progress_display(f"export {fmt.value} {out}") as progress:
        report = run_export(project, options, Hooks(progress=progress, warn=warn))
    emit({json_out: lambda: render.to_json(report)},
         lambda: render.render_terminal(report, console()) if not is_quiet() else print(render.summary_line(report)))
