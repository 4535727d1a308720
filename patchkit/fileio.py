"""Writing the user's files: whole or not at all, with the permissions a plain write would give."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from patchkit.errors import PatchkitError


def atomic_write(path: Path, data: bytes) -> None:
    """Write to a temporary file beside PATH and rename it over PATH.

    A failed run never leaves half a file where a CI job expects a whole one.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise PatchkitError(f"cannot write {path}: {exc.strerror}", "choose a writable location") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        # mkstemp makes 0600 files; keep the old file's mode, else what a plain write would give.
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def ensure_writable(*targets: str | Path | None) -> None:
    """Refuse, before any work, report targets that could not be written afterwards."""
    for target in targets:
        if target is None or str(target) == "-":
            continue
        path = Path(target).absolute()
        if path.is_dir():
            raise PatchkitError(f"{target} is a folder", "give a file name for the report")
        folder = next(p for p in path.parents if p.exists())  # the one the file (or its folders) go in
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            raise PatchkitError(f"cannot write {target}: {folder} is not a writable folder",
                                "choose a writable location")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
