"""A rebase in progress: `.patchkit/rebase/`, written before the first change and read by every step.

The folder holds `state.json` (the target, the patch it stopped at, the phase) and `snapshot/`:
the bytes of patches/ and the lock, and what the checkout was (whether it existed, its HEAD, its
refs, its untracked files), which is everything `--abort` restores. The folder is made whole in
one rename (fileio.atomic_folder) and `state.json` is replaced whole at each step, so a run
killed anywhere leaves a state the next `--continue` or `--abort` finishes from: each phase is a
step that can be run again.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from patchkit import git
from patchkit.errors import PatchkitError
from patchkit.fileio import atomic_folder, atomic_write, remove_aside
from patchkit.project import Project
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
    untracked: tuple[str, ...] = ()  # files git does not track (ignored ones are never touched)


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
    skipped: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()

    def moved(self, **changes) -> RebaseState:
        return replace(self, **changes)


def folder(project: Project) -> Path:
    return project.state_dir / FOLDER


def load(project: Project) -> RebaseState | None:
    """The rebase in progress, None when there is none."""
    path = folder(project) / STATE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise PatchkitError(f"{path}: cannot read the rebase in progress ({exc})",
                            f"remove {folder(project)} to forget it (then restore patches/ from git)") from None
    data["revision"] = Revision(**data["revision"])
    checkout = data["checkout"]
    data["checkout"] = Checkout(**{**checkout, "untracked": tuple(checkout["untracked"])})
    for key in ("skipped", "dropped", "files"):
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
        if project.lock_path.exists():  # none saved: there was no lock, and --abort removes one
            (snapshot / "patchkit.lock").write_bytes(project.lock_path.read_bytes())
        (new / STATE).write_bytes(_encode(state))


def finish(project: Project) -> None:
    """Forget the rebase: the folder renamed aside in one step, then removed (a run killed while
    removing it leaves only what `remove_aside` cleans)."""
    path = folder(project)
    if path.exists():
        os.rename(path, path.with_name(f".{path.name}.patchkit-done-{secrets.token_hex(4)}"))
    remove_aside(path)


def restore_files(project: Project) -> None:
    """patches/ and the lock as the snapshot has them, byte for byte: files the rebase wrote are
    removed, changed ones written back whole. Run again, it changes nothing."""
    snapshot = folder(project) / SNAPSHOT
    saved = snapshot / "patches"
    kept = {p.relative_to(saved) for p in saved.rglob("*") if p.is_file() or p.is_symlink()}
    for current in sorted(project.patches_dir.rglob("*"), reverse=True):
        relative = current.relative_to(project.patches_dir)
        if (current.is_file() or current.is_symlink()) and relative not in kept:
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
    saved_lock, lock = snapshot / "patchkit.lock", project.lock_path
    if not saved_lock.exists():
        lock.unlink(missing_ok=True)
    elif not lock.is_file() or lock.read_bytes() != saved_lock.read_bytes():
        atomic_write(lock, saved_lock.read_bytes())


def describe_checkout(path: Path) -> Checkout:
    """What `--abort` gives back of the checkout at PATH (which check_output has vetted)."""
    if not (path / ".git").exists():
        return Checkout(str(path), existed=path.exists())
    head = git.run(["symbolic-ref", "--quiet", "HEAD"], cwd=path, check=False)
    head = f"ref: {head}" if head else git.run(["rev-parse", "--verify", "--quiet", "HEAD"], cwd=path, check=False)
    listing = git.run(["for-each-ref", "--format=%(objectname) %(refname)"], cwd=path)
    refs = {ref: oid for oid, ref in (line.split(" ", 1) for line in listing.splitlines())}
    untracked = git.run(["ls-files", "-z", "--others", "--exclude-standard"], cwd=path)
    return Checkout(str(path), True, head, refs, tuple(filter(None, untracked.split("\0"))))


def restore_checkout(checkout: Checkout) -> None:
    """The checkout as `describe_checkout` saw it: its refs, HEAD, tracked files and untracked
    ones (what the rebase added is removed); a checkout that did not exist is removed, one that
    was an empty folder emptied."""
    path = Path(checkout.path)
    if not checkout.head:  # no repository was there: none, or an empty folder (check_output saw to that)
        remove_aside(path)
        if path.exists():
            shutil.rmtree(path)
        if checkout.existed:
            path.mkdir()
        return
    git_dir = Path(git.run(["rev-parse", "--absolute-git-dir"], cwd=path))
    for lock in [git_dir / "index.lock", git_dir / "HEAD.lock", git_dir / "packed-refs.lock",
                 *(git_dir / "refs").rglob("*.lock")]:
        lock.unlink(missing_ok=True)  # a git the rebase ran was killed: no other git runs here now
    current = git.run(["for-each-ref", "--format=%(refname)"], cwd=path).splitlines()
    commands = [f"delete {ref}" for ref in current if ref not in checkout.refs]
    commands += [f"update {ref} {oid}" for ref, oid in checkout.refs.items()]
    git.run(["update-ref", "--no-deref", "--stdin"], cwd=path, input="".join(f"{c}\n" for c in commands))
    if checkout.head.startswith("ref: "):
        git.run(["symbolic-ref", "HEAD", checkout.head.removeprefix("ref: ")], cwd=path)
    else:
        git.run(["update-ref", "--no-deref", "HEAD", checkout.head], cwd=path)
    git.run(["reset", "--quiet", "--hard"], cwd=path)
    kept = set(checkout.untracked)
    now = git.run(["ls-files", "-z", "--others", "--exclude-standard"], cwd=path)
    for name in filter(None, now.split("\0")):
        if name not in kept:
            (path / name).unlink(missing_ok=True)


def refuse_while_rebasing(project: Project) -> None:
    """The guard of every command that would write patches/, the lock or the checkout, or read
    the queue as if it were settled: a rebase in progress owns them until it ends."""
    state = load(project)
    if state is None:
        return
    where = f"stopped at {state.stopped}" if state.stopped and state.phase == STOPPED else state.phase
    raise PatchkitError(f"a rebase onto {state.spec} is in progress ({where})",
                        "finish it with `patchkit rebase --continue`, or undo it with `patchkit rebase --abort`")


def _encode(state: RebaseState) -> bytes:
    return (json.dumps(asdict(state), indent=2) + "\n").encode()
