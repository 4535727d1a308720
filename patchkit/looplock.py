"""One human-loop command at a time: `rebase` (each step), `record` and `absorb` hold an exclusive
`flock` on `.patchkit/loop.lock` while they run. The kernel drops it when the process ends, however
it ends, so a killed run never leaves it held; the pid in the file is only for the message."""

from __future__ import annotations

import contextlib
import fcntl
import os
from typing import Iterator

from patchkit.errors import PatchkitError
from patchkit.project import Project


@contextlib.contextmanager
def exclusive(project: Project, command: str) -> Iterator[None]:
    """Held while COMMAND runs; refused at once when another run holds it."""
    path = project.state_dir / "loop.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    with os.fdopen(fd, "r+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = fh.read().strip() or "?"
            raise PatchkitError(f"another `patchkit {command.split()[0]}`, `record` or `absorb` is running in "
                                f"{project.root} (pid {holder}): one at a time",
                                "wait for it to end, then rerun") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
