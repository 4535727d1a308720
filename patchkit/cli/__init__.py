"""Command line: parse, call, render. Commands live one module each beside this file.

This module imports nothing heavy: typer, rich and the commands are imported inside `main`, so
that Ctrl-C or SIGTERM during start-up ends in the same one line as during a command."""

from __future__ import annotations

import contextlib
import signal
import sys
from typing import Iterator

from patchkit import testpoint
from patchkit.errors import PatchkitError


class Terminated(BaseException):
    """SIGTERM (a CI job cancelled, a container stopped), raised where the process stands so that
    it unwinds through the same cleanups as Ctrl-C. A BaseException, like KeyboardInterrupt, so
    that no `except Exception` swallows it."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    try:
        code = _run()
    except PatchkitError as exc:
        _fail(f"error: {exc}", exc.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Terminated:
        _fail("terminated", 143)
    except OSError as exc:
        # The disk or the permissions, not patchkit nor its input: an environment problem.
        _fail(f"error: {exc}; check free space and permissions, then rerun", 3)
    except Exception as exc:
        # A bug: the traceback is what a report needs, so it stays; the last line still says
        # what happened, in the one-line form CI logs are searched for.
        import traceback

        traceback.print_exc()
        _fail(f"internal error: {type(exc).__name__}: {exc}; this is a bug in patchkit, "
              "please report it with the traceback above", 1)
    if code == 130:  # typer turns Ctrl-C inside a command into a silent exit 130; say why
        _fail("interrupted", 130)
    sys.exit(code)


def _run() -> int:
    """Load the commands and run the one named; its exit code. A usage error becomes a
    PatchkitError, one line like every other, instead of click's box."""
    testpoint.pause("start")
    with _signals_held():
        # Before anything is printed: much of what patchkit prints is upstream's text.
        from patchkit.untrusted import guard_streams

        guard_streams()
        import typer

        from patchkit.cli.app import app
        from patchkit.cli import apply as _apply  # noqa: F401  (registers commands)
        from patchkit.cli import build as _build  # noqa: F401
        from patchkit.cli import check as _check  # noqa: F401
        from patchkit.cli import ci as _ci  # noqa: F401
        from patchkit.cli import demo as _demo  # noqa: F401
        from patchkit.cli import dist as _dist  # noqa: F401
        from patchkit.cli import export as _export  # noqa: F401
        from patchkit.cli import importing as _importing  # noqa: F401
        from patchkit.cli import nightly as _nightly  # noqa: F401
        from patchkit.cli import rebase as _rebase  # noqa: F401
        from patchkit.cli import record as _record  # noqa: F401
        from patchkit.cli import smoke as _smoke  # noqa: F401
        from patchkit.cli import verify as _verify  # noqa: F401

    # click's UsageError, the base of BadParameter: typer >= 0.29 carries its own click
    # (typer._click), older typers use click itself, and neither names it in typer's API.
    usage_error = typer.BadParameter.__base__
    testpoint.pause("commands")
    try:
        # Not standalone: click's errors come here instead of being printed as boxes, and a
        # command's `typer.Exit(code)` (or --help's 0) comes back as its code; a command that
        # returns normally returns None.
        code = app(standalone_mode=False)
    except usage_error as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # `patchkit` alone: the help, already shown
            return exc.exit_code
        message = exc.format_message().removesuffix(".")  # the hint follows after "; "
        command = exc.ctx.command_path if exc.ctx else "patchkit"
        raise PatchkitError(message[:1].lower() + message[1:], f"see '{command} --help'") from exc
    return code if isinstance(code, int) else 0


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back while modules load: one that lands in importlib's own
    callbacks is printed as "Exception ignored" with a traceback and then lost. Held, it is
    delivered when the block ends, where it ends the run in one line."""
    held = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


def _fail(message: str, code: int) -> None:
    # One line, always: git's messages and file names can carry newlines.
    print("patchkit: " + " ".join(message.split()), file=sys.stderr)
    sys.exit(code)
