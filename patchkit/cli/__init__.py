"""Command line: parse, call, render. Commands live one module each beside this file."""

from __future__ import annotations

import sys

from patchkit.cli.app import app
from patchkit.cli import apply as _apply  # noqa: F401  (registers commands)
from patchkit.cli import build as _build  # noqa: F401
from patchkit.cli import check as _check  # noqa: F401
from patchkit.cli import demo as _demo  # noqa: F401
from patchkit.errors import PatchkitError


def main() -> None:
    try:
        app()
    except PatchkitError as exc:
        print(f"patchkit: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("patchkit: interrupted", file=sys.stderr)
        sys.exit(130)
