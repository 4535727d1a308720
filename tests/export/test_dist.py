"""`patchkit dist`: a reproducible tarball of the patched tree, PATCHKIT-SOURCE and SHA256SUMS."""

from __future__ import annotations

import gzip
import io
import lzma
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import assert_matches_schema, run_cli
from dist_helpers import (PATCH_NAME, Upstream, dist, git, make_fork, make_upstream, members, read_member,
                          report, sha256)

SUFFIXES = (".tar", ".tar.gz", ".tar.xz")


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory) -> Upstream:
    return make_upstream(tmp_path_factory.mktemp("stand-in"))


@pytest.fixture
def fork(tmp_path: Path, stand_in: Upstream) -> Path:
    return make_fork(tmp_path / "fork", stand_in)


def test_same_bytes_with_another_umask_folder_and_time_zone(tmp_path: Path, fork: Path) -> None:
    elsewhere = fork / "some" / "folder"
    elsewhere.mkdir(parents=True)
    for suffix in SUFFIXES:
        first = report(dist(fork, tmp_path / "a" / f"src{suffix}"))
        second = report(dist(fork, tmp_path / "b" / f"src{suffix}", cwd=elsewhere, umask=0o077,
                             env={"TZ": "Asia/Kathmandu"}))
        a, b = (tmp_path / "a" / f"src{suffix}").read_bytes(), (tmp_path / "b" / f"src{suffix}").read_bytes()
        assert a == b and first["sha256"] == second["sha256"] == sha256(a)
        assert first["tar_sha256"] == second["tar_sha256"]
        assert stat.S_IMODE((tmp_path / "b" / f"src{suffix}").stat().st_mode) == 0o600  # the umask, as a plain write
        assert_matches_schema(first)
    assert (tmp_path / "a" / "SHA256SUMS").read_bytes() == (tmp_path / "b" / "SHA256SUMS").read_bytes()
    # Every compressed file holds exactly the plain tar, whose sum SHA256SUMS lists for each.
    plain = (tmp_path / "a" / "src.tar").read_bytes()
    assert gzip.decompress((tmp_path / "a" / "src.tar.gz").read_bytes()) == plain
    assert lzma.decompress((tmp_path / "a" / "src.tar.xz").read_bytes()) == plain


def test_source_date_epoch_wins_over_the_commit_date(tmp_path: Path, fork: Path, stand_in: Upstream) -> None:
    dated = report(dist(fork, tmp_path / "dated.tar.gz"))
    committed = int(git(stand_in.path, "show", "-s", "--format=%ct", "HEAD"))
    assert dated["mtime"] == committed and dated["mtime_source"] == "upstream-commit"
    assert {m.mtime for m in members(tmp_path / "dated.tar.gz")} == {committed}

    pinned = report(dist(fork, tmp_path / "pinned.tar.gz", env={"SOURCE_DATE_EPOCH": "1234567890"}))
    assert pinned["mtime"] == 1234567890 and pinned["mtime_source"] == "SOURCE_DATE_EPOCH"
    assert {m.mtime for m in members(tmp_path / "pinned.tar.gz")} == {1234567890}
    header = (tmp_path / "pinned.tar.gz").read_bytes()[:10]
    assert header[3] == 0 and header[4:8] == b"\0\0\0\0"  # no file name, no timestamp
    assert pinned["tar_sha256"] != dated["tar_sha256"]

    # Empty is unset, as other tools read it (a CI template's `SOURCE_DATE_EPOCH: ${{ ... }}`).
    empty = report(dist(fork, tmp_path / "empty.tar.gz", env={"SOURCE_DATE_EPOCH": ""}))
    assert (empty["mtime"], empty["mtime_source"], empty["tar_sha256"]) == \
        (committed, "upstream-commit", dated["tar_sha256"])


@pytest.mark.parametrize("value", ["yesterday", "-5", "1.5", " ", "5\n", "8589934592", "99999999999999999999"])
def test_a_bad_source_date_epoch_is_refused_before_any_work(tmp_path: Path, stand_in: Upstream, value: str) -> None:
    fork = make_fork(tmp_path / "fork", stand_in, lock=False)
    done = dist(fork, tmp_path / "out" / "x.tar", "upstream@HEAD", env={"SOURCE_DATE_EPOCH": value})
    assert done.returncode == 2 and "SOURCE_DATE_EPOCH" in done.stderr
    assert not (tmp_path / "out").exists() and not (fork / "cache").exists()  # not even fetched


