"""The one place that runs git.

Every call is an argument list (never a shell string). Refs and paths that come from users are
validated here before they can reach git, so that nothing a user types is read as an option.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from patchkit.errors import EnvironmentProblem, PatchkitError

# Fixed identity and a neutral environment: a user's git config (hooks, signing, templates) must
# never change what patchkit writes, or the same input would not give the same commit id.
PATCHKIT_NAME = "patchkit"
PATCHKIT_EMAIL = "patchkit@invalid"
_NEUTRAL_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
}
_REF_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./+@{}~^-]*$")


class GitFailed(Exception):
    """git exited non-zero; callers turn this into a user-facing error where it is one."""

    def __init__(self, args: list[str], returncode: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args)}: {stderr.strip() or f'exit {returncode}'}")
        self.args_ = args
        self.returncode = returncode
        self.stderr = stderr


def git_executable() -> str:
    exe = shutil.which("git")
    if exe is None:
        raise EnvironmentProblem("git was not found on PATH", "install git and run again")
    return exe


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, **_NEUTRAL_ENV}
    if extra:
        env.update(extra)
    return env


def run(
    args: list[str],
    cwd: Path | str | None = None,
    *,
    input: bytes | str | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> str:
    """Run `git ARGS` and return its standard output as text (stripped of the final newline)."""
    data = input.encode() if isinstance(input, str) else input
    proc = subprocess.run(
        [git_executable(), *args],
        cwd=cwd,
        input=data,
        env=git_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    if check and proc.returncode != 0:
        raise GitFailed(args, proc.returncode, proc.stderr.decode(errors="replace"))
    return proc.stdout.decode(errors="surrogateescape").removesuffix("\n")


def stream_stderr(args: list[str], cwd: Path | str | None = None) -> Iterator[str]:
    """Run `git ARGS`, yielding its stderr line by line as it comes (progress uses CR too).

    Raises GitFailed, with the last lines, if git fails.
    """
    proc = subprocess.Popen([git_executable(), *args], cwd=cwd, env=git_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr
    tail: list[str] = []
    buf = b""
    while chunk := proc.stderr.read1(4096):
        *lines, buf = re.split(rb"[\r\n]", buf + chunk)
        for line in (raw.decode(errors="replace") for raw in lines if raw.strip()):
            tail = (tail + [line])[-5:]
            yield line
    if buf.strip():
        tail.append(buf.decode(errors="replace"))
    if proc.wait() != 0:
        raise GitFailed(args, proc.returncode, "\n".join(tail))


def is_url(location: str) -> bool:
    """A URL git fetches over a transport (scheme:// or scp-like user@host:path), not a path."""
    return bool(re.match(r"^[a-z][a-z0-9+.-]*://", location) or re.match(r"^[\w.-]+@[\w.-]+:", location))


def validate_ref(ref: str, what: str = "ref") -> str:
    """Reject anything git could read as an option or a revision expression we do not support."""
    if not ref or ref.startswith("-"):
        raise PatchkitError(f"invalid {what} {ref!r}: must not be empty or start with '-'",
                            "name a branch, tag or commit id")
    if not _REF_RE.match(ref) or ".." in ref or ref.endswith((".", "/", ".lock")) or "@{" in ref:
        raise PatchkitError(f"invalid {what} {ref!r}", "name a branch, tag or commit id")
    return ref


def validate_repo_path(path: str) -> str:
    """A path inside a repository as written in a patch: relative, with no '..' component."""
    parts = path.split("/")
    if path.startswith("/") or ".." in parts or "" in parts or path.startswith("-") or "\0" in path \
            or any(part.lower() == ".git" for part in parts):
        raise PatchkitError(f"unsafe path {path!r} in patch",
                            "paths must be relative to the tree root, without '..' or '.git'")
    return path


def merge_file(current: bytes, base: bytes, other: bytes) -> tuple[bytes, int]:
    """3-way merge of one file: CURRENT plus the change from BASE to OTHER.

    Returns the merged bytes and the number of conflicts (0: clean).
    """
    with tempfile.TemporaryDirectory(prefix="patchkit-merge-") as tmp:
        paths = []
        for name, data in (("current", current), ("base", base), ("other", other)):
            path = Path(tmp) / name
            path.write_bytes(data)
            paths.append(str(path))
        proc = subprocess.run(
            [git_executable(), "merge-file", "-p", "-L", "upstream", "-L", "base", "-L", "patch", *paths],
            env=git_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
    if not 0 <= proc.returncode < 128:
        raise GitFailed(["merge-file"], proc.returncode, proc.stderr.decode(errors="replace"))
    return proc.stdout, proc.returncode


@dataclass(frozen=True)
class Identity:
    name: str
    email: str
    date: str  # git's raw date form: "<unix seconds> <+hhmm>"

    def env(self, role: str) -> dict[str, str]:
        """Environment that makes git use this identity as AUTHOR or COMMITTER."""
        return {f"GIT_{role}_NAME": self.name, f"GIT_{role}_EMAIL": self.email,
                f"GIT_{role}_DATE": self.date}


class ObjectReader:
    """Reads blobs and trees through one long-lived `git cat-file --batch`, never checking out.

    Opening a process per read would dominate the cost of probing hundreds of upstream commits.
    """

    def __init__(self, repo: Path | str) -> None:
        self._proc = subprocess.Popen(
            [git_executable(), "cat-file", "--batch"],
            cwd=repo, env=git_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )

    def read(self, rev: str, path: str | None = None) -> bytes | None:
        """Contents of object `rev` (or of `path` in the tree of commit `rev`); None if missing."""
        spec = f"{rev}:{path}" if path is not None else rev
        if "\n" in spec:
            raise PatchkitError(f"invalid object name {spec!r}")
        assert self._proc.stdin and self._proc.stdout
        self._proc.stdin.write(spec.encode() + b"\n")
        self._proc.stdin.flush()
        header = self._proc.stdout.readline().decode()
        if header.endswith(" missing\n") or header.endswith(" ambiguous\n") or not header:
            return None
        size = int(header.split()[2])
        data = self._proc.stdout.read(size)
        self._proc.stdout.read(1)  # the newline after the object
        return data

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin
            self._proc.stdin.close()
            self._proc.wait()

    def __enter__(self) -> ObjectReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
