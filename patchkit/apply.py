"""The apply ladder and its verdicts, and the patched branch that comes out of it.

Every patch is tried in series order against upstream's objects plus the patches applied before
it, in memory: nothing is checked out until the result is complete. Each hunk gets a verdict;
each patch gets the verdict its hunks add up to. The commits are then written in one
`git fast-import` into the mirror and checked out in the output repository.
"""

from __future__ import annotations

import enum
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from patchkit import git, ladder
from patchkit.errors import PatchkitError
from patchkit.git import ObjectReader
from patchkit.queue import FileChange, Hunk, Patch
from patchkit.upstream import Mirror, Revision


class Verdict(str, enum.Enum):
    CLEAN = "clean"
    OFFSET = "offset"
    MERGED = "merged"
    FUZZED = "fuzzed"
    ALREADY_APPLIED = "already-applied"
    PARTIALLY_APPLIED = "partially-applied"
    AMBIGUOUS = "ambiguous"
    CONFLICT = "conflict"
    MISSING_FILE = "missing-file"
    BLOCKED = "blocked"

    @property
    def good(self) -> bool:
        """Good needs no human; FUZZED is good with a warning (never locked, never a base)."""
        return self in (Verdict.CLEAN, Verdict.OFFSET, Verdict.MERGED, Verdict.FUZZED)


# Which failing hunk verdict names the patch, most telling first.
_FAILURE_ORDER = (Verdict.BLOCKED, Verdict.MISSING_FILE, Verdict.CONFLICT, Verdict.AMBIGUOUS)
_FAILURES = frozenset(_FAILURE_ORDER)


@dataclass(frozen=True)
class HunkVerdict:
    file: str
    hunk: int  # 1-based within the file
    verdict: Verdict
    expected_line: int  # where the patch says the pre-image starts
    actual_line: int | None = None  # where it was found upstream (1-based)
    offset: int | None = None
    fuzz: int = 0
    detail: str = ""
    nearest_line: int | None = None  # failures: the best partial match of the pre-image upstream
    nearest: tuple[str, ...] = ()


@dataclass(frozen=True)
class PatchResult:
    name: str
    subject: str
    sha256: str
    verdict: Verdict
    hunks: tuple[HunkVerdict, ...]
    commit: str | None = None  # on the patched branch; None when nothing was committed
    blocked_by: str | None = None
    detail: str = ""

    @property
    def good(self) -> bool:
        return self.verdict.good


# What a patch does to the tree: path -> (mode, new bytes), or None to delete the file.
Changes = dict[str, "tuple[str, bytes] | None"]


@dataclass
class _Applied:
    patch: Patch
    result: PatchResult
    changes: Changes


class WorkTree:
    """Upstream's commit plus the changes of the patches applied so far, kept in memory."""

    def __init__(self, reader: ObjectReader, repo: Path, commit: str) -> None:
        self._reader = reader
        self._repo = repo
        self.commit = commit
        self._changes: Changes = {}

    def read(self, path: str) -> bytes | None:
        if path in self._changes:
            change = self._changes[path]
            return change[1] if change else None
        return self._reader.read(self.commit, path)

    def mode(self, path: str) -> str:
        if path in self._changes and self._changes[path]:
            return self._changes[path][0]  # type: ignore[index]
        out = git.run(["ls-tree", self.commit, "--", path], cwd=self._repo)
        return out.split(" ", 1)[0] if out else "100644"

    def update(self, changes: Changes) -> None:
        self._changes.update(changes)


@dataclass
class _FailedRanges:
    """Post-image line ranges of patches that did not apply, to tell `blocked` from `conflict`."""

    ranges: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)

    def add(self, patch: Patch) -> None:
        for fc in patch.files:
            for h in fc.hunks:
                self.ranges.setdefault(fc.new_path or fc.path, []).append(
                    (h.new_start, h.new_start + max(len(h.new_lines), 1), patch.name))

    def waits_on(self, path: str, hunk: Hunk) -> str | None:
        lo, hi = hunk.old_start, hunk.old_start + max(len(hunk.old_lines), 1)
        for start, end, name in self.ranges.get(path, []):
            if start < hi and lo < end:
                return name
        return None


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)


