"""The output repository never loses the user's work: commits, ignored files, a half-done tree."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from conftest import apply, git_identity, run_cli, write_project
from patchkit import git
from patchkit.errors import PatchkitError
from patchkit.fixture import SERVER_CONTEXT


def commit(out: Path, message: str, path: str = "NOTES.md") -> str:
    (out / path).write_text(f"{message}\n")
    git.run(["add", path], cwd=out)
    git.run(["commit", "--quiet", "-m", message], cwd=out, env=git_identity())
    return git.run(["rev-parse", "HEAD"], cwd=out)


def test_commits_on_the_branch_are_refused_then_kept_with_force(project):
    apply(project, "b1000")
    out = project.output_dir
    ids = [commit(out, f"my fix {n}") for n in range(5)]
    with pytest.raises(PatchkitError) as refused:
        apply(project, "b1000")
    message = str(refused.value)
    assert "patchkit/b1000" in message and "5 commits patchkit did not write" in message
    assert f"{ids[4][:10]} my fix 4" in message and "my fix 2" in message
    assert "my fix 1" not in message and "and 2 more" in message
    assert "--force" in message and f"git -C {out} branch NAME patchkit/b1000" in message
    assert git.run(["rev-parse", "HEAD"], cwd=out) == ids[4]  # nothing moved

    report = apply(project, "b1000", force=True)
    saved = f"refs/patchkit/saved/patchkit/b1000/{ids[4]}"
    assert git.run(["rev-parse", saved], cwd=out) == ids[4]
    assert any(saved in w and "5 commits" in w for w in report.warnings)
    assert git.run(["rev-parse", "HEAD"], cwd=out) == report.tip
    # set aside, they are no longer at stake: a plain rerun goes through
    assert apply(project, "b1000").tip == report.tip


def test_the_hint_command_keeps_the_commits_and_unblocks(project):
    apply(project, "b1000")
    out = project.output_dir
    mine = commit(out, "my fix")
    with pytest.raises(PatchkitError, match="1 commit patchkit did not write"):
        apply(project, "b1000")
    git.run(["branch", "mine", "patchkit/b1000"], cwd=out)
    report = apply(project, "b1000")
    assert git.run(["rev-parse", "mine"], cwd=out) == mine
    assert git.run(["rev-parse", "HEAD"], cwd=out) == report.tip
    assert not any("saved" in w for w in report.warnings)


def test_a_detached_head_commit_is_refused_then_kept(project):
    apply(project, "b1000")
    out = project.output_dir
    git.run(["checkout", "--quiet", "--detach"], cwd=out)
    detached = commit(out, "experiment")
    with pytest.raises(PatchkitError, match=r"HEAD in .* has 1 commit patchkit did not write \(\w{10} experiment\)"):
        apply(project, "HEAD")
    report = apply(project, "HEAD", force=True)
    assert git.run(["rev-parse", f"refs/patchkit/saved/HEAD/{detached}"], cwd=out) == detached
    assert any("refs/patchkit/saved/HEAD/" in w for w in report.warnings)


def test_other_branches_of_the_user_are_not_touched(project):
    first = apply(project, "b1000")
    out = project.output_dir
    git.run(["checkout", "--quiet", "-b", "feature"], cwd=out)
    mine = commit(out, "feature work")
    report = apply(project, "HEAD")
    assert git.run(["rev-parse", "feature"], cwd=out) == mine
    assert git.run(["rev-parse", "patchkit/b1000"], cwd=out) == first.tip
    assert git.run(["rev-parse", "--abbrev-ref", "HEAD"], cwd=out) == report.branch == "patchkit/master"


def test_patchkits_own_earlier_tip_is_not_the_users(project):
    """A run stopped after fetching its result into the output leaves the branch at the tip
    before; that tip's commits are still patchkit's, not the user's."""
    first = apply(project, "b1000")
    out = project.output_dir
    (result_ref,) = git.run(["for-each-ref", "--format=%(refname)", "refs/patchkit/results"], cwd=out).splitlines()
    git.run(["update-ref", result_ref, first.upstream_commit], cwd=out)
    again = apply(project, "b1000")
    assert again.tip == first.tip and not again.warnings


