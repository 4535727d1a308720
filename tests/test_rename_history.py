"""A function renamed upstream, told from a copy by upstream's history (issue 17; a wrong placement
the reach benchmark found). Between the last good run's commit and the target, a function whose
line alone was replaced looks renamed; but upstream may have added a copy under the new name while
the function was there and deleted the function later: the copy slid into its place, the patch's
function is gone, and `git am -3` writes the patch into the copy. Only a commit that replaced the
line, the old one gone in it, renamed the function."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git_identity, write_project
from git_am import git_am_3
from patchkit import git
from patchkit.apply import Verdict
from patchkit.pipeline import ApplyOptions, run_apply
from patchkit.project import Project
from test_apply_edges import commit, make_patches, replace, upstream_repo

PATH = "ggml/src/ggml-cpu/splits.cpp"
OLD = "static int64_t compute_splits(const llama_context & ctx) {\n"
NEW = "static int64_t compute_splits_f16(const llama_context & ctx) {\n"
BODY = """\
    const int64_t n_tokens = ctx.n_tokens();
    const int64_t n_splits = n_tokens / ctx.n_ubatch();
    ctx.reserve(n_splits);
    ctx.schedule(n_splits);
    ctx.synchronize();
    return n_splits;
}
"""
HEAD = '#include "splits.h"\n\nstatic int helper(int x) {\n    return x + 1;\n}\n\n'
TAIL = "\nvoid report_splits(const llama_context & ctx) {\n    log(compute_splits_count(ctx));\n}\n"
SCHEDULED, SCHEDULED_ASYNC = "    ctx.schedule(n_splits);\n", "    ctx.schedule(n_splits, /*async=*/true);\n"
ORIGINAL = HEAD + OLD + BODY + TAIL
RENAMED = HEAD + NEW + BODY + TAIL  # what upstream has at the target in every case here


def good_run_then_upstream(tmp_path: Path, history: list[tuple[str, str]], path: str = PATH,
                           original: str = ORIGINAL, renamed: str = RENAMED,
                           edit: tuple[str, str] = (SCHEDULED, SCHEDULED_ASYNC)):
    """The patch (EDIT: a line and what it becomes) applied (good, its commit kept as the base) at
    upstream's first commit; then upstream's HISTORY (file content, message) committed, and the
    patch applied again there."""
    upstream = upstream_repo(tmp_path, {path: original, "README.md": "splits\n"})
    (patch,) = make_patches(tmp_path, upstream, [("async-schedule", replace(path, *edit))])
    project = Project.load(write_project(tmp_path / "fork", str(upstream), [patch]))
    options = ApplyOptions(spec="upstream@HEAD", check=False)
    first = run_apply(project, options)
    assert first.patches[0].verdict is Verdict.CLEAN and first.bases_recorded == 1
    for content, message in history:
        commit(upstream, {path: content}, message)
    assert not history or (upstream / path).read_text() == renamed
    return upstream, patch, project, run_apply(project, options)


def test_a_copy_that_slid_into_a_deleted_functions_place_is_refused(tmp_path):
    upstream, patch, project, report = good_run_then_upstream(tmp_path, [
        (HEAD + OLD + BODY + "\n" + NEW + BODY + TAIL, "ggml : compute_splits_f16, a copy for f16"),
        (RENAMED, "ggml : drop compute_splits, f16 only now"),
    ])
    (result,) = report.patches
    assert result.verdict is Verdict.CONFLICT and result.commit is None
    assert (f"upstream added `{NEW.strip()}` in " in result.hunks[0].detail
            and f" as a copy while `{OLD.strip()}` still existed, and deleted `{OLD.strip()}` later: a copy, "
                "not a rename, so the patch's function is gone" in result.hunks[0].detail)
    assert (project.output_dir / PATH).read_text() == RENAMED  # untouched
    # git am -3 sees only the net difference, a rename, and writes the patch into the copy.
    am = git_am_3(upstream, patch, tmp_path / "am")
    assert am is not None and (am / PATH).read_text() == RENAMED.replace(SCHEDULED, SCHEDULED_ASYNC)


def test_a_function_deleted_and_a_like_one_added_later_is_no_rename(tmp_path):
    _, _, project, report = good_run_then_upstream(tmp_path, [
        (HEAD + TAIL, "ggml : drop compute_splits"),
        (RENAMED, "ggml : compute_splits_f16"),
    ])
    (result,) = report.patches
    assert result.verdict is Verdict.CONFLICT
    assert (f"upstream deleted `{OLD.strip()}`, and added `{NEW.strip()}` later, in " in result.hunks[0].detail
            and ": two changes, not a rename, so the patch's function is gone" in result.hunks[0].detail)
    assert (project.output_dir / PATH).read_text() == RENAMED


def test_a_function_renamed_in_one_commit_takes_the_hunk_as_git_am_3_does(tmp_path):
    upstream, patch, project, report = good_run_then_upstream(tmp_path, [
        (RENAMED, "ggml : compute_splits is compute_splits_f16"),
    ])
    (result,) = report.patches
    assert result.verdict is Verdict.MERGED and result.hunks[0].detail.startswith("3-way merge from the last good run")
    renamed_in = git.run(["rev-parse", "--short=12", "HEAD"], cwd=upstream)
    assert result.hunks[0].detail.endswith(  # the section's fate, which let the merge's change stand
        f"; the section `{OLD.strip()}` was renamed `{NEW.strip()}` in {renamed_in}; followed")
    merged = (project.output_dir / PATH).read_bytes()
    assert merged == RENAMED.replace(SCHEDULED, SCHEDULED_ASYNC).encode()
    am = git_am_3(upstream, patch, tmp_path / "am")
    assert am is not None and (am / PATH).read_bytes() == merged


def test_a_rename_in_one_commit_stays_one_after_later_commits(tmp_path):
    upstream, _, project, report = good_run_then_upstream(tmp_path, [
        (HEAD + NEW + BODY, "ggml : compute_splits is compute_splits_f16"),
        (RENAMED, "ggml : report the splits"),
    ])
    (result,) = report.patches
    assert result.verdict is Verdict.MERGED
    assert (project.output_dir / PATH).read_text() == RENAMED.replace(SCHEDULED, SCHEDULED_ASYNC)


@pytest.mark.parametrize("history", ["copy, then delete", "rename"])
def test_a_hunk_at_its_functions_first_line_is_told_renamed_or_copied_too(tmp_path, history):
    """The patch's change is the function's second line: its hunk begins above the function's
    first line, and its section names `helper`, the function before. The line that opens the
    hunk's function is the one among its context, and the history decides as above."""
    splits, splits_half = "    const int64_t n_splits = n_tokens / ctx.n_ubatch();\n", \
        "    const int64_t n_splits = (n_tokens + 1) / ctx.n_ubatch();\n"
    steps = [(HEAD + OLD + BODY + "\n" + NEW + BODY + TAIL, "ggml : compute_splits_f16, a copy for f16")] \
        if history == "copy, then delete" else []
    upstream, patch, project, report = good_run_then_upstream(
        tmp_path, [*steps, (RENAMED, "ggml : compute_splits_f16 only")], edit=(splits, splits_half))
    assert "@@ static int helper(int x) {" in patch.read_text()
    (result,) = report.patches
    if history == "rename":
        assert result.verdict is Verdict.MERGED
        assert (project.output_dir / PATH).read_text() == RENAMED.replace(splits, splits_half)
        am = git_am_3(upstream, patch, tmp_path / "am")
        assert am is not None and (am / PATH).read_text() == RENAMED.replace(splits, splits_half)
    else:
        assert result.verdict is Verdict.CONFLICT and "a copy, not a rename" in result.hunks[0].detail
        assert (project.output_dir / PATH).read_text() == RENAMED


