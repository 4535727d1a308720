"""How the first mirror is made: a local upstream (a path or a file:// URL) is cloned with hardlinks,
as `git clone PATH` does, and survives a gc there; a remote one is fetched whole, never shallow
or blobless."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import git_identity, write_project
from patchkit import git
from patchkit.pipeline import ApplyOptions, run_apply
from patchkit.project import Project
from patchkit.upstream import Mirror
from test_git import apply, user_env


def packed_copy(tmp_path: Path, upstream) -> Path:
    """A copy of the fixture upstream with all its objects in one pack, as a real repository has."""
    source = tmp_path / "upstream"
    shutil.copytree(upstream.path, source)
    git.run(["repack", "-a", "-d", "-q"], cwd=source)
    return source


def packs(repo: Path) -> dict[str, Path]:
    objects = repo / ".git" / "objects" if (repo / ".git").is_dir() else repo / "objects"
    return {p.name: p for p in (objects / "pack").glob("*.pack")}


def mirror_after_apply(root: Path, env: dict[str, str] | None = None) -> Mirror:
    apply(root, env=env)
    return Mirror.open(Project.load(root))


@pytest.mark.parametrize("form", ["path", "file-url"])
def test_a_local_upstream_is_cloned_with_hardlinks(tmp_path, upstream, form):
    source = packed_copy(tmp_path, upstream)
    url = str(source) if form == "path" else f"file://{source}"
    mirror = mirror_after_apply(write_project(tmp_path / "fork", url))
    ours, theirs = packs(mirror.path), packs(source)
    assert ours.keys() == theirs.keys() and len(ours) == 1
    for name in ours:
        assert ours[name].stat().st_ino == theirs[name].stat().st_ino
    # its own object store, not one borrowed from the user's repository
    assert not (mirror.path / "objects" / "info" / "alternates").exists()
    assert git.run(["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags"], cwd=mirror.path) \
        == git.run(["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags"], cwd=source)


def test_a_gc_in_the_local_upstream_leaves_the_mirror_working(tmp_path, upstream):
    source = packed_copy(tmp_path, upstream)
    root = write_project(tmp_path / "fork", str(source))
    mirror = mirror_after_apply(root)
    # upstream moves on, drops a branch and repacks: the pack the mirror was linked to is gone there
    old_packs = packs(source)
    cloned = {name: path.stat().st_ino for name, path in packs(mirror.path).items()}
    git.run(["commit", "--quiet", "--allow-empty", "-m", "upstream : later work"], cwd=source,
            env=git_identity())
    git.run(["branch", "-D", "scenario/conflict"], cwd=source)
    git.run(["reflog", "expire", "--expire=now", "--all"], cwd=source)
    git.run(["gc", "--quiet", "--prune=now"], cwd=source)
    assert not old_packs.keys() & packs(source).keys()

    git.run(["fsck", "--no-dangling", "--full"], cwd=mirror.path)
    report = run_apply(Project.load(root), ApplyOptions(spec="upstream@HEAD", check=False))
    assert report.exit_code == 0
    assert report.upstream_commit == git.run(["rev-parse", "HEAD"], cwd=source)
    git.run(["fsck", "--no-dangling", "--full"], cwd=mirror.path)
    assert git.run(["rev-parse", "--verify", "--quiet", "refs/heads/scenario/conflict"], cwd=mirror.path,
                   check=False) == ""  # pruned as upstream dropped it
    # the fetch added what was new beside the cloned pack: no second clone
    assert {name: packs(mirror.path)[name].stat().st_ino for name in cloned} == cloned


def test_a_remote_upstream_gets_a_full_mirror(tmp_path, upstream):
    """A URL git reaches over a transport is fetched, all of it: not cloned from a path, not shallow,
    no object left out (the user's insteadOf makes the fake URL reachable)."""
    source = packed_copy(tmp_path, upstream)
    fake = "https://upstream.invalid/ggml-org/llama.cpp.git"
    env = user_env(tmp_path, f"[url \"file://{source}\"]\n\tinsteadOf = {fake}\n")
    mirror = mirror_after_apply(write_project(tmp_path / "fork", fake), env)
    assert mirror.local_path is None
    assert all(p.stat().st_nlink == 1 for p in packs(mirror.path).values())
    assert git.run(["rev-parse", "--is-shallow-repository"], cwd=mirror.path) == "false"
    assert "filter" not in git.run(["config", "--list"], cwd=mirror.path)
    objects = ["rev-list", "--objects", "--missing=print", "--branches", "--tags"]
    assert not [line for line in git.run(objects, cwd=mirror.path).splitlines() if line.startswith("?")]
    assert git.run(objects, cwd=mirror.path) == git.run(objects, cwd=source)


def test_a_local_upstream_git_will_not_link_is_fetched(tmp_path, upstream):
    """git refuses to clone with hardlinks a repository whose objects/ holds a symlink; such an
    upstream was fetched before the clone and still is."""
    source = packed_copy(tmp_path, upstream)
    moved = tmp_path / "elsewhere"
    (source / ".git" / "objects" / "pack").rename(moved)
    (source / ".git" / "objects" / "pack").symlink_to(moved)
    mirror = mirror_after_apply(write_project(tmp_path / "fork", str(source)))
    assert all(p.stat().st_nlink == 1 for p in packs(mirror.path).values())
    assert git.run(["rev-parse", "refs/heads/master"], cwd=mirror.path) == git.run(["rev-parse", "HEAD"], cwd=source)
