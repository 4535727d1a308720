"""`patchkit verify`: the pull-request gate, is the committed queue what refreshing it gives?"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from patchkit.cli.app import (JsonOpt, JunitOpt, MarkdownOpt, NoFetchOpt, UpstreamOpt, app, check_reports, console,
                              emit, is_quiet, warn)
from patchkit.cli.progress import progress_display


@app.command("verify")
def verify_command(
    upstream: Optional[str] = UpstreamOpt,
    no_fetch: bool = NoFetchOpt,
    output_dir: Optional[Path] = typer.Option(None, "--output-dir", metavar="DIR", help=(
        "Write the regenerated patches and patchkit.lock here (as the repository lays them out), "
        "for CI to upload.")),
    json_out: Optional[str] = JsonOpt,
    markdown: Optional[str] = MarkdownOpt,
    junit: Optional[str] = JunitOpt,
) -> None:
    """Fail (exit 1) when patchkit.lock and patches/series list different patches, or refreshing the
    queue at the locked commit would change any byte of patches/ or the lock's commit, patch hashes
    or tree: the queue is stale or hand-edited.

    Read-only: nothing is checked out or written into the mirror (the fetch aside), ./llama.cpp is not touched.

    Examples:\n
      patchkit verify\n
      patchkit verify --output-dir refreshed --junit verify.xml
    """
    from patchkit.ci.verify import VerifyOptions, require_lock, verify_queue
    from patchkit.project import Project
    from patchkit.report import verify as render
    from patchkit.hooks import Hooks

    from patchkit.rebase.state import refuse_while_rebasing
    project = Project.find()
    refuse_while_rebasing(project)
    places = check_reports(project, json_out, markdown, junit)
    if output_dir:
        from patchkit.targets import Target, check

        check(output_dir, Target.FOLDER, places)
    lock = require_lock(project)  # before any progress line: a missing lock is the whole answer
    options = VerifyOptions(upstream=upstream, fetch=not no_fetch,
                            output_dir=output_dir.resolve() if output_dir else None)
    with progress_display("verify") as progress:
        report = verify_queue(project, lock, options, Hooks(progress=progress, warn=warn))
    emit({json_out: lambda: render.to_json(report),
          markdown: lambda: render.to_markdown(report),
          junit: lambda: render.to_junit(report)},
         lambda: render.render_terminal(report, console()) if not is_quiet()
         else print(render.summary_line(report)))
    raise typer.Exit(report.exit_code)