@pytest.mark.parametrize("branch", ["copy, then delete", "rename"])
def test_a_branch_merged_in_counts_as_the_commits_it_made(tmp_path, branch):
    """The merge's first-parent difference is a rename either way: the branch's own commits tell."""
    upstream, _, project, _ = good_run_then_upstream(tmp_path, [])
    git.run(["checkout", "--quiet", "-b", "f16"], cwd=upstream)
    if branch == "copy, then delete":
        commit(upstream, {PATH: HEAD + OLD + BODY + "\n" + NEW + BODY + TAIL}, "ggml : compute_splits_f16")
    commit(upstream, {PATH: RENAMED}, "ggml : compute_splits_f16 only")
    git.run(["checkout", "--quiet", "master"], cwd=upstream)
    commit(upstream, {"README.md": "splits, f16\n"}, "docs : f16")
    git.run(["merge", "--quiet", "--no-ff", "-m", "Merge f16", "f16"], cwd=upstream, env=git_identity())
    (result,) = run_apply(project, ApplyOptions(spec="upstream@HEAD", check=False)).patches
    if branch == "rename":
        assert result.verdict is Verdict.MERGED
        assert (project.output_dir / PATH).read_text() == RENAMED.replace(SCHEDULED, SCHEDULED_ASYNC)
    else:
        assert result.verdict is Verdict.CONFLICT and "a copy, not a rename" in result.hunks[0].detail
        assert (project.output_dir / PATH).read_text() == RENAMED