def _bytes(lines: list[str] | tuple[str, ...]) -> bytes:
    return "".join(lines).encode("utf-8", errors="surrogateescape")


BaseSource = Callable[[FileChange], "tuple[str, bytes, bytes] | None"]


def apply_file(fc: FileChange, current: bytes, bases: BaseSource, fuzz: int) -> tuple[list[HunkVerdict], bytes | None]:
    """Run the ladder for every hunk of one file; the new content, or None if a hunk failed."""
    lines = _lines(current)
    index = ladder.line_index(lines)
    verdicts: dict[int, HunkVerdict] = {}
    places: dict[int, ladder.Place] = {}
    unresolved: list[Hunk] = []

    def found(h: Hunk, verdict: Verdict, place: ladder.Place | None, **kw) -> None:
        line = place.start + 1 if place else None
        offset = line - h.old_start if line is not None and verdict is not Verdict.CLEAN else None
        verdicts[h.index] = HunkVerdict(fc.path, h.index, verdict, h.old_start, line, offset, **kw)
        if place and verdict is not Verdict.ALREADY_APPLIED:
            places[h.index] = place

    for h in fc.hunks:
        exact = ladder.find_exact(h, lines)
        if exact:
            found(h, Verdict.CLEAN, exact)
            continue
        applied = ladder.find_applied(h, lines, index)
        moved = ladder.find_offset(h, lines, index)
        if applied.place and not moved.candidates:
            found(h, Verdict.ALREADY_APPLIED, applied.place, detail="upstream has this change")
        elif moved.place and not applied.candidates:
            found(h, Verdict.OFFSET, moved.place)
        elif moved.candidates or applied.candidates:
            lines_at = ", ".join(str(c + 1) for c in (moved.candidates or applied.candidates))
            what = "pre-image" if moved.candidates else "post-image"
            found(h, Verdict.AMBIGUOUS, None, detail=f"the {what} occurs at lines {lines_at}; refusing to guess")
        else:
            unresolved.append(h)

    merged: bytes | None = None
    if unresolved and not any(v.verdict is Verdict.AMBIGUOUS for v in verdicts.values()):
        base = bases(fc)
        if base:
            label, pre, post = base
            result, conflicts = git.merge_file(current, pre, post)
            if conflicts == 0:
                merged = result
                verdict = Verdict.ALREADY_APPLIED if result == current else Verdict.MERGED
                for h in unresolved:
                    found(h, verdict, None, detail=f"3-way merge from {label}")
                unresolved = []
            else:
                for h in unresolved:
                    verdicts[h.index] = HunkVerdict(fc.path, h.index, Verdict.CONFLICT, h.old_start,
                                                    detail=f"3-way merge from {label} conflicts")

    for h in unresolved:
        fuzzed = ladder.find_fuzzed(h, lines, index, fuzz) if fuzz else ladder.Search(None)
        if fuzzed.place:
            found(h, Verdict.FUZZED, fuzzed.place, fuzz=fuzzed.place.fuzz,
                  detail=f"placed ignoring {fuzzed.place.fuzz} context line(s) at each end")
            continue
        near = ladder.nearest(h, lines, index)
        prior = verdicts.get(h.index)
        verdict, detail = Verdict.CONFLICT, prior.detail if prior else "context does not match and no 3-way base is known"
        if fuzzed.ambiguous:
            verdict, detail = Verdict.AMBIGUOUS, "with fuzz the hunk matches in several places; refusing to guess"
        elif not h.old_lines:
            verdict, detail = Verdict.AMBIGUOUS, ("the hunk has no context lines, so no place can be "
                                                  "verified; re-export the patch with context")
        verdicts[h.index] = HunkVerdict(
            fc.path, h.index, verdict, h.old_start, detail=detail,
            nearest_line=near[0] + 1 if near else None, nearest=near[1] if near else ())

    ordered = [verdicts[h.index] for h in fc.hunks]
    if any(v.verdict in _FAILURES for v in ordered):
        return ordered, None
    if merged is not None:
        return ordered, merged
    spliced = ladder.splice(lines, list(places.values()))
    if spliced is None:
        return [HunkVerdict(v.file, v.hunk, Verdict.CONFLICT, v.expected_line, v.actual_line,
                            detail="hunks overlap where they were placed") for v in ordered], None
    return ordered, _bytes(spliced)


