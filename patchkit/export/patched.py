"""The queue as it applies at one upstream commit, ready to hand to a packager.

Both `export` and `dist` start here: the queue is applied in a scratch repository beside the
mirror (nothing is checked out, nothing of the user's is touched, nothing is written into the
mirror but what the fetch brings) and must be fully good there, site
checks included, since a packager's build runs unattended and exit 0 has to mean nobody needs to
look. Each patch is then regenerated from its commit in the refresh format, so it applies with
fuzz 0 exactly where patchkit put it, merged hunks included.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from patchkit import git
from patchkit.apply import PatchResult, Verdict
from patchkit.backends.version import short_commit
from patchkit.errors import PatchkitError
from patchkit.export.version import build_number, queue_version
from patchkit.nightly.refresh import format_patch
from patchkit.project import Project
from patchkit.queue import Patch, Queue
from patchkit.upstream import Mirror, parse_spec
from patchkit.hooks import Hooks
from patchkit.pipeline import ApplyReport, applied_at, resolve

_FUZZ = 2  # GNU patch's default


@dataclass(frozen=True)
class ExportedPatch:
    name: str  # as listed in series
    patch: Patch  # the queue's file, for its headers and DEP-3 fields
    data: bytes = field(repr=False)  # regenerated from its commit at the upstream commit
    commit: str
    binary: bool  # has a `GIT binary patch`: only git can apply it


@dataclass(frozen=True)
class PatchedQueue:
    upstream_url: str
    upstream_commit: str
    commit_time: int  # the upstream commit's committer date, seconds since the epoch
    build_number: int  # LLAMA_BUILD_NUMBER
    build_commit: str  # LLAMA_BUILD_COMMIT (patchkit.backends.version.short_commit)
    version: str  # b<N>+pk<count>.<hash> (patchkit.export.version)
    tip: str  # the patched commit
    tree: str  # its tree
    patches: tuple[ExportedPatch, ...]
    repo: Path  # holds every object above, until the `patched_queue` block ends


@contextlib.contextmanager
def patched_queue(project: Project, spec: str = "upstream@locked", upstream: str | None = None,
                  fetch: bool = True, hooks: Hooks = Hooks()) -> Iterator[PatchedQueue]:
    """The queue applied at SPEC (default: the locked commit); refused unless every patch is good,
    unfuzzed and passes its site checks there."""
    _require_lock(project, spec)
    queue = Queue.load(project)
    mirror = Mirror.open(project, upstream)
    with mirror.locked(hooks.progress):  # only to fetch: the rest reads the mirror and writes nothing into it
        revision = resolve(mirror, spec, fetch, hooks, hooks.warn)
    # With fuzz allowed, a patch that needs it says so (and is refused) instead of being a conflict.
    with applied_at(project, mirror, revision, queue.patches, fuzz=_FUZZ) as (applied, report):
        _require_good(report)
        scratch = applied.scratch_mirror()
        results = {r.name: r for r in report.patches}
        patches = tuple(ExportedPatch(p.name, p, format_patch(scratch, results[p.name].commit or ""),
                                      results[p.name].commit or "", any(f.binary for f in p.files))
                        for p in queue.patches)
        build = build_number(mirror, report.upstream_commit)
        yield PatchedQueue(
            report.upstream_url, report.upstream_commit,
            int(_show(mirror, report.upstream_commit, "%ct")), build,
            short_commit(report.upstream_commit),
            queue_version(build, ((p.name, p.sha256) for p in queue.patches)),
            report.tip, report.tree, patches, applied.repo)


def _show(mirror: Mirror, commit: str, fmt: str) -> str:
    return git.run(["show", "-s", f"--format={fmt}", commit, "--"], cwd=mirror.path)


def _require_lock(project: Project, spec: str) -> None:
    """`upstream@locked` needs a lock: say so in export's and dist's words."""
    if parse_spec(spec) == "locked" and project.lock() is None:
        raise PatchkitError(f"{project.lock_path} does not exist, so there is no locked commit",
                            "run `patchkit apply upstream@HEAD --update-lock`, or name an upstream commit "
                            "(`export --at upstream@REF`, `dist upstream@REF`)")


def _require_good(report: ApplyReport) -> None:
    for result in report.patches:
        if result.verdict is not Verdict.FUZZED and result.good:
            continue
        raise PatchkitError(f"cannot package the queue at {report.upstream_commit[:12]}: {_what_failed(result)}",
                            "exports and tarballs carry only patches that apply as they are; fix or refresh it first")
    if report.checks is not None and not report.checks.passed:
        raise PatchkitError(f"cannot package the queue at {report.upstream_commit[:12]}: the site checks fail there",
                            f"`patchkit apply upstream@{report.upstream_commit[:12]}` shows which")


def _what_failed(result: PatchResult) -> str:
    bad = [h for h in result.hunks if h.verdict is Verdict.FUZZED or not h.verdict.good]
    where = "; ".join(f"{h.file} hunk {h.hunk} is {h.verdict.value}" + (f" ({h.detail})" if h.detail else "")
                      for h in bad)
    if result.verdict is Verdict.FUZZED:
        return f"{result.name} needs fuzz ({where}), and a packager's patch must apply with fuzz 0"
    return f"{result.name} is {result.verdict.value}: {where or result.detail}"  # malformed: no hunks, a detail
