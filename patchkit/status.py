"""What `patchkit status` shows: the queue, the locked base and the last result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from patchkit.errors import PatchkitError
from patchkit.export.version import build_number, queue_version
from patchkit.project import Lock, Project
from patchkit.patchfile.series import read_text
from patchkit.queue import Queue
from patchkit.rebase import state as rebase_state
from patchkit.rebase.series import disabled
from patchkit.upstream import Mirror


@dataclass(frozen=True)
class PatchStatus:
    name: str
    subject: str
    files: tuple[str, ...]
    hunks: int
    forwarded: str  # the DEP-3 Forwarded field, or "" when the patch does not say
    locked: bool  # the patch is in the lock with these exact bytes
    last_verdict: str | None


@dataclass(frozen=True)
class Disabled:
    """A patch `rebase --skip` disabled in the series: it needs attention."""

    name: str
    why: str


@dataclass(frozen=True)
class Rebasing:
    """A rebase in progress."""

    spec: str
    upstream_commit: str
    phase: str
    stopped: str | None  # the patch waiting for a person
    checkout_gone: bool = False  # its checkout was removed: only --abort goes on from here


@dataclass(frozen=True)
class QueueStatus:
    upstream_url: str
    upstream_branch: str
    patches: tuple[PatchStatus, ...]
    lock: Lock | None
    last_run: dict[str, Any] | None  # ref, commit, branch of the last apply
    version: str | None  # this queue's version at the locked commit, as dist and export give it
    version_note: str | None  # why there is no version although there is a lock
    disabled: tuple[Disabled, ...] = ()
    rebase: Rebasing | None = None

    @classmethod
    def gather(cls, project: Project, queue: Queue) -> QueueStatus:
        lock = project.lock()
        last = project.last_report()
        verdicts = {p["name"]: p["verdict"] for p in last["patches"]} if last else {}
        patches = tuple(
            PatchStatus(p.name, p.subject, tuple(p.touched_paths),
                        sum(len(f.hunks) for f in p.files), p.trailers.get("Forwarded", ""),
                        bool(lock and lock.patches.get(p.name) == p.sha256), verdicts.get(p.name))
            for p in queue.patches)
        last_run = ({k: last[k] for k in ("ref", "upstream_commit", "branch", "tip")} if last else None)
        version, note = _locked_version(project, queue, lock)
        state = rebase_state.load(project)
        rebase = Rebasing(state.spec, state.revision.commit, state.phase, state.stopped,
                          rebase_state.checkout_gone(state)) if state else None
        return cls(project.upstream_url, project.upstream_branch, patches, lock, last_run, version, note,
                   tuple(Disabled(*d) for d in disabled(read_text(project.series_path))), rebase)


def _locked_version(project: Project, queue: Queue, lock: Lock | None) -> tuple[str | None, str | None]:
    """The version at the locked commit, counted in the mirror as it is (status never fetches):
    (version, None), or (None, why not) when the mirror lacks the commit; nothing without a lock."""
    if lock is None:
        return None, None
    mirror = Mirror.open(project)
    if not mirror.exists:
        return None, f"no version: there is no mirror of {mirror.fetch_url} yet; run `patchkit apply upstream@locked`"
    try:
        build = build_number(mirror, lock.upstream_commit)
    except PatchkitError:
        return None, (f"no version: the locked commit {lock.upstream_commit[:12]} is not in the mirror; "
                      "run `patchkit apply upstream@locked`")
    return queue_version(build, ((p.name, p.sha256) for p in queue.patches)), None
