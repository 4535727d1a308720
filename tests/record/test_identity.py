"""Which patch a commit is when its note is gone: matched one to one by change (patch-id) and
subject, names kept, said; what cannot be matched is refused and named. A commit message line
git am would take for the diff is refused when a patch is written."""

from __future__ import annotations

import json

import pytest

from record_helpers import amend_commit, cli, edit, fork, git, run, series, snapshot


@pytest.fixture
def project(tmp_path):
    return fork(tmp_path)


def commits(out) -> list[str]:
    return git("log", "--reverse", "--format=%H", "refs/patchkit/upstream..HEAD", cwd=out).split()


def test_a_reorder_by_cherry_pick_keeps_the_names(project):
    out = project.output_dir
    one, two, three = commits(out)
    git("reset", "-q", "--hard", "refs/patchkit/upstream", cwd=out)
    git("cherry-pick", three, one, two, cwd=out)  # cherry-pick carries no notes
    edit(out, "src/b.c", 11, "int b11 = 1100;\n")  # and two.patch changed too: its subject still says which
    git("commit", "-q", "-a", "--amend", "--no-edit", cwd=out)
    before = sorted(p.name for p in project.patches_dir.iterdir())
    proc = run(project, "record", "--json", "-")
    data = json.loads(proc.stdout)
    # (three.patch's index line names another blob now: edited, under its own name)
    assert [p["name"] for p in data["patches"]] == ["three.patch", "one.patch", "two.patch"]
    assert {p["action"] for p in data["patches"]} <= {"unchanged", "edited"}
    assert series(project) == ["three.patch", "one.patch", "two.patch"]
    assert sorted(p.name for p in project.patches_dir.iterdir()) == before
    assert any("not carried through a rewrite" in w for w in data["warnings"])


def test_notes_not_rewritten_on_amend_keep_the_names(project):
    out = project.output_dir
    git("config", "--unset-all", "notes.rewriteRef", cwd=out)
    amend_commit(out, 1, lambda: edit(out, "src/a.c", 6, "int a6 = 600;\n"))
    data = json.loads(run(project, "record", "--json", "-").stdout)
    assert [(p["name"], p["action"]) for p in data["patches"]][:2] == [("one.patch", "edited"), ("two.patch", "unchanged")]
    assert [p["name"] for p in data["patches"]] == ["one.patch", "two.patch", "three.patch"]
    assert any("notes.rewriteRef lacks refs/notes/patchkit" in w for w in data["warnings"])


def test_a_commit_that_matches_no_patch_one_to_one_is_refused_and_named(project):
    out = project.output_dir
    one, two, three = commits(out)
    git("reset", "-q", "--hard", "refs/patchkit/upstream", cwd=out)
    git("cherry-pick", one, two, cwd=out)
    edit(out, "src/a.c", 30, "int a30 = 3;\n")  # three.patch's line, another change and subject
    git("commit", "-q", "-am", "a : something else", cwd=out)
    before = snapshot(project)
    message = run(project, "record", code=2).stderr
    assert "(a : something else) matches none of three.patch one to one" in message
    assert snapshot(project) == before


def test_deleted_notes_do_not_blame_patches(project):
    out = project.output_dir
    git("update-ref", "-d", "refs/notes/patchkit", cwd=out)
    amend_commit(out, 2, lambda: edit(out, "src/b.c", 11, "int b11 = 1100;\n"))
    data = json.loads(run(project, "record", "--json", "-").stdout)
    assert [(p["name"], p["action"]) for p in data["patches"]] == [
        ("one.patch", "unchanged"), ("two.patch", "edited"), ("three.patch", "unchanged")]


@pytest.mark.parametrize("line", ["diff --git a/x b/x", "Index: x", "---", "--- a/x"])
def test_a_message_line_git_am_reads_as_the_diff_is_refused(project, line):
    out = project.output_dir
    git("commit", "-q", "--amend", "-m", f"a : set a30\n\nBefore.\n{line}\nAfter.", cwd=out)
    before = snapshot(project)
    message = run(project, "record", code=2).stderr
    assert f"message line 4 ({line!r}) would be read by git am as the start of the diff" in message
    assert len(message.strip().splitlines()) == 1
    assert snapshot(project) == before
