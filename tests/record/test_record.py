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
