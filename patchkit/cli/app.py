"""The typer application and what every command shares: consoles, report outputs, exit codes."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

import typer

if TYPE_CHECKING:
    from patchkit.project import Project
    from patchkit.targets import Places

app = typer.Typer(
    name="patchkit",
    help="Carry a patch queue on top of upstream llama.cpp: apply, check, build, export.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_REPORT_TARGETS = "patchkit.report-targets"


def _report_target(ctx: typer.Context, param: typer.CallbackParam, target: Optional[str]) -> Optional[str]:
    """Report targets are checked while parsing, so a bad one, or two reports on one file, fail
    before any work is done (the second report would silently replace the first)."""
    from patchkit.errors import PatchkitError
    from patchkit.fileio import ensure_writable, target_identity

    if target is None or ctx.resilient_parsing:  # resilient: shell completion, which must not fail
        return target
    ensure_writable(target)
    seen = ctx.meta.setdefault(_REPORT_TARGETS, {})
    flag, key = param.opts[0], target_identity(target)
    if key in seen:
        other_flag, other = seen[key]
        if target == "-":
            raise PatchkitError(f"{other_flag} and {flag} both write to standard output",
                                "send at most one report to '-'")
        raise PatchkitError(f"{other_flag} {other} and {flag} {target} are the same file",
                            "give each report its own file")
    seen[key] = (flag, target)
    return target


def report_option(flag: str, what: str):
    return typer.Option(None, flag, metavar="FILE", callback=_report_target,
                        help=f"Write {what} to FILE ('-' for stdout).")


def check_reports(project: Project | None, *targets: Optional[str], checkout: Optional[Path] = None) -> Places:
    """The project's places (patchkit.targets), with the report files TARGETS checked against them:
    what every command does before any work. CHECKOUT: the command's `-o DIR`."""
    from patchkit.targets import Places, Target, check

    places = Places.of(project, checkout)
    for target in targets:
        check(target, Target.FILE, places)
    return places


JsonOpt = report_option("--json", "the JSON report")
MarkdownOpt = report_option("--markdown", "a Markdown report")
JunitOpt = report_option("--junit", "a JUnit XML report")
UpstreamOpt = typer.Option(None, "--upstream", metavar="URL_OR_PATH",
                           help="Use this upstream for one run (a path or file:// works).")
AllowRewindOpt = typer.Option(False, "--allow-rewind",
                              help="Let the lock move to a commit that does not contain the locked one.")
NoFetchOpt = typer.Option(False, "--no-fetch", help="Use the mirror as it is, without fetching.")
BaseOpt = typer.Option(None, "--base", metavar="upstream@REF", help=(
    "The upstream commit the patches were made from (a queue without index lines): there each "
    "hunk goes at its recorded lines; elsewhere it is their 3-way base."))
OutputOpt = typer.Option(None, "-o", "--output", metavar="DIR",
                         help="The checkout: the output repository (default: ./llama.cpp beside patchkit.yaml).")

_state = {"quiet": False, "verbose": False}
_UNLIMITED = 1 << 20  # columns: effectively unlimited (rich needs a number)


def _version(show: bool) -> None:
    if show:
        from patchkit import __version__

        print(f"patchkit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only errors and the verdict line."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Print more detail."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version (as patchkit.lock records it) and exit."),
) -> None:
    _state["quiet"], _state["verbose"] = quiet, verbose


def is_quiet() -> bool:
    return _state["quiet"]


def is_verbose() -> bool:
    return _state["verbose"]


def console(stderr: bool = False):  # -> rich.console.Console; rich is imported only when drawing
    from rich.console import Console

    # rich already honours NO_COLOR and plain output when not on a terminal. Off a terminal it
    # would assume 80 columns and wrap or cut; CI logs keep whole lines, so nothing is wrapped or
    # cut there unless COLUMNS asks for it. Tables still size to their content, so nothing pads.
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty() or os.environ.get("COLUMNS"):  # an empty COLUMNS is no width
        return Console(stderr=stderr, highlight=False, soft_wrap=False)
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=_UNLIMITED)


def emit(reports: dict[Optional[str], Callable[[], str]], terminal: Callable[[], None]) -> None:
    """Write each requested report (FILE -> renderer) and draw the terminal view.

    The terminal view is skipped when a report goes to standard output, so that `--json -`
    stays machine-readable.
    """
    from patchkit.report import write_output

    to_stdout = False
    for target, render in reports.items():
        if target:
            write_output(target, render())
            to_stdout = to_stdout or target == "-"
    if not to_stdout:
        terminal()


def cwd_path(path: Optional[Path]) -> Path:
    return Path(os.path.abspath(path)) if path else Path.cwd()


def warn(message: str) -> None:
    console(stderr=True).print(f"[yellow]warning:[/] {message}")
