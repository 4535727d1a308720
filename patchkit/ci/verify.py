"""`patchkit verify`, the gate for pull requests to the fork repository: the queue applied at its
locked commit and refreshed in memory must give the committed patches and lock, byte for byte."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from pathlib import Path

from patchkit.errors import PatchkitError
from patchkit.fileio import atomic_write, ensure_writable
from patchkit.nightly.refresh import Change, Refreshed, refresh_queue
from patchkit.project import LOCK_NAME, Lock, Project
from patchkit.queue import Queue
from patchkit.upstream import Mirror
from patchkit.hooks import Hooks, collect_warnings
from patchkit.pipeline import ApplyReport, applied_at, resolve


@dataclass(frozen=True)
class VerifyOptions:
    upstream: str | None = None  # --upstream URL_OR_PATH
    fetch: bool = True
    output_dir: Path | None = None  # where the regenerated patches/ and patchkit.lock go


@dataclass(frozen=True)
class FileDrift:
    name: str  # as listed in series
    path: str  # relative to the project root: patches/NAME.patch
    diff: str  # unified diff, committed -> regenerated


@dataclass(frozen=True)
class LockDrift:
    field: str  # "upstream.commit", "tree", "patches.NAME" or "patches (order)"
    old: str | None
    new: str | None


@dataclass(frozen=True)
class SeriesDrift:
    """The lock and the series name different patches: one was edited without the other, so the lock
    does not describe this queue, whether or not the queue applies."""
    path: str  # the series file as the fork repository names it: patches/series
    empty: bool  # the series lists no patch (the lock lists some)
    not_in_series: tuple[str, ...]  # the lock lists them, the series does not (lock order)
    not_in_lock: tuple[str, ...]  # the series lists them, the lock does not (series order)


@dataclass(frozen=True)
class VerifyReport:
    upstream_url: str
    upstream_commit: str  # the locked commit
    apply: ApplyReport  # the queue at the locked commit (read in a scratch repository, never checked out)
    series: SeriesDrift | None  # None: the lock and the series list the same patches
    refreshed: tuple[Refreshed, ...]  # empty when a patch did not apply there
    files: tuple[FileDrift, ...]  # the patch files a refresh would change
    lock: tuple[LockDrift, ...]  # the lock fields a refresh would change (never the tool version)
    output_dir: Path | None
    passed: bool = field(init=False)

    def __post_init__(self) -> None:
        """The lock lists the series' patches, the queue applies at its locked commit, passes its checks,
        and refreshing changes nothing."""
        object.__setattr__(self, "passed", self.series is None and self.apply.passed
                           and not self.files and not self.lock)

    @property
    def applies(self) -> bool:
        """Every patch applies at the locked commit (an empty queue does)."""
        return all(p.good for p in self.apply.patches)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def require_lock(project: Project) -> Lock:
    """The lock verify compares with; without one there is nothing to verify (bad input, exit 2)."""
    lock = project.lock()
    if lock is None:
        raise PatchkitError(f"{project.lock_path} does not exist: there is no locked state to verify",
                            "run `patchkit apply upstream@HEAD --update-lock` and commit patchkit.lock")
    return lock


def verify_queue(project: Project, lock: Lock, options: VerifyOptions, hooks: Hooks = Hooks()) -> VerifyReport:
    """Apply the queue at LOCK's commit, refresh it in memory, and compare with what is committed."""
    if options.output_dir and options.output_dir.exists() and not options.output_dir.is_dir():
        raise PatchkitError(f"--output-dir {options.output_dir} is not a folder", "give a folder")
    queue = Queue.load(project)
    if options.output_dir:  # every file it will get, checked before the work
        ensure_writable(options.output_dir / LOCK_NAME,
                        *(options.output_dir / _relative(project, p.path) for p in queue.patches))
    mirror = Mirror.open(project, options.upstream)
    warnings, warn = collect_warnings(hooks)
    with mirror.locked(hooks.progress):  # only to fetch: what follows reads the mirror and writes nothing into it
        revision = resolve(mirror, "upstream@locked", options.fetch, hooks, warn)
    refreshed: tuple[Refreshed, ...] = ()
    files: list[FileDrift] = []
    lock_drift: list[LockDrift] = []
    with applied_at(project, mirror, revision, queue.patches) as (result, applied):
        applied = replace(applied, warnings=(*warnings, *applied.warnings))
        applies = all(p.good for p in applied.patches)
        if applies:
            refreshed = tuple(refresh_queue(result.scratch_mirror(), queue, applied.patches))
    if applies:
        regenerated = Lock(lock.upstream_url, applied.upstream_commit,
                           {r.name: r.new_sha256 for r in refreshed}, applied.tree, lock.tool_version)
        lock_drift = _lock_drift(lock, regenerated)
        for patch, r in zip(queue.patches, refreshed):
            if r.change is not Change.UNCHANGED:
                path = _relative(project, patch.path)
                files.append(FileDrift(r.name, path, _file_diff(patch.path.read_bytes(), r.data, path)))
        if options.output_dir:
            for patch, r in zip(queue.patches, refreshed):
                atomic_write(options.output_dir / _relative(project, patch.path), r.data)
            regenerated.write(options.output_dir / LOCK_NAME)
    return VerifyReport(applied.upstream_url, applied.upstream_commit, applied, _series_drift(project, lock, queue),
                        refreshed, tuple(files), tuple(lock_drift), options.output_dir)


def _series_drift(project: Project, lock: Lock, queue: Queue) -> SeriesDrift | None:
    """Known before anything is applied, so a queue that does not apply still names it."""
    listed = [p.name for p in queue.patches]
    not_in_series = tuple(n for n in lock.patches if n not in listed)
    not_in_lock = tuple(n for n in listed if n not in lock.patches)
    if not not_in_series and not not_in_lock:
        return None
    return SeriesDrift(_relative(project, queue.series_path), not listed, not_in_series, not_in_lock)


def _lock_drift(old: Lock, new: Lock) -> list[LockDrift]:
    drift = [LockDrift(name, a, b) for name, a, b in (("upstream.commit", old.upstream_commit, new.upstream_commit),
                                                      ("tree", old.tree, new.tree)) if a != b]
    names = list(dict.fromkeys([*old.patches, *new.patches]))
    drift += [LockDrift(f"patches.{n}", old.patches.get(n), new.patches.get(n))
              for n in names if old.patches.get(n) != new.patches.get(n)]
    if not drift and list(old.patches) != list(new.patches):  # the lock lists them in series order
        drift.append(LockDrift("patches (order)", " ".join(old.patches), " ".join(new.patches)))
    return drift


def _relative(project: Project, path: Path) -> str:
    """PATH as the fork repository names it (the patches folder may be configured outside it)."""
    try:
        return path.resolve().relative_to(project.root.resolve()).as_posix()
    except ValueError:
        return f"{path.parent.name}/{path.name}"


def _file_diff(old: bytes, new: bytes, path: str) -> str:
    def lines(data: bytes) -> list[str]:
        return data.decode("utf-8", errors="replace").splitlines(keepends=True)

    diff = difflib.unified_diff(lines(old), lines(new), f"a/{path}", f"b/{path}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff)
