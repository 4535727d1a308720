"""`patchkit record`: the branch's commits back into patches/, the series, the bases and the lock.

The branch in the checkout is the editing surface (as in gbp pq): amend a commit, add one,
reorder, squash or drop them with `git rebase -i`, edit messages. Each commit is matched to its
patch by its note (`patchkit.notes`), never by its subject. An edited commit rewrites its patch in
the refresh format (churn-free: `Last-Update:` moves only when the change's own lines do); a
commit without a note becomes a new patch named from its subject, as `import` names; the series
takes the branch's order; a patch no commit is any more leaves the series (its file goes only
with `--prune`).

Before anything is written, two applies through the core check both ends: the queue as it is in
patches/ must give the branch patchkit last checked out (else the files changed since, and the
branch would overwrite that), and the new queue must give the edited branch, commit for commit.
Then it ends where a good `apply --update-lock` at the branch's upstream commit would: the 3-way
bases recorded, the lock naming the new hashes, and the branch's tip kept under
`refs/patchkit/applied/` so the next `apply` takes the branch's commits as its own.
"""

from __future__ import annotations

import enum
import hashlib
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from patchkit import __version__, git, journal, notes, refs
from patchkit.apply import apply_queue
from patchkit.branch.checkout import (BranchCommit, Checkout, branch_commits, changed_paths, open_checkout,
                                      refuse_foreign_base, untracked_paths)
from patchkit.branch.identity import match_unnoted, warn_unless_carried
from patchkit.errors import PatchkitError, first_few
from patchkit.hooks import Hooks, collect_warnings
from patchkit.importing.run import slug
from patchkit.nightly.refresh import Change, format_patch, refresh_patch
from patchkit.patchfile.mail import Unreadable
from patchkit.patchfile.series import entries, read_text
from patchkit.pipeline import applied_at
from patchkit.plain import NOT_IN_JSON
from patchkit.project import Lock, Project
from patchkit.queue import Patch, Queue, read_patch
from patchkit.upstream import Mirror, Revision

if TYPE_CHECKING:
    from patchkit.checks import CheckReport

class Action(str, enum.Enum):
    """What record does to one patch."""

    UNCHANGED = "unchanged"
    EDITED = "edited"  # its commit changed: the patch is rewritten (`change` says how)
    NEW = "new"  # a commit without a note: a new patch
    DROPPED = "dropped"  # no commit is it any more: out of the series (its file deleted with --prune)
    SQUASHED = "squashed"  # its commit was squashed into another patch's (--squash): out of the series


@dataclass(frozen=True)
class RecordedPatch:
    name: str  # file name as listed in the series
    action: Action
    subject: str
    commit: str | None  # the branch commit it is recorded from
    change: Change | None = None  # EDITED: how the file changed (the refresh's classes)
    old_sha256: str | None = None
    new_sha256: str | None = None
    content_diff: str = ""  # a content change's +/- lines
    into: str | None = None  # SQUASHED: the patch that holds its change now
    data: bytes = field(default=b"", repr=False, metadata=NOT_IN_JSON)  # the new file


@dataclass(frozen=True)
class RecordOptions:
    output: Path | None = None  # the checkout (default: the project's)
    dry_run: bool = False
    prune: bool = False  # delete the files of patches that leave the series
    squash: bool = False  # a commit that is several patches becomes the first one's
    allow_rewind: bool = False
    upstream: str | None = None  # --upstream: the mirror the checkout was applied from


@dataclass(frozen=True)
class RecordReport:
    checkout: Path
    branch: str
    upstream_url: str
    upstream_commit: str
    tip: str  # the branch commit recorded
    tree: str
    dry_run: bool
    series_before: tuple[str, ...]
    series: tuple[str, ...]
    patches: tuple[RecordedPatch, ...]  # in the new series' order, then those that left it
    pruned: tuple[str, ...] = ()  # files deleted (--prune)
    checks: CheckReport | None = None
    written: bool = False
    lock_updated: bool = False
    bases_recorded: int = 0
    warnings: tuple[str, ...] = ()
    passed: bool = field(init=False)  # a field, so the JSON report carries it

    def __post_init__(self) -> None:
        """The site checks of the new queue pass (a failing one keeps the lock where it was)."""
        object.__setattr__(self, "passed", self.checks is None or self.checks.passed)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def run_record(project: Project, options: RecordOptions, hooks: Hooks = Hooks()) -> RecordReport:
    """`patchkit record`: the checkout's branch as it is, committed (an interrupted record or
    absorb finished first)."""
    finish_interrupted(project, options, hooks)
    checkout = open_checkout(project, options.output)
    dirty = changed_paths(checkout)
    if dirty:
        raise PatchkitError(f"{checkout.path} has changes not committed ({first_few(dirty)}): record takes the "
                            "branch's commits",
                            "commit them (git commit --amend, or a new commit), or fold them into the patches "
                            "that own those lines with `patchkit absorb`")
    return record(project, checkout, checkout.head, options, hooks, untracked=untracked_paths(checkout))


