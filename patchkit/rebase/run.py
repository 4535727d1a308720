"""`patchkit rebase`: the queue applied at a target in the checkout, stopping at each patch that
needs a person; `--continue` writes the person's fix back into the patch file.

Every step has the same shape: the queue as it now is goes through the apply core at the target
(`pipeline.applied_at`, in the mirror); the patches before the first one that needs a person are
checked out as `apply` would (output.check_out: the same commits), and that one is written into
the work tree as far as it goes (markers.py). `--continue` takes the work tree as that patch's new
content: committed there, regenerated in the refresh format (nightly/refresh.py: churn-free,
`Last-Update:` only on a content change), applied again through the core to prove it gives back the
same tree, and written; then the next step. When no patch needs a person, a night at the target
(nightly/night.py) refreshes every patch, records the bases and moves the lock, forward only.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Callable, Mapping

from patchkit import git, refs, testpoint
from patchkit.apply import HunkVerdict, PatchResult, Verdict, apply_queue
from patchkit.checks import CheckReport
from patchkit.drift import Drift
from patchkit.errors import PatchkitError, first_few
from patchkit.fileio import atomic_write
from patchkit.hooks import Hooks, collect_warnings
from patchkit.nightly.bisect import Finding, bisect_queue
from patchkit.nightly.night import NightlyOptions, NightlyReport, run_nightly, write_refresh
from patchkit.nightly.refresh import Change, Refreshed, refresh_queue
from patchkit.output import check_out, check_output, overwritten_files
from patchkit.patchfile.series import read_text, write_series
from patchkit.pipeline import applied_at, drift_since_lock, resolve
from patchkit.project import Project
from patchkit.queue import Patch, Queue, read_patch
from patchkit.rebase import state as rebase_state
from patchkit.rebase.markers import Marker, Partial, find_markers, write_partial
from patchkit.rebase.series import disable, disabled_line
from patchkit.rebase.state import ABORTING, ADVANCING, FINISHING, STOPPED, RebaseState
from patchkit.upstream import Mirror, Revision

CHECKS_FAILED = "checks-failed"  # a stop whose patch applied, but its own site checks fail after it


class _Overwrites(PatchkitError):
    """The queue at the target has files the checkout holds untracked with other bytes."""


@dataclass(frozen=True)
class RebaseOptions:
    spec: str = "upstream@HEAD"
    upstream: str | None = None
    fetch: bool = True
    fuzz: int = 0
    output: Path | None = None
    record: bool = False  # commits on the branch never recorded: record them first (else refused)


@dataclass(frozen=True)
class Stop:
    """The patch that needs a person, and what of it is in the checkout."""

    patch: str
    subject: str
    kind: str  # its verdict, or "checks-failed"
    detail: str
    hunks: tuple[HunkVerdict, ...]
    markers: tuple[Marker, ...] = ()
    rejected: tuple[str, ...] = ()  # hunks in reject_file, "FILE hunk N"
    reject_file: Path | None = None
    checks: CheckReport | None = None  # checks-failed: the patch's own rules at the target
    finding: Finding | None = None  # the upstream commit that did it, as the nightly names it
    next: str = ""  # what to run next
    # What its lines rely on that upstream changed since the lock (as applied at the lock when it
    # does not apply): whoever fixes the conflict must also learn of it.
    drift: tuple[Drift, ...] = ()


@dataclass(frozen=True)
class RebaseReport:
    action: str  # start, continue, skip, drop, abort
    spec: str
    upstream_commit: str
    branch: str
    output: Path
    fixed: tuple[Refreshed, ...] = ()  # the patch a person fixed in this step, as written
    skipped: tuple[str, ...] = ()  # disabled in the series in this step
    dropped: tuple[str, ...] = ()  # removed from the series in this step
    stopped: Stop | None = None
    rest: tuple[PatchResult, ...] = ()  # the patches after the stop, as a trial at the target gives them
    finished: NightlyReport | None = None  # the last step: a good night at the target
    aborted: bool = False
    warnings: tuple[str, ...] = ()
    passed: bool = field(init=False)

    def __post_init__(self) -> None:
        """Nobody needs to look: the rebase ended, its result good (or it was undone)."""
        object.__setattr__(self, "passed", self.aborted or (self.stopped is None and self.finished is not None
                                                            and self.finished.passed))

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def start(project: Project, options: RebaseOptions, hooks: Hooks = Hooks()) -> RebaseReport:
    """`patchkit rebase [upstream@REF]`: every bad input refused before anything is written."""
    rebase_state.refuse_while_rebasing(project)
    Queue.load(project)  # a series that cannot be read is refused now, not after the snapshot
    mirror = Mirror.open(project, options.upstream)
    output = (options.output or project.output_dir).resolve()
    check_output(output, project.root.resolve(), force=False)
    warnings, warn = collect_warnings(hooks)
    with mirror.locked(hooks.progress):
        revision = resolve(mirror, options.spec, options.fetch, hooks, warn)
        try:
            mirror.guard_pin(revision.commit)  # the lock this rebase ends with never moves back
        except PatchkitError as exc:  # its hint names apply's --allow-rewind, which a rebase has not
            raise PatchkitError(exc.message, "name a newer upstream ref: a rebase moves the lock forward only (to "
                                "move it back: `patchkit apply upstream@REF --update-lock --allow-rewind`)") from None
    unrecorded = _unrecorded(output, revision.branch_name)
    if unrecorded and not options.record:
        raise PatchkitError(f"{first_few(unrecorded)} on the branch in {output} {'is' if len(unrecorded) == 1 else 'are'} "
                            "not recorded in patches/: the rebase would leave them behind",
                            f"record them first (`patchkit record`), or rerun with --record; to drop them, "
                            f"check the queue out again (`patchkit apply upstream@locked --force`)")
    if unrecorded:
        from patchkit.branch.record import RecordOptions, run_record  # record sits beside rebase, not below

        run_record(project, RecordOptions(output=output, upstream=options.upstream), hooks)
    state = RebaseState(options.spec, options.upstream, options.fuzz, revision,
                        rebase_state.describe_checkout(output), ADVANCING)
    rebase_state.begin(project, state)
    try:
        return _step(project, state, "start", hooks, warnings, warn)
    except _Overwrites as exc:  # refused before the checkout was touched: as if never begun
        abort(project)
        raise PatchkitError(exc.message, f"move them out of the way, then rerun `patchkit rebase {options.spec}`") \
            from None


def _unrecorded(output: Path, branch: str) -> list[str]:
    """The commits on the checkout's branch (and BRANCH, the one the rebase checks out) that
    patchkit did not check out and record never took: "id (subject)", oldest first."""
    if not (output / ".git").exists():
        return []
    current = git.run(["symbolic-ref", "--quiet", "--short", "HEAD"], cwd=output, check=False)
    found: list[str] = []
    for name in dict.fromkeys(filter(None, (current, branch))):
        applied = git.run(["rev-parse", "--verify", "--quiet", f"{refs.APPLIED}/{name}"], cwd=output, check=False)
        tip = git.run(["rev-parse", "--verify", "--quiet", f"refs/heads/{name}"], cwd=output, check=False)
        if applied and tip:
            found += git.run(["log", "--reverse", "--format=%h (%s)", "--abbrev=12", f"{applied}..{tip}"],
                             cwd=output).splitlines()
    return list(dict.fromkeys(found))


def resume(project: Project, action: str, hooks: Hooks = Hooks(), include: tuple[str, ...] = ()) -> RebaseReport:
    """`--continue`, `--skip`, `--drop`: go on from the state on disk."""
    state = _current(project)
    warnings, warn = collect_warnings(hooks)
    if state.phase == ABORTING:
        raise PatchkitError("an interrupted `patchkit rebase --abort` has not finished",
                            "run `patchkit rebase --abort` again")
    if rebase_state.checkout_gone(state):
        raise PatchkitError(f"{state.checkout.path}, the rebase's checkout, was removed while it stood",
                            "undo the rebase with `patchkit rebase --abort` (patches/ and the lock come back), "
                            "then start again")
    if action in ("skip", "drop"):
        if state.phase != STOPPED or state.stopped is None:
            raise PatchkitError(f"the rebase is not stopped at a patch (it is {state.phase})",
                                "run `patchkit rebase --continue`")
        if action == "skip":
            state = state.moved(phase=ADVANCING, skipped=(*state.skipped, state.stopped))
        else:
            state = state.moved(phase=ADVANCING, dropped=(*state.dropped, state.stopped))
        rebase_state.save(project, state)
        return _step(project, state, action, hooks, warnings, warn)
    if state.phase == FINISHING and state.night_failed:
        _refuse_edits_finishing_cannot_take(state)
    fixed: tuple[Refreshed, ...] = ()
    if state.phase == STOPPED:
        refreshed = _take_fix(project, state, include)
        testpoint.pause("rebase-fixed")
        fixed = (refreshed,) if refreshed else ()
        state = state.moved(phase=ADVANCING)
        rebase_state.save(project, state)
    return _step(project, state, "continue", hooks, warnings, warn, fixed)


def abort(project: Project, hooks: Hooks = Hooks()) -> RebaseReport:
    """`--abort`: patches/, the series, the lock, the last apply's report and the checkout as
    they were before the rebase. What the user made meanwhile stays: untracked files (named),
    commits on the rebase's branch (set aside under refs/patchkit/saved/), other refs."""
    state = _current(project)
    warnings, warn = collect_warnings(hooks)
    if state.phase != ABORTING:
        state = state.moved(phase=ABORTING)
        rebase_state.save(project, state)
    made, saved = rebase_state.restore_checkout(state.checkout, state.revision.branch_name,
                                                (*state.written, *state.files))
    gone = rebase_state.checkout_gone(state)
    testpoint.pause("rebase-abort")
    made_in_patches = rebase_state.restore_files(project)
    rebase_state.finish(project)
    checkout = Path(state.checkout.path)
    if gone:
        warn(f"{checkout} was removed while the rebase stood: patches/ and the lock are restored, the checkout is "
             "not (`patchkit apply upstream@locked` makes it again)")
    if made:
        warn(f"kept {', '.join(made)} in {checkout}: made while the rebase stood, not by patchkit")
    if made_in_patches:
        warn(f"kept {', '.join(made_in_patches)}: made in patches/ while the rebase stood, not by patchkit")
    for ref in saved:
        where = "a detached HEAD" if ref.startswith(f"{refs.SAVED}/HEAD/") else state.revision.branch_name
        warn(f"{where} in {checkout} had commits patchkit did not write; kept as {ref} "
             f"(git -C {checkout} branch NAME {ref} to work on them)")
    return RebaseReport("abort", state.spec, state.revision.commit, state.revision.branch_name,
                        checkout, aborted=True, warnings=tuple(warnings))


