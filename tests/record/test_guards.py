"""`record` and `absorb` refuse a checkout in the middle of a git command, and a branch based on
another upstream commit than the one it was applied to, naming both; nothing is written."""

from __future__ import annotations

import pytest

from record_helpers import cli, edit, fork, git, snapshot


@pytest.fixture
def project(tmp_path):
    return fork(tmp_path)


def refused(project, command: str) -> str:
    proc = cli(command, cwd=project.root)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    return proc.stderr


def conflicting_cherry_pick(project):
    """A cherry-pick stopped on a conflict with one.patch's line: git's markers in src/a.c."""
    out = project.output_dir
    git("switch", "-q", "-c", "side", "refs/patchkit/upstream", cwd=out)
    edit(out, "src/a.c", 5, "int a5 = -5;\n")
    git("commit", "-q", "-am", "a : another a5", cwd=out)
    git("switch", "-q", "-", cwd=out)
    git("cherry-pick", "side", cwd=out, check=False)
    return out


def test_absorb_and_record_refuse_a_stopped_cherry_pick_and_its_conflict_markers(project):
    out = conflicting_cherry_pick(project)
    assert "<<<<<<<" in (out / "src/a.c").read_text()
    before = snapshot(project)
    for command in ("absorb", "record"):
        assert "a cherry-pick is in progress in" in refused(project, command)
    assert snapshot(project) == before
    assert (out / ".git" / "CHERRY_PICK_HEAD").exists()  # git's state is left for git to finish
    git("cherry-pick", "--abort", cwd=out)
    (out / ".git" / "MERGE_HEAD").write_text(git("rev-parse", "HEAD", cwd=out) + "\n")
    assert "a merge is in progress" in refused(project, "absorb")


def test_unmerged_entries_are_refused_without_a_command_in_progress(project):
    out = conflicting_cherry_pick(project)
    (out / ".git" / "CHERRY_PICK_HEAD").unlink()  # git's sequencer state gone, the index still unmerged
    (out / ".git" / "sequencer").exists() and git("cherry-pick", "--quit", cwd=out, check=False)
    assert "src/a.c in" in refused(project, "absorb") and "unmerged" in refused(project, "absorb")


def test_a_branch_rebased_by_hand_onto_newer_upstream_is_refused_naming_both(project, tmp_path):
    upstream = tmp_path / "upstream"
    edit(upstream, "src/b.c", 35, "int b35 = 35000;\n")
    git("commit", "-q", "-am", "upstream : b35", cwd=upstream)
    new = git("rev-parse", "HEAD", cwd=upstream)
    out = project.output_dir
    old = git("rev-parse", "refs/patchkit/upstream", cwd=out)
    git("fetch", "-q", str(upstream), "master", cwd=out)
    git("rebase", "-q", "FETCH_HEAD", cwd=out)
    before = snapshot(project)
    message = refused(project, "record")
    assert f"is based on {new[:12]} (upstream : b35), upstream's, not on {old[:12]}" in message
    assert snapshot(project) == before
    # a new commit of the user's own is no upstream commit
    git("reset", "-q", "--hard", "ORIG_HEAD", cwd=out)
    (out / ".git" / "FETCH_HEAD").unlink()
    edit(out, "src/b.c", 36, "int b36 = 36000;\n")
    git("commit", "-q", "-am", "b : set b36", cwd=out)
    assert cli("record", cwd=project.root).returncode == 0
