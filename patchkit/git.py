"""The one place that runs git.

Every call is an argument list (never a shell string). Refs and paths that come from users are
validated here before they can reach git, so that nothing a user types is read as an option.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

from patchkit import testpoint
from patchkit.errors import EnvironmentProblem, PatchkitError

# A fixed committer: with the isolation below, the same input always gives the same commit ids.
PATCHKIT_NAME = "patchkit"
PATCHKIT_EMAIL = "patchkit@invalid"
_REF_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./+@{}~^-]*$")

# Isolation: whatever the caller's environment or any git config says, the same input must give
# the same result (commit ids, tree, checkout), run no hooks and start no background work.
# The user's and system's config files are not read by the calls themselves; the repository's
# own config (the output repository may carry hooks or autocrlf) is outranked by _PINNED, passed
# as GIT_CONFIG_COUNT/KEY/VALUE.
_NEUTRAL_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
}
_PINNED = (
    ("core.hooksPath", os.devnull), ("core.fsmonitor", "false"),
    ("core.autocrlf", "false"), ("core.eol", "lf"), ("core.safecrlf", "false"),
    ("core.attributesFile", os.devnull), ("core.quotePath", "true"),
    ("gc.auto", "0"), ("maintenance.auto", "false"),
    ("commit.gpgSign", "false"), ("tag.gpgSign", "false"), ("log.showSignature", "false"),
    ("merge.conflictStyle", "merge"), ("submodule.recurse", "false"), ("color.ui", "false"),
    # A checkout writes thousands of files: one worker per core halves it on two (git >= 2.32).
    ("checkout.workers", "0"),
)
# The caller's repository-selecting and config-injecting variables (set, for example, when
# patchkit runs inside a git hook): `git rev-parse --local-env-vars`, these, and all GIT_CONFIG*.
_CALLER_VARS = {"GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_NAMESPACE",
                "GIT_QUARANTINE_PATH", "GIT_TEMPLATE_DIR", "GIT_DEFAULT_HASH", "GIT_ATTR_SOURCE",
                "GIT_EXTERNAL_DIFF", "GIT_DIFF_OPTS"}
# Settings that only say how to reach the network: taken from the user's config, so that a proxy,
# a CA bundle, a credential helper or a URL rewrite keeps working.
_NETWORK_KEY = re.compile(
    r"^(?:https?\.(?:.+\.)?(?:proxy|proxyauthmethod|sslcainfo|sslcapath|sslverify|sslcert|sslkey"
    r"|sslcertpasswordprotected|sslbackend|extraheader)"
    r"|url\..+\.(?:insteadof|pushinsteadof)|credential\..+|core\.(?:sshcommand|gitproxy)|ssh\.variant"
    r"|protocol\.(?:.+\.)?allow)$", re.DOTALL)
# Filter drivers that a repository's own config defines for names its .gitattributes use: emptied,
# so checkout and status see the bytes as stored. (merge-file and diff-tree --name-status, the
# only merge and diff patchkit runs, never consult merge or diff drivers.)
_FILTER_KEY = re.compile(r"^filter\..+\.(?:clean|smudge|process|required)$", re.DOTALL)


class GitFailed(Exception):
    """git exited non-zero; callers turn this into a user-facing error where it is one."""

    def __init__(self, args: list[str], returncode: int, stderr: str) -> None:
        self.args_ = args
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"git {' '.join(args)}: {self.summary}")

    @property
    def summary(self) -> str:
        """git's reason on one line: its last fatal/error line, else its last line."""
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        return next((t for t in reversed(lines) if t.startswith(("fatal", "error"))),
                    lines[-1] if lines else f"exit {self.returncode}")


@functools.cache
def git_executable() -> str:
    exe = shutil.which("git")
    if exe is None:
        raise EnvironmentProblem("git was not found on PATH", "install git and run again")
    return exe


def git_env(extra: dict[str, str] | None = None, repo: Path | str | None = None) -> dict[str, str]:
    """The environment of every git call: the caller's less its git variables, plus isolation.

    REPO is the call's working directory: the repository whose filter drivers are switched off.
    """
    caller = _caller_git_vars()
    env = {k: v for k, v in os.environ.items() if k not in caller and not k.startswith("GIT_CONFIG")}
    env.update(_isolation(str(repo) if repo else None))
    if extra:
        env.update(extra)
    return env


@functools.cache
def _isolation(repo: str | None) -> dict[str, str]:
    """What every git call in REPO gets on top of the caller's environment (the same all run)."""
    return {**_NEUTRAL_ENV, **_config_env([*network_settings(), *_PINNED, *_filter_overrides(repo)])}


def _is_caller_var(name: str) -> bool:
    return name in _caller_git_vars() or name.startswith("GIT_CONFIG")


def _config_env(settings: list[tuple[str, str]]) -> dict[str, str]:
    """SETTINGS as GIT_CONFIG_COUNT/KEY/VALUE: they outrank every config file, later ones win."""
    env = {"GIT_CONFIG_COUNT": str(len(settings))}
    for i, (key, value) in enumerate(settings):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


