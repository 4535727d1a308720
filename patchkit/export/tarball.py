"""A git tree as a reproducible tar stream, optionally gzip- or xz-compressed.

Everything a checkout would take from the machine is fixed instead: entries come from the git
objects (so no umask, clock, user or file system order leaks in), sorted by path, every one
dated MTIME, owned by 0:0 with empty names, modes 0644 (files), 0755 (executables and folders)
and 0777 (symlinks, kept as symlinks), under one top folder. tarfile's PAX format adds an extended
header only for what ustar cannot hold (a long or non-ASCII path or link target), never times.
Given the same tree, top, MTIME and extra files, the uncompressed stream is the same bytes on any
machine; the compressed one depends on the compressor's build too, so it is the same bytes run
after run on one machine.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import lzma
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from patchkit import git
from patchkit.errors import PatchkitError

# The name's ending says how it is compressed; `None` is a plain tar.
COMPRESSIONS = {".tar": None, ".tar.gz": "gzip", ".tar.xz": "xz"}
# Fixed settings: the compressed bytes then depend only on the compressor's build.
_XZ_PRESET = 6  # xz's own default
_GZIP_LEVEL = 6  # gzip's and `git archive`'s default: level 9 took 5x as long for 1.5 % less
_SUBMODULE = "160000"


@dataclass(frozen=True)
class TreeEntry:
    path: str  # relative, '/'-separated, as git stores it (undecodable bytes surrogate-escaped)
    mode: str  # git's octal mode: 100644, 100755, 120000, 040000 (old trees may hold 100664)
    oid: str

    def kind_and_mode(self) -> tuple[bytes, int]:
        """The tar type and normalised mode: what git records, and nothing of any checkout."""
        mode = int(self.mode, 8)
        if stat.S_ISDIR(mode):
            return tarfile.DIRTYPE, 0o755
        if stat.S_ISLNK(mode):
            return tarfile.SYMTYPE, 0o777
        return tarfile.REGTYPE, 0o755 if mode & 0o111 else 0o644


@dataclass(frozen=True)
class TarDigest:
    """What was written: the uncompressed tar's sha256 and size, and its number of entries."""

    sha256: str
    size: int
    entries: int


def compression_of(name: str) -> str | None:
    """The compression a file name asks for (see COMPRESSIONS); bad input for any other name."""
    for suffix, compression in COMPRESSIONS.items():
        if name.endswith(suffix) and len(name) > len(suffix):
            return compression
    raise PatchkitError(f"{name!r} does not end in .tar, .tar.gz or .tar.xz",
                        "name the tarball FILE.tar, FILE.tar.gz or FILE.tar.xz")


def tar_name(name: str) -> str:
    """The uncompressed tarball's name for NAME: `x.tar.gz` -> `x.tar`."""
    return name.removesuffix(".gz").removesuffix(".xz")


def tree_entries(repo: Path, tree: str) -> list[TreeEntry]:
    """Every entry of TREE in REPO, folders included; a submodule is refused, since the tarball
    could only hold an empty folder where its source belongs."""
    entries = []
    for record in git.run(["ls-tree", "-r", "-t", "-z", "--full-tree", tree, "--"], cwd=repo).split("\0"):
        if not record:
            continue
        meta, path = record.split("\t", 1)
        mode, _kind, oid = meta.split(" ")
        if mode == _SUBMODULE:
            raise PatchkitError(f"the patched tree has a git submodule at {path!r}, whose source a tarball cannot carry",
                                "dist works on trees without submodules")
        entries.append(TreeEntry(path, mode, oid))
    return entries


def write_tar(out: BinaryIO, compression: str | None, repo: Path, tree: str, top: str, mtime: int,
              extra: dict[str, bytes]) -> TarDigest:
    """Write TREE of REPO under folder TOP to OUT, with EXTRA files (name -> bytes) beside the
    tree's own at the top; compressed as COMPRESSION says."""
    entries = tree_entries(repo, tree)
    clash = sorted(set(extra) & {e.path for e in entries})
    if clash:
        raise PatchkitError(f"the patched tree already has {clash[0]!r}, which the tarball adds itself",
                            "rename that file upstream of the tarball")
    # name, type, mode, and where the bytes come from: a tree entry, EXTRA's bytes, or none (a folder)
    members: list[tuple[str, bytes, int, TreeEntry | bytes | None]] = [(top, tarfile.DIRTYPE, 0o755, None)]
    members += [(f"{top}/{e.path}", *e.kind_and_mode(), e) for e in entries]
    members += [(f"{top}/{name}", tarfile.REGTYPE, 0o644, data) for name, data in extra.items()]
    members.sort(key=lambda m: m[0].encode("utf-8", "surrogateescape"))
    with _compressor(out, compression) as stream:
        hashing = _Hashing(stream)
        # The encoding is fixed: tarfile's default follows the machine's locale.
        with git.ObjectReader(repo) as reader, tarfile.open(
                fileobj=hashing, mode="w", format=tarfile.PAX_FORMAT,  # type: ignore[arg-type]
                encoding="utf-8", errors="surrogateescape") as tar:
            for name, kind, mode, source in members:
                if isinstance(source, TreeEntry):
                    source = None if kind == tarfile.DIRTYPE else _blob(reader, source)
                _add(tar, name, kind, mode, mtime, source)
    return TarDigest(hashing.sha.hexdigest(), hashing.size, len(members))


def _blob(reader: git.ObjectReader, entry: TreeEntry) -> bytes:
    data = reader.read(entry.oid)
    if data is None:
        raise PatchkitError(f"object {entry.oid} ({entry.path}) is missing from the mirror",
                            "run once without --no-fetch")
    return data


def _add(tar: tarfile.TarFile, name: str, kind: bytes, mode: int, mtime: int, data: bytes | None) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = kind, mode, mtime
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if kind == tarfile.SYMTYPE:
        assert data is not None
        info.linkname = data.decode("utf-8", "surrogateescape")
        tar.addfile(info)
    elif kind == tarfile.REGTYPE:
        assert data is not None
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    else:
        tar.addfile(info)


def _compressor(out: BinaryIO, compression: str | None):
    """A writable stream that compresses into OUT (closing it finishes the stream, not OUT)."""
    if compression == "gzip":
        # No name and mtime 0: the header then says nothing about this machine or this moment.
        return gzip.GzipFile(filename="", mode="wb", fileobj=out, compresslevel=_GZIP_LEVEL, mtime=0)
    if compression == "xz":
        return lzma.LZMAFile(out, "wb", format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=_XZ_PRESET)
    return contextlib.nullcontext(out)


class _Hashing:
    """Passes writes on, counting and hashing them: the uncompressed tar's sum, in one pass."""

    def __init__(self, out: BinaryIO) -> None:
        self.out, self.sha, self.size = out, hashlib.sha256(), 0

    def write(self, data: bytes) -> int:
        self.sha.update(data)
        self.size += len(data)
        return self.out.write(data)

    def tell(self) -> int:  # tarfile asks where the archive starts
        return self.size