@pytest.mark.parametrize("args", [["-o", "x.zip"], ["-o", ".tar.gz"], []], ids=["zip", "bare-suffix", "no-output"])
def test_a_bad_or_missing_output_is_refused_before_any_work(tmp_path: Path, stand_in: Upstream, args: list[str]) -> None:
    fork = make_fork(tmp_path / "fork", stand_in, lock=False)
    done = run_cli("dist", "upstream@HEAD", *args, cwd=fork)
    assert done.returncode == 2
    assert ".tar" in done.stderr if args else "--output" in done.stderr
    assert not (fork / "cache").exists() and sorted(p.name for p in fork.iterdir()) == ["patches", "patchkit.yaml"]


def test_entries_are_sorted_owned_by_root_and_normalised(tmp_path: Path, fork: Path) -> None:
    version = report(dist(fork, tmp_path / "n.tar"))["version"]
    top = f"llama.cpp-{version}"
    entries = members(tmp_path / "n.tar")
    names = [m.name for m in entries]
    assert names == sorted(names) and names[0] == top and all(n.startswith(f"{top}/") for n in names[1:])
    assert all((m.uid, m.gid, m.uname, m.gname) == (0, 0, "", "") for m in entries)
    # Extended headers only for what ustar cannot hold: never a time, a user or a group.
    assert {key for m in entries for key in m.pax_headers} == {"path"}
    assert f"docs/{'long-' * 20}name.md" in {n.removeprefix(f"{top}/") for n in names} and f"{top}/docs/café.md" in names
    by_name = {m.name.removeprefix(f"{top}/"): m for m in entries}
    assert by_name["scripts/run.sh"].isfile() and by_name["scripts/run.sh"].mode == 0o755
    assert by_name["README.md"].isfile() and by_name["README.md"].mode == 0o644
    assert by_name["scripts"].isdir() and by_name["scripts"].mode == 0o755 and by_name[top].isdir()
    link = by_name["include/llama-link.h"]
    assert link.issym() and link.linkname == "llama.h" and link.mode == 0o777
    assert not any(n == ".git" or n.startswith(".git/") for n in by_name)


def test_patchkit_source_says_what_the_tree_is(tmp_path: Path, fork: Path, stand_in: Upstream) -> None:
    done = dist(fork, tmp_path / "s.tar.xz")
    result = report(done)
    patch_sha = sha256((fork / "patches" / PATCH_NAME).read_bytes())
    manifest = f"{patch_sha}  {PATCH_NAME}\n"  # the version's hash, as patchkit.export.version documents it
    version = f"b3+pk1.{sha256(manifest.encode())[:8]}"
    assert result["version"] == version and result["build_number"] == 3
    assert read_member(tmp_path / "s.tar.xz", f"llama.cpp-{version}/PATCHKIT-SOURCE").decode() == (
        f"version: {version}\n"
        f"upstream-url: {stand_in.path}\n"
        f"upstream-commit: {stand_in.head}\n"
        "build-number: 3\n"
        f"build-commit: {stand_in.head[:8]}\n"
        f"patch: {patch_sha}  {PATCH_NAME}\n")
    assert result["patches"] == [{"name": PATCH_NAME, "sha256": patch_sha}]
    # The long part is said as such, on stderr: a CI log must not show "fetching" while xz runs.
    assert f"dist s.tar.xz: writing llama.cpp-{version}/ into s.tar.xz\n" in done.stderr


def test_the_files_are_the_applied_trees(tmp_path: Path, fork: Path) -> None:
    result = report(dist(fork, tmp_path / "f.tar.gz"))
    applied = tmp_path / "fork" / "applied"  # make_fork's apply at the locked commit
    listed = [name for name in git(applied, "ls-files", "-z").split("\0") if name]
    with tarfile.open(tmp_path / "f.tar.gz") as tar:
        files = {m.name.removeprefix(result["top"] + "/"): m for m in tar.getmembers() if not m.isdir()}
        assert sorted(files) == sorted(listed + ["PATCHKIT-SOURCE"])
        for name in listed:
            on_disk = applied / name
            if on_disk.is_symlink():
                assert files[name].linkname == str(on_disk.readlink())
            else:
                fh = tar.extractfile(files[name])
                assert fh is not None and fh.read() == on_disk.read_bytes(), name
    assert b"(patched)" in (applied / "tools/cli/cli.cpp").read_bytes()


