"""Helpers of the import tests: a fork with an empty queue, a local clone of the fixture upstream
with commits to import, and the patches/ folder's bytes to compare."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

from conftest import git_identity, seed_patch_path, write_project

AT = "upstream@b1000"

# Three independent changes that apply cleanly at b1000 and at master.
CHANGES = (
    ("docs : say how to build the server", "README.md", "append",
     "\n## Building the server\n\nRun `cmake -B build && cmake --build build`.\n"),
    ("llama : say what the flags are for", "include/llama.h", "append",
     "\n// the flags are a bit set: combine them with |\n"),
    ("server : add notes on imported patches", "tools/server/NOTES.md", "create",
     "# Notes\n\nPatches imported into the queue land here first.\n"),
)


def git(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, text=True, capture_output=True,
                          env={**_base_env(), **(env or {})}).stdout.strip()


def _base_env() -> dict[str, str]:
    import os

    return {**os.environ, **git_identity(), "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def fork(tmp_path: Path, upstream, name: str = "fork") -> Path:
    """A fork repository of the fixture upstream with an empty queue (its own mirror cache)."""
    return write_project(tmp_path / name, str(upstream.path), patches=[])


def work_clone(tmp_path: Path, upstream, ref: str = "b1000", name: str = "work") -> Path:
    """A local clone of the fixture upstream on a branch `work` at REF."""
    dest = tmp_path / name
    git("clone", "--quiet", str(upstream.path), str(dest), cwd=tmp_path)
    git("checkout", "--quiet", "-b", "work", ref, cwd=dest)
    return dest


def commit_change(repo: Path, subject: str, path: str, how: str, text: str, body: str = "",
                  date: str = "1790600000 +0200") -> str:
    """Commit one change in REPO; return the commit id."""
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if how == "append":
        target.write_text(target.read_text() + text)
    elif how == "replace":
        old, new = text
        content = target.read_text()
        assert old in content, f"{old!r} not in {path}"
        target.write_text(content.replace(old, new, 1))
    else:
        target.write_text(text)
    git("add", path, cwd=repo)
    message = f"{subject}\n\n{body}" if body else subject
    git("commit", "--quiet", "-m", message, cwd=repo, env=git_identity(date=date))
    return git("rev-parse", "HEAD", cwd=repo)


def three_commits(repo: Path) -> list[str]:
    return [commit_change(repo, subject, path, how, text, body=f"Why: change {i}.",
                          date=f"{1790600000 + i * 60} +0200")
            for i, (subject, path, how, text) in enumerate(CHANGES, 1)]


def format_patch(repo: Path, commit: str) -> str:
    return git("format-patch", "-1", "--stdout", commit, cwd=repo) + "\n"


def patches_state(project_root: Path) -> dict[str, str]:
    """Every file under patches/ by its sha256: what 'byte-identical' compares."""
    folder = project_root / "patches"
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def series(project_root: Path) -> list[str]:
    return [line for line in (project_root / "patches" / "series").read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def plain_diff(repo: Path, commit: str) -> str:
    """The commit's change as a bare unified diff (no mail header at all)."""
    return git("diff", f"{commit}^", commit, cwd=repo) + "\n"


# The seed as the Gentoo overlay carries it (patch 6 of 18): this header, the queue's diff.
GENTOO_HEADER = """\
From 8b2e18efdd5d22b27da16d46b192b82445604a8d Mon Sep 17 00:00:00 2001
From: Mike Lothian <mike@fireburn.co.uk>
Date: Sun, 27 Sep 2026 15:06:40 +0100
Subject: [PATCH 06/18] server : keep speculative checkpoints on device

Assisted-by: Claude Code (Claude Opus 5.5)
---
 tools/server/server-context.cpp | 14 ++++++++------
 1 file changed, 8 insertions(+), 6 deletions(-)

"""


def web_copy(text: str) -> str:
    """What the web page made of a patch: tags stripped, every whitespace run one space (this
    gives ../shared/seeds/web-copy-of-the-patch.txt byte for byte from the clean seed)."""
    return " ".join(re.sub(r"<[A-Za-z/!?][^>]*>", "", text).split())


def clean_seed() -> str:
    diff = seed_patch_path().read_text()
    return GENTOO_HEADER + diff[diff.index("diff --git "):]


def seed_web_copy() -> str:
    """../shared/seeds/web-copy-of-the-patch.txt, made here (a clean clone has no ../shared)."""
    return web_copy(clean_seed())

