"""`patchkit apply` end to end, and the read-only apply the other commands compose.

`applied_at` is the queue applied at one upstream commit with its site checks, read in a scratch
repository (`apply.apply_queue`): verify, export, dist and the demo's tour read it there and
leave the mirror as it was. `run_apply` is the command: it records the result in the mirror,
checks it out, builds, and decides from the results whether the run was good enough to record
3-way bases and the lock.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

from patchkit import __version__, git, refs, testpoint
from patchkit.apply import AppliedQueue, PatchResult, Verdict, apply_queue
from patchkit.hooks import Hooks, collect_warnings
from patchkit.output import check_out, check_output, cloning
from patchkit.plain import plain
from patchkit.project import Lock, Project
from patchkit.queue import Patch, Queue
from patchkit.upstream import Mirror, Revision

if TYPE_CHECKING:
    from patchkit.backends import BuildReport, Recipe
    from patchkit.checks import CheckReport, Rule
    from patchkit.drift import Drift
    from patchkit.smoke.run import SmokeReport


@dataclass(frozen=True)
class ApplyOptions:
    spec: str = "upstream@HEAD"
    upstream: str | None = None  # --upstream URL_OR_PATH
    fetch: bool = True
    fuzz: int = 0
    base: str | None = None  # --base REF: the upstream commit the queue was made from
    output: Path | None = None
    force: bool = False
    update_lock: bool = False
    allow_rewind: bool = False  # let --update-lock move the lock to a commit without the locked one
    check: bool = True
    build: tuple[str, ...] = ()
    smoke: bool = False  # after a good build, the runtime smoke test with the first backend's recipe
    branch_name: str | None = None  # the output branch, when not the spec's own (a rebase's pinned commit)


@dataclass(frozen=True)
class ApplyReport:
    upstream_url: str
    ref: str
    upstream_commit: str
    branch: str
    output: Path | None  # None: nothing checked out (verify, export, dist, the demo's tour)
    tip: str  # the branch's commit (the upstream commit when nothing applied)
    tree: str
    patches: tuple[PatchResult, ...]
    checks: CheckReport | None = None  # when the applied patches have rules
    builds: BuildReport | None = None  # with --build
    smoke: SmokeReport | None = None  # with --smoke
    drift: tuple[Drift, ...] = ()  # since the lock, with the site checks (reviewed ones included)
    lock_updated: bool = False
    bases_recorded: int = 0
    warnings: tuple[str, ...] = ()
    passed: bool = field(init=False)  # a field, not a property, so the JSON report carries it

    def __post_init__(self) -> None:
        """Nothing needs a human: every patch good, every check and build passed, no drift unreviewed."""
        object.__setattr__(self, "passed", all(p.good for p in self.patches)
                           and (self.checks is None or self.checks.passed)
                           and all(d.reviewed for d in self.drift)
                           and (self.builds is None or self.builds.exit_code == 0)
                           and (self.smoke is None or self.smoke.passed))

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def resolve(mirror: Mirror, spec: str, fetch: bool, hooks: Hooks,
            warn: Callable[[str], None] | None) -> Revision:
    """SPEC's commit, after a fetch when FETCH; the caller holds the mirror's lock."""
    def progress(line: str) -> None:
        testpoint.pause("fetch")
        if hooks.progress:
            hooks.progress(line)

    return mirror.resolve(spec, fetch=fetch, progress=progress, warn=warn)


@contextlib.contextmanager
def applied_at(project: Project, mirror: Mirror, revision: Revision, patches: Sequence[Patch], fuzz: int = 0,
               check: bool = True, base: Revision | None = None) -> Iterator[tuple[AppliedQueue, ApplyReport]]:
    """PATCHES applied at REVISION and, with CHECK, their site checks on the result; nothing is
    checked out or recorded. The commits are readable in the scratch repository until the block
    ends; the report's warnings are the apply's own (said to no one: the caller decides)."""
    with apply_queue(mirror, revision, patches, fuzz, base) as applied:
        committed = {r.name for r in applied.patches if r.commit}
        checks = _run_checks(project, [p for p in patches if p.name in committed], applied) if check else None
        yield applied, ApplyReport(mirror.url, revision.ref, revision.commit, revision.branch_name, None,
                                   applied.tip, applied.tree, applied.patches, checks,
                                   warnings=applied.warnings)


def run_apply(project: Project, options: ApplyOptions, hooks: Hooks = Hooks(), *, queue: Queue | None = None,
              guard_pin: bool = False) -> ApplyReport:
    """`patchkit apply`. QUEUE: already loaded by the caller (the nightly); GUARD_PIN: the caller
    moves the lock after this run (the nightly), so a target the lock would move back to is
    refused as under --update-lock."""
    # Every bad input is found before anything is written, the mirror and the output included.
    queue = Queue.load(project) if queue is None else queue
    rules = _rules(project, queue.patches) if options.check or options.smoke else None
    if options.smoke:
        from patchkit.smoke.run import require_platform

        require_platform()
    recipes = _recipes(project, options.build) if options.build else []
    mirror = Mirror.open(project, options.upstream)
    output = check_output((options.output or project.output_dir).resolve(), project.root.resolve(), options.force)
    warnings, warn = collect_warnings(hooks)

    with mirror.locked(hooks.progress):
        revision = resolve(mirror, options.spec, options.fetch, hooks, warn)
        revision = replace(revision, branch_name=options.branch_name or revision.branch_name)
        base = mirror.resolve(options.base, fetch=False) if options.base else None
        if (options.update_lock or guard_pin) and not options.allow_rewind:
            mirror.guard_pin(revision.commit)
        result_ref = refs.result(project.key, revision.branch_name)
        with cloning(output, mirror, revision.commit) as clone:  # a new output's files written meanwhile
            with applied_at(project, mirror, revision, queue.patches, options.fuzz, options.check,
                            base) as (applied, report):
                applied.record(result_ref)
            check_out(output, mirror, revision, result_ref, report.tip, warn,
                      {p.commit: p.name for p in report.patches if p.commit}, clone)
        for warning in report.warnings:  # the apply's own (fuzz), said after the checkout's
            warn(warning)
        report = replace(report, output=output.path)
        if options.build and report.passed:
            report = replace(report, builds=_run_builds(output.path, recipes, report.upstream_commit, hooks))
            if options.smoke and report.passed:
                from patchkit.smoke.run import run_smoke

                report = replace(report, smoke=run_smoke(output.path, rules or [], recipes[0],
                                                         upstream_commit=report.upstream_commit,
                                                         progress=hooks.progress,
                                                         build_progress=hooks.build_progress))
        elif options.build:
            warn("builds not run: the apply needs attention first")
        if options.check:
            report = replace(report, drift=drift_since_lock(mirror, queue.patches, report.patches,
                                                            report.upstream_commit, hooks.progress))
        testpoint.pause("record")
        report = _record(project, mirror, report, options.update_lock, warn)
    report = replace(report, warnings=tuple(warnings))  # including those said while recording
    project.save_last_report(plain(report))
    return report


def _record(project: Project, mirror: Mirror, report: ApplyReport, update_lock: bool,
            warn: Callable[[str], None]) -> ApplyReport:
    """After a fully good run: keep each patch's commit as its 3-way base; maybe write the lock."""
    if not report.passed:
        if update_lock:
            warn("patchkit.lock not updated: the run needs attention")
        return report
    bases = {p.sha256: p.commit for p in report.patches if p.commit and p.verdict is not Verdict.FUZZED}
    if bases:
        mirror.record_bases(bases)
    lock_updated = False
    if update_lock:
        if any(p.verdict is Verdict.FUZZED for p in report.patches):
            warn("patchkit.lock not updated: a fuzzed patch is never locked; refresh it first")
        else:
            Lock(report.upstream_url, report.upstream_commit,
                 {p.name: p.sha256 for p in report.patches}, report.tree, __version__).write(project.lock_path)
            lock_updated = True
    return replace(report, bases_recorded=len(bases), lock_updated=lock_updated)