def record(project: Project, checkout: Checkout, tip: str, options: RecordOptions, hooks: Hooks = Hooks(),
           identities: dict[str, list[str]] | None = None, names: dict[str, str] | None = None,
           moves_branch: bool = False, untracked: Sequence[str] = ()) -> RecordReport:
    """TIP (the checkout's branch, or a rewrite of it that absorb has not moved the branch to yet)
    recorded as the queue. IDENTITIES: the patches of commits not noted yet; NAMES: the file names
    of new commits that are not named from their subjects. MOVES_BRANCH: absorb's, the branch moves
    to TIP and the index follows, in the same journal as the queue. UNTRACKED: the checkout's
    untracked files, named (a new file is recorded once it is committed)."""
    queue = Queue.load(project)
    warnings, warn = collect_warnings(hooks)
    mirror, from_checkout = _mirror(project, checkout, options)
    commits = branch_commits(checkout, tip, identities)
    refuse_foreign_base(checkout, commits, None if from_checkout else mirror.path)
    with mirror.locked(hooks.progress):
        revision = _revision(mirror, checkout, fetch=from_checkout)
        if not options.allow_rewind:  # the lock never moves backwards (a dry run says so too)
            mirror.guard_pin(revision.commit)
        recorded = _check_queue_is_the_branchs(checkout, mirror, revision, queue, warn)
        commits = match_unnoted(checkout, commits, recorded, {p.name: p.subject for p in queue.patches}, warn)
        warn_unless_carried(checkout, warn)
        plan = _plan(project, checkout, mirror, queue, commits, recorded, options, names or {})
        series = tuple(p.name for p in plan if p.action in (Action.UNCHANGED, Action.EDITED, Action.NEW))
        with tempfile.TemporaryDirectory(prefix="patchkit-record-") as tmp:
            patches = _patches(project, queue, plan, series, Path(tmp))
            with applied_at(project, mirror, revision, patches) as (applied, report):
                _check_round_trip(checkout, commits, applied.repo, report.patches)
                if untracked:  # once nothing refuses: a refusal is one line
                    warn(f"{first_few(list(untracked))} untracked in {checkout.path}, not recorded: to put a new file "
                         f"in a patch, commit it on the branch (git -C {checkout.path} add FILE, then git commit, "
                         "or commit --amend into the patch's commit), then record again")
                result = RecordReport(checkout.path, checkout.branch, mirror.url, revision.commit, tip,
                                      report.tree, options.dry_run, tuple(p.name for p in queue.patches), series,
                                      tuple(plan), checks=report.checks)
                if options.dry_run:
                    return replace(result, warnings=tuple(warnings))
                # the mirror's caches first: what they hold is right whether or not the journal runs
                applied.record(refs.result(project.key, checkout.branch))
                bases = {p.sha256: p.commit for p in report.patches if p.commit} if result.passed else {}
                if bases:
                    mirror.record_bases(bases)
                lock = Lock(mirror.url, revision.commit, {p.name: p.sha256 for p in patches}, report.tree, __version__)
                old = project.lock()
                # the order of its patches too: the lock lists them as the series does
                lock_updated = result.passed and (lock != old or list(lock.patches) != list(old.patches))
                if not result.passed:
                    warn("patchkit.lock not updated: the site checks of the new queue fail")
                files = _queue_files(project, plan, series, options.prune)
                if lock_updated:
                    files[str(project.lock_path)] = lock.encode()
                refs_moved = [journal.RefMove(checkout.applied_ref, _ref(checkout, checkout.applied_ref), tip)]
                if moves_branch:
                    refs_moved.append(journal.RefMove(f"refs/heads/{checkout.branch}", checkout.head, tip))
                journal.write(project, journal.Plan("absorb" if moves_branch else "record", str(checkout.path), tip,
                                                    files, _branch_notes(checkout, commits, plan),
                                                    tuple(refs_moved), tip if moves_branch else ""))
    pruned = tuple(Path(name).name for name, data in files.items() if data is None)
    return replace(result, pruned=pruned, written=True, lock_updated=lock_updated,
                   bases_recorded=len(bases), warnings=tuple(warnings))


