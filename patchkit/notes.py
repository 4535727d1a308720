"""Which patch a commit in the checkout is: a git note in `refs/notes/patchkit`.

Every commit patchkit makes in the checkout carries the note `Patchkit-Patch: <name as in the
series>`. Subjects change and ids change with every amend or rebase; the note stays, because the
checkout's config tells git to carry these notes through both (`notes.rewriteRef`). When a user
squashes two commits, git concatenates their notes: the commit then names two patches, and
whoever reads it has to ask which one it is.
"""

from __future__ import annotations

from pathlib import Path

from patchkit import git

REF = "refs/notes/patchkit"
KEY = "Patchkit-Patch"
# Notes are commits on REF: they need an author and a committer, which git's isolation leaves unset.
_IDENTITY = {f"GIT_{role}_{part}": value for role in ("AUTHOR", "COMMITTER")
             for part, value in (("NAME", git.PATCHKIT_NAME), ("EMAIL", git.PATCHKIT_EMAIL))}


def text(names: list[str]) -> str:
    """The note of a commit that is the patches NAMES (one, except where a squash left two)."""
    return "".join(f"{KEY}: {name}\n" for name in names)


def names(note: str) -> list[str]:
    """The patches a note names, in its order, each once (git concatenates the notes of a squash)."""
    found = [line.split(":", 1)[1].strip() for line in note.splitlines() if line.startswith(f"{KEY}:")]
    return list(dict.fromkeys(n for n in found if n))


def configure(repo: Path) -> None:
    """Have the user's git carry the notes through `commit --amend` and `rebase`, and show them in
    `git log`. Other rewrite or display refs the user set stay (both keys take several values)."""
    for key in ("notes.rewriteRef", "notes.displayRef"):
        git.run(["config", "--replace-all", key, REF, f"^{REF}$"], cwd=repo)
    for key in ("notes.rewrite.amend", "notes.rewrite.rebase"):
        git.run(["config", key, "true"], cwd=repo)


def write(repo: Path, notes: dict[str, list[str]]) -> None:
    """Note each commit of NOTES (commit id -> the patches it is), replacing what it had; a note
    already right is left alone (the same queue at the same commit gives the same ids)."""
    current = read(repo, list(notes))
    for commit, patches in notes.items():
        if current[commit] == patches:
            continue
        git.run(["notes", f"--ref={REF}", "add", "--force", "--file=-", commit], cwd=repo,
                input=text(patches), env=_IDENTITY)


def read(repo: Path, commits: list[str]) -> dict[str, list[str]]:
    """The patches each of COMMITS is (an empty list: no note, a commit the user made)."""
    listed = git.run(["notes", f"--ref={REF}", "list"], cwd=repo, check=False)
    blobs = {commit: blob for blob, commit in (line.split() for line in listed.splitlines())}
    found: dict[str, list[str]] = {}
    with git.ObjectReader(repo) as reader:
        for commit in commits:
            data = reader.read(blobs[commit]) if commit in blobs else None
            found[commit] = names(data.decode("utf-8", errors="replace")) if data else []
    return found