def _refuse_edits_finishing_cannot_take(state: RebaseState) -> None:
    """Every patch applied and the night at the target failed (rules no patch owns: patchkit.yaml's
    checks:), leaving its checkout: the finishing step applies the queue again and checks it out,
    so an edit there belongs to no patch and would be lost. Refused, naming where such a fix goes."""
    checkout = Path(state.checkout.path)
    if not (checkout / ".git").exists():
        return
    out = git.run(["status", "--porcelain", "-z", "--no-renames", "--untracked-files=no"], cwd=checkout)
    edited = [entry[3:] for entry in out.split("\0") if entry]
    if edited:
        shown = first_few(edited)
        raise PatchkitError(f"{shown} changed in {checkout}, but every patch applied: the step left re-applies the "
                            "queue and would discard them",
                            "fix the failing rule where it is (patchkit.yaml's checks:, or a patch's .checks.yaml), "
                            "or put the change in a patch of its own (its file in patches/, listed in the series); "
                            f"undo the edits (git -C {checkout} checkout -- .), then `patchkit rebase --continue`; "
                            "or `patchkit rebase --abort`")


def _current(project: Project) -> RebaseState:
    state = rebase_state.load(project)
    if state is None:
        raise PatchkitError("no rebase in progress", "start one with `patchkit rebase upstream@REF`")
    return state


