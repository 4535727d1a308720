"""Semantic drift of a queue between two upstream commits (the lock's and the target's): for each
patch, what its added lines rely on, where upstream declares it, and whether that declaration
changed where the lines feel it; with the commit that changed it. A patch that does not apply at
the target is read as it applies at the lock: its added lines are known, and whoever resolves
its conflict must also learn what changed under them.

A person who looked at a finding writes `Reviewed-Drift: <entity> <commit>` in the patch: the
finding is kept in the report as reviewed (not one that needs a person) while the declaration
reads at the target as that commit left it; a later change is a finding again, from the
reviewed declaration to the new one, naming the later commit.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from patchkit import git
from patchkit.apply import PatchResult, apply_queue
from patchkit.culprit import Culprit
from patchkit.culprit import read as read_culprit
from patchkit.drift.blame import blame
from patchkit.drift.compare import Entity, describe, differs, entities, state
from patchkit.drift.declarations import read as read_declarations
from patchkit.drift.relies import Reliance, reliances
from patchkit.drift.tree import Files
from patchkit.patchfile.diff import HUNK_HEADER, Part, unquote, walk
from patchkit.patchfile.trailers import split as split_trailers
from patchkit.queue import Patch
from patchkit.scopes import is_cpp
from patchkit.upstream import Mirror

REVIEWED = "Reviewed-Drift"
_WHAT = {"members": "initialises {entity} by position; its members",
         "enumerator": "uses {key} of {entity} as a number; the enumerators",
         "macro": "expands {entity}",
         "default-argument": "calls {entity} relying on its default arguments",
         "parameter-type": "calls {entity}; the parameters it passes (still converting)"}


@dataclass(frozen=True)
class Drift:
    patch: str
    kind: str  # "members", "enumerator", "macro", "default-argument", "parameter-type"
    entity: str  # the struct, the enum, the macro, the function
    declared_in: str  # the declaring file at the target
    before: str  # at the lock
    after: str  # at the target
    lines: tuple[str, ...]  # the patch's lines that rely on it, `path:line` in the patched tree
    culprit: Culprit | None  # the upstream commit that changed it
    probes: int  # declaration reads the search for it spent
    candidates: int  # first-parent commits between the lock and the target touching declared_in
    reviewed: bool  # the patch's `Reviewed-Drift:` names this entity and commit: silenced
    detail: str  # one line for humans
    patched_at: str | None = None  # the lock's commit its lines were read at: the patch does not apply at the target


def find_drift(mirror: Mirror, patches: Sequence[Patch], results: Sequence[PatchResult], before: str,
               after: str, progress: Callable[[str], None] | None = None) -> tuple[Drift, ...]:
    """The drift of each of PATCHES (RESULTS: at AFTER, one per patch, its commit in the mirror)
    from BEFORE (the lock's commit) to AFTER (the target); the caller holds the mirror's lock."""
    found: dict[str, list[Drift]] = {}
    with mirror.reader() as reader:
        files = Files(mirror.path, reader)
        for patch, result in zip(patches, results):
            if result.good and result.commit:
                if progress:
                    progress(f"drift {patch.name}")
                found[patch.name] = _patch_drift(files, mirror, patch, result.commit, before, after)
    # A good patch with no commit (upstream has it all) adds nothing: only those that do not apply
    # are read as the queue applies at the lock.
    good = {patch.name for patch, result in zip(patches, results) if result.good}
    if len(good) < len(patches):
        found.update(_patched_at_lock(mirror, patches, good, before, after, progress))
    return tuple(d for patch in patches for d in found.get(patch.name, ()))


def _patched_at_lock(mirror: Mirror, patches: Sequence[Patch], done: set[str], before: str, after: str,
                     progress: Callable[[str], None] | None) -> dict[str, list[Drift]]:
    """The drift of PATCHES not in DONE (they do not apply at AFTER), read as the queue applies
    at BEFORE; what their lines rely on is still looked up at AFTER, with AFTER's includes."""
    found: dict[str, list[Drift]] = {}
    with apply_queue(mirror, mirror.resolve(before, fetch=False), patches) as at_lock, \
            git.ObjectReader(at_lock.repo) as reader:
        files = Files(at_lock.repo, reader)  # the scratch repository borrows the mirror's objects
        for patch, result in zip(patches, at_lock.patches):
            if patch.name in done or not (result.good and result.commit):
                continue
            if progress:
                progress(f"drift {patch.name} (as applied at the lock)")
            found[patch.name] = [replace(d, patched_at=before, detail=f"as applied at the lock (it does not apply "
                                         f"at the target): {d.detail}")
                                 for d in _patch_drift(files, mirror, patch, result.commit, before, after)]
    return found


def _patch_drift(files: Files, mirror: Mirror, patch: Patch, commit: str, before: str,
                 after: str) -> list[Drift]:
    added_lines = _added_lines(files, commit)
    sources = {path: files.source(commit, path) or b"" for path in added_lines}
    uses: dict[tuple[str, str, str, int], list[str]] = defaultdict(list)  # (kind, scope, name, reach) -> path:line
    wanted: dict[tuple[str, str, str, int], Reliance] = {}
    for path, added in added_lines.items():
        own = read_declarations(sources[path])  # what the patched file declares, the patch's own too
        upstream_has = files.declarations(after, path)
        for r in reliances(sources[path], added):
            if entities(r, own) != [] and entities(r, upstream_has) == []:
                continue  # the patch relies on its own declaration
            key = (r.kind, r.scope, r.name, r.reach)
            wanted.setdefault(key, r)
            uses[key].append(f"{path}:{r.line}")
    drifts = []
    for key, (found, path) in files.locate(after, sources, wanted).items():
        for entity in found:
            drift = _compare(files, mirror, patch, entity, path, before, after, tuple(uses[key]),
                             lambda key=key: files.locate(before, sources, {key: wanted[key]}).get(key))
            if drift is not None:
                drifts.append(drift)
    return _merged(drifts)


def _added_lines(files: Files, commit: str) -> dict[str, list[int]]:
    """The lines COMMIT (a patch's commit) adds to each C/C++ file, 1-based."""
    diff = git.run(["diff-tree", "-p", "-U0", "--no-renames", "--no-color", "-r", f"{commit}^", commit],
                   cwd=files.repo)
    added: dict[str, list[int]] = {}
    path, row = None, 0
    for line in walk(diff.splitlines()):
        if line.part is Part.OUTSIDE and line.text.startswith("+++ "):
            name = unquote(line.text[4:])
            path = name[2:] if name.startswith("b/") and is_cpp(name) else None
        elif line.part is Part.HEADER:
            row = int(HUNK_HEADER.match(line.text)[3])
        elif line.part in (Part.ADDED, Part.CONTEXT):
            if path is not None and line.part is Part.ADDED:
                added.setdefault(path, []).append(row)
            row += 1
    return {p: sorted(lines) for p, lines in added.items() if lines}


def _state(files: Files, entity: Entity, commit: str, path: str) -> tuple | None:
    """ENTITY's state as PATH declares it at COMMIT (its parameters' typedefs as PATH sees them)."""
    return state(entity, files.declarations(commit, path), lambda name: files.typedef(commit, path, name))


def _compare(files: Files, mirror: Mirror, patch: Patch, entity: Entity, path: str, before: str, after: str,
             lines: tuple[str, ...], at_lock: Callable[[], tuple[list[Entity], str] | None]) -> Drift | None:
    """ENTITY (declared in PATH at AFTER) against the lock's; AT_LOCK finds it at BEFORE when PATH
    did not declare it there (moved to PATH since)."""
    was = _state(files, entity, before, path)
    moved = was is None
    if moved:
        found, old_path = at_lock() or ([], "")
        same = [e for e in found if (e.kind, e.key) == (entity.kind, entity.key)]
        was = _state(files, same[0], before, old_path) if same else None
    now = _state(files, entity, after, path)
    if was is None or now is None or not differs(entity, was, now):
        return None  # unchanged, or not upstream's at the lock (new: the compiler's business)
    # A reviewed change is where the search starts again: a later change is a finding of its own.
    reviewed = False
    while True:
        found = blame(files, entity, path, before, after, was, lambda c: _state(files, entity, c, path), moved)
        if found.commit is None:  # no commit to name (a rewound upstream): the lock's stands for it
            reviewed = _reviewed(patch, entity, before)
            break
        if not _reviewed(patch, entity, found.commit):
            break
        seen = _state(files, entity, found.commit, path)
        if seen is None or not differs(entity, seen, now):
            reviewed = seen is not None
            break
        before, was, moved = found.commit, seen, False
    culprit = read_culprit(mirror, found.commit) if found.commit else None
    old, new = describe(entity, was), describe(entity, now)
    if old == new:
        old, new = describe(entity, was, typed=True), describe(entity, now, typed=True)
    what = _WHAT[entity.kind].format(entity=entity.name, key=entity.key.rsplit("::", 1)[-1])
    detail = f"{what}: {old} → {new} (declared in {path}; relied on at {', '.join(lines)})"
    if culprit is None:
        detail += (f"; the commit that changed it is not known: {found.why}; once a person has looked, "
                   f"`{REVIEWED}: {entity.name} {before[:8]}` (the lock's commit) in the patch silences it")
    return Drift(patch.name, entity.kind, entity.name, path, old, new, lines, culprit, found.probes,
                 found.candidates, reviewed, detail)


def _reviewed(patch: Patch, entity: Entity, commit: str) -> bool:
    """The patch says a person looked at ENTITY as COMMIT changed it: `Reviewed-Drift: NAME ID`."""
    for key, value in split_trailers(patch.body)[1]:
        name, _, short = value.partition(" ")
        short = short.strip().lower()
        names = (entity.name, entity.key, entity.name.rsplit("::", 1)[-1])  # `b::cfg` or `cfg`
        if key.lower() == REVIEWED.lower() and name in names and len(short) >= 7 and commit.startswith(short):
            return True
    return False


def _merged(drifts: list[Drift]) -> list[Drift]:
    """One drift per changed declaration: the lines of several reliances on it (a struct
    initialised in two places with as many values) together."""
    merged: dict[tuple[str, str, str, str], Drift] = {}
    for d in drifts:
        key = (d.kind, d.entity, d.before, d.after)
        if key in merged:
            first = merged[key]
            lines = tuple(dict.fromkeys(first.lines + d.lines))
            merged[key] = Drift(first.patch, first.kind, first.entity, first.declared_in, first.before, first.after,
                                lines, first.culprit, first.probes, first.candidates, first.reviewed and d.reviewed,
                                first.detail.replace(", ".join(first.lines), ", ".join(lines)))
        else:
            merged[key] = d
    return list(merged.values())