def finish_interrupted(project: Project, options: RecordOptions, hooks: Hooks) -> bool:
    """An interrupted record's or absorb's journal run to its end, with the names it chose (a dry
    run refuses: it would write). Whether there was one."""
    if options.dry_run:
        journal.refuse_while_pending(project)
    plan = journal.pending(project)
    if plan is None:
        return False
    journal.resume(project, plan)
    collect_warnings(hooks)[1](f"finished the `patchkit {plan.command}` of {plan.tip[:12]} that was interrupted while writing")
    return True


def _ref(checkout: Checkout, ref: str) -> str:
    return git.run(["rev-parse", "--verify", "--quiet", ref], cwd=checkout.path, check=False)


def _mirror(project: Project, checkout: Checkout, options: RecordOptions) -> tuple[Mirror, bool]:
    """Where the checkout's upstream commit is read: the mirror of --upstream or of the configured
    upstream; where that lacks it (the checkout was applied with `--upstream PATH`), the checkout
    itself, which holds every object of it (True)."""
    mirror = Mirror.open(project, options.upstream)
    if options.upstream or (mirror.exists and _has(mirror, checkout.upstream)):
        return mirror, False
    return Mirror.open(project, str(checkout.path)), True


def _has(mirror: Mirror, commit: str) -> bool:
    try:
        git.run(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=mirror.path)
        return True
    except git.GitFailed:
        return False


def _revision(mirror: Mirror, checkout: Checkout, fetch: bool) -> Revision:
    """The checkout's upstream commit, from the mirror (fetched only when the mirror is the
    checkout's own: the configured one had it for the apply)."""
    try:
        revision = mirror.resolve(f"upstream@{checkout.upstream}", fetch=fetch)
    except PatchkitError:
        raise PatchkitError(f"the mirror of {mirror.fetch_url} lacks {checkout.upstream[:12]}, the upstream commit "
                            f"of {checkout.path}", "name the upstream it was applied from with --upstream") from None
    return replace(revision, branch_name=checkout.branch)


def _recorded(checkout: Checkout, queue: Queue, warn: Callable[[str], None]) -> dict[str, str]:
    """Each patch's commit on the branch as patchkit last checked it out or recorded it. Its notes
    deleted, the commits are read in the series' order (the caller checks each tree against
    patches/, so a wrong reading is refused there, never recorded)."""
    applied_tip = git.run(["rev-parse", "--verify", "--quiet", checkout.applied_ref], cwd=checkout.path, check=False)
    if not applied_tip:
        raise PatchkitError(f"{checkout.path} has no {checkout.applied_ref}: patchkit did not check {checkout.branch} out",
                            "run `patchkit apply` for it first")
    commits = branch_commits(checkout, applied_tip)
    if commits and not any(c.patches for c in commits):
        if len(commits) != len(queue.patches):
            raise PatchkitError(f"the commits patchkit checked out in {checkout.path} have lost their notes "
                                f"({notes.REF} deleted?), and they are {len(commits)}, the series {len(queue.patches)}",
                                "check the queue out again (`patchkit apply upstream@REF --force` keeps your "
                                "commits under refs/patchkit/saved/), then redo the edit")
        warn(f"the commits patchkit checked out in {checkout.path} have lost their notes ({notes.REF} deleted?): "
             "read in the series' order")
        return {p.name: c.id for p, c in zip(queue.patches, commits)}
    return {name: c.id for c in commits for name in c.patches}


def _check_queue_is_the_branchs(checkout: Checkout, mirror: Mirror, revision: Revision, queue: Queue,
                                warn: Callable[[str], None]) -> dict[str, str]:
    """patches/ applied at the upstream commit gives, patch by patch, the branch as patchkit last
    checked out (or recorded) it: otherwise the files changed since, or a patch never made it onto
    the branch, and recording the branch would silently undo that. Returns each patch's commit there."""
    recorded = _recorded(checkout, queue, warn)
    trees = dict(line.split() for line in git.run(
        ["show", "-s", "--format=%H %T", *set(recorded.values())], cwd=checkout.path).splitlines()) if recorded else {}
    with apply_queue(mirror, revision, queue.patches) as applied:
        for result in applied.patches:
            if not result.good:
                raise PatchkitError(f"{result.name} is {result.verdict.value} at {revision.commit[:12]}, so "
                                    f"{checkout.branch} does not hold it: recording the branch would drop it",
                                    "fix it first (`patchkit rebase`), or take it out of the series")
            tree = git.run(["rev-parse", f"{result.commit}^{{tree}}"], cwd=applied.repo)
            if result.name not in recorded or trees[recorded[result.name]] != tree:
                raise PatchkitError(f"patches/{result.name} is not what {checkout.branch} was checked out from "
                                    "(the file or the series changed since, or an older patchkit checked it out)",
                                    f"check the queue out again (`patchkit apply upstream@{revision.commit[:12]}`; "
                                    "--force keeps your commits under refs/patchkit/saved/), then redo the edit")
    return recorded


