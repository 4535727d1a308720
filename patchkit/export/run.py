"""`patchkit export`: the queue applied at one commit, written in a distribution's patch format."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchkit.errors import PatchkitError
from patchkit.export.folder import write_folder
from patchkit.export.formats import Format, render
from patchkit.export.patched import patched_queue
from patchkit.project import Project
from patchkit.hooks import Hooks
from patchkit.targets import Places, Target, check


@dataclass(frozen=True)
class ExportOptions:
    format: Format
    out: Path
    spec: str = "upstream@locked"
    upstream: str | None = None
    fetch: bool = True
    force: bool = False


@dataclass(frozen=True)
class ExportedFile:
    path: str  # relative to OUT
    sha256: str


@dataclass(frozen=True)
class ExportedPatchEntry:
    name: str  # as listed in patches/series
    subject: str
    commit: str  # the patched branch's commit it was regenerated from
    file: str | None  # its file, relative to OUT; None in an mbox


@dataclass(frozen=True)
class ExportReport:
    format: Format
    out: Path
    version: str
    upstream_commit: str
    build_number: int
    build_commit: str
    tree: str  # the patched tree every format reproduces
    patches: tuple[ExportedPatchEntry, ...]
    files: tuple[ExportedFile, ...]


def run_export(project: Project, options: ExportOptions, hooks: Hooks = Hooks()) -> ExportReport:
    check(options.out, Target.REPLACED, Places.of(project), options.force)  # before any work
    with patched_queue(project, options.spec, options.upstream, options.fetch, hooks) as queue:
        binary = [p.name for p in queue.patches if p.binary]
        if binary and options.format is not Format.MBOX:
            raise PatchkitError(f"cannot export {', '.join(binary)} as {options.format.value}: a binary patch "
                                "(GIT binary patch) is applied by git only, not by GNU patch or quilt",
                                "export as mbox for `git am`, or carry the binary file another way")
        files = render(queue, options.format)
    write_folder(options.out, files, options.force)
    by_patch = {f.patch: f.path for f in files if f.patch}
    return ExportReport(
        options.format, options.out.absolute(), queue.version, queue.upstream_commit, queue.build_number,
        queue.build_commit, queue.tree,
        tuple(ExportedPatchEntry(p.name, p.patch.subject, p.commit, by_patch.get(p.name)) for p in queue.patches),
        tuple(ExportedFile(f.path, f.sha256) for f in sorted(files, key=lambda f: f.path)))
