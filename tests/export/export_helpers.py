"""Shared by the export tests: the packagers' real tools, upstream checkouts and tree ids.

Not a conftest.py: that module name would shadow tests/conftest.py for the tests importing it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import git_identity
from patchkit import git


def tool(name: str) -> str:
    """The tool's path; CI installs every one (.ci/run), so there a missing one fails."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing: .ci/run installs it")
        pytest.skip(f"{name} is not installed")
    return path


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, f"{args} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def checkout(upstream: Path, commit: str, dest: Path) -> Path:
    """A fresh work tree of the upstream commit, as a packager unpacks it."""
    git.run(["clone", "--quiet", "--no-checkout", str(upstream), str(dest)])
    git.run(["checkout", "--quiet", "--detach", commit], cwd=dest)
    return dest


def tree_id(work: Path, ignore: tuple[str, ...] = (".pc",)) -> str:
    """The git tree of WORK's files as they are now (quilt's .pc left out)."""
    for name in ignore:
        shutil.rmtree(work / name, ignore_errors=True)
    git.run(["add", "-A"], cwd=work)
    return git.run(["write-tree"], cwd=work)


def commit_trees(repo: Path, commits: list[str]) -> list[str]:
    return [git.run(["rev-parse", f"{c}^{{tree}}"], cwd=repo) for c in commits]


def git_am(work: Path, mbox: Path) -> list[str]:
    """Apply MBOX with `git am`; the trees of the commits it made, oldest first."""
    base = git.run(["rev-parse", "HEAD"], cwd=work)
    git.run(["am", "--quiet", str(mbox)], cwd=work, env=git_identity())
    commits = git.run(["rev-list", "--reverse", f"{base}..HEAD"], cwd=work).split()
    return commit_trees(work, commits)