def _plan(project: Project, checkout: Checkout, mirror: Mirror, queue: Queue, commits: list[BranchCommit],
          recorded: dict[str, str], options: RecordOptions, names: dict[str, str]) -> list[RecordedPatch]:
    """What happens to each patch: the branch's, in its order, then those that leave the series.
    A commit whose patch reads as the one it was checked out (or recorded) as is left alone, even
    where the file's form is older than the refresh format: only edits are written."""
    known = {p.name: p for p in queue.patches}
    order = {p.name: i for i, p in enumerate(queue.patches)}
    holder: dict[str, BranchCommit] = {}
    for commit in commits:
        if _empty(checkout, commit):
            raise PatchkitError(f"commit {commit.short} changes nothing: a patch must change something",
                                "drop it (git rebase -i), then record again")
        for name in commit.patches:
            if name not in known:
                raise PatchkitError(f"commit {commit.short} is patch {name}, which {project.series_path} does not list",
                                    "put it back in the series, or remove the note "
                                    f"(git -C {checkout.path} notes --ref=patchkit remove {commit.id[:12]})")
            if name in holder:
                raise PatchkitError(f"commits {holder[name].short} and {commit.short} are both patch {name}",
                                    "squash them, or make the second one a new patch by removing its note "
                                    f"(git -C {checkout.path} notes --ref=patchkit remove {commit.id[:12]})")
            holder[name] = commit
        if len(commit.patches) > 1 and not options.squash:
            raise PatchkitError(f"commit {commit.short} is {len(commit.patches)} patches ({', '.join(commit.patches)}): "
                                "a squash", "rerun with --squash to record it as the first of them (the others leave "
                                "the series), or split the commit")
    reader = Mirror(checkout.path, mirror.url, mirror.branch, None)  # format-patch reads the checkout
    taken = set(known)
    plan: list[RecordedPatch] = []
    gone: list[RecordedPatch] = []
    for commit in commits:
        if not commit.patches:
            data = format_patch(reader, commit.id)
            name = names.get(commit.id) or _new_name(commit.subject, taken, project.patches_dir, data)
            if name in taken or _occupied(project.patches_dir / name, data):
                raise PatchkitError(f"a patch named {name} is already in {project.patches_dir}",
                                    "pick another name")
            taken.add(name)
            plan.append(RecordedPatch(name, Action.NEW, commit.subject, commit.id,
                                      new_sha256=_sha256(data), data=data))
            continue
        name, *squashed = sorted(commit.patches, key=order.__getitem__)
        patch = known[name]
        if not squashed and (commit.id == recorded[name]
                             or format_patch(reader, commit.id) == format_patch(reader, recorded[name])):
            plan.append(RecordedPatch(name, Action.UNCHANGED, commit.subject, commit.id,
                                      old_sha256=patch.sha256, new_sha256=patch.sha256))
        else:
            refreshed = refresh_patch(reader, patch, commit.id)
            plan.append(RecordedPatch(name, Action.EDITED, commit.subject, commit.id, refreshed.change,
                                      refreshed.old_sha256, refreshed.new_sha256, refreshed.content_diff,
                                      data=refreshed.data))
        gone += [RecordedPatch(other, Action.SQUASHED, known[other].subject, commit.id,
                               old_sha256=known[other].sha256, into=name) for other in squashed]
    gone += [RecordedPatch(p.name, Action.DROPPED, p.subject, None, old_sha256=p.sha256)
             for p in queue.patches if p.name not in holder]
    return plan + sorted(gone, key=lambda p: order[p.name])


def _empty(checkout: Checkout, commit: BranchCommit) -> bool:
    return git.run(["rev-parse", f"{commit.parent}^{{tree}}"], cwd=checkout.path) == commit.tree


