"""export/tarball.py on a real git tree: the same bytes whatever the commit around the tree, sorted
entries, normalised modes, owners and times, symlinks kept, long and UTF-8 names through PAX
headers that carry nothing else; read back by Python's tarfile and by GNU tar."""

from __future__ import annotations

import gzip
import hashlib
import io
import lzma
import os
import subprocess
import tarfile
from pathlib import Path

import pytest
from conftest import git_identity

from patchkit.errors import PatchkitError
from patchkit.export.tarball import compression_of, tar_name, write_tar
from patchkit.git import git_env

MTIME = 1790000000
LONG_DIR = "ggml/src/ggml-cpu/" + "very-long-folder-name-for-a-kernel-family/" * 3
LONG = LONG_DIR + "quantize.cpp"  # > 100 bytes: ustar cannot hold it in its name field
UTF8 = "docs/modèles/überblick-日本語.md"


def git(repo: Path, *args: str, date: str = "1790600000 +0000", data: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, input=data,
                          env=git_env(git_identity(date=date))).stdout.decode().strip()


def make_repo(root: Path, date: str = "1790600000 +0000") -> tuple[Path, str]:
    """A repository whose HEAD tree has every kind of entry; returns it and the tree id."""
    root.mkdir(parents=True)
    git(root, "init", "--quiet")
    files = {"README.md": b"# upstream\n", "src/a-b.c": b"int ab;\n", "src/a/b.c": b"int b;\n",
             "src/a.c": b"int a;\n", LONG: b"// long\n", UTF8: "é\n".encode(), "Z-last": b"z\n"}
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    script = root / "scripts" / "build.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\necho build\n")
    script.chmod(0o700)  # git records 100755; the tarball says 0755 whatever the checkout had
    (root / "include").mkdir()
    (root / "include" / "llama.h").write_text("#pragma once\n")
    (root / "include" / "llama-latest.h").symlink_to("llama.h")
    (root / "long-link").symlink_to(LONG)  # a link target longer than ustar's 100 bytes
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "tree", date=date)
    return root, git(root, "rev-parse", "HEAD^{tree}")


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> tuple[Path, str]:
    return make_repo(tmp_path_factory.mktemp("tarball") / "repo")


def tar_bytes(repo: Path, tree_id: str, compression: str | None = None, **extra: bytes) -> tuple[bytes, object]:
    out = io.BytesIO()
    digest = write_tar(out, compression, repo, tree_id, "llama.cpp-b1000", MTIME,
                       {k.replace("_", "-"): v for k, v in extra.items()})
    return out.getvalue(), digest


def test_members_sorted_normalised_and_complete(tree):
    data, digest = tar_bytes(*tree, PATCHKIT_SOURCE=b"upstream b1000\n")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = tar.getmembers()
        names = [m.name for m in members]
        assert names == sorted(names, key=str.encode)
        top = "llama.cpp-b1000"
        # by the path's bytes: a folder before its files, and "a-b.c" < "a.c" < "a/b.c"
        assert [n.removeprefix(f"{top}/src/") for n in names if n.startswith(f"{top}/src/")] == [
            "a", "a-b.c", "a.c", "a/b.c"]
        by_name = {m.name: m for m in members}
        assert all(m.mtime == MTIME and m.uid == m.gid == 0 and m.uname == m.gname == "" for m in members)
        assert by_name[top].isdir() and by_name[top].mode == 0o755
        assert by_name[f"{top}/src/a"].isdir() and by_name[f"{top}/src/a"].mode == 0o755
        assert by_name[f"{top}/README.md"].mode == 0o644
        assert by_name[f"{top}/scripts/build.sh"].mode == 0o755
        link = by_name[f"{top}/include/llama-latest.h"]
        assert link.issym() and link.linkname == "llama.h" and link.mode == 0o777
        assert by_name[f"{top}/long-link"].linkname == LONG
        assert tar.extractfile(f"{top}/{LONG}").read() == b"// long\n"
        assert tar.extractfile(f"{top}/{UTF8}").read() == "é\n".encode()
        assert tar.extractfile(f"{top}/PATCHKIT-SOURCE").read() == b"upstream b1000\n"
        # PAX extended headers only for what ustar cannot hold: never times or owners
        for m in members:
            assert set(m.pax_headers) <= {"path", "linkpath"}, (m.name, m.pax_headers)
        assert set(by_name[f"{top}/{UTF8}"].pax_headers) == {"path"}
        assert by_name[f"{top}/README.md"].pax_headers == {}
    git_entries = git(tree[0], "ls-tree", "-r", "-t", "--name-only", tree[1]).splitlines()
    assert digest.entries == len(members) == 1 + len(git_entries) + 1
    assert digest.sha256 == hashlib.sha256(data).hexdigest() and digest.size == len(data)


