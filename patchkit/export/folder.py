"""The export folder: written whole or not at all.

Everything is written into a new folder beside OUT, which is then renamed into place; a failed
export leaves OUT as it was, and no folders made for it. OUT may be missing or an empty folder; a
folder with files in it is replaced only with --force, and never when it holds the project or the
current folder. OUT is never inside a folder patchkit keeps for itself (the queue, the cache).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from patchkit.errors import PatchkitError
from patchkit.export.formats import OutFile
from patchkit.fileio import atomic_folder


def check_target(out: Path, force: bool, keep: Iterable[Path] = (), owned: Iterable[Path] = ()) -> Path:
    """OUT as the folder that will be replaced (a symlink's target), refused before any work unless
    it may be; KEEP are folders it must not hold (the project, the current folder), OWNED folders
    whose contents are patchkit's (the queue, the cache, the patched checkout), which it must not be in."""
    real = out.absolute().resolve()
    if real.exists() and not real.is_dir():
        raise PatchkitError(f"{out} exists and is not a folder", "give a new or empty folder for the export")
    for folder in keep:
        if folder.resolve().is_relative_to(real):
            raise PatchkitError(f"{out} holds {folder}, which an export would replace",
                                "give a folder of its own for the export")
    for folder in owned:
        if real.is_relative_to(folder.resolve()):
            raise PatchkitError(f"{out} is inside {folder}, whose files are patchkit's own",
                                "give a folder outside it for the export")
    if real.is_dir() and any(real.iterdir()) and not force:
        raise PatchkitError(f"{out} is not empty",
                            "give a new or empty folder, or --force to replace everything in it")
    parent = next(p for p in real.parents if p.exists())
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise PatchkitError(f"cannot write {out}: {parent} is not a writable folder", "choose a writable location")
    return real


def write_folder(out: Path, files: Iterable[OutFile], force: bool) -> None:
    """Write FILES as the folder OUT (checked by check_target), replacing it in one rename."""
    with atomic_folder(check_target(out, force)) as new:
        for f in files:
            path = new / f.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(f.data)