def _new_name(subject: str, taken: set[str], folder: Path, data: bytes) -> str:
    """A new patch's file name, from its subject as `import` names one; -2, -3... when the series
    or another file has it."""
    base = slug(subject)
    name, n = f"{base}.patch", 2
    # another patch's site checks left behind would become this one's
    while name in taken or _occupied(folder / name, data) \
            or (folder / (name.removesuffix(".patch") + ".checks.yaml")).exists():
        name, n = f"{base}-{n}.patch", n + 1
    return name


def _occupied(path: Path, data: bytes) -> bool:
    """PATH holds other bytes than DATA. The same bytes are what an interrupted record wrote."""
    try:
        return path.read_bytes() != data
    except FileNotFoundError:
        return False


def _patches(project: Project, queue: Queue, plan: list[RecordedPatch], series: tuple[str, ...],
             tmp: Path) -> list[Patch]:
    """The new queue as the apply reads it; each patch's path stays its place in patches/, where
    its site checks are."""
    known = {p.name: p for p in queue.patches}
    by_name = {p.name: p for p in plan}
    patches = []
    for name in series:
        entry = by_name[name]
        if entry.action is Action.UNCHANGED:
            patches.append(known[name])
            continue
        (tmp / name).write_bytes(entry.data)
        try:
            patches.append(replace(read_patch(tmp / name, name), path=project.patches_dir / name))
        except Unreadable as exc:  # the file is not written yet: name the commit, not a temporary file
            raise PatchkitError(f"{name}, recorded from commit {entry.commit[:12]} ({entry.subject}), would not "
                                f"read back as a patch: {exc.why}", exc.hint) from None
    return patches


def _check_round_trip(checkout: Checkout, commits: list[BranchCommit], repo: Path,
                      results: Sequence) -> None:
    """The new queue, applied through the core, gives the branch commit for commit."""
    for commit, result in zip(commits, results):
        tree = git.run(["rev-parse", f"{result.commit}^{{tree}}"], cwd=repo) if result.commit else None
        if not result.good or tree != commit.tree:
            raise PatchkitError(f"{result.name}, recorded from {commit.short}, does not apply back to the branch's tree "
                                f"({result.verdict.value}{': ' + result.detail if result.detail else ''})",
                                "this is a bug in patchkit: please report it; nothing was written")


def _queue_files(project: Project, plan: list[RecordedPatch], series: tuple[str, ...],
                 prune: bool) -> dict[str, bytes | None]:
    """What record writes in patches/, in the journal's order: the new and rewritten patch files,
    then the series, then (with PRUNE) the files of the patches that left it deleted."""
    files: dict[str, bytes | None] = {str(project.patches_dir / e.name): e.data for e in plan
                                      if e.action in (Action.EDITED, Action.NEW)}
    text = read_text(project.series_path)
    new_text = series_text(text, list(series))
    if new_text != text:
        files[str(project.series_path)] = new_text.encode()
    if prune:
        for entry in plan:
            if entry.action in (Action.DROPPED, Action.SQUASHED):
                for path in (project.patches_dir / entry.name,
                             project.patches_dir / (entry.name.removesuffix(".patch") + ".checks.yaml")):
                    if path.exists():
                        files[str(path)] = None
    return files


def series_text(text: str, order: list[str]) -> str:
    """TEXT (a series file) listing ORDER: comments and blank lines stay where they are, each
    patch's own line (its options, a comment after it) goes where its name goes; patches no line
    listed get a line after the last patch line."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    listed = {entry.path: entry.lineno for entry in entries(text)}
    slots = sorted(listed.values())
    own = {name: lines[lineno - 1] for name, lineno in listed.items()}
    placed = [own.get(name, f"{name}\n") for name in order]
    out: list[str] = []
    for lineno, line in enumerate(lines, 1):
        if lineno not in slots:
            out.append(line)
            continue
        if placed:
            out.append(placed.pop(0))
        if lineno == slots[-1]:
            out += placed
            placed = []
    return "".join(out + placed)


def _branch_notes(checkout: Checkout, commits: list[BranchCommit], plan: list[RecordedPatch]) -> dict[str, list[str]]:
    """Each branch commit noted as the patch it now is (those whose note says otherwise, absorb's
    new commits among them): the next `apply` takes these commits as patchkit's own, and the next
    `record` starts from them."""
    recorded = {p.commit: p.name for p in plan if p.action in (Action.UNCHANGED, Action.EDITED, Action.NEW)}
    noted = notes.read(checkout.path, [c.id for c in commits])
    return {c.id: [recorded[c.id]] for c in commits if noted[c.id] != [recorded[c.id]]}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
