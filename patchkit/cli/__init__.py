"""Command line: parse, call, render. Commands live one module each beside this file."""

from __future__ import annotations

import signal
import sys
import traceback

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
from patchkit.cli import smoke as _smoke  # noqa: F401
from patchkit.cli import verify as _verify  # noqa: F401
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
        app()
    except SystemExit as exc:
        if exc.code == 130:  # typer turns Ctrl-C into a silent exit 130; say why
            print("patchkit: interrupted", file=sys.stderr)
        raise
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
        traceback.print_exc()
        _fail(f"internal error: {type(exc).__name__}: {exc}; this is a bug in patchkit, "
              "please report it with the traceback above", 1)


def _fail(message: str, code: int) -> None:
    # One line, always: git's messages and file names can carry newlines.
    print("patchkit: " + " ".join(message.split()), file=sys.stderr)
    sys.exit(code)
