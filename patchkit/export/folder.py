"""The export folder: written whole or not at all.

Everything is written into a new folder beside OUT, which is then renamed into place; a failed
export leaves OUT as it was, and no folders made for it. Where OUT may be is patchkit.targets'
rule (a REPLACED folder), checked by the caller before any work and here again before the write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from patchkit.export.formats import OutFile
from patchkit.fileio import atomic_folder
from patchkit.targets import Places, Target, check


def write_folder(out: Path, files: Iterable[OutFile], force: bool) -> None:
    """Write FILES as the folder OUT (a symlink's target), replacing it in one rename."""
    with atomic_folder(check(out, Target.REPLACED, Places(), force)) as new:
        for f in files:
            path = new / f.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(f.data)