def _patch_verdict(hunks: list[HunkVerdict]) -> Verdict:
    kinds = {h.verdict for h in hunks}
    for failure in _FAILURE_ORDER:
        if failure in kinds:
            return failure
    if kinds == {Verdict.ALREADY_APPLIED}:
        return Verdict.ALREADY_APPLIED
    if Verdict.ALREADY_APPLIED in kinds:
        return Verdict.PARTIALLY_APPLIED
    for verdict in (Verdict.FUZZED, Verdict.MERGED, Verdict.OFFSET):
        if verdict in kinds:
            return verdict
    return Verdict.CLEAN


class Applier:
    """Applies a queue on one upstream commit, patch by patch, in memory."""

    def __init__(self, mirror: Mirror, revision: Revision, reader: ObjectReader, fuzz: int = 0) -> None:
        self.mirror = mirror
        self.revision = revision
        self.reader = reader
        self.fuzz = fuzz
        self.tree = WorkTree(reader, mirror.path, revision.commit)
        self._failed = _FailedRanges()
        self._bases = mirror.base_commits()

    def apply(self, patch: Patch) -> _Applied:
        hunks: list[HunkVerdict] = []
        changes: Changes = {}
        recorded = self._bases.get(patch.sha256)
        for fc in patch.files:
            verdicts, change = self._apply_file(fc, recorded)
            hunks += verdicts
            changes.update(change)
        verdict = _patch_verdict(hunks)
        blocked_by = None
        if verdict in _FAILURES:
            blocked_by = self._blocked_by(patch, hunks)
            if blocked_by:
                verdict = Verdict.BLOCKED
                hunks = [h if h.verdict not in _FAILURES else
                         HunkVerdict(h.file, h.hunk, Verdict.BLOCKED, h.expected_line,
                                     detail=f"needs {blocked_by}, which did not apply")
                         for h in hunks]
            self._failed.add(patch)
            changes = {}
        elif verdict is Verdict.ALREADY_APPLIED:
            changes = {}
        result = PatchResult(patch.name, patch.subject, patch.sha256, verdict, tuple(hunks),
                             blocked_by=blocked_by, detail=_summary(verdict, hunks, blocked_by))
        self.tree.update(changes)
        return _Applied(patch, result, changes)

    def _apply_file(self, fc: FileChange, recorded: str | None) -> tuple[list[HunkVerdict], Changes]:
        if fc.old_path is None:
            return self._create(fc)
        current = self.tree.read(fc.old_path)
        if current is None:
            target = self.mirror.rename_target(fc.old_path, self.revision.commit)
            detail = f"upstream moved it to {target}" if target else "upstream has no such file"
            return [HunkVerdict(fc.path, h.index, Verdict.MISSING_FILE, h.old_start, detail=detail)
                    for h in fc.hunks], {}
        verdicts, content = apply_file(fc, current, lambda f: self._base(f, recorded), self.fuzz)
        if content is None:
            return verdicts, {}
        if fc.new_path is None:
            return verdicts, {fc.old_path: None}
        changes: Changes = {fc.new_path: (fc.new_mode or self.tree.mode(fc.old_path), content)}
        if fc.new_path != fc.old_path:
            changes[fc.old_path] = None
        return verdicts, changes

    def _create(self, fc: FileChange) -> tuple[list[HunkVerdict], Changes]:
        path = fc.new_path or ""
        content = _bytes([line for h in fc.hunks for line in h.new_lines])
        existing = self.tree.read(path)
        verdict, detail = (
            (Verdict.CLEAN, "new file") if existing is None else
            (Verdict.ALREADY_APPLIED, "upstream has this file") if existing == content else
            (Verdict.CONFLICT, "the patch creates this file, but upstream has a different one"))
        verdicts = [HunkVerdict(path, h.index, verdict, h.old_start, detail=detail) for h in fc.hunks]
        return verdicts, ({path: (fc.new_mode or "100644", content)} if existing is None else {})

    def _base(self, fc: FileChange, recorded: str | None) -> tuple[str, bytes, bytes] | None:
        """A pre-image and post-image of this file for a 3-way merge, best source first."""
        if recorded:
            pre = self.reader.read(f"{recorded}^", fc.path)
            post = self.reader.read(recorded, fc.new_path or fc.path)
            if pre is not None and post is not None:
                return f"the last good run ({recorded[:12]})", pre, post
        if fc.old_blob:
            pre = self.reader.read(fc.old_blob)
            if pre is not None:
                lines = _lines(pre)
                places = [ladder.find_exact(h, lines) for h in fc.hunks]
                if all(places):
                    post_lines = ladder.splice(lines, places)  # type: ignore[arg-type]
                    if post_lines is not None:
                        return f"the patch's index blob {fc.old_blob}", pre, _bytes(post_lines)
        return None

    def _blocked_by(self, patch: Patch, hunks: list[HunkVerdict]) -> str | None:
        by_key = {(fc.path, h.index): h for fc in patch.files for h in fc.hunks}
        for verdict in hunks:
            if verdict.verdict in _FAILURES:
                name = self._failed.waits_on(verdict.file, by_key[(verdict.file, verdict.hunk)])
                if name:
                    return name
        return None


