"""The patched branch in the checkout as `record` and `absorb` read it: where it starts (the
upstream commit `apply` checked out), its commits oldest first, and which patch each one is.

Everything that makes the branch unreadable as a queue is refused here, before anything is
written: a checkout patchkit did not make, a detached HEAD, a branch moved off its upstream
commit, merge commits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchkit import git, notes, refs
from patchkit.errors import PatchkitError, first_few
from patchkit.project import Project


@dataclass(frozen=True)
class Checkout:
    path: Path
    branch: str  # patchkit/REF
    upstream: str  # the upstream commit `apply` put the queue on (refs/patchkit/upstream)
    head: str  # the branch's tip

    @property
    def applied_ref(self) -> str:
        """Where the branch's last recorded state is kept: what apply checked out, or record wrote."""
        return f"{refs.APPLIED}/{self.branch}"


@dataclass(frozen=True)
class BranchCommit:
    id: str
    parent: str
    tree: str
    subject: str
    patches: tuple[str, ...]  # from its note: one, none (the user's own commit), two or more (a squash)

    @property
    def short(self) -> str:
        return f"{self.id[:12]} ({self.subject})"


def open_checkout(project: Project, output: Path | None) -> Checkout:
    """The checkout of OUTPUT (default: the project's), on the patchkit branch it holds."""
    path = (output or project.output_dir).resolve()
    if not (path / ".git").exists():
        raise PatchkitError(f"{path} is not a checkout patchkit made", "run `patchkit apply upstream@REF` first")
    _refuse_unfinished_git(path)
    upstream = git.run(["rev-parse", "--verify", "--quiet", f"{refs.UPSTREAM}^{{commit}}"], cwd=path, check=False)
    if not upstream:
        raise PatchkitError(f"{path} has no {refs.UPSTREAM}: patchkit did not check it out",
                            "run `patchkit apply upstream@REF` first")
    branch = git.run(["symbolic-ref", "--quiet", "--short", "HEAD"], cwd=path, check=False)
    if not branch:
        raise PatchkitError(f"{path} has a detached HEAD", f"check out the patchkit branch (git -C {path} switch BRANCH)")
    if (git.git_dir(path) / "index.lock").exists():
        raise PatchkitError(f"a git command is running in {path}, or one crashed (index.lock exists)",
                            "wait for it, or remove the lock file, and rerun")
    head = git.run(["rev-parse", "HEAD"], cwd=path)
    return Checkout(path, branch, upstream, head)


# What a stopped git command leaves in the git folder: its files are not the branch's yet.
_IN_PROGRESS = (("MERGE_HEAD", "a merge", "git merge"), ("CHERRY_PICK_HEAD", "a cherry-pick", "git cherry-pick"),
                ("REVERT_HEAD", "a revert", "git revert"), ("rebase-merge", "a rebase", "git rebase"),
                ("rebase-apply", "a rebase or am", "git rebase (or git am)"))


def _refuse_unfinished_git(path: Path) -> None:
    """Refused: unmerged entries (git's own conflict markers are in the files) or a git merge,
    cherry-pick, revert, rebase or am stopped half way: reading the branch now would take that
    command's half-done state (its markers, its moved HEAD) into the queue."""
    git_dir = git.git_dir(path)
    for name, what, command in _IN_PROGRESS:
        if (git_dir / name).exists():
            raise PatchkitError(f"{what} is in progress in {path}",
                                f"finish it (`{command} --continue`) or undo it (`{command} --abort`), then rerun")
    unmerged = sorted({line.split("\t", 1)[1] for line in
                       git.run(["ls-files", "--unmerged"], cwd=path).splitlines() if "\t" in line})
    if unmerged:
        shown = first_few(unmerged)
        raise PatchkitError(f"{shown} in {path} {'is' if len(unmerged) == 1 else 'are'} unmerged (a conflict git "
                            "left)", "resolve it and `git add` it (or `git checkout --merge`/`git reset` to undo), "
                            "then rerun")


def changed_paths(checkout: Checkout) -> list[str]:
    """Tracked files whose index or work tree differs from HEAD (staged or not)."""
    git.run(["update-index", "-q", "--refresh"], cwd=checkout.path, check=False)
    return [p for p in git.run(["diff-index", "--name-only", "-z", "HEAD", "--"], cwd=checkout.path).split("\0") if p]


