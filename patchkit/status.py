"""What `patchkit status` shows: the queue, the locked base and the last result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from patchkit.project import Lock, Project
from patchkit.queue import Queue


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
class QueueStatus:
    upstream_url: str
    upstream_branch: str
    patches: tuple[PatchStatus, ...]
    lock: Lock | None
    last_run: dict[str, Any] | None  # ref, commit, branch of the last apply

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
        return cls(project.upstream_url, project.upstream_branch, patches, lock, last_run)