def _step(project: Project, state: RebaseState, action: str, hooks: Hooks, warnings: list[str],
          warn: Callable[[str], None], fixed: tuple[Refreshed, ...] = ()) -> RebaseReport:
    """Apply the queue as it now is; stop at the first patch that needs a person, or finish."""
    _settle_series(project, state)
    report = RebaseReport(action, state.spec, state.revision.commit, state.revision.branch_name,
                          Path(state.checkout.path), fixed,
                          state.skipped[-1:] if action == "skip" else (),
                          state.dropped[-1:] if action == "drop" else ())
    if state.phase != FINISHING:
        stop = _advance(project, state, hooks, warn)
        if stop is not None:
            stopped, rest, prefix, files = stop
            testpoint.pause("rebase-stop")
            rebase_state.save(project, state.moved(phase=STOPPED, stopped=stopped.patch, stop_kind=stopped.kind,
                                                   prefix=prefix, files=files,
                                                   written=tuple(dict.fromkeys((*state.written, *files)))))
            return replace(report, stopped=stopped, rest=rest, warnings=tuple(warnings))
        state = state.moved(phase=FINISHING, stopped=None, stop_kind="", prefix="", files=())
        rebase_state.save(project, state)
    finished = _finish(project, state, hooks)
    if finished.refreshes:  # done: a patch disabled on the way still needs a person (exit 1)
        rebase_state.finish(project)
    elif not state.night_failed:
        rebase_state.save(project, state.moved(night_failed=True))
    return replace(report, finished=finished, warnings=tuple(warnings))