def _rules(project: Project, patches: Iterable[Patch]) -> list[Rule] | None:
    """The site rules of PATCHES and of patchkit.yaml, validated."""
    patches = list(patches)
    if not project.checks and not any(p.checks_path.exists() for p in patches):
        return None  # nothing to check: do not pay for loading the C++ parser
    from patchkit.checks import queue_rules

    return queue_rules(project, patches)


def _run_checks(project: Project, patches: list[Patch], applied: AppliedQueue) -> CheckReport | None:
    """The site checks of the applied patches on the result, read from its objects."""
    rules = _rules(project, patches)
    if rules is None:
        return None
    from patchkit.checks import run_checks

    with git.ObjectReader(applied.repo) as reader:
        return run_checks(rules, lambda path: reader.read(applied.tip, path), renames=applied.renames)


def drift_since_lock(mirror: Mirror, patches: Sequence[Patch], results: Sequence[PatchResult], target: str,
                     progress: Callable[[str], None] | None) -> tuple[Drift, ...]:
    """What PATCHES (RESULTS at TARGET, their commits in the mirror) rely on that upstream changed
    since the lock (nothing without one); the caller holds the mirror's lock."""
    locked = mirror.locked_commit
    if locked is None or locked == target or \
            git.run(["cat-file", "-t", locked], cwd=mirror.path, check=False) != "commit":
        return ()
    from patchkit.drift import find_drift

    return find_drift(mirror, patches, results, locked, target, progress)


def _recipes(project: Project, backends: tuple[str, ...]) -> list[Recipe]:
    """The recipes of BACKENDS, validated."""
    from patchkit.backends import load_recipes, select
    from patchkit.backends.recipe import default_recipes_dir

    return select(load_recipes(default_recipes_dir(project)), backends)


def _run_builds(tree: Path, recipes: list[Recipe], upstream_commit: str, hooks: Hooks) -> BuildReport:
    from patchkit.backends import run_builds

    return run_builds(tree, recipes, build_dir=tree / "build", upstream_commit=upstream_commit,
                      progress=hooks.build_progress)