def untracked_paths(checkout: Checkout) -> list[str]:
    return [p for p in git.run(["ls-files", "--others", "--exclude-standard", "-z"],
                               cwd=checkout.path).split("\0") if p]


def branch_commits(checkout: Checkout, tip: str, identities: dict[str, list[str]] | None = None) -> list[BranchCommit]:
    """The commits from the upstream commit to TIP, oldest first, each with the patches its note
    names (or IDENTITIES[id], for commits not yet noted). Refused: merges, a branch that does not
    grow from the upstream commit."""
    path, upstream = checkout.path, checkout.upstream
    if not _is_ancestor(path, upstream, tip):
        raise PatchkitError(f"{checkout.branch} in {path} is not based on {upstream[:12]}, the upstream commit "
                            "it was applied to (rebased onto another upstream?)",
                            "use `patchkit apply upstream@REF` (or `patchkit rebase`) to move the queue to "
                            "another upstream commit; record only takes edits on the applied one")
    out = git.run(["log", "--reverse", "--format=%H %T %P%x00%s", f"{upstream}..{tip}"], cwd=path)
    commits: list[tuple[str, str, list[str], str]] = []
    for line in filter(None, out.split("\n")):
        ids, subject = line.split("\0", 1)
        commit, tree, *parents = ids.split()
        commits.append((commit, tree, parents, subject))
    merges = [f"{c[:12]} ({s})" for c, _, parents, s in commits if len(parents) != 1]
    if merges:
        raise PatchkitError(f"{checkout.branch} has merge commits: {', '.join(merges)}; a queue is a line of patches",
                            "linearise the branch (git rebase -i), then record again")
    if commits and commits[0][2][0] != upstream:
        raise PatchkitError(f"{checkout.branch} does not start at {upstream[:12]}, the upstream commit it was applied to",
                            "rebuild the branch on that commit, then record again")
    noted = notes.read(path, [c[0] for c in commits])
    given = identities or {}
    return [BranchCommit(c, parents[0], tree, s, tuple(given.get(c, noted[c])))
            for c, tree, parents, s in commits]


def _is_ancestor(path: Path, ancestor: str, commit: str) -> bool:
    try:
        git.run(["merge-base", "--is-ancestor", ancestor, commit], cwd=path)
        return True
    except git.GitFailed:
        return False


def refuse_foreign_base(checkout: Checkout, commits: list[BranchCommit], mirror: Path | None) -> None:
    """Refused: a branch rebased by hand onto newer upstream (`git rebase FETCH_HEAD`). Its new
    base shows as commits without a note that are upstream's: on the branches or tags of the
    MIRROR (not patchkit's refs there: its own commits of the patches are in it), or reachable from
    what the checkout fetched (FETCH_HEAD, remote-tracking branches, tags). Recorded, upstream's
    commit would become a patch and the lock would name the old base."""
    unnoted = [c for c in commits if not c.patches]
    if not unnoted:
        return
    git_dir = git.git_dir(checkout.path)
    # (not what patchkit's own checkout fetched from the mirror: its refs/patchkit/ results)
    fetched = [line.split()[0] for line in _read(git_dir / "FETCH_HEAD").splitlines()
               if line.strip() and f"'{refs.NAMESPACE}/" not in line]
    fetched += git.run(["for-each-ref", "--format=%(objectname)", "refs/remotes", "refs/tags"],
                       cwd=checkout.path).split()
    theirs = set(git.run(["rev-list", *fetched, f"^{checkout.upstream}"], cwd=checkout.path, check=False).split()) \
        if fetched else set()
    if mirror is not None and (mirror / "HEAD").exists():
        theirs |= set(git.run(["rev-list", "--branches", "--tags", "--not", checkout.upstream], cwd=mirror,
                              check=False).split())
    foreign = [c for c in unnoted if c.id in theirs]
    if foreign:
        base = foreign[-1]
        raise PatchkitError(f"{checkout.branch} in {checkout.path} is based on {base.short}, upstream's, not on "
                            f"{checkout.upstream[:12]}, the upstream commit it was applied to (rebased by hand?)",
                            f"move the queue with `patchkit rebase upstream@{base.id[:12]}` instead; to record first, "
                            f"put the branch back (git -C {checkout.path} rebase --onto {checkout.upstream[:12]} "
                            f"{base.id[:12]}) and rerun")


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
