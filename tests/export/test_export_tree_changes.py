"""Whole-file changes through the packagers' tools: a mode change, a rename, a deletion, a new
executable, an empty file and symlinks come out of quilt and `patch -p1` exactly as patchkit
applies them (GNU patch reads git's mode and symlink lines)."""

from __future__ import annotations

from pathlib import Path

from dist_helpers import git, make_fork, make_upstream
from export_helpers import checkout, run, tool, tree_id
from patchkit.export.formats import Format
from patchkit.export.run import ExportOptions, run_export
from patchkit.project import Project


def whole_file_patch(upstream: Path, dest: Path) -> Path:
    git(upstream, "checkout", "-q", "-b", "wip")
    (upstream / "scripts" / "run.sh").chmod(0o644)
    git(upstream, "mv", "README.md", "README.txt")
    git(upstream, "rm", "-q", f"docs/{'long-' * 20}name.md")
    (upstream / "tools" / "new.sh").write_text("#!/bin/sh\necho new\n")
    (upstream / "tools" / "new.sh").chmod(0o755)
    (upstream / "EMPTY").write_text("")
    (upstream / "include" / "new-link.h").symlink_to("llama.h")
    (upstream / "include" / "llama-link.h").unlink()
    (upstream / "include" / "llama-link.h").symlink_to("ggml.h")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "tree: every kind of whole-file change")
    dest.write_text(git(upstream, "format-patch", "-1", "--zero-commit", "--full-index", "--no-signature",
                        "--stdout") + "\n")
    git(upstream, "checkout", "-q", "master")
    git(upstream, "branch", "-q", "-D", "wip")
    return dest


def test_quilt_and_patch_reproduce_modes_renames_deletions_and_symlinks(tmp_path: Path) -> None:
    stand_in = make_upstream(tmp_path / "stand-in")
    extra = whole_file_patch(stand_in.path, tmp_path / "whole-files.patch")
    fork = make_fork(tmp_path / "fork", stand_in, lock=False)
    (fork / "patches" / extra.name).write_bytes(extra.read_bytes())
    with (fork / "patches" / "series").open("a") as series:
        series.write(f"{extra.name}\n")
    project = Project.load(fork)
    debian = run_export(project, ExportOptions(Format.DEBIAN, tmp_path / "debian", "upstream@master"))
    rpm = run_export(project, ExportOptions(Format.RPM, tmp_path / "rpm", "upstream@master"))
    work = checkout(stand_in.path, debian.upstream_commit, tmp_path / "quilt")
    run([tool("quilt"), "push", "-a", "--fuzz=0"], work, {"QUILT_PATCHES": str(tmp_path / "debian" / "patches")})
    assert tree_id(work) == debian.tree
    changes = git(work, "diff", "--cached", "--summary", "-M", "HEAD")  # what the round trip is about
    assert " mode change 100755 => 100644 scripts/run.sh" in changes and " rename README.md => README.txt" in changes
    assert " create mode 120000 include/new-link.h" in changes and " create mode 100755 tools/new.sh" in changes

    work = checkout(stand_in.path, rpm.upstream_commit, tmp_path / "patch")
    for entry in rpm.patches:
        run([tool("patch"), "-p1", "-F0", "--no-backup-if-mismatch", "-i", str(tmp_path / "rpm" / entry.name)], work)
    assert tree_id(work) == rpm.tree == debian.tree