def _stop_kind(patch: Patch, result: PatchResult, failing_sources: set[str]) -> str | None:
    """Why PATCH needs a person at the target, or None."""
    if result.verdict is Verdict.FUZZED or not result.good:
        return result.verdict.value
    if str(patch.checks_path) in failing_sources:
        return CHECKS_FAILED
    return None


def _advance(project: Project, state: RebaseState, hooks: Hooks, warn: Callable[[str], None]
             ) -> tuple[Stop, tuple[PatchResult, ...], str, tuple[str, ...]] | None:
    """The queue at the target: None when every patch is good; else the stop (checked out with
    the patches before it, itself written as far as it goes), the rest's verdicts, the commit
    the stopped patch goes on, and the files it owns in the checkout."""
    queue = Queue.load(project)
    mirror = Mirror.open(project, state.upstream)
    revision = state.revision
    output = check_output(Path(state.checkout.path), project.root.resolve(), force=True)
    result_ref = refs.result(project.key, revision.branch_name)
    with mirror.locked(hooks.progress):
        with applied_at(project, mirror, revision, queue.patches, state.fuzz) as (applied, report):
            _refuse_overwriting(output.path, Mirror(applied.repo, mirror.url, mirror.branch, None), applied.tip,
                                (*state.written, *state.files), state.checkout.untracked)
            failing = {r.source for r in report.checks.failing} if report.checks else set()
            found = [(i, kind) for i, (p, r) in enumerate(zip(queue.patches, applied.patches))
                     if (kind := _stop_kind(p, r, failing))]
            if not found:
                return None
            k, kind = found[0]
            patch, result = queue.patches[k], applied.patches[k]
            prefix = next((r.commit for r in reversed(applied.patches[:k]) if r.commit), revision.commit)
            # Its own commit, where the core made one (fuzzed, partially applied, failing its checks).
            own_diff = git.run(["diff", "--binary", "--no-renames", prefix, result.commit],
                               cwd=applied.repo) if result.commit else ""
            applied.record(result_ref)
            git.run(["update-ref", result_ref, prefix], cwd=mirror.path)
            drift = drift_since_lock(mirror, queue.patches[:k + 1], applied.patches[:k + 1], revision.commit,
                                     hooks.progress)
            renames = dict(applied.renames)
            checks = CheckReport(report.checks.target, tuple(r for r in report.checks.rules
                                                             if r.source == str(patch.checks_path))) \
                if kind == CHECKS_FAILED and report.checks else None
            rest = applied.patches[k + 1:]
            findings = bisect_queue(mirror, project, queue.patches[:k + 1], mirror.locked_commit, revision.commit,
                                    applied.patches[:k + 1], report.checks, progress=hooks.progress)
        check_out(output, mirror, revision, result_ref, prefix, warn,
                  {r.commit: r.name for r in applied.patches[:k] if r.commit})
    checkout = output.path
    files = tuple(dict.fromkeys(renames.get(p, p) for p in patch.touched_paths))
    partial = None
    for stale in rebase_state.folder(project).glob("*.rej"):  # an earlier stop's
        stale.unlink()
    if own_diff:
        git.run(["apply", "--binary"], cwd=checkout, input=(own_diff + "\n").encode("utf-8", "surrogateescape"))
    elif kind not in (Verdict.MALFORMED.value, Verdict.ALREADY_APPLIED.value):
        partial = write_partial(checkout, patch, result, renames, rebase_state.folder(project))
    finding = next((f for f in findings if f.patch == patch.name), None)
    stop = Stop(patch.name, patch.subject, kind, result.detail, result.hunks,
                partial.markers if partial else (), partial.rejected if partial else (),
                partial.reject_file if partial else None, checks, finding,
                _next_command(kind, patch, checkout, finding, partial),
                tuple(d for d in drift if d.patch == patch.name))
    return stop, rest, prefix, files


