"""Refresh: each patch regenerated from its commit on the patched branch, churn-free.

A refreshed patch is what `patchkit.patchfile.format_patch` writes for the commit: the mbox
`From` line with the zero id, From/Date/Subject from the patch (git encodes them as it always
does), the message with its DEP-3 trailers, `---`, the diff with full `index` blob ids so
anyone's `git am -3` finds the pre-image. There is no diffstat: its layout follows git's
rendering rules (name and graph widths, `diff.stat*` settings, changed between git versions),
the one part whose bytes could differ between two machines refreshing the same commit, and
`verify` compares bytes. The diff itself is the commit's, so a refresh of an unchanged queue on
an unchanged upstream gives the same bytes every time.
"""

from __future__ import annotations

import difflib
import enum
import hashlib
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Sequence

from patchkit.apply import PatchResult
from patchkit.errors import PatchkitError
from patchkit.fileio import atomic_write
from patchkit.patchfile import diff as patch_diff
from patchkit.patchfile import trailers
from patchkit.patchfile.diff import HUNK_HEADER, Part
from patchkit.patchfile.format_patch import format_commit, join
from patchkit.plain import NOT_IN_JSON
from patchkit.project import Project
from patchkit.queue import Patch, Queue
from patchkit.upstream import Mirror

_INDEX = re.compile(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)")


class Change(str, enum.Enum):
    """What a refresh did to a patch file, least to most telling."""

    UNCHANGED = "unchanged"  # the same bytes
    FORMAT_ONLY = "format-only"  # the first rewrite into the refresh format; same change, same places
    LINE_NUMBERS = "line-numbers-only"  # only hunk headers and `index` lines differ
    CONTEXT = "context-changed"  # context lines differ; the +/- lines are the same
    CONTENT = "content-changed"  # the change's own +/- lines differ


@dataclass(frozen=True)
class Refreshed:
    """What a refresh did to one patch file, with its new bytes (which no JSON report carries)."""

    name: str  # file name as listed in series
    change: Change
    old_sha256: str
    new_sha256: str
    data: bytes = field(repr=False, metadata=NOT_IN_JSON)  # the new patch file
    content_diff: str = ""  # CONTENT: a unified diff of the +/- lines (range-diff-like)


def refresh_queue(mirror: Mirror, queue: Queue, results: Sequence[PatchResult],
                  today: date | None = None) -> list[Refreshed]:
    """Regenerate every patch of QUEUE from its commit in RESULTS (an apply of that queue).

    The file name, author, date, subject, message and trailers are kept; `Last-Update:` moves
    to TODAY only when the change's own lines changed.
    """
    commits = {r.name: r for r in results}
    refreshed = []
    for patch in queue.patches:
        result = commits.get(patch.name)
        if result is None or result.commit is None:
            verdict = result.verdict.value if result else "not applied"
            raise PatchkitError(f"cannot refresh {patch.name}: {verdict}, so it has no commit to refresh from",
                                "refresh only after a run where every patch applied")
        refreshed.append(refresh_patch(mirror, patch, result.commit, today))
    return refreshed


def refresh_patch(mirror: Mirror, patch: Patch, commit: str, today: date | None = None) -> Refreshed:
    """PATCH regenerated from COMMIT of MIRROR (any repository holding it), as `refresh_queue` does.
    `Last-Update:` is the file's unless the change's own lines changed (a commit whose message was
    edited on the branch may carry an older one)."""
    old = patch.path.read_bytes()
    new = format_patch(mirror, commit)
    change, content_diff = classify(old, new, patch.name)
    if change is Change.CONTENT:
        new = _last_update(new, today or date.today())
    elif "Last-Update" in patch.trailers:
        new = _last_update(new, patch.trailers["Last-Update"])
        change, content_diff = classify(old, new, patch.name)
    return Refreshed(patch.name, change, hashlib.sha256(old).hexdigest(),
                     hashlib.sha256(new).hexdigest(), new, content_diff)