# The same in a file without the C++ parse: git's python rule names the sections.
PY_PATH = "scripts/splits.py"
PY_OLD, PY_NEW = "def compute_splits(ctx):\n", "def compute_splits_f16(ctx):\n"
PY_BODY = ("    n_tokens = ctx.n_tokens()\n    n_splits = n_tokens // ctx.n_ubatch()\n    ctx.reserve(n_splits)\n"
           f"{SCHEDULED}    ctx.synchronize()\n    return n_splits\n")
PY_HEAD = "import sys\n\n\ndef helper(x):\n    return x + 1\n\n\n"
PY_TAIL = "\n\ndef report_splits(ctx):\n    print(compute_splits_count(ctx))\n"
PY_RENAMED = PY_HEAD + PY_NEW + PY_BODY + PY_TAIL


@pytest.mark.parametrize("history", ["copy, then delete", "rename"])
def test_a_python_function_is_told_renamed_or_copied_by_the_same_history(tmp_path, history):
    steps = [(PY_HEAD + PY_OLD + PY_BODY + "\n\n" + PY_NEW + PY_BODY + PY_TAIL, "scripts : a copy for f16")] \
        if history == "copy, then delete" else []
    upstream, patch, project, report = good_run_then_upstream(
        tmp_path, [*steps, (PY_RENAMED, "scripts : compute_splits_f16 only")], PY_PATH,
        PY_HEAD + PY_OLD + PY_BODY + PY_TAIL, PY_RENAMED)
    (result,) = report.patches
    if history == "rename":
        assert result.verdict is Verdict.MERGED
        assert (project.output_dir / PY_PATH).read_text() == PY_RENAMED.replace(SCHEDULED, SCHEDULED_ASYNC)
    else:
        assert result.verdict is Verdict.CONFLICT and "a copy, not a rename" in result.hunks[0].detail
        assert (project.output_dir / PY_PATH).read_text() == PY_RENAMED


def test_a_hunk_after_a_closing_line_follows_its_cmake_function_renamed(tmp_path):
    """CMake's `endfunction()` is a line git's default rule names, but it opens nothing: a hunk that
    adds a function after it is still under the section its `@@` names, and follows that function's
    rename as git am -3 does."""
    path = "ggml/src/ggml-cpu/cmake/tensor.cmake"
    old, new = "function(merge_tokens target)\n", "function(merge_tokens_ext target)\n"
    body = "    set(n_tiles 7)\n    set(${target}_RESULT ${n_tiles} PARENT_SCOPE)\nendfunction()\n\n"
    tail = "# reserve: one block\nfunction(reserve target)\n    set(${target}_RESULT 1 PARENT_SCOPE)\nendfunction()\n"
    added = "function(reserve_blocks target)\n    set(${target}_RESULT 2 PARENT_SCOPE)\nendfunction()\n\n"
    original, renamed = "# tensor\n\n" + old + body + tail, "# tensor\n\n" + new + body + tail
    upstream, patch, project, report = good_run_then_upstream(
        tmp_path, [(renamed, "cmake : merge_tokens is merge_tokens_ext")], path, original, renamed,
        edit=("endfunction()\n\n# reserve", "endfunction()\n\n" + added + "# reserve"))
    assert "@@ function(merge_tokens target)" in patch.read_text()
    (result,) = report.patches
    expected = renamed.replace("endfunction()\n\n# reserve", "endfunction()\n\n" + added + "# reserve", 1)
    assert result.verdict.good and (project.output_dir / path).read_text() == expected
    am = git_am_3(upstream, patch, tmp_path / "am")
    assert am is not None and (am / path).read_text() == expected
