"""`patchkit nightly`: the fork's nightly job, in order.

Apply the queue at the target (with its site checks and builds); on a fully good night refresh
the patches and move the lock; otherwise name, for each patch that needs a human, the upstream
commit that did it (an in-memory bisect from the lock). A build that fails on a good apply is built
again without the queue, to say whose fault it is.

`run_nightly` decides and writes nothing of the fork's: the refreshed patches and the new lock are
in its report, and `write_refresh` writes them, after the night's reports are staged (publish.py),
so that the exit code is always the night's and a report never says the lock moved when it did not.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit import __version__, git, testpoint
from patchkit.apply import Verdict
from patchkit.nightly.bisect import Finding, bisect_queue
from patchkit.errors import EnvironmentProblem, PatchkitError
from patchkit.nightly.refresh import Change, Refreshed, refresh_queue, rekey_bases, write_refreshed
from patchkit.project import Lock, Project
from patchkit.patchfile.series import read_text
from patchkit.queue import Queue
from patchkit.rebase.series import disabled
from patchkit.upstream import Mirror
from patchkit.hooks import Hooks, collect_warnings
from patchkit.pipeline import ApplyOptions, ApplyReport, run_apply
from patchkit.plain import NOT_IN_JSON

if TYPE_CHECKING:
    from patchkit.backends import BuildReport

DISABLED = "disabled"  # a finding: a patch the series lists as disabled (`rebase --skip`) needs a person


@dataclass(frozen=True)
class NightlyOptions:
    spec: str = "upstream@HEAD"
    upstream: str | None = None
    fetch: bool = True
    fuzz: int = 0
    output: Path | None = None
    force: bool = False
    refresh: bool = True
    update_lock: bool = True
    allow_rewind: bool = False
    build: tuple[str, ...] = ()
    branch_name: str | None = None  # as ApplyOptions.branch_name


@dataclass(frozen=True)
class BuildBlame:
    """A backend that failed on a good apply, built again on the unpatched target."""

    backend: str
    fault: str  # "upstream" (fails without the queue too), "queue" (builds without it), "unknown"
    detail: str
    unpatched: str = "not-run"  # the unpatched build's status: the fact the CI summary judges by
    log: bytes = field(default=b"", repr=False, metadata=NOT_IN_JSON)  # the unpatched build's log


@dataclass(frozen=True)
class NightlyReport:
    apply: ApplyReport
    locked_commit: str | None  # the lock before the night
    findings: tuple[Finding, ...] = ()
    refreshed: tuple[Refreshed, ...] = ()  # a good night's patches as `write_refresh` writes them
    lock_moved: bool = False  # `write_refresh` writes `lock`, a new one
    lock: Lock | None = field(default=None, metadata=NOT_IN_JSON)
    build_blame: tuple[BuildBlame, ...] = ()
    warnings: tuple[str, ...] = ()  # the night's own; the apply's are in `apply`
    passed: bool = field(init=False)  # a field, so the JSON report carries it

    def __post_init__(self) -> None:
        """Nobody needs to look: the apply, checks and builds passed, nothing was fuzzed, and no
        patch is disabled in the series."""
        object.__setattr__(self, "passed", self.refreshes and not self.disabled)

    @property
    def refreshes(self) -> bool:
        """The queue as listed is good: the night refreshes the patches and moves the lock (a
        disabled patch still makes it one a person must look at)."""
        return self.apply.passed and not self.fuzzed

    @property
    def disabled(self) -> tuple[str, ...]:
        return tuple(f.patch for f in self.findings if f.kind == DISABLED)

    @property
    def fuzzed(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.apply.patches if p.verdict is Verdict.FUZZED)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def run_nightly(project: Project, options: NightlyOptions, hooks: Hooks = Hooks(), *,
                queue: Queue | None = None) -> NightlyReport:
    """The night, decided: the fork's files are written by `write_refresh`. QUEUE: already loaded."""
    queue = Queue.load(project) if queue is None else queue
    mirror = Mirror.open(project, options.upstream)
    locked = mirror.locked_commit
    warnings, warn = collect_warnings(hooks)
    off = tuple(Finding(name, DISABLED, None, 0, 0, 0, 0, True, False, None, None,
                        f"disabled in the series ({why}): enable its line in the series and fix it "
                        "(`patchkit rebase` stops at it), or remove it")
                for name, why in disabled(read_text(project.series_path)))

    # The apply's pin guard runs before any work; the lock itself is written by write_refresh,
    # once, after the refreshed patches, so an interruption never leaves a lock naming other bytes.
    applied = run_apply(project, ApplyOptions(
        spec=options.spec, upstream=options.upstream, fetch=options.fetch, fuzz=options.fuzz,
        output=options.output, force=options.force, check=True, build=options.build,
        allow_rewind=options.allow_rewind, branch_name=options.branch_name),
        hooks, queue=queue, guard_pin=options.update_lock)
    report = NightlyReport(applied, locked, off)
    if report.fuzzed:
        warn(f"not refreshed, lock not moved: {', '.join(report.fuzzed)} needed fuzz")
    # One lock, one upstream commit for the whole queue: the other patches refreshed onto the
    # target under the lock that stays would be bytes `verify` cannot make at the locked commit.
    drifting = [p.name for p in queue.patches if any(d.patch == p.name and not d.reviewed for d in applied.drift)]
    waiting = [p.name for p in queue.patches if p.name not in drifting]
    for name in drifting:
        warn(f"not refreshed, lock not moved: {name} drifts (see its finding)"
             + (f"; the refresh of {', '.join(waiting)} waits for it: the lock names one upstream commit for "
                "the whole queue" if waiting else "")
             + "; once a person has looked, a `Reviewed-Drift:` trailer in it lets the next night refresh and lock")
    if report.refreshes:
        return replace(_refresh(project, mirror, queue, report, options), warnings=tuple(warnings))
    findings = off
    if any(not p.good for p in applied.patches) or (applied.checks is not None and not applied.checks.passed):
        if locked is None:
            warn("no patchkit.lock: the upstream commit that broke a patch cannot be named; "
                 "run `patchkit apply upstream@REF --update-lock` on a good commit")
        with mirror.locked():
            findings += tuple(bisect_queue(mirror, project, queue.patches, locked, applied.upstream_commit,
                                          applied.patches, applied.checks, progress=hooks.progress))
    findings += _drift_findings(applied)
    blame = _blame_builds(project, mirror, applied.upstream_commit, applied.builds, hooks) \
        if applied.builds is not None and all(p.good for p in applied.patches) else ()
    return replace(report, findings=findings, build_blame=blame, warnings=tuple(warnings))


