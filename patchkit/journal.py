"""The one way `record` and `absorb` write: a journal in `.patchkit/journal/`.

Everything a run will write is decided first and saved whole, in one rename, with the bytes each
file had before (the plan). Then the writes happen, each one a step that can be run again: the
files whole (patches, the series, the lock; deletions last), the notes, the refs, the index. Then
the journal is removed (done). A run killed anywhere leaves either no journal (nothing was
written, or everything was) or one the next run finishes with the same names (`finish`), or
that `--abort` undoes byte for byte (`undo`).
"""

from __future__ import annotations

import glob
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from patchkit import git, notes, testpoint
from patchkit.errors import PatchkitError
from patchkit.fileio import atomic_folder, atomic_write, read_json, remove_aside, remove_folder
from patchkit.project import Project

FOLDER = "journal"
_PLAN = "plan.json"


@dataclass(frozen=True)
class RefMove:
    """REF of the checkout moves from OLD to NEW ("" : absent)."""

    ref: str
    old: str
    new: str


@dataclass(frozen=True)
class Plan:
    command: str  # record or absorb: the one that wrote this journal, and finishes or undoes it
    checkout: str
    tip: str  # the branch commit recorded
    files: dict[str, bytes | None] = field(default_factory=dict)  # path -> new bytes (None: deleted)
    notes: dict[str, list[str]] = field(default_factory=dict)  # checkout commit -> its patches
    refs: tuple[RefMove, ...] = ()
    reset: str = ""  # absorb: the index of the checkout is reset (--mixed) to this commit


def folder(project: Project) -> Path:
    return project.state_dir / FOLDER


def pending(project: Project) -> Plan | None:
    """The plan of a run that was interrupted while writing, None when there is none."""
    data = read_json(folder(project) / _PLAN, "the journal of an interrupted record",
                     f"remove {folder(project)} (then check patches/ with git)")
    if data is None:
        return None
    new = folder(project) / "new"
    files = {name: (new / str(i)).read_bytes() if (new / str(i)).exists() else None
             for i, name in enumerate(data["files"])}
    return Plan(data["command"], data["checkout"], data["tip"], files, data["notes"],
                tuple(RefMove(**r) for r in data["refs"]), data["reset"])


def write(project: Project, plan: Plan) -> None:
    """Run PLAN: the journal saved whole (with every file's old bytes and the old notes, index and
    refs), then each write, then the journal removed."""
    checkout = Path(plan.checkout)
    remove_aside(folder(project))
    with atomic_folder(folder(project)) as new:
        for sub in ("new", "old"):
            (new / sub).mkdir()
        for i, (name, data) in enumerate(plan.files.items()):
            if data is not None:
                (new / "new" / str(i)).write_bytes(data)
            if Path(name).is_file():
                (new / "old" / str(i)).write_bytes(Path(name).read_bytes())
        note_ref = git.run(["rev-parse", "--verify", "--quiet", notes.REF], cwd=checkout, check=False)
        index = git.git_dir(checkout) / "index"
        if plan.reset and index.exists():
            (new / "index").write_bytes(index.read_bytes())
        (new / _PLAN).write_text(json.dumps({
            "command": plan.command, "checkout": plan.checkout, "tip": plan.tip, "files": list(plan.files),
            "notes": plan.notes, "refs": [asdict(r) for r in plan.refs], "reset": plan.reset,
            "notes_ref": note_ref}, indent=2) + "\n")
    testpoint.pause("journal-plan")
    finish(project, plan)


def finish(project: Project, plan: Plan) -> None:
    """Every write of PLAN, each as the plan says whatever was done before; then done."""
    checkout = Path(plan.checkout)
    ref_moves = _ref_moves(checkout, plan, back=False)  # refused before anything is written
    written = [(Path(name), data) for name, data in plan.files.items() if data is not None]
    for k, (path, data) in enumerate(written):
        if not path.is_file() or path.read_bytes() != data:
            atomic_write(path, data)
        if k == len(written) // 2:
            testpoint.pause("journal-files")
    for name, data in plan.files.items():
        if data is None:
            Path(name).unlink(missing_ok=True)
    testpoint.pause("journal-notes")
    notes.write(checkout, plan.notes)
    testpoint.pause("journal-refs")
    _move_refs(checkout, plan, ref_moves)
    if plan.reset:
        testpoint.pause("journal-reset")
        git.run(["reset", "--quiet", "--mixed", plan.reset], cwd=checkout)  # the index follows; files stay
    testpoint.pause("journal-done")
    remove_folder(folder(project))


def resume(project: Project, plan: Plan) -> None:
    """PLAN, interrupted, run to its end: what the killed run left cleared first."""
    _clear_leftovers(plan)
    finish(project, plan)


