"""Writing the user's files and folders: whole or not at all, with the permissions a plain write
would give.

A path names what the user means: a symlink is followed and its target replaced (the link is
kept), and a character device or FIFO (/dev/null, a pipe another process reads) is written
through, never replaced.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import secrets
import shutil
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO, Hashable, Iterable, Iterator

from patchkit.errors import PatchkitError


def atomic_write(path: Path, data: bytes) -> None:
    """Write DATA to what PATH names: a file is replaced by renaming a temporary file over it.

    A failed run never leaves half a file where a CI job expects a whole one.
    """
    target = _resolve(path)
    if _is_stream(path, target):
        _write_through(path, target, data)
        return
    with atomic_file(path) as fh:
        fh.write(data)


@contextlib.contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """A binary file to write what PATH's file is to hold, streamed (a tarball); renamed over it
    only when the block ends without an error, and removed otherwise."""
    target = _resolve(path)
    try:
        if not path.is_symlink():  # a dangling link's target is written only where its folder is
            target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise PatchkitError(f"cannot write {path}: {exc.strerror}", "choose a writable location") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        # mkstemp makes 0600 files; keep the old file's mode, else what a plain write would give.
        os.chmod(tmp, target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def append(path: Path, text: str) -> None:
    """Add TEXT at the end of PATH (a log another step keeps adding to, such as GitHub's step
    summary): appended, never replaced, so what others wrote there stays."""
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise PatchkitError(f"cannot write {path}: {exc.strerror}", "choose a writable location") from None


@contextlib.contextmanager
def atomic_folder(path: Path) -> Iterator[Path]:
    """A new, empty folder beside PATH to build what PATH is to hold; renamed into place when the
    block ends without an error, removed otherwise, together with the folders made for PATH.

    A folder at PATH is moved aside, replaced in one rename, then removed: at no moment is PATH
    half written. PATH itself is replaced, a symlink too (resolve it first to replace its target). The folders beside it are named `.<name>.patchkit-...`, so that what a run
    killed half way leaves is `remove_aside`'s to clean.
    """
    made = missing_folders(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        new = _aside(path, "new")
        os.mkdir(new)  # honours the umask: the modes a plain write would give
    except OSError as exc:
        remove_empty(made)
        raise PatchkitError(f"cannot write {path}: {exc.strerror}", "choose a writable location") from None
    try:
        yield new
        if os.path.lexists(path):
            old = _aside(path, "old")
            os.rename(path, old)
            try:
                os.rename(new, path)
            except BaseException:
                os.rename(old, path)
                raise
            _remove(old)
        else:
            os.rename(new, path)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        remove_empty(made)
        raise


def remove_folder(path: Path) -> None:
    """PATH gone: renamed aside in one step, then removed (a run killed while removing it leaves
    only what `remove_aside` cleans)."""
    if path.exists():
        os.rename(path, path.with_name(f".{path.name}.patchkit-done-{secrets.token_hex(4)}"))
    remove_aside(path)


def read_json(path: Path, what: str, hint: str) -> dict | None:
    """The JSON object in PATH, None when there is no file; one that cannot be read is refused,
    saying it is WHAT, with HINT."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise PatchkitError(f"{path}: cannot read {what} ({exc})", hint) from None


def remove_aside(path: Path) -> None:
    """Remove what a killed atomic_folder left beside PATH. Only for a PATH no other run is
    writing at the same time (under a lock, or where one run at a time is the rule)."""
    for leftover in path.parent.glob(f".{glob.escape(path.name)}.patchkit-*"):
        _remove(leftover)


def missing_folders(path: Path) -> list[Path]:
    """PATH's folders that do not exist yet, deepest first: a write that fails removes them again."""
    return [folder for folder in path.parents if not folder.exists()]


def remove_empty(folders: Iterable[Path]) -> None:
    for folder in folders:
        with contextlib.suppress(OSError):  # not empty: someone else's files are in it now
            folder.rmdir()


def ensure_writable(*targets: str | Path | None) -> None:
    """Refuse, before any work, report targets that could not be written afterwards."""
    for target in targets:
        if target is None or str(target) == "-":
            continue
        path = Path(target)
        real = _resolve(path)
        if _is_stream(path, real):
            if not os.access(real, os.W_OK):
                raise PatchkitError(f"cannot write {target}: permission denied", "choose a writable location")
            continue
        if path.is_symlink() and not real.parent.is_dir():
            raise PatchkitError(f"{target} is a symlink to {real}, whose folder does not exist",
                                "create that folder or point the link elsewhere")
        _writable_folder(target, real.parent)


def ensure_folder(folder: Path, target: str | Path) -> None:
    """Refuse, before any work, a FOLDER that could not be made, or files made in it, afterwards;
    TARGET names what is to be written there."""
    _writable_folder(target, _resolve(folder))


def _writable_folder(target: str | Path, path: Path) -> None:
    folder = next(p for p in (path, *path.parents) if p.exists())  # the one the file (or its folders) go in
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise PatchkitError(f"cannot write {target}: {folder} is not a writable folder",
                            "choose a writable location")
    # Make and remove a file there: os.access says yes to root everywhere, and a read-only mount
    # or /proc refuses only the write itself, which would come after the work.
    try:
        fd, name = tempfile.mkstemp(prefix=".patchkit-probe-", dir=folder)
    except OSError as exc:
        raise PatchkitError(f"cannot write {target}: {folder}: {exc.strerror}", "choose a writable location") from None
    os.close(fd)
    os.unlink(name)


def target_identity(target: str | Path) -> Hashable:
    """What a write to TARGET lands on, so two names for one file ('a', './a', a link) compare equal."""
    if str(target) == "-":
        return "-"
    real = _resolve(Path(target))
    try:
        st = real.stat()
    except OSError:
        return str(real)  # not there yet: its resolved name is all there is
    return st.st_dev, st.st_ino  # hard links and bind mounts too


def _resolve(path: Path) -> Path:
    try:
        return path.absolute().resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        raise PatchkitError(f"cannot write {path}: a symlink loop", "point the link at a file") from None


def _is_stream(path: Path, real: Path) -> bool:
    """True for a character device or FIFO; only those and files (or nothing yet) can take a report."""
    try:
        mode = real.stat().st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise PatchkitError(f"cannot write {path}: {exc.strerror}", "choose a writable location") from None
    if stat.S_ISDIR(mode):
        raise PatchkitError(f"{path} is a folder", "give a file name for the report")
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return True
    if not stat.S_ISREG(mode):
        raise PatchkitError(f"cannot write {path}: not a file, a character device or a FIFO",
                            "give a file name for the report")
    return False


def _write_through(path: Path, target: Path, data: bytes) -> None:
    try:
        # No O_CREAT or O_TRUNC: the device or FIFO is there, and it is not ours to replace.
        with os.fdopen(os.open(target, os.O_WRONLY), "wb") as fh:
            fh.write(data)
    except OSError as exc:
        raise PatchkitError(f"cannot write {path}: {exc.strerror}", "choose a writable location") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _aside(path: Path, what: str) -> Path:
    return path.with_name(f".{path.name}.patchkit-{what}-{secrets.token_hex(4)}")


def _remove(path: Path) -> None:
    """A folder (or a symlink to one, which is what was renamed aside) and what is in it."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)
