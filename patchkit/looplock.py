"""One human-loop command at a time: `rebase` (each step), `record` and `absorb` hold an exclusive
`flock` on `.patchkit/loop.lock` while they run. The kernel drops it when the process ends, however
it ends, so a killed run never leaves it held; the holder's pid and command in the file are only
for the message of a run it turns away."""

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
            pid, _, holder = fh.read().strip().partition("\n")
            # empty while the holder is between its flock and its write
            running = f"`patchkit {holder}`" if holder else "another patchkit run"
            raise PatchkitError(f"{running} (pid {pid or '?'}) is running in {project.root}: rebase, "
                                "record and absorb run one at a time", "wait for it to end, then rerun") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n{command}\n")
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
