"""A rebase in progress: `.patchkit/rebase/`, written before the first change and read by every step.

The folder holds `state.json` (the target, the patch it stopped at, the phase) and `snapshot/`:
the bytes of patches/, the lock and the last apply's report, and what the checkout was (whether
it existed, its HEAD, its refs, its untracked files and their blob ids), which is everything
`--abort` restores. `--abort` gives back only what the rebase changed: the refs patchkit writes
(its branch, refs/patchkit/ but for the commits set aside under saved/, the notes), never the
user's stash or other branches; files the user made in the checkout while it stood are kept. The folder is made whole in
one rename (fileio.atomic_folder) and `state.json` is replaced whole at each step, so a run
killed anywhere leaves a state the next `--continue` or `--abort` finishes from: each phase is a
step that can be run again.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from patchkit import git, journal, notes, refs
from patchkit.errors import PatchkitError
from patchkit.fileio import atomic_folder, atomic_write, read_json, remove_aside, remove_folder
from patchkit.project import LAST_REPORT, Project
from patchkit.upstream import Revision

FOLDER = "rebase"
STATE = "state.json"
SNAPSHOT = "snapshot"

# The phases: what the next `--continue` does. ADVANCING: apply the queue as it now is and stop
# at the next patch that needs a person; STOPPED: take the person's fix of `stopped`; FINISHING:
# the last patch was good, record the result; ABORTING: restore the snapshot.
ADVANCING, STOPPED, FINISHING, ABORTING = "advancing", "stopped", "finishing", "aborting"


@dataclass(frozen=True)
class Checkout:
    """The checkout before the rebase: restored by `--abort`."""

    path: str
    existed: bool
    head: str = ""  # `ref: refs/heads/NAME`, or a commit id (a detached HEAD)
    refs: dict[str, str] = field(default_factory=dict)  # every ref -> its object
    # files git does not track -> their blob ids (ignored ones are never touched)
    untracked: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RebaseState:
    spec: str  # as typed: upstream@HEAD
    upstream: str | None  # --upstream, for this rebase
    fuzz: int
    revision: Revision
    checkout: Checkout
    phase: str
    stopped: str | None = None  # the patch (its name in the series) waiting for a person
    stop_kind: str = ""  # its verdict, or "checks-failed"
    prefix: str = ""  # the commit the stopped patch goes on (its fix is the change from here)
    files: tuple[str, ...] = ()  # the stopped patch's files in the checkout (upstream's moves followed)
    written: tuple[str, ...] = ()  # every stop's files: what an untracked file patchkit wrote can be
    skipped: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    night_failed: bool = False  # FINISHING: the night ran and was not good; its checkout is the user's to look at

    def moved(self, **changes) -> RebaseState:
        return replace(self, **changes)


def folder(project: Project) -> Path:
    return project.state_dir / FOLDER


def load(project: Project) -> RebaseState | None:
    """The rebase in progress, None when there is none."""
    data = read_json(folder(project) / STATE, "the rebase in progress",
                     f"remove {folder(project)} to forget it (then restore patches/ from git)")
    if data is None:
        return None
    data["revision"] = Revision(**data["revision"])
    checkout = data["checkout"]
    data["checkout"] = Checkout(**checkout)
    for key in ("skipped", "dropped", "files", "written"):
        data[key] = tuple(data[key])
    return RebaseState(**data)


def save(project: Project, state: RebaseState) -> None:
    """STATE replaces the one on disk whole."""
    atomic_write(folder(project) / STATE, _encode(state))


def begin(project: Project, state: RebaseState) -> None:
    """Write the state and the snapshot of patches/ and the lock, all in one rename: before it
    nothing of the rebase exists, after it everything `--abort` needs does."""
    remove_aside(folder(project))
    with atomic_folder(folder(project)) as new:
        snapshot = new / SNAPSHOT
        shutil.copytree(project.patches_dir, snapshot / "patches", symlinks=True)
        for path in (project.lock_path, project.state_dir / LAST_REPORT):
            if path.exists():  # none saved: there was none, and --abort removes one
                (snapshot / path.name).write_bytes(path.read_bytes())
        (new / STATE).write_bytes(_encode(state))


def finish(project: Project) -> None:
    """Forget the rebase."""
    remove_folder(folder(project))


def restore_files(project: Project) -> list[str]:
    """patches/ and the lock as the snapshot has them, byte for byte: changed files written back
    whole, files the rebase never wrote (the user's, made while it stood) copied to
    .patchkit/kept/patches/ and removed. Run again, it changes nothing. Returns where each kept
    file is."""
    snapshot = folder(project) / SNAPSHOT
    saved = snapshot / "patches"
    kept = {p.relative_to(saved) for p in saved.rglob("*") if p.is_file() or p.is_symlink()}
    made = []
    for current in sorted(project.patches_dir.rglob("*"), reverse=True):
        relative = current.relative_to(project.patches_dir)
        if (current.is_file() or current.is_symlink()) and relative not in kept:
            copy = project.state_dir / "kept" / "patches" / relative
            copy.parent.mkdir(parents=True, exist_ok=True)
            # A run killed before the unlink below made it already; and copy2 neither writes a
            # symlink over one nor a file other than through one.
            copy.unlink(missing_ok=True)
            shutil.copy2(current, copy, follow_symlinks=False)
            made.append(f"patches/{relative} (your copy is {copy})")
            current.unlink()
    for relative in sorted(kept):
        source, target = saved / relative, project.patches_dir / relative
        if source.is_symlink():
            if not target.is_symlink() or os.readlink(target) != os.readlink(source):
                target.unlink(missing_ok=True)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(os.readlink(source), target)
        elif not target.is_file() or target.is_symlink() or target.read_bytes() != source.read_bytes():
            if target.is_symlink():
                target.unlink()
            atomic_write(target, source.read_bytes())
            os.chmod(target, source.stat().st_mode & 0o7777)
    for path in (project.lock_path, project.state_dir / LAST_REPORT):
        saved_file = snapshot / path.name
        if not saved_file.exists():
            path.unlink(missing_ok=True)
        elif not path.is_file() or path.read_bytes() != saved_file.read_bytes():
            atomic_write(path, saved_file.read_bytes())
    return made


def describe_checkout(path: Path) -> Checkout:
    """What `--abort` gives back of the checkout at PATH (which check_output has vetted)."""
    if not (path / ".git").exists():
        return Checkout(str(path), existed=path.exists())
    head = git.run(["symbolic-ref", "--quiet", "HEAD"], cwd=path, check=False)
    head = f"ref: {head}" if head else git.run(["rev-parse", "--verify", "--quiet", "HEAD"], cwd=path, check=False)
    listing = git.run(["for-each-ref", "--format=%(objectname) %(refname)"], cwd=path)
    refs = {ref: oid for oid, ref in (line.split(" ", 1) for line in listing.splitlines())}
    # Regular files only: a symlink (dangling, or to a folder) is never written over by a checkout
    # that the overwrite check let through, and hash-object would follow it.
    untracked = [p for p in git.run(["ls-files", "-z", "--others", "--exclude-standard"], cwd=path).split("\0")
                 if p and (path / p).is_file() and not (path / p).is_symlink()]
    blobs = git.run(["hash-object", "--stdin-paths"], cwd=path, input="".join(f"{p}\n" for p in untracked))
    return Checkout(str(path), True, head, refs, dict(zip(untracked, blobs.split())))


def _rebases(ref: str, branch: str) -> bool:
    """REF is one the rebase writes in the checkout: its branch, patchkit's refs and notes; not the
    commits set aside under saved/ (the user's), nor any other ref of the user's."""
    if ref.startswith(f"{refs.SAVED}/"):
        return False
    return ref in (f"refs/heads/{branch}", notes.REF) or ref.startswith(f"{refs.NAMESPACE}/")


def restore_checkout(checkout: Checkout, branch: str, written: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """The checkout as `describe_checkout` saw it: the refs the rebase writes on BRANCH, HEAD,
    tracked files, the untracked ones it had (byte for byte), and none of the untracked files
    the rebase WROTE; a checkout that did not exist is removed, one that was an empty folder
    emptied. Returns the untracked files kept that the user made meanwhile, and where commits
    the user made on BRANCH were set aside."""
    path = Path(checkout.path)
    if checkout.head and not (path / ".git").exists():  # removed while the rebase stood: nothing to give back
        return [], []
    if not checkout.head:  # no repository was there: none, or an empty folder (check_output saw to that)
        remove_aside(path)
        if path.exists():
            shutil.rmtree(path)
        if checkout.existed:
            path.mkdir()
        return [], []
    git_dir = git.git_dir(path)
    for lock in [git_dir / "index.lock", git_dir / "HEAD.lock", git_dir / "packed-refs.lock",
                 *(git_dir / "refs").rglob("*.lock")]:
        lock.unlink(missing_ok=True)  # a git the rebase ran was killed: no other git runs here now
    current = dict(line.split(" ", 1)[::-1] for line in git.run(
        ["for-each-ref", "--format=%(objectname) %(refname)"], cwd=path).splitlines())
    saved = _set_aside(path, branch, current) + _set_aside_detached(path)
    commands = [f"delete {ref}" for ref in current if ref not in checkout.refs and _rebases(ref, branch)]
    commands += [f"update {ref} {oid}" for ref, oid in checkout.refs.items()
                 if _rebases(ref, branch) and current.get(ref) != oid]
    git.run(["update-ref", "--no-deref", "--stdin"], cwd=path, input="".join(f"{c}\n" for c in commands))
    if checkout.head.startswith("ref: "):
        git.run(["symbolic-ref", "HEAD", checkout.head.removeprefix("ref: ")], cwd=path)
    else:
        git.run(["update-ref", "--no-deref", "HEAD", checkout.head], cwd=path)
    made = _copy_aside(path, git_dir, checkout, written)
    git.run(["reset", "--quiet", "--hard"], cwd=path)
    now = git.run(["ls-files", "-z", "--others", "--exclude-standard"], cwd=path)
    for name in filter(None, now.split("\0")):
        if name in checkout.untracked:
            continue
        if name in written:
            (path / name).unlink(missing_ok=True)
        else:
            made.append(name)
    _restore_untracked(path, checkout.untracked)
    return made, saved


def _copy_aside(path: Path, git_dir: Path, checkout: Checkout, written: tuple[str, ...]) -> list[str]:
    """Files the user made while the rebase stood at paths the restored HEAD tracks (a later
    patch's new file): the reset writes over them, so they are copied into GIT_DIR/patchkit-kept/
    first. Says which, and where each copy is."""
    names = [n for n in git.run(["ls-files", "-z", "--others", "--exclude-standard"], cwd=path).split("\0")
             if n and n not in checkout.untracked and n not in written and (path / n).is_file()]
    tracked = set(git.run(["ls-tree", "-r", "-z", "--name-only", "HEAD", "--", *names], cwd=path).split("\0")) \
        if names else set()
    kept = []
    for name in (n for n in names if n in tracked):
        copy = git_dir / "patchkit-kept" / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path / name, copy)
        kept.append(f"{name} (tracked again after the abort; your copy is {copy})")
    return kept


def _set_aside(path: Path, branch: str, current: dict[str, str]) -> list[str]:
    """Commits the user made on BRANCH while the rebase stood (patchkit did not check them out)
    kept under refs/patchkit/saved/, as `apply --force` keeps them, before the branch is restored."""
    tip, applied = current.get(f"refs/heads/{branch}"), current.get(f"{refs.APPLIED}/{branch}")
    if not tip or not applied or tip == applied:
        return []
    try:
        git.run(["merge-base", "--is-ancestor", tip, applied], cwd=path)
        return []
    except git.GitFailed:
        pass
    saved = f"{refs.SAVED}/{branch}/{tip}"
    git.run(["update-ref", saved, tip], cwd=path)
    return [saved]


def _set_aside_detached(path: Path) -> list[str]:
    """Commits the user made on a detached HEAD while the rebase stood (on no ref: the abort's
    move of HEAD would leave them to git's garbage collection) kept under refs/patchkit/saved/HEAD/."""
    if git.run(["symbolic-ref", "--quiet", "HEAD"], cwd=path, check=False):
        return []
    head = git.run(["rev-parse", "--verify", "--quiet", "HEAD"], cwd=path, check=False)
    if not head or not git.run(["rev-list", "-n1", head, "--not", "--glob=refs/*"], cwd=path):
        return []
    saved = f"{refs.SAVED}/HEAD/{head}"
    git.run(["update-ref", saved, head], cwd=path)
    return [saved]


def checkout_gone(state: RebaseState) -> bool:
    """The rebase's checkout, a repository when it began, was removed while it stood."""
    return bool(state.checkout.head) and not (Path(state.checkout.path) / ".git").exists()


def _restore_untracked(path: Path, untracked: dict[str, str]) -> None:
    """The untracked files the checkout had, as they were: one a checkout of the rebase's took
    over (it had the same bytes) is gone after the reset, and its blob is in the repository."""
    with git.ObjectReader(path) as reader:
        for name, blob in untracked.items():
            target = path / name
            if target.is_file() and not target.is_symlink() and git.run(["hash-object", "--", name], cwd=path) == blob:
                continue
            data = reader.read(blob)
            if data is not None:
                target.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(target, data)


def refuse_while_rebasing(project: Project, journal_ok: bool = False) -> None:
    """The guard of every command that would write patches/, the lock or the checkout, or read
    the queue as if it were settled: a rebase in progress owns them until it ends, and so does
    an interrupted record or absorb (JOURNAL_OK: theirs, which finish or undo it)."""
    if not journal_ok:
        journal.refuse_while_pending(project)
    state = load(project)
    if state is None:
        return
    where = f"stopped at {state.stopped}" if state.stopped and state.phase == STOPPED else state.phase
    raise PatchkitError(f"a rebase onto {state.spec} is in progress ({where})",
                        "finish the undoing with `patchkit rebase --abort`" if state.phase == ABORTING else
                        "its checkout was removed: undo it with `patchkit rebase --abort`" if checkout_gone(state) else
                        "finish it with `patchkit rebase --continue`, or undo it with `patchkit rebase --abort`")


def _encode(state: RebaseState) -> bytes:
    return (json.dumps(asdict(state), indent=2) + "\n").encode()
