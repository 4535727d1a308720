"""The mirror: refs and revisions, a failed fetch that leaves it usable, the lock that serialises
runs, and a cache or upstream path that cannot be used."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from conftest import run_cli, write_project
from patchkit import git
from patchkit.errors import EnvironmentProblem, PatchkitError
from patchkit.project import Project
from patchkit.upstream import Mirror, parse_spec
from patchkit.pipeline import ApplyOptions, run_apply


@pytest.mark.parametrize("spec, ref", [("upstream@HEAD", "HEAD"), ("b7421", "b7421"),
                                       ("upstream@v0.7.0", "v0.7.0"), ("upstream@1a2b3c4", "1a2b3c4")])
def test_spec_forms(spec, ref):
    assert parse_spec(spec) == ref


@pytest.mark.parametrize("spec", ["upstream@-x", "upstream@", "upstream@a b", "upstream@HEAD@{1}",
                                  "upstream@x..y", "upstream@refs/heads/x.lock"])
def test_bad_specs_never_reach_git(spec):
    with pytest.raises(PatchkitError):
        parse_spec(spec)


def test_a_failed_fetch_leaves_the_mirror_usable(tmp_path, upstream):
    source = tmp_path / "upstream"
    shutil.copytree(upstream.path, source)
    project = Project.load(write_project(tmp_path / "fork", str(source)))
    first = run_apply(project, ApplyOptions(spec="upstream@HEAD", check=False))
    shutil.rmtree(source)
    report = run_apply(project, ApplyOptions(spec="upstream@b1000", check=False))
    assert report.exit_code == 0 and report.upstream_commit == upstream.base_commit
    assert any("cannot fetch upstream" in w and "mirror's copy of b1000" in w for w in report.warnings)
    # the path is gone and the mirror cannot serve the ref either: bad configuration, not the network
    with pytest.raises(PatchkitError, match="no such path") as err:
        run_apply(project, ApplyOptions(spec="upstream@scenario/does-not-exist", check=False))
    assert err.value.exit_code == 2
    assert first.tip == run_apply(project, ApplyOptions(spec="upstream@HEAD", check=False)).tip


def test_a_failed_first_fetch_leaves_no_half_mirror(tmp_path):
    project = Project.load(write_project(tmp_path / "fork", str(tmp_path / "fork")))
    with pytest.raises(EnvironmentProblem):
        run_apply(project, ApplyOptions(check=False))
    mirror = Mirror.open(project)
    assert not mirror.exists
    assert [p.name for p in mirror.path.parent.iterdir()] == [f"{mirror.path.name}.lock"]


def test_a_second_run_waits_for_the_mirror_lock(tmp_path, upstream):
    root = write_project(tmp_path / "fork", str(upstream.path))
    mirror = Mirror.open(Project.load(root))
    with mirror.locked():
        env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # a CI log: whole lines
        proc = subprocess.Popen([sys.executable, "-m", "patchkit", "apply", "--no-check"], cwd=root, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        assert proc.poll() is None, "the run went ahead while another held the mirror"
        assert not mirror.exists
    _, said = proc.communicate(timeout=60)
    assert proc.returncode == 0 and mirror.exists
    # A CI log says why nothing moves (the heartbeat alone would say "still running").
    assert f"waiting for another patchkit run to finish with the mirror {mirror.path}\n" in said


@pytest.mark.parametrize("ref, git_rev", [("master~1", "master~1"), ("b1001^", "b1001^"),
                                          ("HEAD~2", "master~2"), ("b1002^{commit}~1", "b1002~1")])
def test_revision_expressions_resolve_in_the_mirror(tmp_path, upstream, ref, git_rev):
    project = Project.load(write_project(tmp_path / "fork", str(upstream.path)))
    report = run_apply(project, ApplyOptions(spec=f"upstream@{ref}", check=False))
    commit = git.run(["rev-parse", f"{git_rev}^{{commit}}"], cwd=upstream.path)
    assert report.ref == ref and report.upstream_commit == commit
    assert report.branch == f"patchkit/{commit[:12]}"  # git cannot name a branch after "~" or "^"
    assert git.run(["rev-parse", "HEAD"], cwd=report.output) == report.tip
    assert git.run(["symbolic-ref", "--short", "HEAD"], cwd=report.output) == report.branch
    assert not list(Mirror.open(project).path.glob("fast_import_crash_*"))


def test_stale_git_locks_in_the_mirror_do_not_stop_the_next_run(tmp_path, upstream):
    project = Project.load(write_project(tmp_path / "fork", str(upstream.path)))
    first = run_apply(project, ApplyOptions(check=False))
    mirror = Mirror.open(project)
    # what a killed `git fast-import` / `update-ref` / fetch leaves behind
    stale = [mirror.path / f"refs/patchkit/results/{project.key}/{first.branch}.lock",
             mirror.path / "refs/heads/master.lock", mirror.path / "packed-refs.lock",
             mirror.path / "shallow.lock", mirror.path / "config.lock"]
    for lock in stale:
        lock.write_text("")
    second = run_apply(project, ApplyOptions(check=False, force=True))
    assert second.exit_code == 0 and second.tip == first.tip
    assert not [lock for lock in stale if lock.exists()]


@pytest.mark.parametrize("scheme", ["", "file://"])
def test_a_missing_local_upstream_path_is_bad_configuration(tmp_path, scheme):
    root = write_project(tmp_path / "fork", f"{scheme}{tmp_path / 'no-such-upstream'}")
    proc = run_cli("-q", "apply", "--no-check", cwd=root)
    assert proc.returncode == 2
    assert proc.stderr == (f"patchkit: error: upstream {scheme}{tmp_path / 'no-such-upstream'}: no such path; "
                           "fix upstream.url in patchkit.yaml, or use --upstream with an existing "
                           "repository path or a URL\n")


@pytest.mark.parametrize("cache", ["a-file/cache",  # cannot be created: its parent is a file
                                   "/proc"])  # exists, but nothing can be created in it, even by root
def test_an_unwritable_cache_is_an_environment_problem(tmp_path, upstream, cache):
    (tmp_path / "a-file").write_text("")
    root = write_project(tmp_path / "fork", str(upstream.path))
    config = root / "patchkit.yaml"
    config.write_text(config.read_text().replace(f"cache: {root / 'cache'}", f"cache: {tmp_path / cache}"))
    proc = run_cli("-q", "apply", "--no-check", cwd=root)
    assert proc.returncode == 3
    assert proc.stderr.startswith("patchkit: error: cannot write the cache folder ")
    assert proc.stderr.count("\n") == 1
    assert not (root / "llama.cpp").exists()
