"""`patchkit verify`: exit 0 on a fresh queue, 1 on a stale one (diff printed, files written), 2 without a lock."""

from __future__ import annotations

import json
import shutil

from conftest import apply, assert_matches_schema, run_cli, seed_patch_path

from patchkit.nightly.refresh import refresh_queue, write_refreshed
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
