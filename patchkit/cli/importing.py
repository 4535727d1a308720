"""`patchkit import`: patches from files, mailboxes, folders, repositories and URLs into the queue."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple

import typer

from patchkit.cli.app import BaseOpt, JsonOpt, NoFetchOpt, UpstreamOpt, app, check_reports, console, emit, is_quiet
from patchkit.cli.progress import progress_display


@app.command("import")
def import_command(
    sources: Optional[List[str]] = typer.Argument(None, metavar="[SOURCE]...", show_default=False, help=(
        "A patch file (git format-patch, DEP-3, plain diff), an mbox of several, a quilt/Debian "
        "folder with a series, a Gentoo files/ folder, an https:// URL, or - for standard input.")),
    from_repo: Optional[Tuple[str, str]] = typer.Option(
        None, "--from-repo", metavar="PATH A..B", show_default=False,
        help="One patch per first-parent commit of A..B in the local repository PATH (no merges)."),
    name: Optional[str] = typer.Option(None, "--name", metavar="NAME",
                                       help="The file name in patches/ (one patch only; default: from the subject)."),
    after: Optional[str] = typer.Option(None, "--after", metavar="NAME",
                                        help="Place the new patches after this one (default: at the end)."),
    at: Optional[str] = typer.Option(None, "--at", metavar="upstream@REF", help=(
        "Where the new patches must apply (default: upstream@locked with a patchkit.lock, else upstream@HEAD).")),
    base: Optional[str] = BaseOpt,
    upstream: Optional[str] = UpstreamOpt,
    no_fetch: bool = NoFetchOpt,
    author: Optional[str] = typer.Option(None, "--author", metavar='"NAME <EMAIL>"',
                                         help="The author of patches whose source does not say (plain diffs)."),
    subject: Optional[str] = typer.Option(None, "--subject", metavar="TEXT",
                                          help="The subject of a patch whose source has none (one patch only)."),
    ebuild: Optional[Path] = typer.Option(None, "--ebuild", metavar="FILE",
                                          help="Order a Gentoo files/ folder by this ebuild's PATCHES."),
    sha256: List[str] = typer.Option([], "--sha256", metavar="HEX",
                                     help="Pin a URL's download to this SHA-256 (one per URL, in order)."),
    allow_http: bool = typer.Option(False, "--allow-http", help="Accept plain http:// URLs."),
    allow_failing: bool = typer.Option(False, "--allow-failing",
                                       help="Import patches that do not apply cleanly at --at (reported)."),
    repair: bool = typer.Option(False, "--repair", help=(
        "Rebuild patches mangled in transit (web copies: newlines, <...> or tabs lost) from the "
        "upstream files at --at; what cannot be known is asked for, not guessed.")),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show names, positions and verdicts; write nothing."),
    json_out: Optional[str] = JsonOpt,
) -> None:
    """Add patches to the queue, checked first: each must apply cleanly at --at after the queue.

    New files in patches/ are named from the subjects; patches/series gets them at the end or
    after --after. Nothing is written when anything is refused: a patch that does not apply
    (exit 1, with its hunk verdicts), or bad input such as a name or a change already in the
    queue (exit 2). Downloads: PATCHKIT_HTTP_TIMEOUT, PATCHKIT_HTTP_MAX_BYTES and
    PATCHKIT_HTTP_RETRIES tune the limits.

    Examples:\n
      patchkit import 0001-fix-the-build.patch\n
      patchkit import https://github.com/ggml-org/llama.cpp/pull/28118.patch --sha256 HEX\n
      patchkit import series.mbox --after server-keep-speculative-checkpoints-on-device.patch\n
      patchkit import ../debian/patches --dry-run\n
      patchkit import ../gentoo/sci-misc/llama-cpp/files --ebuild ../gentoo/sci-misc/llama-cpp/llama-cpp-9999.ebuild\n
      patchkit import --from-repo ~/src/llama.cpp master..my-fixes\n
      patchkit import fix.diff --author "Ada Lovelace <ada@example.org>" --subject "server: fix the build"\n
      patchkit import --repair copied-from-a-web-page.txt --author "Mike Lothian <mike@fireburn.co.uk>"
    """
    from patchkit.errors import PatchkitError
    from patchkit.importing.run import ImportOptions, run_import
    from patchkit.project import Project
    from patchkit.report import importing as render
    from patchkit.hooks import Hooks

    if not sources and from_repo is None:
        raise PatchkitError("nothing to import", "give a SOURCE (file, folder, https:// URL) or --from-repo PATH A..B")
    from patchkit.rebase.state import refuse_while_rebasing
    project = Project.find()
    refuse_while_rebasing(project)
    check_reports(project, json_out)
    options = ImportOptions(sources=tuple(sources or ()), from_repo=tuple(from_repo) if from_repo else None,
                            name=name, after=after, at=at, base=base, upstream=upstream, fetch=not no_fetch,
                            author=author, subject=subject, ebuild=ebuild, sha256=tuple(sha256),
                            allow_http=allow_http, allow_failing=allow_failing, repair=repair, dry_run=dry_run)
    with progress_display("import") as progress:
        report = run_import(project, options, Hooks(progress=progress))  # warnings: in the report
    emit({json_out: lambda: render.to_json(report)},
         lambda: render.render_terminal(report, console()) if not is_quiet() else print(render.summary_line(report)))
    raise typer.Exit(report.exit_code)
