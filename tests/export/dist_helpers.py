"""An upstream for the dist tests: the tiny CMake stand-in of llama.cpp (tests/backends/project)
with an executable script, a symlink and awkward names, in three commits, and a fork carrying one
patch on it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from conftest import git_identity, run_cli, write_project

STAND_IN = Path(__file__).resolve().parents[1] / "backends" / "project"
PATCH_NAME = "cli-say-patched.patch"


@dataclass(frozen=True)
class Upstream:
    path: Path
    head: str  # master's commit
    patch: Path  # a patch that is good at HEAD and touches a file HEAD~1 does not have


def git(repo: Path, *args: str, date: str = "1790600000 +0000") -> str:
    env = {**os.environ, **git_identity(date=date), "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def make_upstream(dest: Path) -> Upstream:
    repo = dest / "llama.cpp"
    shutil.copytree(STAND_IN, repo)
    git(repo, "init", "-q", "-b", "master")
    (repo / "README.md").write_text("# llama.cpp stand-in\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "import the stand-in", date="1790000000 +0000")
    (repo / "README.md").write_text("# llama.cpp stand-in\n\nBuild with CMake.\n")
    git(repo, "commit", "-q", "-am", "say how to build", date="1790100000 +0200")
    script = repo / "scripts" / "run.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\necho run\n")
    script.chmod(0o755)
    (repo / "include" / "llama-link.h").symlink_to("llama.h")
    # Names ustar cannot hold (over 100 bytes, not ASCII): tarfile gives them a PAX header
    (repo / "docs").mkdir()
    (repo / "docs" / f"{'long-' * 20}name.md").write_text("long\n")
    (repo / "docs" / "café.md").write_text("accent\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "add a script and a link", date="1790200000 +0530")
    head = git(repo, "rev-parse", "HEAD")
    # The fork's patch, written by git from a commit on a branch that is then dropped again.
    git(repo, "checkout", "-q", "-b", "wip")
    cli = repo / "tools" / "cli" / "cli.cpp"
    cli.write_text(cli.read_text().replace('"llama-cli %s\\n"', '"llama-cli (patched) %s\\n"'))
    script.write_text("#!/bin/sh\necho run patched\n")
    git(repo, "commit", "-q", "-am", "cli: say it is patched\n\nForwarded: not-needed")
    patch = dest / "patches" / PATCH_NAME
    patch.parent.mkdir()
    patch.write_text(git(repo, "format-patch", "-1", "--zero-commit", "--full-index", "--no-signature",
                         "--stdout") + "\n")
    git(repo, "checkout", "-q", "master")
    git(repo, "branch", "-q", "-D", "wip")
    return Upstream(repo, head, patch)


def make_fork(root: Path, upstream: Upstream, lock: bool = True) -> Path:
    fork = write_project(root, str(upstream.path), [upstream.patch])
    if lock:
        done = run_cli("apply", "upstream@HEAD", "--update-lock", "-o", str(root / "applied"), cwd=fork)
        assert done.returncode == 0, done.stderr
    return fork


def dist(fork: Path, output: Path, *args: str, cwd: Path | None = None, umask: int | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`patchkit dist -o OUTPUT ARGS --json -`, from CWD (default: the fork), under UMASK if given."""
    argv = ["dist", "-o", str(output), *args, "--json", "-"]
    if umask is None:
        return run_cli(*argv, cwd=cwd or fork, env=env)
    code = f"import os, runpy, sys; os.umask({umask:#o}); sys.argv[0] = 'patchkit'; " \
           "runpy.run_module('patchkit', run_name='__main__')"
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=cwd or fork, text=True, capture_output=True,
                          env={**os.environ, "NO_COLOR": "1", **(env or {})})


def report(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def members(path: Path) -> list[tarfile.TarInfo]:
    with tarfile.open(path) as tar:
        return tar.getmembers()


def read_member(path: Path, name: str) -> bytes:
    with tarfile.open(path) as tar:
        fh = tar.extractfile(name)
        assert fh is not None
        return fh.read()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
