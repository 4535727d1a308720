"""Fixture builders for the build tests: a copy of the tiny llama.cpp stand-in, recipe folders,
and `patchkit` run as the user runs it (a subprocess, so exit codes are the real ones)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).parent
PROJECT = HERE / "project"
REPO_RECIPES = HERE.parents[1] / "recipes"
SCHEMA = HERE.parents[1] / "patchkit/schemas/build.schema.json"
# A requirement no machine meets: what "this toolchain is missing" looks like.
MISSING_RECIPE = """\
description: needs a compiler nobody has
options: {GGML_NATIVE: OFF}
requires:
  - command: patchkit-no-such-compiler
    name: Imaginary compiler
"""

needs_cmake = pytest.mark.skipif(not (shutil.which("cmake") and shutil.which("ninja")),
                                 reason="cmake and ninja are needed (.ci/run installs them)")


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str


def patchkit(*args: str | Path, cwd: Path | None = None) -> Run:
    proc = subprocess.run([sys.executable, "-m", "patchkit", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    return Run(proc.returncode, proc.stdout, proc.stderr)


def copy_project(dest: Path) -> Path:
    tree = dest / "llama.cpp"
    shutil.copytree(PROJECT, tree)
    return tree


def git_tree(tree: Path) -> str:
    """Make TREE a repository whose refs/patchkit/upstream is its one commit; returns the id."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@invalid",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "upstream"],
                 ["update-ref", "refs/patchkit/upstream", "HEAD"]):
        subprocess.run(["git", *args], cwd=tree, env=env, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def recipes_dir(dest: Path, *repo: str, **extra: str) -> Path:
    """A recipes folder with the named recipes of this repository and EXTRA (name -> YAML)."""
    folder = dest / "recipes"
    folder.mkdir()
    for name in repo:
        shutil.copy(REPO_RECIPES / f"{name}.yaml", folder)
    for name, text in extra.items():
        (folder / f"{name}.yaml").write_text(text)
    return folder