def undo(project: Project) -> Plan:
    """`record --abort`, `absorb --abort`: everything the interrupted run wrote as it was before,
    byte for byte (files, notes, refs, the index); the journal removed."""
    plan = pending(project)
    if plan is None:
        raise PatchkitError("no interrupted record or absorb to undo", "nothing to do")
    data = json.loads((folder(project) / _PLAN).read_text())
    old = folder(project) / "old"
    checkout = Path(plan.checkout)
    has_git = (checkout / ".git").exists()
    ref_moves = _ref_moves(checkout, plan, back=True) if has_git else ""  # refused before anything is written
    _clear_leftovers(plan)
    for i, name in enumerate(plan.files):
        saved = old / str(i)
        if saved.exists():
            if not Path(name).is_file() or Path(name).read_bytes() != saved.read_bytes():
                atomic_write(Path(name), saved.read_bytes())
        else:
            Path(name).unlink(missing_ok=True)
    if has_git:
        # the notes ref as it was: the notes it points at now are the run's (notes.write's)
        notes_ref = f"update {notes.REF} {data['notes_ref']}\n" if data["notes_ref"] else f"delete {notes.REF}\n"
        _move_refs(checkout, plan, notes_ref + ref_moves)
        index = folder(project) / "index"
        if index.exists():
            atomic_write(git.git_dir(checkout) / "index", index.read_bytes())
    remove_folder(folder(project))
    return plan


def _clear_leftovers(plan: Plan) -> None:
    """What a run killed in the middle of a write left: a temporary file beside a file it was
    replacing (fileio.atomic_file's), the lock files of the git commands it ran on the refs and
    the index the plan writes. Their owner is dead, and one journal runs at a time (looplock)."""
    for name in plan.files:
        path = Path(name)
        # Only mkstemp's names (`.NAME.` and 8 characters): an editor's `.NAME.swp` is the user's.
        temporary = re.compile(rf"\.{re.escape(path.name)}\.[a-z0-9_]{{8}}")
        for leftover in path.parent.glob(f".{glob.escape(path.name)}.*"):
            if temporary.fullmatch(leftover.name):
                leftover.unlink(missing_ok=True)
    if not (Path(plan.checkout) / ".git").exists():
        return
    git_dir = git.git_dir(Path(plan.checkout))
    for ref in (notes.REF, *(r.ref for r in plan.refs)):
        (git_dir / f"{ref}.lock").unlink(missing_ok=True)
    (git_dir / "packed-refs.lock").unlink(missing_ok=True)
    if plan.reset:
        (git_dir / "index.lock").unlink(missing_ok=True)


def _ref_moves(checkout: Path, plan: Plan, *, back: bool) -> str:
    """The `update-ref --stdin` commands that move PLAN's refs to their new values (BACK: to their
    old ones), each with the value git must find (so that a commit made meanwhile is never moved
    away). A ref already there is left: the run moved it before it was interrupted. A ref at
    neither value moved since: refused."""
    commands = []
    for move in plan.refs:
        start, end = (move.new, move.old) if back else (move.old, move.new)
        now = git.run(["rev-parse", "--verify", "--quiet", move.ref], cwd=checkout, check=False)
        if now == end:
            continue
        if now != start:
            raise _moved(plan, move.ref, now, start, back)
        # git's zero id (as long as the other): the ref must not exist yet
        commands.append(f"update {move.ref} {end} {start or '0' * len(end)}\n" if end
                        else f"delete {move.ref} {start}\n")
    return "".join(commands)


def _move_refs(checkout: Path, plan: Plan, commands: str) -> None:
    """COMMANDS (`_ref_moves`') in one transaction: none moves when a ref is not where it must be."""
    if not commands:
        return
    try:
        git.run(["update-ref", "--no-deref", "--stdin"], cwd=checkout, input=commands)
    except git.GitFailed as e:  # a ref moved between `_ref_moves` and here
        raise PatchkitError(f"the refs of {checkout} moved while `patchkit {plan.command}` wrote them: {e.summary}",
                            f"check them with git, then rerun `patchkit {plan.command}`") from None


def _moved(plan: Plan, ref: str, now: str, start: str, back: bool) -> PatchkitError:
    again = f"patchkit {plan.command}" + (" --abort" if back else "")
    return PatchkitError(
        f"{ref} moved since the `patchkit {plan.command}` was interrupted: it is at {now[:12] or 'nothing'}, "
        f"not {start[:12] or 'absent'} as that run left it; nothing written",
        f"keep what is there (git -C {plan.checkout} branch keep-mine {now}), put the ref back "
        f"(git -C {plan.checkout} update-ref {ref} {start}), then rerun `{again}`" if now and start
        else f"put the ref back as that run left it, then rerun `{again}`")


def refuse_while_pending(project: Project) -> None:
    """The guard of the commands that would write patches/ or the checkout while an interrupted
    record or absorb has not finished: theirs, until it is finished or undone."""
    plan = pending(project)
    if plan is not None:
        raise PatchkitError(f"a `patchkit {plan.command}` was interrupted while writing ({folder(project)})",
                            f"finish it with `patchkit {plan.command}`, or undo it with "
                            f"`patchkit {plan.command} --abort`, then rerun")
