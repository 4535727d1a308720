"""`patchkit record`: the edited branch in the checkout back into patches/, the series, the bases
and the lock; and every refusal leaves everything as it was."""

from __future__ import annotations

import json

import pytest

from conftest import assert_matches_schema
from record_helpers import amend_commit, cli, edit, fork, git, rebase_todo, reapplied_tree, series, snapshot


@pytest.fixture
def project(tmp_path):
    return fork(tmp_path)


def record(project, *args: str, code: int = 0):
    proc = cli("record", *args, cwd=project.root)
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc


def head_tree(project) -> str:
    return git("rev-parse", "HEAD^{tree}", cwd=project.output_dir)


def test_apply_notes_every_commit_and_sets_the_rewrite_ref(project):
    out = project.output_dir
    log = git("log", "--format=%s|%N", "--notes=patchkit", "refs/patchkit/upstream..HEAD", cwd=out)
    assert [line for line in log.splitlines() if line] == [
        "a : set a30|Patchkit-Patch: three.patch", "b : set b10|Patchkit-Patch: two.patch",
        "a : set a5|Patchkit-Patch: one.patch"]
    assert git("config", "--get-all", "notes.rewriteRef", cwd=out) == "refs/notes/patchkit"


def test_nothing_edited_records_nothing(project):
    before = snapshot(project)
    proc = record(project)
    assert "nothing changed" in proc.stdout
    after = snapshot(project)
    assert {k: v for k, v in after.items() if k != "refs"} == {k: v for k, v in before.items() if k != "refs"}


def test_an_untracked_file_is_named_with_how_to_record_it(project):
    (project.output_dir / "src" / "new.c").write_text("int n;\n")
    proc = record(project, "--json", "-")
    data = json.loads(proc.stdout)
    (warning,) = data["warnings"]
    assert warning.startswith("src/new.c untracked in ") and "commit it on the branch" in warning
    assert "src/new.c untracked" in proc.stderr
    assert [p["action"] for p in data["patches"]] == ["unchanged"] * 3


def test_amend_rewrites_that_patch_only_and_the_next_apply_gives_the_branch(project):
    out = project.output_dir
    before = {p.name: p.read_bytes() for p in project.patches_dir.iterdir()}
    amend_commit(out, 2, lambda: edit(out, "src/b.c", 11, "int b11 = 1100;\n"))
    proc = record(project, "--json", "-")
    data = json.loads(proc.stdout)
    assert_matches_schema(data)
    assert [(p["name"], p["action"], p["change"]) for p in data["patches"]] == [
        ("one.patch", "unchanged", None), ("two.patch", "edited", "content-changed"),
        ("three.patch", "unchanged", None)]
    # one.patch and three.patch: git format-patch's stat is the only difference, not written
    assert {n: (project.patches_dir / n).read_bytes() == b for n, b in before.items()} == {
        "one.patch": True, "two.patch": False, "three.patch": True, "series": True}
    two = (project.patches_dir / "two.patch").read_text()
    assert "+int b11 = 1100;" in two and "Subject: [PATCH] b : set b10" in two
    assert "Last-Update:" not in two  # it had none: only an existing trailer moves
    assert series(project) == ["one.patch", "two.patch", "three.patch"]
    lock = json.loads(project.lock_path.read_text())
    assert lock["tree"] == head_tree(project) == reapplied_tree(project)
    assert lock["patches"]["two.patch"] == data["patches"][1]["new_sha256"]
    # the next apply takes the branch's commits as patchkit's own, and gives the same tree
    from patchkit.pipeline import ApplyOptions, run_apply

    report = run_apply(project, ApplyOptions(spec="upstream@locked", fetch=False, check=False))
    assert report.passed and report.tree == lock["tree"]


def test_a_message_edit_updates_subject_and_body(project):
    out = project.output_dir
    rebase_todo(out, "1s/^pick/edit/",
                ("commit", "-q", "--amend", "-m", "a : set a5 to 500", "-m", "Because 5 is too small."),
                ("rebase", "--continue"))
    proc = record(project)
    assert "edited    one.patch" in proc.stdout
    one = (project.patches_dir / "one.patch").read_text()
    assert "Subject: [PATCH] a : set a5 to 500\n\nBecause 5 is too small.\n" in one
    assert "From: Ada Lovelace <ada@example.org>" in one  # amend keeps the author
    assert series(project) == ["one.patch", "two.patch", "three.patch"]
    assert json.loads(project.lock_path.read_text())["tree"] == reapplied_tree(project)


