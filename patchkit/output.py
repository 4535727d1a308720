"""The output repository: where the patched branch is checked out for the user and for builds.

Whatever is in it may be the user's work, so every step here first decides whether it may touch
the tree at all, and says so when it may not. Nothing of the user's is lost without `--force`:
not uncommitted changes, not files git does not track, not commits; and commits are kept even
with `--force`.

An interrupted run must not leave a tree that the next run cannot take: a new repository is
cloned aside (`NewClone`, checked out while the queue is applied) and renamed into place, and
every write into an existing one happens between writing and removing a marker
(`.git/PATCHKIT_CHECKOUT`, holding the tip being checked out). A marker found on the next run
means git may have been stopped half way, leaving lock files and half-written files that are
patchkit's own to clean up.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager, Mapping

from patchkit import git, notes, refs, testpoint
from patchkit.errors import EnvironmentProblem, PatchkitError, first_few
from patchkit.fileio import atomic_folder, atomic_write, remove_aside
from patchkit.upstream import Mirror, Revision

_MARKER = "PATCHKIT_CHECKOUT"
# Commits reachable from these refs are not at stake when patchkit resets a branch: the user's
# other branches, tags and remote-tracking refs, and patchkit's own refs (the results fetched
# from the mirror, the tips it checked out, the upstream commit, commits it set aside). Knowing
# patchkit's commits by reachability from refs it wrote, not by the committer's name, also
# covers commits a user amended or rebased, which keep nothing of patchkit but its name.
_KEPT_ELSEWHERE = ["--branches", "--tags", "--remotes", f"--glob={refs.NAMESPACE}/*"]


@dataclass(frozen=True)
class Output:
    """An output folder `check_output` has vetted: where, and how it may be written."""

    path: Path
    force: bool
    repair: bool = False  # an interrupted run left it half done, and nothing of the user's is at stake


def check_output(output: Path, project_root: Path, force: bool) -> Output:
    """Refuse, before any work, an output folder that patchkit must not overwrite."""
    if output == project_root or output in project_root.parents:
        raise PatchkitError(f"output {output} would replace the fork repository itself",
                            "give the patched tree a folder of its own, such as ./llama.cpp")
    if output.exists() and not output.is_dir():
        raise PatchkitError(f"output {output} is not a folder", "give a folder with -o")
    if not output.exists() or not any(output.iterdir()):
        return Output(output, force)
    if not (output / ".git").exists():
        raise PatchkitError(f"{output} exists and is not a git repository",
                            "choose another folder with -o, or remove it")
    git_dir = git.git_dir(output)
    if (git_dir / _MARKER).exists():
        changed = _changes_not_from_patchkit(output, _marked_tip(git_dir))
        if changed and not force:
            raise PatchkitError(f"an interrupted apply left {output} half checked out, and it has changes "
                                f"patchkit did not make ({first_few(changed)})",
                                "rerun the same apply with --force to discard them and finish")
        return Output(output, force, repair=True)
    index_lock = git_dir / "index.lock"
    if index_lock.exists():
        raise PatchkitError(f"{index_lock} exists: a git command is running in {output}, or one crashed",
                            f"if none is running, remove it (rm {index_lock}) and rerun")
    if force:
        return Output(output, force)
    made_by_patchkit = git.run(["rev-parse", "--verify", "--quiet", refs.UPSTREAM],
                               cwd=output, check=False)
    if not made_by_patchkit and git.run(["rev-parse", "--verify", "--quiet", "HEAD"], cwd=output, check=False):
        raise PatchkitError(f"{output} is a git repository patchkit did not create",
                            "choose another folder with -o, or rerun with --force to take it over")
    dirty = _changed_paths(output)
    if dirty:
        raise PatchkitError(f"{output} has uncommitted changes ({first_few(dirty)})",
                            "commit or stash them, or rerun with --force to discard them")
    return Output(output, force)


class NewClone:
    """A new output repository: cloned aside at once (hardlinks: a fraction of a second, and done
    before the apply writes into the mirror), then checked out at upstream's commit by a thread
    while the queue is applied: writing llama.cpp's files takes about as long as placing the queue,
    and the patched branch then rewrites only the files the queue changes. `put_in_place` renames
    it into place; a block that ends in an error stops the checkout and removes it (it never was
    the user's)."""

    def __init__(self, path: Path, mirror: Mirror, commit: str) -> None:
        self.path = path
        remove_aside(path)  # what an earlier run killed here left
        self._stack = contextlib.ExitStack()
        self.staging = self._stack.enter_context(atomic_folder(path))  # onto a missing or empty folder
        self._lock = threading.Lock()
        self._stopped = False
        self._checkout: subprocess.Popen[bytes] | None = None
        self._failed: git.GitFailed | None = None
        try:
            # A path, not --local: git hardlinks the mirror's objects where it can (seconds instead of
            # minutes for llama.cpp) and copies them where it cannot (an output on another filesystem).
            git.run(["clone", "--quiet", "--no-checkout", "--", str(mirror.path), str(self.staging)])
            # origin is where the objects came from (an --upstream override too): a `git fetch` there works.
            git.run(["remote", "set-url", "origin", mirror.fetch_url], cwd=self.staging)
        except BaseException as exc:
            self._stack.__exit__(*sys.exc_info())  # the folder made aside removed
            if isinstance(exc, git.GitFailed):
                raise self._cannot(exc) from None
            raise
        self._thread = threading.Thread(target=self._check_out, args=(commit,), daemon=True)
        self._thread.start()

    def _check_out(self, commit: str) -> None:
        args = ["checkout", "--quiet", "--detach", commit]
        with self._lock:
            if self._stopped:
                return
            self._checkout = subprocess.Popen([git.git_executable(), *args], cwd=self.staging,
                                              env=git.git_env(repo=self.staging),
                                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, stderr = self._checkout.communicate()
        if self._checkout.returncode and not self._stopped:
            self._failed = git.GitFailed(args, self._checkout.returncode, stderr.decode(errors="replace"))

    def _cannot(self, exc: git.GitFailed) -> EnvironmentProblem:
        return EnvironmentProblem(f"cannot write the new output {self.path}: {exc.summary}",
                                  "free space there, or choose another folder with -o")

    def put_in_place(self, tip: str) -> None:
        """Wait for the checkout, mark it as patchkit's half-done work until TIP is checked out
        (`check_out`), then rename it into place."""
        self._thread.join()
        if self._failed is not None:
            raise self._cannot(self._failed)
        atomic_write(self.staging / ".git" / _MARKER, f"{tip}\n".encode())  # in place only with it
        testpoint.pause("clone")
        self._stack.close()

    def __enter__(self) -> NewClone:
        return self

    def __exit__(self, *exc: object) -> bool | None:
        if exc[0] is not None:
            with self._lock:  # a stopped run stops its checkout too, at once
                self._stopped = True
                if self._checkout is not None and self._checkout.poll() is None:
                    self._checkout.kill()
        self._thread.join()  # a git still writing into the folder the error removes would race it
        return self._stack.__exit__(*exc)


def cloning(output: Output, mirror: Mirror, commit: str) -> ContextManager[NewClone | None]:
    """For a new output folder, its `NewClone` at upstream's COMMIT, begun now; else nothing."""
    return contextlib.nullcontext() if (output.path / ".git").exists() else NewClone(output.path, mirror, commit)


def check_out(output: Output, mirror: Mirror, revision: Revision, result_ref: str, tip: str,
              warn: Callable[[str], None], patches: Mapping[str, str] = {}, clone: NewClone | None = None) -> None:
    """Check the result out as branch `revision.branch_name` in the output repository, each
    commit of PATCHES (commit id -> patch name) noted as that patch (`patchkit.notes`). A new
    output is CLONE, begun by `cloning` (begun here without one)."""
    path, branch = output.path, revision.branch_name
    _validate_branch(branch)
    if not (path / ".git").exists():
        if clone is None:
            with NewClone(path, mirror, revision.commit) as clone:
                clone.put_in_place(tip)
        else:
            clone.put_in_place(tip)
        git_dir = git.git_dir(path)
    else:
        git_dir = git.git_dir(path)
        unsaved = _unsaved_commits(path, branch)
        overwritten = overwritten_files(path, mirror, tip)
        if not output.force:
            _refuse(path, unsaved, overwritten, branch)
        if output.repair:
            _remove_stale_locks(git_dir, branch)
        atomic_write(git_dir / _MARKER, f"{tip}\n".encode())
        for label, commits in unsaved.items():
            newest = commits[0].split()[0]
            saved = f"{refs.SAVED}/{label}/{newest}"  # the same commits always get the same name
            git.run(["update-ref", saved, newest], cwd=path)
            warn(f"{label} in {path} had {_count(commits, 'commit')} patchkit did not write; kept as "
                 f"{saved} (git -C {path} branch NAME {saved} to work on them)")
    git.run(["fetch", "--quiet", "--no-tags", "--", str(mirror.path), f"+{result_ref}:{result_ref}"], cwd=path)
    testpoint.pause("checkout")
    try:
        # --force also finishes a checkout an interrupted run left half written (output.repair)
        git.run(["checkout", "--quiet", *(["--force"] if output.force or output.repair else []),
                 "-B", branch, tip], cwd=path)
    except git.GitFailed as exc:
        first = exc.stderr.strip().splitlines()[0] if exc.stderr.strip() else str(exc)
        raise PatchkitError(f"cannot check out {branch} in {path}: {first}",
                            "move the files git names out of the way, or rerun with --force") from None
    git.run(["update-ref", "--stdin"], cwd=path,
            input=f"update {refs.UPSTREAM} {revision.commit}\nupdate {refs.APPLIED}/{branch} {tip}\n")
    notes.configure(path)
    notes.write(path, {commit: [name] for commit, name in patches.items()})
    (git_dir / _MARKER).unlink()


def _unsaved_commits(path: Path, branch: str) -> dict[str, list[str]]:
    """Commits that checking out BRANCH would leave unreachable, as "<id> <subject>" lines,
    newest first, by what holds them: the branch itself, or a detached HEAD."""
    tips = {}
    if git.run(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"], cwd=path, check=False):
        tips[branch] = f"refs/heads/{branch}"
    if not git.run(["symbolic-ref", "--quiet", "HEAD"], cwd=path, check=False) \
            and git.run(["rev-parse", "--verify", "--quiet", "HEAD"], cwd=path, check=False):
        tips["HEAD"] = "HEAD"
    found = {}
    for label, rev in tips.items():
        lines = git.run(["log", "--format=%H %s", rev, "--not", f"--exclude={branch}", *_KEPT_ELSEWHERE],
                        cwd=path).splitlines()
        if lines:
            found[label] = lines
    return found


def overwritten_files(path: Path, mirror: Mirror, tip: str, same_too: bool = False) -> list[str]:
    """Files of TIP that the work tree holds untracked or git-ignored, with other contents (SAME_TOO:
    with any): `git checkout` refuses the untracked ones but overwrites ignored ones without a word."""
    tracked = set(git.run(["ls-files", "-z"], cwd=path).split("\0"))
    listing = git.run(["ls-tree", "-r", "-z", "--full-tree", tip], cwd=mirror.path).split("\0")
    differing = []
    with mirror.reader() as reader:
        for entry in filter(None, listing):
            meta, name = entry.split("\t", 1)
            mode, kind, oid = meta.split()
            local = path / name
            if kind != "blob" or name in tracked or not os.path.lexists(local):
                continue
            data = reader.read(oid)
            if mode == "120000":
                same = local.is_symlink() and os.fsencode(os.readlink(local)) == data
            else:
                same = local.is_file() and not local.is_symlink() and local.read_bytes() == data
            if same_too or not same:
                differing.append(name)
    return differing


def _refuse(path: Path, unsaved: dict[str, list[str]], overwritten: list[str], branch: str) -> None:
    for label, commits in unsaved.items():
        shown = first_few([line[:10] + line[40:] for line in commits])  # short ids
        raise PatchkitError(f"{label} in {path} has {_count(commits, 'commit')} patchkit did not write ({shown})",
                            f"keep them on a branch of your own (git -C {path} branch NAME {label}), "
                            f"or rerun with --force to set them aside under {refs.SAVED}/")
    if overwritten:
        raise PatchkitError(f"checking out {branch} would overwrite {_count(overwritten, 'file')} in {path} "
                            f"that git does not track ({first_few(overwritten)})",
                            "move them out of the way, or rerun with --force to overwrite them")


def _changed_paths(path: Path) -> list[str]:
    """Tracked paths whose index or work tree differs from HEAD."""
    out = git.run(["status", "--porcelain", "-z", "--no-renames", "--untracked-files=no"], cwd=path)
    return [entry[3:] for entry in out.split("\0") if entry]


def _changes_not_from_patchkit(path: Path, tip: str | None) -> list[str]:
    """After an interrupted checkout: changed files holding neither HEAD's contents nor the tip's,
    so that neither a stopped git nor patchkit wrote them. A deleted file loses nothing (HEAD has it)."""
    changed = []
    with git.ObjectReader(path) as reader:
        for name in _changed_paths(path):
            local = path / name
            if not local.is_file():
                continue
            data = local.read_bytes()
            if data not in (reader.read("HEAD", name), tip and reader.read(tip, name)):
                changed.append(name)
    return changed


def _remove_stale_locks(git_dir: Path, branch: str) -> None:
    """The lock files a git stopped inside patchkit's checkout or fetch left behind."""
    for lock in [git_dir / "index.lock", git_dir / "HEAD.lock", git_dir / "packed-refs.lock",
                 git_dir / "refs" / "heads" / f"{branch}.lock", *(git_dir / "refs" / "patchkit").rglob("*.lock")]:
        lock.unlink(missing_ok=True)


def _marked_tip(git_dir: Path) -> str | None:
    text = (git_dir / _MARKER).read_text(errors="replace").strip()
    return text if len(text) == 40 and all(c in "0123456789abcdef" for c in text) else None


def _count(items: list[str], noun: str) -> str:
    return f"{len(items)} {noun}{'s' if len(items) != 1 else ''}"


def _validate_branch(branch: str) -> None:
    git.validate_ref(branch, "branch")
    try:
        git.run(["check-ref-format", f"refs/heads/{branch}"])
    except git.GitFailed:
        raise PatchkitError(f"cannot name a branch {branch!r}", "name the upstream ref differently") from None
