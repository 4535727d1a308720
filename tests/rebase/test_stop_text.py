"""A rebase stop prints upstream's and the user's text as it is: a subject is never rich markup."""

import io
from pathlib import Path

from rich.console import Console

from patchkit.rebase.run import RebaseReport, Stop
from patchkit.report.rebase import render_terminal


def test_a_subject_that_looks_like_markup_is_printed_verbatim():
    stop = Stop(patch="0001-fix.patch", subject="ggml: close [/x] and [bold]", kind="conflict",
                detail="upstream's [red]text[/red]", hunks=(), next="patchkit rebase --continue")
    report = RebaseReport(action="start", spec="upstream@HEAD", upstream_commit="a" * 40,
                          branch="patchkit/HEAD", output=Path("llama.cpp"), stopped=stop)
    out = io.StringIO()
    render_terminal(report, Console(file=out, width=200, color_system=None))
    assert "0001-fix.patch (ggml: close [/x] and [bold]) needs a person: conflict — upstream's [red]text[/red]" \
        in out.getvalue()