def ignore(out: Path, path: str) -> None:
    with open(out / ".git" / "info" / "exclude", "a") as fh:
        fh.write(f"/{path}\n")


@pytest.mark.parametrize("ignored", [True, False], ids=["ignored", "untracked"])
def test_files_git_does_not_track_are_never_overwritten(project, ignored):
    apply(project, "scenario/renamed")  # upstream moved server-context.cpp away: the path is free
    out = project.output_dir
    target = out / SERVER_CONTEXT
    assert not target.exists()
    if ignored:
        ignore(out, SERVER_CONTEXT)
    target.write_text("my local copy\n")
    with pytest.raises(PatchkitError, match=rf"would overwrite 1 file in .* that git does not track "
                                            rf"\({SERVER_CONTEXT}\).*--force"):
        apply(project, "b1000")
    assert target.read_text() == "my local copy\n"
    assert git.run(["rev-parse", "--abbrev-ref", "HEAD"], cwd=out) == "patchkit/scenario/renamed"
    apply(project, "b1000", force=True)
    assert target.read_text() != "my local copy\n"


def test_an_ignored_file_with_the_results_contents_is_no_obstacle(project, upstream):
    apply(project, "scenario/renamed")
    out = project.output_dir
    ignore(out, SERVER_CONTEXT)
    (out / SERVER_CONTEXT).write_text(upstream.expected_patched("base"))
    report = apply(project, "b1000")
    assert git.run(["rev-parse", "HEAD"], cwd=out) == report.tip


def test_a_foreign_index_lock_is_refused_with_the_command_that_clears_it(project):
    apply(project, "b1000")
    lock = project.output_dir / ".git" / "index.lock"
    lock.touch()
    with pytest.raises(PatchkitError) as refused:
        apply(project, "HEAD")
    assert f"rm {lock}" in str(refused.value)
    lock.unlink()  # what the hint says
    assert apply(project, "HEAD").branch == "patchkit/master"


def test_bad_input_is_found_before_the_mirror_or_the_output_is_made(tmp_path, upstream):
    root = write_project(tmp_path / "fork", str(upstream.path))
    checks = next((root / "patches").glob("*.checks.yaml"))
    checks.write_text("checks:\n  - id: broken\n    calls: nothing-like-a-list\n")
    result = run_cli("apply", "upstream@b1000", cwd=root)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("patchkit: error: ") and result.stderr.count("\n") == 1
    assert str(checks) in result.stderr
    assert not (root / "cache").exists() and not (root / "llama.cpp").exists()


def test_an_unknown_backend_is_found_before_anything_is_made(tmp_path, upstream):
    root = write_project(tmp_path / "fork", str(upstream.path))
    (root / "recipes").mkdir()
    result = run_cli("apply", "upstream@b1000", "--build", "nosuch", cwd=root)
    assert result.returncode == 2 and "no recipe for backend nosuch" in result.stderr
    assert not (root / "cache").exists() and not (root / "llama.cpp").exists()


def test_an_error_naming_a_path_with_a_newline_is_still_one_line(tmp_path, upstream):
    root = write_project(tmp_path / "fork", str(upstream.path))
    odd = tmp_path / "not\na folder"
    odd.write_text("")
    result = run_cli("apply", "upstream@b1000", "-o", str(odd), cwd=root)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "not a folder" in result.stderr


SHM = Path("/dev/shm")


@pytest.mark.skipif(not SHM.is_dir() or not os.access(SHM, os.W_OK), reason="no writable /dev/shm")
def test_a_new_output_on_another_filesystem_than_the_cache_is_copied_where_it_cannot_be_linked(project, upstream, tmp_path):
    if SHM.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("/dev/shm is on the cache's filesystem here")
    out = Path(tempfile.mkdtemp(dir=SHM)) / "llama.cpp"
    try:
        report = apply(project, "HEAD", output=out)
        assert report.exit_code == 0
        assert (out / SERVER_CONTEXT).read_text() == upstream.expected_patched("master")
        assert git.run(["status", "--porcelain"], cwd=out) == ""
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)
