"""`patchkit verify`: exit 0 on a fresh queue, 1 on a stale one (diff printed, files written), 2 without a lock."""

from __future__ import annotations

import json
import shutil

from conftest import apply, assert_matches_schema, git_identity, run_cli, seed_patch_path, write_project

from patchkit import git
from patchkit.nightly.refresh import refresh_queue, write_refreshed
from patchkit.project import Project
from patchkit.queue import Queue
from patchkit.upstream import Mirror

NAME = seed_patch_path().name


def refreshed_at(project, ref: str) -> None:
    report = apply(project, ref)
    write_refreshed(project, refresh_queue(Mirror.open(project), Queue.load(project), report.patches))


def test_a_fresh_queue_passes(project, tmp_path):
    refreshed_at(project, "master")
    apply(project, "master", update_lock=True)
    shutil.rmtree(project.output_dir)
    before = {p: p.read_bytes() for p in (project.lock_path, project.patches_dir / NAME)}
    out = tmp_path / "refreshed"
    result = run_cli("verify", "--no-fetch", "--json", str(tmp_path / "v.json"), "--output-dir", str(out),
                     cwd=project.root)
    assert result.returncode == 0, result.stderr
    assert "fresh: refreshing the queue at the locked commit" in result.stdout
    data = json.loads((tmp_path / "v.json").read_text())
    assert_matches_schema(data)
    assert data["passed"] and data["files"] == [] and data["lock"] == []
    assert [p["change"] for p in data["patches"]] == ["unchanged"]
    # Nothing of the project moved; the copies CI uploads are byte for byte the committed files.
    assert {p: p.read_bytes() for p in before} == before
    assert (out / "patches" / NAME).read_bytes() == before[project.patches_dir / NAME]
    assert (out / "patchkit.lock").read_bytes() == before[project.lock_path]
    assert not project.output_dir.exists()  # never checked out, least of all in ./llama.cpp


def test_a_stale_queue_fails_with_the_diff_and_the_regenerated_files(project, tmp_path):
    refreshed_at(project, "b1000")
    apply(project, "master", update_lock=True)  # locked where the patch applies with an offset
    committed = (project.patches_dir / NAME).read_bytes()
    lock_before = project.lock_path.read_bytes()
    out = tmp_path / "refreshed"
    result = run_cli("verify", "--no-fetch", "--output-dir", str(out), "--json", str(tmp_path / "v.json"),
                     "--junit", str(tmp_path / "v.xml"), cwd=project.root)
    assert result.returncode == 1, result.stderr
    assert "line-numbers-only" in result.stdout
    assert f"--- a/patches/{NAME}\n+++ b/patches/{NAME}\n" in result.stdout
    assert "-@@ -255,6 +255,8 @@ struct server_slot {\n+@@ -280,6 +280,8 @@ struct server_slot {\n" in result.stdout
    assert f"patchkit.lock patches.{NAME}: " in result.stdout
    assert "stale: refreshing the queue at the locked commit" in result.stdout
    # The committed files are untouched; the regenerated ones are what a refresh at the lock writes.
    assert (project.patches_dir / NAME).read_bytes() == committed
    assert project.lock_path.read_bytes() == lock_before
    regenerated = (out / "patches" / NAME).read_bytes()
    locked = apply(project, "master")
    [expected] = refresh_queue(Mirror.open(project), Queue.load(project), locked.patches)
    assert regenerated == expected.data != committed
    new_lock = json.loads((out / "patchkit.lock").read_text())
    old_lock = json.loads(lock_before)
    assert new_lock == {**old_lock, "patches": {NAME: expected.new_sha256}}
    data = json.loads((tmp_path / "v.json").read_text())
    assert_matches_schema(data)
    assert not data["passed"] and [f["path"] for f in data["files"]] == [f"patches/{NAME}"]
    assert data["lock"] == [{"field": f"patches.{NAME}", "old": old_lock["patches"][NAME],
                             "new": expected.new_sha256}]
    assert 'failures="2"' in (tmp_path / "v.xml").read_text()


