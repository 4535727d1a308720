"""The two kinds of failure a user must act on, each with its exit code.

Raised anywhere, caught once in the CLI and printed as one line: what is wrong, then what to do.
"""

from __future__ import annotations

from collections.abc import Sequence


class PatchkitError(Exception):
    """Bad input, usage or configuration: exit 2."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}; {self.hint}" if self.hint else self.message


class EnvironmentProblem(PatchkitError):
    """The environment failed us (git or cmake missing, network unreachable): exit 3."""

    exit_code = 3


def first_few(names: Sequence[str], most: int = 3) -> str:
    """`a, b, c, and 2 more`: the first MOST of NAMES, as a message names them; the rest counted."""
    return ", ".join(names[:most]) + (f", and {len(names) - most} more" if len(names) > most else "")
