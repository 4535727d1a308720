"""`patchkit apply` end to end: resolve, apply, commit, check out, check, build, record.

Each step lives in its own module; this one only puts them in order and decides, from their
results, whether the run was good enough to record 3-way bases and the lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from patchkit import __version__, git, refs, testpoint
from patchkit.apply import Applier, PatchResult, Verdict, fast_import
from patchkit.output import check_out, check_output
from patchkit.project import Lock, Project
from patchkit.queue import Patch, Queue
from patchkit.hooks import Hooks
from patchkit.plain import plain
from patchkit.upstream import Mirror

@dataclass(frozen=True)
class ApplyOptions:
    spec: str = "upstream@HEAD"
    upstream: str | None = None  # --upstream URL_OR_PATH
    fetch: bool = True
    fuzz: int = 0
    output: Path | None = None
    force: bool = False
    update_lock: bool = False
    allow_rewind: bool = False  # let --update-lock move the lock to a commit without the locked one
    guard_pin: bool = False  # refuse a target the lock would move back to, even without update_lock
    check: bool = True
    build: tuple[str, ...] = ()
    smoke: bool = False  # after a good build, the runtime smoke test with the first backend's recipe
    record: bool = True  # keep 3-way bases and the last report (verify's scratch run does not)
    checkout: bool = True  # False: the result is only in the mirror's objects (runs that read them there)

    def __post_init__(self) -> None:
        if (self.build or self.smoke) and not self.checkout:
            raise ValueError("builds and the smoke test need a checked-out tree")


@dataclass(frozen=True)
class ApplyReport:
    upstream_url: str
    ref: str
    upstream_commit: str
    branch: str
    output: Path | None  # None: nothing checked out (ApplyOptions.checkout)
    tip: str  # the branch's commit (the upstream commit when nothing applied)
    tree: str
    patches: tuple[PatchResult, ...]
    checks: Any = None  # patchkit.checks.CheckReport, when the applied patches have rules
    builds: Any = None  # patchkit.backends.BuildReport, with --build
    smoke: Any = None  # patchkit.smoke.run.SmokeReport, with --smoke
    lock_updated: bool = False
    bases_recorded: int = 0
    warnings: tuple[str, ...] = ()
    passed: bool = field(init=False)  # a field, not a property, so the JSON report carries it

    def __post_init__(self) -> None:
        """Nothing needs a human: every patch good, every check and build passed."""
        object.__setattr__(self, "passed", all(p.good for p in self.patches)
                           and (self.checks is None or self.checks.passed)
                           and (self.builds is None or self.builds.exit_code() == 0)
                           and (self.smoke is None or self.smoke.passed))

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def run_apply(project: Project, options: ApplyOptions, hooks: Hooks = Hooks()) -> ApplyReport:
    # Every bad input is found before anything is written, the mirror and the output included.
    queue = Queue.load(project)
    rules = _rules(project, queue.patches) if options.check or options.smoke else None
    if options.smoke:
        from patchkit.smoke.run import require_platform

        require_platform()
    recipes = _recipes(project, options.build) if options.build else []
    mirror = Mirror.open(project, options.upstream)
    output = (check_output((options.output or project.output_dir).resolve(), project.root.resolve(), options.force)
              if options.checkout else None)
    warnings: list[str] = []

    def warn(message: str) -> None:
        warnings.append(message)
        if hooks.warn:
            hooks.warn(message)

    def progress(line: str) -> None:
        testpoint.pause("fetch")
        if hooks.progress:
            hooks.progress(line)

    with mirror.locked():
        revision = mirror.resolve(options.spec, fetch=options.fetch, progress=progress, warn=warn)
        if (options.update_lock or options.guard_pin) and not options.allow_rewind:
            mirror.guard_pin(revision.commit)
        with mirror.reader() as reader:
            applier = Applier(mirror, revision, reader, options.fuzz)
            applied = [applier.apply(patch) for patch in queue.patches]
            committed = [a for a in applied if a.changes]
            result_ref = refs.result(project.key, revision.branch_name)
            ids = dict(zip((a.patch.name for a in committed),
                           fast_import(mirror, revision, committed, result_ref)))
            testpoint.pause("fast-import")
            results = tuple(replace(a.result, commit=ids.get(a.patch.name)) for a in applied)
            tip = ids[committed[-1].patch.name] if committed else revision.commit
            checks = _run_checks(project, [a.patch for a in committed], reader, tip) if options.check else None
        if output:
            check_out(output, mirror, revision, result_ref, tip, warn)
        tree = git.run(["rev-parse", f"{tip}^{{tree}}"], cwd=mirror.path)
        for r in results:
            if r.verdict is Verdict.FUZZED:
                warn(f"{r.name} was placed with fuzz: review it, then refresh the patch")
        report = ApplyReport(mirror.url, revision.ref, revision.commit, revision.branch_name,
                             output.path if output else None, tip, tree, results, checks)
        if options.build and report.passed:
            report = replace(report, builds=_run_builds(report.output, recipes, report.upstream_commit, hooks))
            if options.smoke and report.passed:
                from patchkit.smoke.run import run_smoke

                report = replace(report, smoke=run_smoke(report.output, rules or [], recipes[0],
                                                         upstream_commit=report.upstream_commit,
                                                         progress=hooks.progress,
                                                         build_progress=hooks.build_progress))
        elif options.build:
            warn("builds not run: the apply needs attention first")
        testpoint.pause("record")
        if options.record:
            report = _record(project, mirror, report, options.update_lock, warn)
    report = replace(report, warnings=tuple(warnings))  # including those said while recording
    if options.record:
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


def _rules(project: Project, patches: Iterable[Patch]) -> list | None:
    """The site rules of PATCHES and of patchkit.yaml, validated (-> list[patchkit.checks.Rule])."""
    patches = list(patches)
    if not project.checks and not any(p.checks_path.exists() for p in patches):
        return None  # nothing to check: do not pay for loading the C++ parser
    from patchkit.checks import queue_rules

    return queue_rules(project, patches)


def _run_checks(project: Project, patches: list[Patch], reader: git.ObjectReader, tip: str):
    """The site checks of the applied patches on the result, read from the mirror's objects."""
    rules = _rules(project, patches)
    if rules is None:
        return None
    from patchkit.checks import run_checks

    return run_checks(rules, lambda path: reader.read(tip, path))


def _recipes(project: Project, backends: tuple[str, ...]) -> list:
    """The recipes of BACKENDS, validated (-> list[patchkit.backends.Recipe])."""
    from patchkit.backends import load_recipes, select
    from patchkit.backends.recipe import default_recipes_dir

    return select(load_recipes(default_recipes_dir(project)), backends)


def _run_builds(tree: Path, recipes: list, upstream_commit: str, hooks: Hooks):
    from patchkit.backends import run_builds

    return run_builds(tree, recipes, build_dir=tree / "build", upstream_commit=upstream_commit,
                      progress=hooks.build_progress)
