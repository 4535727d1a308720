"""The build results: what renderers, the JSON report and exit codes are made from."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

EXIT_INTERRUPTED = 130  # the shell's code for a run stopped by Ctrl-C


class Status(str, enum.Enum):
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"  # the toolchain is missing here; the reason says what
    NOT_RUN = "not-run"  # the run was interrupted before this backend's turn


@dataclass(frozen=True)
class FirstError:
    """The first line a person should read: where it is (when known) and what it says."""

    file: str | None
    line: int | None
    message: str


@dataclass(frozen=True)
class Artifact:
    target: str
    path: Path
    size: int  # bytes


@dataclass(frozen=True)
class UnusedVariable:
    """A `-D` variable CMake did not use, and who set it (a recipe, `-D` on the command line...)."""

    name: str
    source: str


@dataclass(frozen=True)
class BuildResult:
    backend: str
    status: Status
    reason: str = ""
    configure_seconds: float = 0.0
    build_seconds: float = 0.0
    artifacts: tuple[Artifact, ...] = ()
    first_error: FirstError | None = None
    unused_variables: tuple[UnusedVariable, ...] = ()
    log: Path | None = None


@dataclass(frozen=True)
class BuildReport:
    tree: Path
    build_dir: Path
    requested_by_name: bool  # False under --all: skipped backends are then expected
    results: tuple[BuildResult, ...]
    defines: dict[str, str]  # -D on top of every recipe: build number, ccache, the command line
    interrupted: bool = False
    allow_skip: bool = False  # --allow-skip: a backend asked for by name may be skipped

    def count(self, status: Status) -> int:
        return sum(r.status is status for r in self.results)

    @property
    def exit_code(self) -> int:
        """DESIGN.md, Builds: a failure is 1; a skip is 1 only for a backend asked for by name,
        unless skips are allowed."""
        if self.interrupted:
            return EXIT_INTERRUPTED
        if self.count(Status.FAILED):
            return 1
        if self.count(Status.SKIPPED) and self.requested_by_name and not self.allow_skip:
            return 1
        return 0
