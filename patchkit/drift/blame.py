"""The upstream commit that changed a declaration: a binary search over the declaring file's
first-parent history between the lock and the target, as the nightly's bisect does for a broken
patch, with a probe that reads one file and parses its declarations (no apply: the patch is good
at every commit, only what it relies on moves).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from patchkit import git
from patchkit.drift.compare import Entity, differs
from patchkit.drift.tree import Files


@dataclass(frozen=True)
class Blame:
    commit: str | None  # the first commit whose declaration differs from the lock's; None: not found
    probes: int
    candidates: int  # first-parent commits between the lock and the target touching the file
    why: str  # when commit is None


def blame(files: Files, entity: Entity, path: str, before: str, after: str, was: tuple,
          probe: Callable[[str], tuple | None], moved: bool = False) -> Blame:
    """The first commit of BEFORE..AFTER where ENTITY's declaration in PATH stopped reading WAS
    (its state at BEFORE), as the patch's line feels it; PROBE reads its state at a commit.
    MOVED: at BEFORE it was declared in another file (a commit where PATH does not declare it
    yet is one before the move, where it still read WAS)."""
    if git.run(["merge-base", before, after], cwd=files.repo, check=False) != before:
        return Blame(None, 0, 0, f"the locked commit {before[:12]} is not an ancestor of the target")
    commits = git.run(["--literal-pathspecs", "rev-list", "--first-parent", "--reverse", f"{before}..{after}",
                       "--", path], cwd=files.repo).split()
    probes = 0
    lo, hi = -1, len(commits) - 1  # lo: still as before (-1: the lock); hi: changed (the target is)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        probes += 1
        now = probe(commits[mid])
        changed = not moved if now is None else differs(entity, was, now)
        lo, hi = (lo, mid) if changed else (mid, hi)
    if not commits:
        return Blame(None, probes, 0, f"no first-parent commit between the lock and the target touches {path}")
    return Blame(commits[hi], probes, len(commits), "")
