"""How a long run talks back while it works: progress lines, warnings, build progress.

Every command's core takes a `Hooks`; the CLI draws them on the terminal, tests pass nothing. It
is its own module so that what takes hooks does not import the apply pipeline for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Hooks:
    """How the run talks back while it works (the CLI draws these; tests pass nothing)."""

    progress: Callable[[str], None] | None = None
    warn: Callable[[str], None] | None = None
    build_progress: Any = None  # a patchkit.backends.BuildProgress (backends sit above this module)


def collect_warnings(hooks: Hooks) -> tuple[list[str], Callable[[str], None]]:
    """A list for a report's warnings, and the function that adds one and says it as it happens
    (the terminal's one copy: the renderers of files and JSON show the list, the terminal's not)."""
    warnings: list[str] = []

    def warn(message: str) -> None:
        warnings.append(message)
        if hooks.warn:
            hooks.warn(message)

    return warnings, warn