def test_without_a_lock_verify_says_how_to_make_one(project):
    result = run_cli("verify", "--no-fetch", cwd=project.root)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "patchkit.lock does not exist" in result.stderr
    assert "patchkit apply upstream@HEAD --update-lock" in result.stderr


def test_verify_leaves_the_projects_state_and_a_bad_output_dir_alone(project, tmp_path):
    apply(project, "b1000", update_lock=True)
    last = project.last_report()
    proc = run_cli("verify", cwd=project.root)
    assert proc.returncode in (0, 1), proc.stderr
    assert project.last_report() == last  # status still shows the user's own last apply
    (tmp_path / "od" / "patchkit.lock").mkdir(parents=True)
    refused = run_cli("verify", "--output-dir", str(tmp_path / "od"), cwd=project.root)
    assert refused.returncode == 2 and "patchkit.lock is a folder" in refused.stderr
    assert [p.name for p in (tmp_path / "od").iterdir()] == ["patchkit.lock"]  # nothing half-written


# The lock and the series disagree: one was edited without the other. Verify names each patch one of
# them lists and the other does not (exit 1: committed state of the fork needs attention), whether
# or not the queue applies; "the queue does not apply" is said only when a patch does not apply.
EXTRA = "fork-notes.patch"
SERIES = "patches/series"


def new_file_patch(tmp_path, upstream, name: str, edits: int = 1):
    """A git format-patch adding docs/fork.md (EDITS > 1: its last edit, which applies nowhere upstream)."""
    work = tmp_path / f"work-{name}"
    git.run(["clone", "--quiet", str(upstream.path), str(work)])
    (work / "docs").mkdir(exist_ok=True)
    for n in range(edits):
        (work / "docs" / "fork.md").write_text("".join(f"Carried by the fork, note {i}.\n" for i in range(n + 1)))
        git.run(["add", "-A"], cwd=work)
        git.run(["commit", "--quiet", "-m", f"docs : fork notes {n}"], cwd=work, env=git_identity())
    out = tmp_path / name
    out.write_text(git.run(["format-patch", "-1", "--stdout", "--zero-commit"], cwd=work))
    return out


def locked_fork(tmp_path, upstream, patches):
    """A fork carrying PATCHES, refreshed and locked at master: `verify` passes on it."""
    project = Project.load(write_project(tmp_path / "fork", str(upstream.path), patches))
    refreshed_at(project, "master")
    apply(project, "master", update_lock=True)
    assert run_cli("verify", "--no-fetch", cwd=project.root).returncode == 0
    return project


def verify_disagreeing(project, tmp_path, series: list[str]):
    (project.patches_dir / "series").write_text("".join(f"{n}\n" for n in series))
    result = run_cli("verify", "--no-fetch", "--json", str(tmp_path / "v.json"), "--markdown",
                     str(tmp_path / "v.md"), "--junit", str(tmp_path / "v.xml"), cwd=project.root)
    data = json.loads((tmp_path / "v.json").read_text())
    assert_matches_schema(data)
    return result, data


def assert_says(result, tmp_path, lines: list[str], summary: str) -> None:
    assert result.returncode == 1, result.stderr
    for line in lines:
        assert f"\n{line}\n" in f"\n{result.stdout}", result.stdout
        assert f"- {line}\n" in (tmp_path / "v.md").read_text()
    assert result.stdout.splitlines()[-1] == summary
    assert "does not apply" not in result.stdout
    assert "\n".join(lines) in (tmp_path / "v.xml").read_text()