def _refuse_overwriting(checkout: Path, trial: Mirror, tip: str, written: tuple[str, ...],
                        kept: Mapping[str, str]) -> None:
    """Refused, as `apply` without --force refuses: files of the queue at the target (TIP of the
    TRIAL) that the checkout holds untracked or ignored with other bytes, which a checkout of the
    rebase's would overwrite and `--abort` could not give back; and ignored ones with the same
    bytes, which the snapshot (KEPT: the untracked files) does not hold and the abort's reset
    would delete. Files a stop wrote are the rebase's."""
    if not (checkout / ".git").exists():
        return
    differing = set(overwritten_files(checkout, trial, tip))
    overwritten = [name for name in overwritten_files(checkout, trial, tip, same_too=True)
                   if name not in written and (name in differing or name not in kept)]
    if overwritten:
        shown = first_few(overwritten)
        raise _Overwrites(f"the queue at the target has {shown}, which {checkout} holds outside git (untracked with "
                          "other contents, or ignored): the rebase would overwrite or lose them",
                          "move them out of the way, then rerun `patchkit rebase --continue`")


def _next_command(kind: str, patch: Patch, checkout: Path, finding: Finding | None, partial: Partial | None) -> str:
    or_else = "; or `--skip` (disable it) / `--drop` (remove it)"
    if kind == Verdict.MALFORMED.value:
        return f"fix {patch.path}, then `patchkit rebase --continue`{or_else}"
    if kind == Verdict.ALREADY_APPLIED.value:
        recorded = f"; record it as `{finding.applied_upstream}`" if finding and finding.applied_upstream else ""
        return f"`patchkit rebase --drop`: upstream has the change{recorded}"
    if kind == Verdict.FUZZED.value:
        return f"look at the change in {checkout} (`git -C {checkout} diff`), then `patchkit rebase --continue`"
    if kind == CHECKS_FAILED:
        return (f"fix the sites the checks name in {checkout} (or the rules, {patch.checks_path}), then "
                f"`patchkit rebase --continue`{or_else}")
    todo = [*(["resolve the markers"] if partial and partial.markers else []),
            *([f"apply by hand what {partial.reject_file} holds"] if partial and partial.reject_file else [])]
    return f"in {checkout}, {' and '.join(todo) or 'edit the files'}, then `patchkit rebase --continue`{or_else}"


def _take_fix(project: Project, state: RebaseState, include: tuple[str, ...]) -> Refreshed | None:
    """The stopped patch's files as they now are in the checkout, written back into its patch
    file; None where the patch file itself is the fix (malformed), or the patch left the series."""
    queue = Queue.load(project)
    names = [p.name for p in queue.patches]
    if state.stopped not in names or state.stop_kind == Verdict.MALFORMED.value:
        return None
    k = names.index(state.stopped)
    patch = queue.patches[k]
    checkout = Path(state.checkout.path)
    own = set(state.files) | {os.path.normpath(p) for p in include}
    # the user's untracked files from before the rebase are theirs, not the patch's
    tree = _work_tree(checkout, [name for name in state.checkout.untracked if name not in own])
    changed = [p for p in git.run(["diff-tree", "-r", "-z", "--no-renames", "--name-only", state.prefix, tree],
                                  cwd=checkout).split("\0") if p]
    marked = find_markers(checkout, changed)
    if marked:
        shown = first_few(marked)
        raise PatchkitError(f"patchkit's conflict markers are still in {shown}",
                            "resolve them (keep the lines the patch should give), then rerun `patchkit rebase --continue`")
    outside = [p for p in changed if p not in own]
    if outside:
        raise PatchkitError(f"{', '.join(outside)} changed in {checkout}, outside the files of {patch.name}",
                            "add them to the patch with `--include PATH` (repeats), or undo those changes")
    if not changed:
        raise PatchkitError(f"{patch.name} changes nothing on {state.prefix[:12]} in {checkout}",
                            "edit its files, or disable it with `patchkit rebase --skip`, or remove it with `--drop`")
    revision = state.revision
    author = patch.author
    env = {"GIT_AUTHOR_NAME": author.name, "GIT_AUTHOR_EMAIL": author.email,
           "GIT_AUTHOR_DATE": patch.date or revision.date,
           **_committer(revision)}
    commit = git.run(["commit-tree", tree, "-p", state.prefix], cwd=checkout,
                     input=patch.message.encode(), env=env)
    mirror = Mirror.open(project, state.upstream)
    result = PatchResult(patch.name, patch.subject, patch.sha256, Verdict.CLEAN, (), commit=commit)
    (refreshed,) = refresh_queue(Mirror(checkout, mirror.url, mirror.branch, None),
                                 Queue(queue.series_path, (patch,)), [result])
    _prove(mirror, revision, queue.patches[:k], patch, refreshed, tree)
    if refreshed.change is not Change.UNCHANGED:
        atomic_write(patch.path, refreshed.data)
    return refreshed


