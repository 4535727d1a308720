"""`patchkit export` as users run it: the report, stable bytes, OUT whole or untouched, refusals."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import PATCH_NAME, apply, assert_matches_schema, git_identity, run_cli, seed_patch_path, write_project
from export_helpers import checkout, git_am
from patchkit import git


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(folder: Path) -> list[str]:
    """Temporary folders an export left beside OUT."""
    return [p.name for p in folder.parent.iterdir() if ".patchkit-" in p.name]


@pytest.fixture
def locked(project):
    """The fork with the queue locked at master (every hunk an offset)."""
    assert apply(project, "master", update_lock=True).exit_code == 0
    return project


def test_json_report_and_the_same_bytes_every_time(locked, tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    proc = run_cli("export", "debian", str(first), "--no-fetch", "--json", str(tmp_path / "export.json"),
                   cwd=locked.root)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "export.json").read_text())
    assert_matches_schema(report)
    lock = locked.lock()
    assert (report["format"], report["out"], report["upstream_commit"]) == ("debian", str(first), lock.upstream_commit)
    assert report["tree"] == lock.tree
    assert [p["name"] for p in report["patches"]] == [PATCH_NAME]
    assert report["patches"][0]["file"] == f"patches/{PATCH_NAME}"
    written = files_of(first)
    assert {f["path"]: f["sha256"] for f in report["files"]} == {
        path: hashlib.sha256(data).hexdigest() for path, data in written.items()}
    assert f"llama.cpp {report['version']}" in proc.stdout
    assert run_cli("export", "debian", str(second), "--no-fetch", cwd=locked.root).returncode == 0
    assert files_of(second) == written
    assert run_cli("export", "debian", str(first), "--force", "--no-fetch", cwd=locked.root).returncode == 0
    assert files_of(first) == written and leftovers(first) == []


def test_a_folder_with_files_is_replaced_only_with_force(locked, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.patch").write_text("old\n")
    proc = run_cli("export", "quilt", str(out), "--no-fetch", cwd=locked.root)
    assert proc.returncode == 2 and f"{out} is not empty" in proc.stderr and "--force" in proc.stderr
    assert files_of(out) == {"stale.patch": b"old\n"}
    proc = run_cli("export", "quilt", str(out), "--no-fetch", "--force", cwd=locked.root)
    assert proc.returncode == 0, proc.stderr
    assert set(files_of(out)) == {PATCH_NAME, "series"}


def test_an_interrupted_write_leaves_no_folder_behind(locked, tmp_path, monkeypatch):
    from patchkit.export.formats import Format
    from patchkit.export.run import ExportOptions, run_export

    write_bytes = Path.write_bytes

    def interrupted(self, data):  # Ctrl-C while the export's own files are written
        if ".patchkit-new-" in str(self):
            raise KeyboardInterrupt
        return write_bytes(self, data)

    monkeypatch.setattr(Path, "write_bytes", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_export(locked, ExportOptions(Format.QUILT, tmp_path / "new" / "deeper" / "out", fetch=False))
    assert not (tmp_path / "new").exists()


def test_never_a_folder_that_holds_the_project(locked):
    proc = run_cli("export", "quilt", str(locked.root), "--force", "--no-fetch", cwd=locked.root)
    assert proc.returncode == 2 and "holds" in proc.stderr
    assert (locked.root / "patchkit.yaml").is_file()


def test_without_a_lock_the_locked_commit_is_refused(project, tmp_path):
    proc = run_cli("export", "nix", str(tmp_path / "out"), cwd=project.root)
    assert proc.returncode == 2 and "no locked commit" in proc.stderr and "--at" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_patch_that_needs_fuzz_is_refused_and_out_is_left_as_it_was(project, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep").write_text("mine\n")
    proc = run_cli("export", "debian", str(out), "--at", "upstream@scenario/members-added", "--force",
                   cwd=project.root)
    assert proc.returncode == 2
    assert f"{PATCH_NAME} needs fuzz (tools/server/server-context.cpp hunk 1 is fuzzed" in proc.stderr
    assert "fuzz 0" in proc.stderr
    assert files_of(out) == {"keep": b"mine\n"} and leftovers(out) == []


def test_a_queue_whose_site_checks_fail_is_refused(project, tmp_path):
    """scenario/new-site: the patch applies cleanly, but upstream added a 7th speculative site."""
    out = tmp_path / "out"
    proc = run_cli("dist", "upstream@scenario/new-site", "-o", str(out / "src.tar"), cwd=project.root)
    assert proc.returncode == 2
    assert "the site checks fail there" in proc.stderr and "patchkit apply upstream@" in proc.stderr
    proc = run_cli("export", "quilt", str(out), "--at", "upstream@scenario/new-site", cwd=project.root)
    assert proc.returncode == 2 and "the site checks fail there" in proc.stderr
    assert not out.exists()


def binary_patch(tmp_path: Path, upstream: Path) -> Path:
    """A patch adding a binary file on top of master (and of the seed patch, which does not touch it)."""
    work = tmp_path / "binary-work"
    git.run(["clone", "--quiet", str(upstream), str(work)])
    (work / "models").mkdir()
    (work / "models" / "vocab.bin").write_bytes(bytes(range(256)) * 4)
    git.run(["add", "-A"], cwd=work)
    git.run(["commit", "--quiet", "-m", "models : add a test vocabulary"], cwd=work, env=git_identity())
    patch = tmp_path / "add-vocab.patch"
    patch.write_text(git.run(["format-patch", "-1", "--stdout", "--binary", "--full-index"], cwd=work) + "\n")
    return patch


def test_a_binary_patch_is_refused_for_debian_and_exported_as_mbox(tmp_path, upstream):
    fork = write_project(tmp_path / "fork", str(upstream.path), [seed_patch_path(), binary_patch(tmp_path, upstream.path)])
    out = tmp_path / "out"
    proc = run_cli("export", "debian", str(out), "--at", "upstream@master", cwd=fork)
    assert proc.returncode == 2 and "cannot export add-vocab.patch as debian: a binary patch" in proc.stderr
    assert not out.exists() and leftovers(out) == []
    proc = run_cli("export", "mbox", str(out), "--at", "upstream@master", "--json", "-", cwd=fork)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    work = checkout(upstream.path, report["upstream_commit"], tmp_path / "src")
    assert git_am(work, out / "patches.mbox")[-1] == report["tree"]
    assert (work / "models" / "vocab.bin").read_bytes() == bytes(range(256)) * 4


def test_rpm_and_arch_refuse_patches_in_subfolders(tmp_path, upstream):
    fork = write_project(tmp_path / "fork", str(upstream.path), [])
    (fork / "patches" / "server").mkdir()
    shutil.copy(seed_patch_path(), fork / "patches" / "server" / PATCH_NAME)
    (fork / "patches" / "series").write_text(f"server/{PATCH_NAME}\n")
    for fmt in ("rpm", "arch"):
        proc = run_cli("export", fmt, str(tmp_path / fmt), "--at", "upstream@master", cwd=fork)
        assert proc.returncode == 2 and f"{fmt} cannot carry server/{PATCH_NAME}: " in proc.stderr
    proc = run_cli("export", "nix", str(tmp_path / "nix"), "--at", "upstream@master", cwd=fork)
    assert proc.returncode == 0, proc.stderr
    assert f"  ./server/{PATCH_NAME}\n" in (tmp_path / "nix" / "patches.nix").read_text()
    assert (tmp_path / "nix" / "server" / PATCH_NAME).is_file()


def test_rpm_refuses_names_its_macros_or_shell_would_change_and_arch_quotes_them(tmp_path, upstream):
    # %autosetup expands %{name} in a patch's path, then runs it unquoted through the shell ($HOME)
    name = "fix$HOME%{name}.patch"
    fork = write_project(tmp_path / "fork", str(upstream.path), [])
    shutil.copy(seed_patch_path(), fork / "patches" / name)
    (fork / "patches" / "series").write_text(f"{name}\n")
    proc = run_cli("export", "rpm", str(tmp_path / "rpm"), "--at", "upstream@master", cwd=fork)
    assert proc.returncode == 2 and f"rpm cannot carry {name}: " in proc.stderr
    assert not (tmp_path / "rpm").exists()
    proc = run_cli("export", "arch", str(tmp_path / "arch"), "--at", "upstream@master", cwd=fork)
    assert proc.returncode == 0, proc.stderr
    listed = subprocess.run(["bash", "-euc", '. ./PKGBUILD.patchkit; printf "%s\\n" "${source[@]}"'],
                            cwd=tmp_path / "arch", capture_output=True, text=True, check=True).stdout
    assert listed == f"{name}\n" and (tmp_path / "arch" / name).is_file()


def test_an_empty_queue_exports_fragments_that_still_work(tmp_path, upstream):
    fork = write_project(tmp_path / "fork", str(upstream.path), [])
    for fmt in ("debian", "quilt", "rpm", "nix", "arch", "gentoo", "mbox"):
        proc = run_cli("export", fmt, str(tmp_path / fmt), "--at", "upstream@master", cwd=fork)
        assert proc.returncode == 0, proc.stderr
    # A function with an empty body is a bash syntax error: makepkg could not even read the PKGBUILD.
    done = subprocess.run(["bash", "-euc", "srcdir=$PWD; . ./PKGBUILD.patchkit; _patchkit_prepare; "
                           'echo "${#source[@]} ${#sha256sums[@]}"'],
                          cwd=tmp_path / "arch", capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "0 0\n", done.stderr


@pytest.mark.parametrize("inside", ["patches/debian", "cache/debian", "llama.cpp/debian"])
def test_never_a_folder_inside_the_queue_or_the_cache(locked, inside):
    proc = run_cli("export", "debian", inside, "--no-fetch", cwd=locked.root)
    assert proc.returncode == 2 and f"{inside} is inside " in proc.stderr
    assert not (locked.root / inside).exists()


def test_an_unknown_format_is_a_usage_error(project, tmp_path):
    proc = run_cli("export", "deb", str(tmp_path / "out"), cwd=project.root)
    assert proc.returncode == 2 and "deb" in proc.stderr
    assert not (tmp_path / "out").exists()