def test_gnu_tar_reads_it_the_same(tree, tmp_path):
    data, _ = tar_bytes(*tree)
    archive = tmp_path / "src.tar"
    archive.write_bytes(data)
    listing = subprocess.run(["tar", "-tvf", str(archive), "--numeric-owner", "--full-time"],
                             check=True, capture_output=True, text=True,
                             env={**os.environ, "TZ": "UTC", "LC_ALL": "C.UTF-8"}).stdout
    lines = {line.split(maxsplit=5)[-1]: line for line in listing.splitlines()}  # by name
    top = "llama.cpp-b1000"
    assert lines[f"{top}/scripts/build.sh"].startswith("-rwxr-xr-x 0/0")
    assert lines[f"{top}/README.md"].startswith("-rw-r--r-- 0/0")
    assert lines[f"{top}/include/llama-latest.h -> llama.h"].startswith("lrwxrwxrwx 0/0")
    assert f"{top}/{UTF8}" in lines and f"{top}/{LONG}" in lines and f"{top}/long-link -> {LONG}" in lines
    assert all(" 2026-09-21 14:13:20 " in line for line in listing.splitlines())  # MTIME, in UTC
    subprocess.run(["tar", "-xf", str(archive), "-C", str(tmp_path)], check=True)
    out = tmp_path / top
    assert (out / LONG).read_bytes() == b"// long\n" and (out / UTF8).read_text() == "é\n"
    assert os.readlink(out / "include" / "llama-latest.h") == "llama.h"
    assert os.access(out / "scripts" / "build.sh", os.X_OK)


def test_the_same_tree_gives_the_same_bytes_from_another_commit_and_clone(tree, tmp_path):
    other, other_tree = make_repo(tmp_path / "other", date="1800000000 +0530")
    assert other_tree == tree[1]
    assert git(other, "rev-parse", "HEAD") != git(tree[0], "rev-parse", "HEAD")
    first, digest = tar_bytes(*tree)
    assert tar_bytes(other, other_tree) == (first, digest)
    old_umask = os.umask(0o077)
    try:
        assert tar_bytes(*tree)[0] == first
    finally:
        os.umask(old_umask)


def test_compressed_streams_are_stable_and_their_digest_is_the_tar(tree):
    plain, plain_digest = tar_bytes(*tree)
    gz, gz_digest = tar_bytes(*tree, compression="gzip")
    assert gz == tar_bytes(*tree, compression="gzip")[0]
    assert gzip.decompress(gz) == plain and gz_digest == plain_digest
    assert gz[3] & 0x08 == 0 and gz[4:8] == b"\0\0\0\0"  # no file name, no time in the header
    xz, xz_digest = tar_bytes(*tree, compression="xz")
    assert lzma.decompress(xz) == plain and xz_digest == plain_digest


def test_an_old_group_writable_mode_is_normalised(tmp_path):
    """Old trees may record 100664; the tarball still says 0644."""
    repo = tmp_path / "old"
    repo.mkdir()
    git(repo, "init", "--quiet")
    blob = git(repo, "hash-object", "-w", "--stdin", data=b"old\n")
    tree_id = git(repo, "mktree", data=f"100664 blob {blob}\tgroup.txt\n".encode())
    data, _ = tar_bytes(repo, tree_id)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert tar.getmember("llama.cpp-b1000/group.txt").mode == 0o644


def test_an_extra_file_the_tree_has_is_refused(tree):
    with pytest.raises(PatchkitError, match="already has 'README.md'"):
        tar_bytes(*tree, **{"README.md": b"x"})


def test_names_and_compressions():
    assert [compression_of(n) for n in ("a.tar", "a.tar.gz", "a.tar.xz")] == [None, "gzip", "xz"]
    for bad in ("a.tgz", "a.zip", ".tar", ".tar.gz", "a.tar.bz2"):
        with pytest.raises(PatchkitError, match="does not end in .tar, .tar.gz or .tar.xz"):
            compression_of(bad)
    assert [tar_name(n) for n in ("x.tar.gz", "x.tar.xz", "x.tar")] == ["x.tar"] * 3
