"""`patchkit dist`: the patched tree as a reproducible source tarball, with its sums beside it.

The tarball holds the tree the queue gives at one upstream commit (patchkit.export.patched), read
from its git objects (patchkit.export.tarball), under `llama.cpp-<version>/`, plus one file of
patchkit's own there: PATCHKIT-SOURCE, which says what the tree is. llama.cpp's build finds its
build number and commit only through git or `-D`, and a tarball has no git, so a packager's build
reads them from there. Every entry is dated SOURCE_DATE_EPOCH when set, else at the upstream
commit: never now, so building the same thing twice gives the same bytes.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from patchkit.errors import PatchkitError
from patchkit.export import sha256sums, tarball
from patchkit.export.patched import PatchedQueue, patched_queue
from patchkit.fileio import atomic_file, atomic_write, ensure_writable, missing_folders, remove_empty
from patchkit.project import Project
from patchkit.hooks import Hooks

SOURCE_FILE = "PATCHKIT-SOURCE"
SUMS_FILE = "SHA256SUMS"
_EPOCH = re.compile(r"[0-9]+")
# The latest time a ustar header holds (11 octal digits: year 2242). A later one would go into a
# PAX header on every entry, which GNU tar refuses beyond 64 bits; no source is dated that late.
_LATEST_EPOCH = 8**11 - 1


@dataclass(frozen=True)
class DistOptions:
    output: Path  # FILE.tar, FILE.tar.gz or FILE.tar.xz
    spec: str = "upstream@locked"
    upstream: str | None = None
    fetch: bool = True
    source_date_epoch: str | None = None  # the environment's SOURCE_DATE_EPOCH, unparsed


@dataclass(frozen=True)
class QueueEntry:
    name: str
    sha256: str  # of the queue's patch file, as the version hashes it


@dataclass(frozen=True)
class DistResult:
    output: Path
    compression: str  # none, gzip, xz
    sha256: str  # of OUTPUT
    size: int
    tar_name: str  # the uncompressed tarball's name in SHA256SUMS (OUTPUT's own for a plain tar)
    tar_sha256: str  # the same on any machine, unlike a compressed file's
    tar_size: int
    sums: Path  # SHA256SUMS, beside OUTPUT
    top: str  # the one folder at the top: llama.cpp-<version>
    entries: int  # folders, files and symlinks, PATCHKIT-SOURCE included
    mtime: int  # of every entry
    mtime_source: str  # SOURCE_DATE_EPOCH or upstream-commit
    version: str
    upstream_url: str
    upstream_commit: str
    build_number: int
    build_commit: str
    patches: tuple[QueueEntry, ...]


def check_options(options: DistOptions) -> tuple[Path, str | None, int | None]:
    """Bad input, found before any work: OUTPUT's real path and compression, and the epoch."""
    output = options.output.absolute().resolve()
    compression = tarball.compression_of(output.name)
    sha256sums.check_name(output.name)
    if output.exists() and not output.is_file():
        raise PatchkitError(f"{options.output} is not a file", "give the tarball's file name with -o")
    ensure_writable(output, output.parent / SUMS_FILE)
    return output, compression, source_date_epoch(options.source_date_epoch)


def source_date_epoch(value: str | None) -> int | None:
    """SOURCE_DATE_EPOCH as reproducible-builds.org defines it: seconds since 1970, a plain integer."""
    if not value:  # empty is unset, as other tools read it
        return None
    if not _EPOCH.fullmatch(value) or int(value) > _LATEST_EPOCH:
        raise PatchkitError(f"SOURCE_DATE_EPOCH={value!r} is not a number of seconds since 1970 "
                            f"(at most {_LATEST_EPOCH})",
                            "set it to an integer such as $(git log -1 --format=%ct), or unset it")
    return int(value)


def make_dist(project: Project, options: DistOptions, hooks: Hooks = Hooks()) -> DistResult:
    output, compression, epoch = check_options(options)
    with patched_queue(project, options.spec, options.upstream, options.fetch, hooks) as patched:
        queue = tuple(QueueEntry(p.name, p.patch.sha256) for p in patched.patches)
        mtime = patched.commit_time if epoch is None else epoch
        top = f"llama.cpp-{patched.version}"
        source = source_text(patched, project.upstream_url, queue)
        if hooks.progress:  # compressing a whole tree can take minutes: say so, not the fetch's line
            hooks.progress(f"writing {top}/ into {output.name}")
        made = missing_folders(output)
        try:
            with atomic_file(output) as fh:
                digest = tarball.write_tar(fh, compression, patched.repo, patched.tree, top, mtime,
                                           {SOURCE_FILE: source.encode()})
        except BaseException:
            remove_empty(made)  # a failed or interrupted run leaves no empty folders either
            raise
    with open(output, "rb") as fh:
        file_sha256 = hashlib.file_digest(fh, "sha256").hexdigest()
    size = output.stat().st_size
    tar_name = tarball.tar_name(output.name)
    sums_path = output.parent / SUMS_FILE
    sums = sha256sums.updated(sha256sums.read(sums_path), {output.name: file_sha256, tar_name: digest.sha256})
    atomic_write(sums_path, sums)
    return DistResult(output, compression or "none", file_sha256, size, tar_name, digest.sha256, digest.size,
                      sums_path, top, digest.entries, mtime,
                      "upstream-commit" if epoch is None else "SOURCE_DATE_EPOCH", patched.version,
                      project.upstream_url, patched.upstream_commit, patched.build_number, patched.build_commit,
                      queue)


def source_text(patched: PatchedQueue, upstream_url: str, queue: tuple[QueueEntry, ...]) -> str:
    """PATCHKIT-SOURCE: `key: value` lines, one `patch:` line per patch in series order, whose
    values are the manifest the version's hash is taken of (patchkit.export.version)."""
    lines = [f"version: {patched.version}",
             f"upstream-url: {upstream_url}",
             f"upstream-commit: {patched.upstream_commit}",
             f"build-number: {patched.build_number}",
             f"build-commit: {patched.build_commit}",
             *(f"patch: {p.sha256}  {p.name}" for p in queue)]
    return "".join(f"{line}\n" for line in lines)