@functools.cache
def _caller_git_vars() -> frozenset[str]:
    listed = subprocess.run([git_executable(), "rev-parse", "--local-env-vars"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    return frozenset(listed.split()) | _CALLER_VARS


@functools.cache
def network_settings() -> tuple[tuple[str, str], ...]:
    """The network settings of the user's global and system config, read once per process with
    the caller's environment (HOME, XDG_CONFIG_HOME, GIT_CONFIG_GLOBAL, ...)."""
    env = {k: v for k, v in os.environ.items() if k not in _caller_git_vars()}
    proc = subprocess.run([git_executable(), "config", "--list", "--includes", "--show-scope", "-z"],
                          cwd=os.path.abspath(os.sep), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        reason = GitFailed(["config"], proc.returncode, proc.stderr.decode(errors="replace")).summary
        raise EnvironmentProblem(f"cannot read your git config: {reason}", "fix the file git names")
    fields = proc.stdout.decode(errors="surrogateescape").split("\0")
    settings = []
    for scope, entry in zip(fields[0::2], fields[1::2]):
        key, has_value, value = entry.partition("\n")
        if scope in ("system", "global") and _NETWORK_KEY.match(key):
            settings.append((key, value if has_value else "true"))  # a bare key is boolean true
    return tuple(settings)


@functools.cache
def _filter_overrides(repo: str | None) -> tuple[tuple[str, str], ...]:
    """Empty every filter driver REPO's own config defines, so that none runs (read once per repo)."""
    if repo is None:
        return ()
    env = {k: v for k, v in os.environ.items() if not _is_caller_var(k)}
    env.update({**_NEUTRAL_ENV, **_config_env(list(_PINNED))})
    proc = subprocess.run([git_executable(), "config", "--local", "--name-only", "-z", "--get-regexp", r"^filter\."],
                          cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    keys = {key for key in proc.stdout.decode(errors="surrogateescape").split("\0") if _FILTER_KEY.match(key)}
    return tuple((key, "false" if key.endswith(".required") else "") for key in sorted(keys))


def run(
    args: list[str],
    cwd: Path | str | None = None,
    *,
    input: bytes | str | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> str:
    """Run `git ARGS` and return its standard output as text (stripped of the final newline)."""
    testpoint.git_call()
    data = input.encode() if isinstance(input, str) else input
    proc = subprocess.run(
        [git_executable(), *args],
        cwd=cwd,
        input=data,
        env=git_env(env, cwd),
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
    proc = subprocess.Popen([git_executable(), *args], cwd=cwd, env=git_env(repo=cwd),
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
    why = ("it is absolute" if path.startswith("/") else
           "it has a '..' part" if ".." in parts else
           "it has an empty part" if "" in parts else
           "it starts with '-' (a tool given it would read an option)" if path.startswith("-") else
           "it has a NUL byte" if "\0" in path else
           "it is in a '.git' folder" if any(part.lower() == ".git" for part in parts) else "")
    if why:
        raise PatchkitError(f"unsafe path {path!r} in patch: {why}",
                            "a patch's paths are relative to the tree root: no '/' or '-' first, no '..', "
                            "'.git' or empty parts")
    return path


def git_dir(repo: Path | str) -> Path:
    """The absolute .git folder of the repository at REPO (a linked worktree's own, not the main one's)."""
    return Path(run(["rev-parse", "--absolute-git-dir"], cwd=repo))


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


# patchfile.diff.HUNK_HEADER's, on bytes: git is below the patch format in the layers (tests/test_layers.py).
_HUNK_HEADER = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


def line_differences(a: bytes, b: bytes) -> list[tuple[int, int, int, int]]:
    """The 0-based (i1, i2, j1, j2) line ranges where A and B differ, by git's own diff (xdiff,
    as `git merge-file` aligns lines): one `git diff --no-index` call, where difflib's matcher
    would take seconds over a long file."""
    with tempfile.TemporaryDirectory(prefix="patchkit-diff-") as tmp:
        for name, data in (("a", a), ("b", b)):
            (Path(tmp) / name).write_bytes(data)
        # cwd: the temporary folder, so that no repository's attributes or drivers apply
        proc = subprocess.run(
            [git_executable(), "diff", "--no-index", "--no-ext-diff", "--no-textconv", "--no-color",
             "--text", "--unified=0", "--diff-algorithm=myers", "a", "b"],
            cwd=tmp, env=git_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
    if proc.returncode not in (0, 1):
        raise GitFailed(["diff", "--no-index"], proc.returncode, proc.stderr.decode(errors="replace"))
    ranges = []
    for found in _HUNK_HEADER.finditer(proc.stdout):
        old, old_count, new, new_count = (int(g) if g is not None else 1 for g in found.groups())
        # A side of count 0 names the line after which the other side's lines go.
        i1 = old if old_count == 0 else old - 1
        j1 = new if new_count == 0 else new - 1
        ranges.append((i1, i1 + old_count, j1, j1 + new_count))
    return ranges


class ObjectReader:
    """Reads blobs and trees through one long-lived `git cat-file --batch`, never checking out.

    Opening a process per read would dominate the cost of probing hundreds of upstream commits.
    """

    def __init__(self, repo: Path | str) -> None:
        self._proc = subprocess.Popen(
            [git_executable(), "cat-file", "--batch"],
            cwd=repo, env=git_env(repo=repo), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
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