def test_a_new_commit_becomes_a_new_patch_named_from_its_subject(project):
    out = project.output_dir
    edit(out, "src/b.c", 20, "int b20 = 2000;\n")
    git("commit", "-q", "-am", "b : set b20, for the new tests", cwd=out)
    proc = record(project)
    assert "new       b-set-b20-for-the-new-tests.patch" in proc.stdout
    assert series(project) == ["one.patch", "two.patch", "three.patch", "b-set-b20-for-the-new-tests.patch"]
    new = (project.patches_dir / "b-set-b20-for-the-new-tests.patch").read_text()
    assert "From: Fork Dev <dev@fork.invalid>" in new and "+int b20 = 2000;" in new
    assert json.loads(project.lock_path.read_text())["tree"] == head_tree(project) == reapplied_tree(project)
    # the commit is noted now: a second record knows it, and records nothing
    assert git("notes", "--ref=patchkit", "show", "HEAD", cwd=out) == \
        "Patchkit-Patch: b-set-b20-for-the-new-tests.patch"
    assert "nothing changed" in record(project).stdout


def test_reorder_reorders_the_series_keeping_its_comments(project):
    project.series_path.write_text("# the queue\none.patch\n# b first\ntwo.patch -p1\nthree.patch\n")
    out = project.output_dir
    # swap the last two commits
    rebase_todo(out, "2{h;d};3G")
    assert git("log", "--format=%s", "-2", cwd=out).splitlines() == ["b : set b10", "a : set a30"]
    proc = record(project)
    assert "series reordered" in proc.stdout
    assert project.series_path.read_text() == "# the queue\none.patch\n# b first\nthree.patch\ntwo.patch -p1\n"
    lock = json.loads(project.lock_path.read_text())
    assert lock["tree"] == head_tree(project) == reapplied_tree(project)
    assert list(lock["patches"]) == ["one.patch", "three.patch", "two.patch"]  # as the series lists them


def test_a_dropped_commit_leaves_the_series_and_its_file_goes_only_with_prune(project, tmp_path):
    out = project.output_dir
    (project.patches_dir / "two.checks.yaml").write_text("checks: []\n")
    rebase_todo(out, "2d")
    proc = record(project, "--dry-run")
    assert "would record" in proc.stdout and series(project) == ["one.patch", "two.patch", "three.patch"]
    proc = record(project)
    assert "dropped   two.patch: no commit is it any more; file kept (--prune deletes it)" in proc.stdout
    assert series(project) == ["one.patch", "three.patch"]
    assert (project.patches_dir / "two.patch").exists()
    assert json.loads(project.lock_path.read_text())["tree"] == reapplied_tree(project)
    # the same again with --prune, on a fresh fork
    other = fork(tmp_path / "again")
    (other.patches_dir / "two.checks.yaml").write_text("checks: []\n")
    rebase_todo(other.output_dir, "2d")
    proc = record(other, "--prune")
    assert "file deleted" in proc.stdout
    assert sorted(p.name for p in other.patches_dir.iterdir()) == ["one.patch", "series", "three.patch"]


def test_a_squash_names_both_patches_and_needs_squash(project):
    out = project.output_dir
    rebase_todo(out, "3s/^pick/squash/")  # three.patch into two.patch
    assert git("notes", "--ref=patchkit", "show", "HEAD", cwd=out).split() == \
        ["Patchkit-Patch:", "two.patch", "Patchkit-Patch:", "three.patch"]
    before = snapshot(project)
    proc = record(project, code=2)
    assert "is 2 patches (two.patch, three.patch): a squash" in proc.stderr and "--squash" in proc.stderr
    assert snapshot(project) == before
    proc = record(project, "--squash")
    assert "squashed  three.patch: squashed into two.patch" in proc.stdout
    assert series(project) == ["one.patch", "two.patch"]
    two = (project.patches_dir / "two.patch").read_text()
    assert "+int a30 = 3000;" in two and "+int b10 = 1000;" in two
    assert json.loads(project.lock_path.read_text())["tree"] == head_tree(project) == reapplied_tree(project)
    assert git("notes", "--ref=patchkit", "show", "HEAD", cwd=out) == "Patchkit-Patch: two.patch"


