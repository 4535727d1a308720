"""Which patch a branch commit is when its note did not come along.

git carries notes through `commit --amend` and `rebase` only where the config says so
(`notes.rewriteRef`), and not through a cherry-pick at all: a reorder by hand leaves commits
without notes. Their patches are found one to one among those no noted commit holds: the same
commit as checked out, then the same change (`git patch-id --stable`), then the same subject.
A commit that matches no patch, or more than one, is left without one (record then names it),
never renamed silently.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Callable

from patchkit import git, notes
from patchkit.branch.checkout import BranchCommit, Checkout
from patchkit.errors import PatchkitError


def match_unnoted(checkout: Checkout, commits: list[BranchCommit], recorded: dict[str, str],
                  subjects: dict[str, str], warn: Callable[[str], None]) -> list[BranchCommit]:
    """COMMITS with a patch for each unnoted one that is one to one a patch (RECORDED: each
    patch's commit as checked out; SUBJECTS: each patch's subject) no noted commit holds."""
    held = {name for c in commits for name in c.patches}
    free = [name for name in recorded if name not in held]
    unnoted = [i for i, c in enumerate(commits) if not c.patches]
    if not free or not unnoted:
        return commits
    match: dict[int, str] = {}
    same = {recorded[name]: name for name in free}
    match.update({i: same[commits[i].id] for i in unnoted if commits[i].id in same})
    ids = _patch_ids(checkout, [commits[i].id for i in unnoted] + [recorded[name] for name in free])
    by_change = _one_to_one(commits, unnoted, free, match, lambda i: ids.get(commits[i].id),
                            lambda name: ids.get(recorded[name]))
    by_subject = _one_to_one(commits, unnoted, free, match, lambda i: commits[i].subject, subjects.get)
    if not match:
        return commits
    left = [commits[i].short for i in unnoted if i not in match]
    unmatched = [name for name in free if name not in match.values()]
    if left and unmatched:
        raise PatchkitError(f"the notes saying which patch each commit is were lost in a rewrite, and "
                            f"{', '.join(left)} matches none of {', '.join(unmatched)} one to one",
                            f"note each such commit (git -C {checkout.path} notes --ref=patchkit add -m "
                            "'Patchkit-Patch: NAME' COMMIT), then record again")
    shown = ", ".join(f"{commits[i].id[:12]} as {name}" for i, name in sorted(match.items()))
    warn(f"the notes saying which patch each commit is were not carried through a rewrite (cherry-pick, "
         f"notes.rewriteRef unset or GIT_NOTES_REWRITE_REF set?): matched by commit, change or subject, names kept: "
         f"{shown}; `git -C {checkout.path} config --add notes.rewriteRef {notes.REF}` carries them")
    return [replace(c, patches=(match[i],)) if i in match else c for i, c in enumerate(commits)]


def warn_unless_carried(checkout: Checkout, warn: Callable[[str], None]) -> None:
    """Say so when the checkout's config (or the user's GIT_NOTES_REWRITE_REF, which outranks it)
    will not carry the notes through the next amend or rebase."""
    configured = git.run(["config", "--get-all", "notes.rewriteRef"], cwd=checkout.path, check=False).split()
    override = os.environ.get("GIT_NOTES_REWRITE_REF")
    refs = override.split(":") if override is not None else configured
    if notes.REF not in refs:
        warn(f"git in {checkout.path} will not carry the notes saying which patch each commit is through an amend "
             f"or rebase ({'GIT_NOTES_REWRITE_REF' if override is not None else 'notes.rewriteRef'} lacks "
             f"{notes.REF}): `git -C {checkout.path} config --add notes.rewriteRef {notes.REF}`")


def _one_to_one(commits: list[BranchCommit], unnoted: list[int], free: list[str], match: dict[int, str],
                key_of_commit: Callable[[int], str | None], key_of_patch: Callable[[str], str | None]) -> int:
    """Pairs MATCH with the commits and patches not matched yet whose key is theirs alone; how many."""
    taken = set(match.values())
    commits_by: dict[str, list[int]] = {}
    patches_by: dict[str, list[str]] = {}
    for i in (i for i in unnoted if i not in match):
        if (key := key_of_commit(i)) is not None:
            commits_by.setdefault(key, []).append(i)
    for name in (n for n in free if n not in taken):
        if (key := key_of_patch(name)) is not None:
            patches_by.setdefault(key, []).append(name)
    found = 0
    for key, indices in commits_by.items():
        names = patches_by.get(key, [])
        if len(indices) == 1 and len(names) == 1:
            match[indices[0]] = names[0]
            found += 1
    return found


def _patch_ids(checkout: Checkout, commits: list[str]) -> dict[str, str]:
    """Each commit's `git patch-id --stable` (its change, whatever its message or base)."""
    diffs = git.run(["diff-tree", "-p", "-r", "--stdin", "--no-renames", "-U3", "--no-color", "--no-ext-diff",
                     "--no-textconv", "--inter-hunk-context=0", "--diff-algorithm=myers"],
                    cwd=checkout.path, input="".join(f"{c}\n" for c in commits))
    out = git.run(["patch-id", "--stable"], cwd=checkout.path, input=diffs + "\n")
    return {commit: pid for pid, commit in (line.split() for line in out.splitlines())}