def write_refreshed(project: Project, refreshed: Sequence[Refreshed]) -> None:
    """Write each changed patch into patches/, whole or not at all; unchanged files are left alone."""
    for r in refreshed:
        if r.change is not Change.UNCHANGED:
            atomic_write(project.patches_dir / r.name, r.data)


def rekey_bases(mirror: Mirror, refreshed: Sequence[Refreshed]) -> None:
    """Give each refreshed patch's new sha256 the 3-way base its old one has.

    The old keys stay: until the refresh is merged, the fork's branch still carries the old bytes,
    and the next run of those needs its base as much as the refreshed patch does.
    """
    bases = mirror.base_commits()
    moved = {r.new_sha256: bases[r.old_sha256] for r in refreshed
             if r.new_sha256 != r.old_sha256 and r.old_sha256 in bases}
    if moved:
        mirror.record_bases(moved)


def format_patch(mirror: Mirror, commit: str) -> bytes:
    """COMMIT as a patch file in the refresh format (the module docstring says which)."""
    message, diff = format_commit(mirror.path, commit)
    if not diff:
        raise PatchkitError(f"commit {commit} changes nothing", "drop the patch from the series")
    return join(message, diff).encode("utf-8", errors="surrogateescape")


def _last_update(data: bytes, value: date | str) -> bytes:
    """DATA with the `Last-Update:` trailer of its message set to VALUE (a day, or a trailer's text)."""
    text = data.decode("utf-8", errors="surrogateescape")
    message, separator, diff = text.partition("\n---\ndiff --git ")
    message = trailers.replace(message, "Last-Update", value if isinstance(value, str) else value.isoformat())
    return (message + separator + diff).encode("utf-8", errors="surrogateescape")


@dataclass(frozen=True)
class _Depths:
    """A patch file seen at the three depths a refresh is classified by."""

    changes: tuple[str, ...]  # file headers (no `index`), the +/- lines, binary data
    hunks: tuple[str, ...]  # the diff without `index` lines, each hunk header reduced to "@@"
    form: tuple[str, ...]  # every line; hunk headers "@@", `index` ids masked keeping their length


def classify(old: bytes, new: bytes, name: str = "patch") -> tuple[Change, str]:
    """How NEW differs from OLD, and for a content change a unified diff of their +/- lines."""
    if old == new:
        return Change.UNCHANGED, ""
    before, after = _depths(old), _depths(new)
    if before.changes != after.changes:
        diff = difflib.unified_diff(before.changes, after.changes, f"a/{name}", f"b/{name}", n=2, lineterm="")
        return Change.CONTENT, "".join(f"{line}\n" for line in diff)
    if before.hunks != after.hunks:
        return Change.CONTEXT, ""
    # An abbreviated `index` id or a stat, a signature, a commit id in the `From` line: the old form.
    return (Change.LINE_NUMBERS if before.form == after.form else Change.FORMAT_ONLY), ""


def _depths(data: bytes) -> _Depths:
    text = data.decode("utf-8", errors="surrogateescape")
    lines = text.splitlines(keepends=True)
    start = patch_diff.diff_start(lines)
    diff = patch_diff.strip_signature("".join(lines[start:])) if start is not None else ""
    changes: list[str] = []
    hunks: list[str] = []
    in_header = False  # between `diff --git` and the first hunk: file headers, binary data
    for line in patch_diff.walk(diff.splitlines()):
        if line.part is Part.HEADER:
            in_header = False
            hunks.append("@@")
        elif line.in_hunk:
            hunks.append(line.text)
            if line.changed:
                changes.append(line.text)
        elif line.text.startswith("diff --git "):
            in_header = True
            changes.append(line.text)
            hunks.append(line.text)
        elif in_header and not _INDEX.match(line.text):
            changes.append(line.text)
            hunks.append(line.text)
    form = tuple(_mask(line) for line in text.splitlines())
    return _Depths(tuple(changes), tuple(hunks), form)


def _mask(line: str) -> str:
    if HUNK_HEADER.match(line):
        return "@@"
    return _INDEX.sub(lambda m: f"index {'x' * len(m.group(1))}..{'x' * len(m.group(2))}", line)
