"""`patchkit absorb`: uncommitted edits folded into the patches that own their lines, then
record; edits no single patch owns are refused and nothing changes."""

from __future__ import annotations

import json

import pytest

from conftest import assert_matches_schema
from record_helpers import cli, edit, fork, git, reapplied_tree, series, snapshot


@pytest.fixture
def project(tmp_path):
    return fork(tmp_path)


def absorb(project, *args: str, code: int = 0):
    proc = cli("absorb", *args, cwd=project.root)
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc


def test_owned_edits_go_to_their_patches_staged_or_not(project):
    out = project.output_dir
    commits = git("log", "--format=%H", "refs/patchkit/upstream..HEAD", cwd=out).split()
    edit(out, "src/a.c", 5, "int a5 = 501;\n")  # one.patch's own line
    edit(out, "src/b.c", 11, "int b11 = 1100;\n")  # upstream's line right below two.patch's
    git("add", "src/b.c", cwd=out)  # staged
    edit(out, "src/a.c", 29, "int a29 = 2900;\n")  # right above three.patch's
    (out / "scratch.txt").write_text("mine\n")
    proc = absorb(project, "--json", "-")
    data = json.loads(proc.stdout)
    assert_matches_schema(data)
    assert [(e["path"], e["line"], e["patch"]) for e in data["edits"]] == [
        ("src/a.c", 5, "one.patch"), ("src/a.c", 29, "three.patch"), ("src/b.c", 11, "two.patch")]
    assert data["untracked"] == ["scratch.txt"] and data["refused"] == []
    assert [(p["name"], p["action"]) for p in data["record"]["patches"]] == [
        ("one.patch", "edited"), ("two.patch", "edited"), ("three.patch", "edited")]
    assert "+int a5 = 501;" in (project.patches_dir / "one.patch").read_text()
    assert "+int b11 = 1100;" in (project.patches_dir / "two.patch").read_text()
    three = (project.patches_dir / "three.patch").read_text()
    assert "+int a29 = 2900;" in three and "+int a5 = 501;" not in three
    # the branch moved to the rewritten commits, the work tree is clean, its files unchanged
    assert git("status", "--porcelain", cwd=out) == "?? scratch.txt"
    assert (out / "src/a.c").read_text().count("501") == 1
    new = git("log", "--format=%H %N", "--notes=patchkit", "refs/patchkit/upstream..HEAD", cwd=out)
    assert len(new.split("\n\n")) == 3 and not set(commits) & set(new.split())
    assert "Patchkit-Patch: two.patch" in new
    assert json.loads(project.lock_path.read_text())["tree"] == git("rev-parse", "HEAD^{tree}", cwd=out) \
        == reapplied_tree(project)


def test_an_edit_no_patch_owns_is_refused_then_new_makes_it_a_patch(project):
    out = project.output_dir
    edit(out, "src/a.c", 5, "int a5 = 501;\n")
    edit(out, "src/a.c", 15, "int a15 = 1500;\n")
    before = snapshot(project)
    proc = absorb(project, code=1)
    assert "src/a.c:15: no patch changed these lines or the lines next to them" in proc.stdout
    assert "src/a.c:5: into one.patch" in proc.stdout and "nothing changed" in proc.stdout
    assert snapshot(project) == before
    proc = absorb(project, "--new", "set-a15", code=2)
    assert "--author" in proc.stderr
    proc = absorb(project, "--new", "../evil", "--author", "Ada Lovelace <ada@example.org>", code=2)
    assert "--new '../evil': not a usable patch file name" in proc.stderr and "--name" not in proc.stderr
    assert snapshot(project) == before
    absorb(project, "--new", "set-a15", "--author", "Ada Lovelace <ada@example.org>")
    assert series(project) == ["one.patch", "two.patch", "three.patch", "set-a15.patch"]
    new = (project.patches_dir / "set-a15.patch").read_text()
    assert "From: Ada Lovelace <ada@example.org>" in new and "+int a15 = 1500;" in new and "int a5 = " not in new
    assert "+int a5 = 501;" in (project.patches_dir / "one.patch").read_text()
    assert git("status", "--porcelain", cwd=out) == ""
    assert json.loads(project.lock_path.read_text())["tree"] == reapplied_tree(project)


def test_an_edit_two_patches_could_own_is_refused_naming_both(project):
    out = project.output_dir
    edit(out, "src/a.c", 7, "int a7 = 700;\n")
    git("commit", "-q", "-am", "a : set a7", cwd=out)
    a7 = git("rev-parse", "--short=12", "HEAD", cwd=out)
    one = git("rev-parse", "--short=12", "HEAD~3", cwd=out)
    edit(out, "src/a.c", 6, "int a6 = 600;\n")  # between one.patch's line 5 and the new commit's line 7
    before = snapshot(project)
    proc = absorb(project, code=1)
    assert f"src/a.c:6: more than one patch could own it: {one} (a : set a5), {a7} (a : set a7)" in proc.stdout
    assert snapshot(project) == before


def test_a_new_file_is_no_patchs_and_untracked_files_are_never_absorbed(project):
    out = project.output_dir
    (out / "src/c.c").write_text("int c;\n")
    git("add", "src/c.c", cwd=out)
    (out / "untracked.c").write_text("int u;\n")
    before = snapshot(project)
    proc = absorb(project, code=1)
    assert "src/c.c:1: a new file" in proc.stdout and "untracked.c: untracked, not absorbed" in proc.stdout
    assert snapshot(project) == before


def test_dry_run_changes_nothing(project):
    out = project.output_dir
    edit(out, "src/b.c", 10, "int b10 = 1001;\n")
    before = snapshot(project)
    proc = absorb(project, "--dry-run")
    assert "src/b.c:10: into two.patch" in proc.stdout and "dry run: nothing written" in proc.stdout
    assert snapshot(project) == before


def test_nothing_to_absorb_and_a_merge_are_refused(project):
    out = project.output_dir
    proc = absorb(project, code=2)
    assert "no tracked changes to absorb" in proc.stderr
    git("checkout", "-q", "-b", "side", "HEAD~1", cwd=out)
    edit(out, "src/b.c", 30, "int b30 = 3;\n")
    git("commit", "-q", "-am", "side", cwd=out)
    git("checkout", "-q", "patchkit/master", cwd=out)
    git("merge", "-q", "--no-edit", "side", cwd=out)
    edit(out, "src/a.c", 5, "int a5 = 501;\n")
    before = snapshot(project)
    assert "has merge commits" in absorb(project, code=2).stderr
    assert snapshot(project) == before


def test_an_edit_a_later_commit_touched_too_does_not_commute(project):
    out = project.output_dir
    edit(out, "src/a.c", 6, "")  # a later commit deletes the line right below one.patch's line 5
    git("commit", "-q", "-am", "a : drop a6", cwd=out)
    drop = git("rev-parse", "--short=12", "HEAD", cwd=out)
    lines = (out / "src/a.c").read_text().splitlines(keepends=True)
    (out / "src/a.c").write_text("".join(lines[:5] + ["int a6b = 6;\n"] + lines[5:]))  # where a6 was
    before = snapshot(project)
    proc = absorb(project, code=1)
    assert "src/a.c:6: more than one patch could own it: " in proc.stdout and f"{drop} (a : drop a6)" in proc.stdout
    assert snapshot(project) == before


def test_a_binary_edit_is_no_patchs(project):
    out = project.output_dir
    (out / "src/a.c").write_bytes((out / "src/a.c").read_bytes() + b"\0binary\n")
    proc = absorb(project, code=1)
    assert "src/a.c:1: a binary file" in proc.stdout