def _drift_findings(applied: ApplyReport) -> tuple[Finding, ...]:
    """One finding per patch with drift no one reviewed, naming its first changed declaration's
    commit (the apply found them, since the lock); each drift's own commit is in its detail."""
    drifts: dict[str, list] = {}
    for d in applied.drift:
        if not d.reviewed:
            drifts.setdefault(d.patch, []).append(d)
    findings = []
    for patch, found in drifts.items():
        first = found[0]
        detail = "; ".join(d.detail + (f", changed by {d.culprit.commit[:12]} \"{d.culprit.subject}\""
                                       if d.culprit and d is not first else "") for d in found)
        findings.append(Finding(patch, "drift", first.culprit, first.probes, 0, first.candidates,
                                math.ceil(math.log2(first.candidates)) + 2 if first.candidates else 2, True,
                                first.culprit is not None, None, None, detail))
    return tuple(findings)


def _refresh(project: Project, mirror: Mirror, queue: Queue, report: NightlyReport,
             options: NightlyOptions) -> NightlyReport:
    """A good night: the patches regenerated from their commits, and the lock that names them."""
    refreshed: list[Refreshed] = []
    hashes = {p.name: p.sha256 for p in report.apply.patches}
    if options.refresh:
        with mirror.locked():
            refreshed = refresh_queue(mirror, queue, report.apply.patches)
            rekey_bases(mirror, refreshed)  # new keys beside the old: harmless if nothing is written
        hashes = {r.name: r.new_sha256 for r in refreshed}
    lock = Lock(mirror.url, report.apply.upstream_commit, hashes, report.apply.tree, __version__)
    moved = options.update_lock and lock != project.lock()
    return replace(report, refreshed=tuple(refreshed), lock_moved=moved, lock=lock if moved else None)


def write_refresh(project: Project, report: NightlyReport) -> None:
    """Write the refreshed patches into patches/, each whole, then the lock; a failure says what was
    written and what was not. Where the lock stays (--no-update-lock, or nothing changed), so do
    the patches it names: patches/ refreshed onto another commit than the lock's fails `verify`
    (the refreshed patches are in the report folder either way)."""
    if report.lock is None:
        return
    try:
        write_refreshed(project, report.refreshed)
        testpoint.pause("night-write")
        report.lock.write(project.lock_path)
    except (OSError, PatchkitError) as exc:
        written = [r.name for r in report.refreshed if r.change is not Change.UNCHANGED and _holds(project, r)]
        done = f"patches/ has the refreshed {', '.join(written)}" if written else "patches/ is unchanged"
        raise EnvironmentProblem(f"the night's refresh stopped half way: {done}, patchkit.lock was not "
                                 f"moved, no report was written ({exc})",
                                 "free the space or fix the permissions, then rerun the night") from None


def _holds(project: Project, refreshed: Refreshed) -> bool:
    try:
        return (project.patches_dir / refreshed.name).read_bytes() == refreshed.data
    except OSError:
        return False


def _blame_builds(project: Project, mirror: Mirror, upstream_commit: str, builds: BuildReport,
                  hooks: Hooks) -> tuple[BuildBlame, ...]:
    """Build each failed backend again on the unpatched target with the same recipe (ccache makes
    it cheap): failing there too is upstream's fault, else the queue's."""
    from patchkit.backends import Status, run_builds
    from patchkit.backends.recipe import default_recipes_dir, load_recipes, select

    failed = [r.backend for r in builds.results if r.status is Status.FAILED]
    if not failed:
        return ()
    recipes = select(load_recipes(default_recipes_dir(project)), failed)
    with tempfile.TemporaryDirectory(prefix="patchkit-unpatched-") as tmp:
        tree = Path(tmp) / "llama.cpp"
        git.run(["clone", "--quiet", "--local", "--no-checkout", "--", str(mirror.path), str(tree)])
        git.run(["checkout", "--quiet", "--detach", upstream_commit], cwd=tree)
        plain = run_builds(tree, recipes, build_dir=tree / "build", upstream_commit=upstream_commit,
                           progress=hooks.build_progress)
        blame = []
        for result in plain.results:
            # Read before the folder goes: the report keeps it (logs/BACKEND-unpatched.log).
            log = result.log.read_bytes() if result.log and result.log.is_file() else b""
            status = result.status.value
            if result.status is Status.FAILED:
                blame.append(BuildBlame(result.backend, "upstream", "fails on the unpatched target too", status, log))
            elif result.status is Status.OK:
                blame.append(BuildBlame(result.backend, "queue", "builds on the unpatched target", status, log))
            else:
                blame.append(BuildBlame(result.backend, "unknown", f"the unpatched build was {status}", status, log))
    return tuple(blame)
