"""Which upstream commit a tree was patched onto, as llama.cpp's LLAMA_BUILD_NUMBER/COMMIT.

llama.cpp derives both from the tree's own git history, which on a patched branch counts the
patch commits too (and a tarball has no history at all); passing them keeps `--version` equal to
the upstream build the tree stands on.
"""

from __future__ import annotations

from pathlib import Path

from patchkit import git, refs
from patchkit.errors import PatchkitError

# Written by `patchkit apply` into the output repository: the upstream commit it applied onto.


def short_commit(commit: str) -> str:
    """LLAMA_BUILD_COMMIT for a full commit id: a fixed length, not git's `--short`, which grows
    as a repository gains objects and would make the same commit's build differ between machines."""
    return commit[:8]


def build_info(tree: Path, fallback_commit: str | None = None) -> dict[str, str]:
    """The -D values for the tree's upstream commit: from refs.UPSTREAM, else FALLBACK_COMMIT
    (the lock's); only the commit when its history is not in the tree; nothing when unknown."""
    commit = _git(tree, ["rev-parse", "--verify", "--quiet", f"{refs.UPSTREAM}^{{commit}}"])
    commit = commit or fallback_commit
    if not commit:
        return {}
    git.validate_ref(commit, "upstream commit")
    number = build_number(tree, commit)
    full = _git(tree, ["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"])
    if number is not None and full:
        return {"LLAMA_BUILD_NUMBER": str(number), "LLAMA_BUILD_COMMIT": short_commit(full)}
    return {"LLAMA_BUILD_COMMIT": short_commit(commit)}


def build_number(repo: Path, commit: str) -> int | None:
    """LLAMA_BUILD_NUMBER for COMMIT: the commits reachable from it, as llama.cpp's build counts
    them. None when REPO does not have COMMIT's history."""
    number = _git(repo, ["rev-list", "--count", commit, "--"])
    return int(number) if number else None


def _git(tree: Path, args: list[str]) -> str | None:
    """git's answer, or None where there is none (not a repository, no such commit, no git)."""
    try:
        return git.run(args, tree) or None
    except (git.GitFailed, PatchkitError):
        return None