def test_an_empty_series_is_said_to_be_empty(project, tmp_path):
    refreshed_at(project, "master")
    apply(project, "master", update_lock=True)
    result, data = verify_disagreeing(project, tmp_path, [])
    assert_says(result, tmp_path, [f"{SERIES} is empty, but patchkit.lock lists 1 patch"],
                f"stale: patchkit.lock and {SERIES} list different patches")
    assert data["series"] == {"path": SERIES, "empty": True, "not_in_series": [NAME], "not_in_lock": []}
    assert not data["passed"] and data["apply"]["patches"] == []


def test_an_empty_series_with_an_empty_lock_is_fresh(project, tmp_path):
    (project.patches_dir / "series").write_text("")
    apply(project, "master", update_lock=True)
    result = run_cli("verify", "--no-fetch", "--json", str(tmp_path / "v.json"), cwd=project.root)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("fresh: refreshing the queue at the locked commit")
    assert json.loads((tmp_path / "v.json").read_text())["series"] is None


def test_a_patch_removed_from_the_series(tmp_path, upstream):
    project = locked_fork(tmp_path, upstream, [seed_patch_path(), new_file_patch(tmp_path, upstream, EXTRA)])
    result, data = verify_disagreeing(project, tmp_path, [NAME])
    assert_says(result, tmp_path, [f"patchkit.lock lists {EXTRA}, {SERIES} does not"],
                f"stale: patchkit.lock and {SERIES} list different patches")
    assert data["series"] == {"path": SERIES, "empty": False, "not_in_series": [EXTRA], "not_in_lock": []}
    assert [d["field"] for d in data["lock"]] == ["tree", f"patches.{EXTRA}"]  # what a refresh would write
    assert f"| patches.{EXTRA} | `{data['lock'][1]['old']}` | - |\n" in (tmp_path / "v.md").read_text()


def test_a_patch_added_to_the_series_but_not_locked(tmp_path, upstream):
    project = locked_fork(tmp_path, upstream, [seed_patch_path()])
    shutil.copy(new_file_patch(tmp_path, upstream, EXTRA), project.patches_dir / EXTRA)
    result, data = verify_disagreeing(project, tmp_path, [NAME, EXTRA])
    assert_says(result, tmp_path, [f"{SERIES} lists {EXTRA}, patchkit.lock does not"],
                f"stale: patchkit.lock and {SERIES} list different patches")
    assert data["series"] == {"path": SERIES, "empty": False, "not_in_series": [], "not_in_lock": [EXTRA]}


def test_a_patch_renamed_in_the_series(project, tmp_path):
    refreshed_at(project, "master")
    apply(project, "master", update_lock=True)
    (project.patches_dir / NAME).rename(project.patches_dir / "renamed.patch")
    result, data = verify_disagreeing(project, tmp_path, ["renamed.patch"])
    assert_says(result, tmp_path, [f"patchkit.lock lists {NAME}, {SERIES} does not",
                                   f"{SERIES} lists renamed.patch, patchkit.lock does not"],
                f"stale: patchkit.lock and {SERIES} list different patches")
    assert data["series"] == {"path": SERIES, "empty": False, "not_in_series": [NAME],
                              "not_in_lock": ["renamed.patch"]}
    assert data["files"] == []  # the bytes are the same: only the name moved


def test_an_unlocked_patch_that_does_not_apply_is_both(tmp_path, upstream):
    project = locked_fork(tmp_path, upstream, [seed_patch_path()])
    shutil.copy(new_file_patch(tmp_path, upstream, EXTRA, edits=2), project.patches_dir / EXTRA)
    result, data = verify_disagreeing(project, tmp_path, [NAME, EXTRA])
    assert result.returncode == 1, result.stderr
    assert f"{SERIES} lists {EXTRA}, patchkit.lock does not\n" in result.stdout
    locked = json.loads(project.lock_path.read_text())["upstream"]["commit"]
    assert result.stdout.splitlines()[-1] == (f"stale: patchkit.lock and {SERIES} list different patches, "
                                              f"and the queue does not apply at the locked commit {locked[:12]}")
    assert data["series"]["not_in_lock"] == [EXTRA] and data["patches"] == []