def _prove(mirror: Mirror, revision: Revision, before: tuple[Patch, ...], patch: Patch, refreshed: Refreshed,
           tree: str) -> None:
    """The refreshed patch, applied through the core after the patches before it, must give the
    tree the person made, without fuzz: else writing it would lock something else."""
    with tempfile.TemporaryDirectory(prefix="patchkit-rebase-") as tmp:
        path = Path(tmp) / patch.name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(refreshed.data)
        with mirror.locked(), apply_queue(mirror, revision, [*before, read_patch(path, patch.name)]) as applied:
            result = applied.patches[-1]
            if result.verdict is not Verdict.CLEAN or applied.tree != tree:
                why = result.detail or f"it applies {result.verdict.value} and gives another tree"
                raise PatchkitError(f"{patch.name} as refreshed from your change does not apply back to it "
                                    f"at {revision.commit[:12]}: {why}",
                                    "make the change unambiguous where it lands, then rerun `patchkit rebase --continue`")


def _work_tree(checkout: Path, left_out: list[str]) -> str:
    """The tree of the checkout's work tree, staged or not, new files included (what .gitignore
    ignores, and LEFT_OUT, left out), written from a scratch index: the user's index stays as it is."""
    with tempfile.TemporaryDirectory(prefix="patchkit-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git.run(["read-tree", "HEAD"], cwd=checkout, env=env)
        tracked = set(git.run(["ls-files", "-z"], cwd=checkout, env=env).split("\0"))
        git.run(["add", "--all", "--", "."], cwd=checkout, env=env)
        untracked = [name for name in left_out if name not in tracked]  # one HEAD took over is HEAD's
        if untracked:
            git.run(["--literal-pathspecs", "rm", "--cached", "--quiet", "--ignore-unmatch", "--", *untracked],
                    cwd=checkout, env=env)
        return git.run(["write-tree"], cwd=checkout, env=env)


def _committer(revision: Revision) -> dict[str, str]:
    """patchkit's fixed committer, dated at the upstream commit, as the core's commits are."""
    return {"GIT_COMMITTER_NAME": git.PATCHKIT_NAME, "GIT_COMMITTER_EMAIL": git.PATCHKIT_EMAIL,
            "GIT_COMMITTER_DATE": revision.date}


def _finish(project: Project, state: RebaseState, hooks: Hooks) -> NightlyReport:
    """Every patch good at the target: a good night there (the queue applied and checked out,
    every patch refreshed, the bases recorded and the lock moved, forward only); then the
    refreshed queue, applied again through the core, must give the branch's tree."""
    checkout = Path(state.checkout.path)
    # The commit the rebase began on, and its branch: a symbolic target (HEAD, a branch) may have
    # moved in the mirror meanwhile, and every fix was made on this commit.
    report = run_nightly(project, NightlyOptions(spec=f"upstream@{state.revision.commit}", upstream=state.upstream,
                                                 fetch=False, output=checkout, force=True,
                                                 branch_name=state.revision.branch_name), hooks)
    if not report.refreshes:
        return report
    write_refresh(project, report)
    mirror = Mirror.open(project, state.upstream)
    with mirror.locked(), applied_at(project, mirror, state.revision, Queue.load(project).patches,
                                     check=False) as (_, again):
        head_tree = git.run(["rev-parse", "HEAD^{tree}"], cwd=checkout)
        if again.tree != head_tree or not again.passed:
            raise PatchkitError(f"the refreshed queue gives tree {again.tree[:12]} at {state.revision.commit[:12]}, "
                                f"the branch in {checkout} has {head_tree[:12]}",
                                "run `patchkit rebase --continue` again, or `--abort`")
    return report


def _settle_series(project: Project, state: RebaseState) -> None:
    """The series as the state says: skipped patches disabled, dropped ones gone with their
    files. Done again on every step, so a run killed half way through one is finished by the next."""
    text = read_text(project.series_path)
    new = text
    for name in state.skipped:
        new = disable(new, name, disabled_line(name, date.today().isoformat(), _why(state, name)))
    for name in state.dropped:
        new = disable(new, name, None)
    if new != text:
        write_series(project.series_path, new)
    for name in state.dropped:
        (project.patches_dir / name).unlink(missing_ok=True)


def _why(state: RebaseState, name: str) -> str:
    return f"{state.stop_kind if state.stopped == name else 'needs a person'} at upstream {state.revision.commit[:12]}"