def refused(project, *args: str) -> str:
    """record refuses (exit 2) and leaves everything as it was; its one line."""
    before = snapshot(project)
    proc = record(project, *args, code=2)
    assert snapshot(project) == before
    assert len(proc.stderr.strip().splitlines()) == 1
    return proc.stderr


def test_refusals_leave_everything_as_it_was(project):
    out = project.output_dir
    # changes not committed, staged or not: absorb is offered
    edit(out, "src/a.c", 1, "int a1 = 100;\n")
    assert "changes not committed (src/a.c)" in refused(project) and "patchkit absorb" in refused(project)
    git("add", "src/a.c", cwd=out)
    assert "changes not committed (src/a.c)" in refused(project)
    git("reset", "-q", "--hard", cwd=out)
    # an untracked file is no change of the branch's
    (out / "notes.txt").write_text("mine\n")
    assert "nothing changed" in record(project, "--dry-run").stdout
    # an empty commit, named
    git("commit", "-q", "--allow-empty", "-m", "wip: nothing yet", cwd=out)
    assert "commit " in refused(project) and "(wip: nothing yet) changes nothing" in refused(project)
    git("reset", "-q", "--hard", "HEAD~1", cwd=out)
    # a merge commit
    git("checkout", "-q", "-b", "side", "HEAD~1", cwd=out)
    edit(out, "src/b.c", 30, "int b30 = 3;\n")
    git("commit", "-q", "-am", "side", cwd=out)
    git("checkout", "-q", "patchkit/master", cwd=out)
    git("merge", "-q", "--no-edit", "side", cwd=out)
    assert "has merge commits" in refused(project)
    git("reset", "-q", "--hard", "HEAD~1", cwd=out)
    # a branch moved onto another base
    upstream_moved = git("commit-tree", "-m", "another upstream", "refs/patchkit/upstream^{tree}", cwd=out)
    git("rebase", "-q", "--onto", upstream_moved, "refs/patchkit/upstream", cwd=out)
    assert "is not based on" in refused(project)


def test_a_patch_file_changed_since_the_checkout_is_refused(project):
    out = project.output_dir
    amend_commit(out, 1, lambda: edit(out, "src/a.c", 6, "int a6 = 600;\n"))
    two = project.patches_dir / "two.patch"
    two.write_text(two.read_text().replace("+int b10 = 1000;", "+int b10 = 1001;"))
    assert "patches/two.patch is not what patchkit/master was checked out from" in refused(project)


def test_dry_run_lists_and_writes_nothing(project):
    out = project.output_dir
    amend_commit(out, 3, lambda: edit(out, "src/a.c", 31, "int a31 = 3100;\n"))
    before = snapshot(project)
    proc = record(project, "--dry-run", "--json", "-")
    data = json.loads(proc.stdout)
    assert_matches_schema(data)
    assert data["dry_run"] and not data["written"]
    assert [p["action"] for p in data["patches"]] == ["unchanged", "unchanged", "edited"]
    assert "+int a31 = 3100;" in data["patches"][2]["content_diff"]
    assert snapshot(project) == before


def test_bases_and_lock_are_where_a_good_apply_puts_them(project):
    from patchkit.upstream import Mirror

    out = project.output_dir
    amend_commit(out, 1, lambda: edit(out, "src/a.c", 6, "int a6 = 600;\n"))
    data = json.loads(record(project, "--json", "-").stdout)
    assert data["lock_updated"] and data["bases_recorded"] == 3
    lock = json.loads(project.lock_path.read_text())
    bases = Mirror.open(project).base_commits()
    assert all(sha in bases for sha in lock["patches"].values())
    assert lock["upstream"]["commit"] == data["upstream_commit"] == git("rev-parse", "refs/patchkit/upstream", cwd=out)


def test_a_checkout_applied_from_another_upstream_is_read_from_the_checkout(tmp_path):
    project = fork(tmp_path, url=str(tmp_path / "configured-but-not-used"))
    out = project.output_dir
    amend_commit(out, 1, lambda: edit(out, "src/a.c", 6, "int a6 = 600;\n"))
    record(project)  # no --upstream again: the checkout holds the upstream commit
    assert "+int a6 = 600;" in (project.patches_dir / "one.patch").read_text()
    edit(out, "src/a.c", 7, "int a7 = 700;\n")
    cli("absorb", cwd=project.root).check_returncode()
    assert "+int a7 = 700;" in (project.patches_dir / "one.patch").read_text()
    record(project, "--upstream", str(tmp_path / "upstream"))
