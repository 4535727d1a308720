"""The apply core (`apply.apply_queue`) writes nothing into the mirror: every command that only
reads the applied queue leaves the mirror's refs and objects as they were; `apply` and the
nightly record theirs. Each warning is said once per output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import apply, git_identity, run_cli
from patchkit import git, refs
from patchkit.apply import Verdict, apply_queue
from patchkit.nightly.bisect import bisect_queue
from patchkit.queue import Queue
from patchkit.upstream import Mirror

FUZZED = "was placed with fuzz"


def mirror_state(mirror: Path) -> tuple[str, int]:
    """Every ref of the mirror, and how many objects it holds, loose and packed."""
    counts = dict(line.split(": ") for line in git.run(["count-objects", "-v"], cwd=mirror).splitlines())
    return git.run(["for-each-ref"], cwd=mirror), int(counts["count"]) + int(counts["in-pack"])


@pytest.fixture
def locked(project):
    """The fork with its queue applied and locked at upstream@HEAD (so its mirror exists)."""
    assert apply(project, "HEAD", update_lock=True).lock_updated
    return project


def hip_patch(upstream, tmp: Path) -> Path:
    """A patch made at master that does not apply at b1000 (which has no HIP option)."""
    repo = tmp / "work"
    git.run(["clone", "--quiet", str(upstream.path), str(repo)])
    cmake = repo / "CMakeLists.txt"
    cmake.write_text(cmake.read_text().replace('option(GGML_HIP "ggml: use HIP" OFF)',
                                               'option(GGML_HIP "ggml: use HIP" ON)', 1))
    git.run(["commit", "--quiet", "-am", "ggml : build with HIP by default"], cwd=repo, env=git_identity())
    patch = tmp / "hip.patch"
    patch.write_text(git.run(["format-patch", "-1", "--stdout", "HEAD"], cwd=repo) + "\n")
    return patch


def test_verify_export_dist_and_import_trials_leave_the_mirror_as_it_was(locked, upstream, tmp_path):
    mirror = Mirror.open(locked).path
    patch = hip_patch(upstream, tmp_path)
    scratch = tmp_path / "tmp"  # where the scratch repositories go: empty again after each command
    scratch.mkdir()
    commands = {
        "verify": (["verify", "--no-fetch"], 1),  # stale: the seed patch is not in the refresh format yet
        "export": (["export", "quilt", str(tmp_path / "quilt"), "--no-fetch"], 0),
        "dist": (["dist", "-o", str(tmp_path / "dist" / "llama.cpp.tar"), "--no-fetch"], 0),
        "import --dry-run": (["import", str(patch), "--at", "upstream@master", "--no-fetch", "--dry-run"], 0),
        "a refused import": (["import", str(patch), "--at", "upstream@b1000", "--no-fetch"], 1),
    }
    before = mirror_state(mirror)
    for name, (args, code) in commands.items():
        proc = run_cli(*args, cwd=locked.root, env={"TMPDIR": str(scratch)})
        assert proc.returncode == code, (name, proc.stdout, proc.stderr)
        assert mirror_state(mirror) == before, name
        assert list(scratch.iterdir()) == [], name


def test_bisect_writes_nothing_into_the_mirror(project):
    good = apply(project, "b1000").upstream_commit
    bad = apply(project, "scenario/conflict")  # records its result: the state the nightly bisects from
    assert bad.patches[0].verdict is Verdict.CONFLICT
    mirror = Mirror.open(project)
    before = mirror_state(mirror.path)
    (finding,) = bisect_queue(mirror, project, Queue.load(project).patches, good, bad.upstream_commit,
                              bad.patches, bad.checks)
    assert finding.kind == "broke"
    assert mirror_state(mirror.path) == before


def test_apply_records_its_result_and_only_it(locked):
    mirror = Mirror.open(locked)
    refs_before, objects_before = mirror_state(mirror.path)
    report = apply(locked, "b1000")
    refs_after, objects_after = mirror_state(mirror.path)
    result_ref = refs.result(locked.key, report.branch)
    assert git.run(["rev-parse", result_ref], cwd=mirror.path) == report.tip
    added = set(refs_after.splitlines()) - set(refs_before.splitlines())
    assert {line.split("\t")[1] for line in added} <= {result_ref} | {
        f"{refs.BASES}/{p.sha256}" for p in report.patches}
    assert objects_after > objects_before
    git.run(["fsck", "--connectivity-only", "--no-progress"], cwd=mirror.path)
    # The same queue on the same commit gives the same commits, in the scratch as in the mirror.
    revision = mirror.resolve("upstream@b1000", fetch=False)
    with apply_queue(mirror, revision, Queue.load(locked).patches) as applied:
        assert applied.tip == report.tip and applied.repo.is_dir()
        scratch = applied.repo
    assert not scratch.exists()
    assert mirror_state(mirror.path) == (refs_after, objects_after)


@pytest.mark.parametrize("command", ["apply", "nightly"])
def test_the_fuzz_warning_is_said_once_per_output(project, tmp_path, command):
    reports = tmp_path / "reports"
    reports.mkdir()
    args = ([command, "upstream@scenario/merged", "--fuzz", "1", "--no-check",
             "--json", str(reports / "report.json"), "--markdown", str(reports / "report.md")]
            if command == "apply" else
            [command, "upstream@scenario/merged", "--fuzz", "1", "--report-dir", str(reports)])
    proc = run_cli(*args, cwd=project.root, env={"COLUMNS": "300"})
    assert proc.returncode == (0 if command == "apply" else 1), proc.stderr
    assert (proc.stdout + proc.stderr).count(FUZZED) == 1
    assert (reports / "report.md").read_text().count(FUZZED) == 1
    data = json.loads((reports / "report.json").read_text())
    assert json.dumps(data).count(FUZZED) == 1


def test_a_refresh_result_leaves_its_bytes_out_of_json():
    from patchkit.nightly.refresh import Change, Refreshed
    from patchkit.plain import plain

    refreshed = Refreshed("a.patch", Change.FORMAT_ONLY, "0" * 64, "1" * 64, b"From 0000\n", "")
    assert plain(refreshed) == {"name": "a.patch", "change": "format-only", "old_sha256": "0" * 64,
                                "new_sha256": "1" * 64, "content_diff": ""}


def test_a_night_loads_the_queue_once(project, monkeypatch):
    from patchkit.nightly.night import NightlyOptions, run_nightly

    apply(project, "b1000", update_lock=True)
    loads = []
    load = Queue.load.__func__
    monkeypatch.setattr(Queue, "load", classmethod(lambda cls, p: loads.append(p) or load(cls, p)))
    report = run_nightly(project, NightlyOptions(spec="upstream@HEAD", fetch=False))
    assert report.passed and len(loads) == 1
