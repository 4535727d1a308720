"""Where a command may write what the user names: the report files (`--json/--markdown/--junit/
--sarif FILE`), the nightly's report folder and GitHub's step summary, export's OUT, dist's tarball
and its SHA256SUMS.

One rule for all of them, checked before any work: a target is never inside a place whose files
are patchkit's or git's own (the queue, the lock and patchkit.yaml, the patched checkout, a `.git`,
the cache), nor a folder that holds one of them. A report in patches/ would be committed with the
queue (the workflow runs `git add -A -- patches`), one in the checkout lost at the next apply, and
a folder replaced whole (`export --force`) would take the repository with it.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from pathlib import Path

from patchkit.errors import PatchkitError
from patchkit.fileio import ensure_folder, ensure_writable
from patchkit.project import Project


class Target(enum.Enum):
    FILE = "file"  # written whole (a report, the tarball, SHA256SUMS) or appended to (the step summary)
    FOLDER = "folder"  # files written into it: the nightly's --report-dir
    REPLACED = "replaced"  # a folder replaced whole: export's OUT


@dataclass(frozen=True)
class Place:
    path: Path  # resolved
    what: str  # as a message names it: "the patch queue"


@dataclass(frozen=True)
class Places:
    """A project's own places, which no target may be in, be, or hold (a `.git` is refused wherever
    it is: `check`)."""

    own: tuple[Place, ...] = ()
    keep: tuple[Path, ...] = ()  # folders a replaced folder must not hold: the project, the current folder

    @classmethod
    def of(cls, project: Project | None, checkout: Path | None = None) -> Places:
        """PROJECT's places (none outside a project), with CHECKOUT (`-o DIR`) beside its own."""
        if project is None:
            return cls(keep=(Path.cwd().resolve(),))
        places = [(project.patches_dir, "the patch queue"), (project.lock_path, "the lock"),
                  (project.config_path, "the project's configuration"),
                  (project.output_dir, "the patched checkout"), (project.cache_dir, "patchkit's cache")]
        if checkout is not None:
            places.append((checkout, "the patched checkout"))
        return cls(own=tuple(Place(_real(path), what) for path, what in places),
                   keep=(_real(project.root), Path.cwd().resolve()))


def check(target: str | Path | None, kind: Target, places: Places, force: bool = False) -> Path | None:
    """TARGET's real path, refused (exit 2) unless KIND may be written there; None and '-' (standard
    output) pass as None. FORCE: a REPLACED folder that has files in it may be replaced."""
    if target is None or str(target) == "-":
        return None
    real = _real(Path(target))
    if ".git" in real.parts:  # any repository's, not only the fork's: git's files are git's
        where = "is a repository's .git folder" if real.name == ".git" else "is inside a .git folder"
        raise PatchkitError(f"{target} {where}, whose files are git's own", "choose a place outside it")
    for place in places.own:
        if real == place.path:
            raise PatchkitError(f"{target} is {place.what} ({place.path})", "choose another place")
        if real.is_relative_to(place.path):
            raise PatchkitError(f"{target} is inside {place.what} ({place.path})", "choose a place outside it")
        if kind is not Target.FILE and place.path.is_relative_to(real):
            raise PatchkitError(f"{target} holds {place.what} ({place.path})", "give a folder of its own")
    if kind is Target.FILE:
        ensure_writable(target)
    else:
        _check_folder(target, real, kind, places, force)
    return real


def _check_folder(target: str | Path, real: Path, kind: Target, places: Places, force: bool) -> None:
    if real.exists() and not real.is_dir():
        raise PatchkitError(f"{target} exists and is not a folder", "give a new or empty folder")
    if kind is Target.REPLACED:
        for folder in places.keep:
            if folder.is_relative_to(real):
                raise PatchkitError(f"{target} holds {folder}, which an export would replace",
                                    "give a folder of its own for the export")
        if real.is_dir() and any(real.iterdir()) and not force:
            raise PatchkitError(f"{target} is not empty",
                                "give a new or empty folder, or --force to replace everything in it")
    # FOLDER: files are made in it; REPLACED: a new folder is made beside it, then renamed.
    ensure_folder(real if kind is Target.FOLDER else real.parent, target)


def _real(path: Path) -> Path:
    """PATH as a write to it lands: absolute, symlinks followed."""
    try:
        return Path(os.path.realpath(path.absolute()))
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        raise PatchkitError(f"cannot write {path}: a symlink loop", "point the link elsewhere") from None