def test_sha256sums_checks_out_and_keeps_other_files_lines(tmp_path: Path, fork: Path) -> None:
    out = tmp_path / "release"
    out.mkdir()
    other = "0" * 64 + "  aaa-other.tar.gz\n"
    (out / "SHA256SUMS").write_text("1" * 64 + "  src.tar.xz\n" + other + "2" * 64 + " *zzz.bin\n")
    result = report(dist(fork, out / "src.tar.xz"))
    assert (out / "SHA256SUMS").read_text() == (
        other + f"{result['tar_sha256']}  src.tar\n" + f"{result['sha256']}  src.tar.xz\n" + "2" * 64 + " *zzz.bin\n")
    checked = subprocess.run(["sha256sum", "-c", "--ignore-missing", "SHA256SUMS"], cwd=out,
                             capture_output=True, text=True)
    assert checked.returncode == 0 and checked.stdout == "src.tar.xz: OK\n", checked.stdout + checked.stderr
    unpacked = subprocess.run(["xz", "-dc", "src.tar.xz"], cwd=out, capture_output=True, check=True).stdout
    assert sha256(unpacked) == result["tar_sha256"]
    # A line `sha256sum --tag` wrote for the same file is replaced too, not left to fail the check.
    (out / "SHA256SUMS").write_text(f"SHA256 (src.tar.xz) = {'3' * 64}\n" + other)
    report(dist(fork, out / "src.tar.xz"))
    assert (out / "SHA256SUMS").read_text() == (
        other + f"{result['tar_sha256']}  src.tar\n" + f"{result['sha256']}  src.tar.xz\n")
    # A plain tar is one file, one line.
    plain = report(dist(fork, out / "src.tar"))
    assert (out / "SHA256SUMS").read_text().count("  src.tar\n") == 1 and plain["tar_sha256"] == plain["sha256"]
    assert subprocess.run(["sha256sum", "-c", "--ignore-missing", "SHA256SUMS"], cwd=out).returncode == 0


def test_a_queue_that_is_not_good_there_writes_nothing(tmp_path: Path, fork: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "SHA256SUMS").write_text("0" * 64 + "  kept.tar\n")
    before = (out / "SHA256SUMS").read_bytes()
    done = dist(fork, out / "src.tar.gz", "upstream@master~1")  # the patched script is not there yet
    assert done.returncode == 2 and f"{PATCH_NAME} is missing-file" in done.stderr, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["SHA256SUMS"] and (out / "SHA256SUMS").read_bytes() == before


def test_a_submodule_is_refused_before_anything_is_written(tmp_path: Path, stand_in: Upstream) -> None:
    from patchkit.errors import PatchkitError
    from patchkit.export.tarball import write_tar

    repo = tmp_path / "with-submodule"
    git(tmp_path, "clone", "-q", str(stand_in.path), str(repo))
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{stand_in.head},vendor/lib")
    git(repo, "commit", "-q", "-m", "vendor a library as a submodule")
    out = io.BytesIO()
    with pytest.raises(PatchkitError, match="submodule at 'vendor/lib'"):
        write_tar(out, "gzip", repo, git(repo, "rev-parse", "HEAD^{tree}"), "top", 0, {})
    assert out.getvalue() == b""


def test_a_failure_while_writing_leaves_no_file_and_no_folder(tmp_path: Path, stand_in: Upstream) -> None:
    # A patch adding PATCHKIT-SOURCE is refused only once the tarball is being written.
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(stand_in.path), str(work))
    (work / "PATCHKIT-SOURCE").write_text("mine\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "add a file dist adds itself")
    fork = make_fork(tmp_path / "fork", stand_in, lock=False)
    (fork / "patches" / "clash.patch").write_text(
        git(work, "format-patch", "-1", "--stdout", "--full-index", "--no-signature") + "\n")
    (fork / "patches" / "series").write_text("clash.patch\n")
    done = dist(fork, tmp_path / "new" / "deeper" / "src.tar.gz", "upstream@HEAD")
    assert done.returncode == 2 and "already has 'PATCHKIT-SOURCE'" in done.stderr, done.stderr
    assert not (tmp_path / "new").exists()