def _summary(verdict: Verdict, hunks: list[HunkVerdict], blocked_by: str | None) -> str:
    if verdict is Verdict.BLOCKED:
        return f"waits on {blocked_by}, which did not apply"
    if verdict is Verdict.PARTIALLY_APPLIED:
        have = [str(h.hunk) for h in hunks if h.verdict is Verdict.ALREADY_APPLIED]
        return f"upstream already has hunk(s) {', '.join(have)}; the rest applied"
    if verdict is Verdict.ALREADY_APPLIED:
        return "upstream has the whole change; drop the patch from the queue"
    failing = [h for h in hunks if h.verdict in _FAILURES]
    if failing:
        return "; ".join(f"{h.file} hunk {h.hunk}: {h.verdict.value}" for h in failing)
    return ""


def fast_import(mirror: Mirror, revision: Revision, applied: list[_Applied], ref: str) -> list[str]:
    """Write one commit per applied patch onto REF in the mirror; return their ids.

    Author and date come from the patch; the committer is fixed and dated at the upstream
    commit, so the same upstream commit and the same queue always give the same ids.
    """
    committer = f"{git.PATCHKIT_NAME} <{git.PATCHKIT_EMAIL}> {revision.date}"
    out = bytearray(f"reset {ref}\nfrom {revision.commit}\n\n".encode())
    for mark, item in enumerate(applied, 1):
        author = item.patch.author
        message = item.patch.message.encode()
        out += (f"commit {ref}\nmark :{mark}\n"
                f"author {author.name} <{author.email}> {author.date}\n"
                f"committer {committer}\n"
                f"data {len(message)}\n").encode() + message + b"\n"
        for path, change in sorted(item.changes.items()):
            if change is None:
                out += f"D {_quote(path)}\n".encode()
            else:
                mode, data = change
                out += f"M {mode} inline {_quote(path)}\ndata {len(data)}\n".encode() + data + b"\n"
        out += b"\n"
    out += b"done\n"
    with tempfile.TemporaryDirectory(prefix="patchkit-import-") as tmp:
        marks = Path(tmp) / "marks"
        # --force: a rerun after upstream moved replaces the previous result, it does not extend it
        git.run(["fast-import", "--quiet", "--force", "--done", f"--export-marks={marks}"],
                cwd=mirror.path, input=bytes(out))
        ids = dict(line.split() for line in marks.read_text().splitlines()) if applied else {}
    return [ids[f":{mark}"] for mark in range(1, len(applied) + 1)]


def _quote(path: str) -> str:
    if path.startswith('"') or "\n" in path:
        raise PatchkitError(f"unsupported file name {path!r} in patch")
    return path
