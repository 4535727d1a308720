"""The mirror: refs, a failed fetch that leaves it usable, and the lock that serialises runs."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import pytest

from conftest import write_project
from patchkit.errors import EnvironmentProblem, PatchkitError
from patchkit.project import Project
from patchkit.upstream import Mirror, parse_spec
from patchkit.workflow import ApplyOptions, run_apply


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
        proc = subprocess.Popen([sys.executable, "-m", "patchkit", "-q", "apply", "--no-check"],
                                cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(1.5)
        assert proc.poll() is None, "the run went ahead while another held the mirror"
        assert not mirror.exists
    assert proc.wait(timeout=60) == 0
    assert mirror.exists
