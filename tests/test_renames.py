"""A file upstream moved after the patch was made (issue 17, class 6). Where git's rename
detection sees the move in the commit that made it and the patch's base is known (its index
blobs, or the commit an earlier good run kept), the patch applies where the file went, as
`git am -3` does, and its site rules follow. A file deleted in one commit with a similar one
added elsewhere is no move: `missing-file`, where git am -3 writes the patch into the other file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import assert_matches_schema, write_project
from git_am import git_am_3
from patchkit import git
from patchkit.apply import Verdict
from patchkit.pipeline import ApplyOptions, run_apply
from patchkit.project import Project
from patchkit.report import to_json
from patchkit.report.check import to_markdown
from test_apply_edges import commit, make_patches, replace, upstream_repo

OLD = "tools/server/server-queue.cpp"
NEW = "tools/server/queue/server-queue.cpp"

QUEUE = """\
#include "server-queue.h"

#include <mutex>

void server_queue::post(server_task && task) {
    std::unique_lock<std::mutex> lock(mutex_tasks);
    tasks.push_back(std::move(task));
    ckpt.save(task.id, STATE_FLAGS_PARTIAL);
    condition_tasks.notify_one();
}

void server_queue::cleanup_pending(int id_target) {
    std::unique_lock<std::mutex> lock(mutex_tasks);
    for (auto it = tasks.begin(); it != tasks.end(); ) {
        if (it->id_target == id_target) {
            it = tasks.erase(it);
        } else {
            ++it;
        }
    }
}

void server_queue::start_loop() {
    running = true;
    while (running) {
        server_task task = pop();
        ckpt.load(task.id, STATE_FLAGS_PARTIAL);
        callback_new_task(std::move(task));
    }
}
"""
SAVED = "    ckpt.save(task.id, STATE_FLAGS_PARTIAL);\n"
SAVED_ON_DEVICE = "    ckpt.save(task.id, STATE_FLAGS_PARTIAL | STATE_FLAGS_ON_DEVICE);\n"
RULES = f"""\
checks:
  - id: queue-saves-on-device
    file: {OLD}
    calls: [save]
    require-flag: STATE_FLAGS_ON_DEVICE
    expect-count: 1
"""
UPSTREAM_EDIT = ('#include "server-queue.h"\n', '#include "server-queue.h"\n#include "server-common.h"\n')


def patched_queue(tmp_path: Path, upstream: Path) -> Path:
    """The patch (format-patch, full index) and its site rule, made at upstream's first commit."""
    (patch,) = make_patches(tmp_path, upstream, [("queue-on-device", replace(OLD, SAVED, SAVED_ON_DEVICE))])
    patch.with_name("queue-on-device.checks.yaml").write_text(RULES)
    return patch


def apply(root: Path, upstream: Path, patch: Path, ref: str = "HEAD"):
    project = Project.load(write_project(root, str(upstream), [patch]))
    return project, run_apply(project, ApplyOptions(spec=f"upstream@{ref}"))


def test_a_file_upstream_moved_is_patched_where_it_went_as_git_am_3_does(tmp_path):
    upstream = upstream_repo(tmp_path, {OLD: QUEUE, "README.md": "server\n"})
    patch = patched_queue(tmp_path, upstream)
    (upstream / "tools/server/queue").mkdir()
    git.run(["mv", OLD, NEW], cwd=upstream)
    commit(upstream, {NEW: QUEUE.replace(*UPSTREAM_EDIT)}, "server : move the queue into its own folder")
    commit(upstream, {"README.md": "server, with a queue\n"}, "docs : the queue")

    project, report = apply(tmp_path / "fork", upstream, patch)
    (result,) = report.patches
    assert result.verdict is Verdict.MERGED and report.exit_code == 0
    assert [h.detail.split(";")[0] for h in result.hunks] == [f"followed rename {OLD} → {NEW}"]
    moved = (project.output_dir / NEW).read_bytes()
    assert moved == QUEUE.replace(*UPSTREAM_EDIT).replace(SAVED, SAVED_ON_DEVICE).encode()
    assert not (project.output_dir / OLD).exists()
    am = git_am_3(upstream, patch, tmp_path / "am")
    assert (am / NEW).read_bytes() == moved and not (am / OLD).exists()
    # The patch's site rule, written for the old path, checked the file where it went.
    (rule,) = report.checks.rules
    assert (rule.file, rule.renamed_from, rule.found, rule.passed) == (NEW, OLD, 1, True)
    assert f"`{NEW} (followed rename from {OLD})`" in to_markdown(report.checks)
    assert_matches_schema(json.loads(to_json("check", report.checks)))
    # The commit is the same on every run of the same queue on the same upstream commit.
    _, again = apply(tmp_path / "again", upstream, patch)
    assert again.tip == report.tip and again.patches[0].commit == result.commit


def test_a_move_is_followed_with_the_base_an_earlier_good_run_kept(tmp_path):
    """A quilt patch has no index line; the commit of its last good run is its base."""
    upstream = upstream_repo(tmp_path, {OLD: QUEUE})
    quilt = tmp_path / "quilt" / "queue-on-device.patch"
    quilt.parent.mkdir()
    quilt.write_text(re.sub(r"(?m)^index .*\n", "", patched_queue(tmp_path, upstream).read_text()))
    project = Project.load(write_project(tmp_path / "fork", str(upstream), [quilt]))
    options = ApplyOptions(spec="upstream@HEAD", check=False)
    assert run_apply(project, options).bases_recorded == 1
    (upstream / "tools/server/queue").mkdir()
    git.run(["mv", OLD, NEW], cwd=upstream)
    commit(upstream, {NEW: QUEUE.replace(*UPSTREAM_EDIT)}, "server : move the queue into its own folder")
    (result,) = run_apply(project, options).patches
    assert result.verdict is Verdict.MERGED and result.hunks[0].detail == f"followed rename {OLD} → {NEW}"
    assert (project.output_dir / NEW).read_text() == QUEUE.replace(*UPSTREAM_EDIT).replace(SAVED, SAVED_ON_DEVICE)
    # A fork whose mirror kept no base does not follow: the move is named, nothing is written.
    fresh = Project.load(write_project(tmp_path / "fresh", str(upstream), [quilt]))
    (result,) = run_apply(fresh, options).patches
    assert result.verdict is Verdict.MISSING_FILE and result.hunks[0].detail.startswith(
        f"upstream moved it to {NEW}; the patch's base is unknown")


@pytest.mark.parametrize("similar_added", ["in a later commit", "before the patch was made"])
def test_a_deleted_file_with_a_similar_one_elsewhere_stays_missing(tmp_path, similar_added):
    """No commit moved the file: git am -3 still writes the patch into the similar file (its
    base tree holds only the patch's files, so every file upstream has counts as added)."""
    similar = QUEUE.replace("server_queue::", "server_queue_v2::").replace(*UPSTREAM_EDIT)
    first = {OLD: QUEUE} if similar_added == "in a later commit" else {OLD: QUEUE, NEW: similar}
    upstream = upstream_repo(tmp_path, first)
    patch = patched_queue(tmp_path, upstream)
    git.run(["rm", "--quiet", OLD], cwd=upstream)
    commit(upstream, {}, "server : drop the old queue")
    if similar_added == "in a later commit":
        commit(upstream, {NEW: similar}, "server : a new queue")
    assert f"R\t{OLD}\t{NEW}" not in git.run(["log", "-M", "--format=", "--name-status"], cwd=upstream)

    project, report = apply(tmp_path / "fork", upstream, patch)
    (result,) = report.patches
    assert result.verdict is Verdict.MISSING_FILE and result.commit is None
    assert [h.detail for h in result.hunks] == ["upstream has no such file"]
    assert (project.output_dir / NEW).read_text() == similar
    am = git_am_3(upstream, patch, tmp_path / "am")
    assert am is not None and (am / NEW).read_text() == similar.replace(SAVED, SAVED_ON_DEVICE)


def test_moves_are_followed_from_commit_to_commit(tmp_path):
    upstream = upstream_repo(tmp_path, {OLD: QUEUE})
    patch = patched_queue(tmp_path, upstream)
    (upstream / "tools/server/queue").mkdir()
    git.run(["mv", OLD, NEW], cwd=upstream)
    commit(upstream, {}, "server : move the queue")
    git.run(["mv", NEW, "tools/server/queue/queue.cpp"], cwd=upstream)
    commit(upstream, {"tools/server/queue/queue.cpp": QUEUE.replace(*UPSTREAM_EDIT)}, "server : shorter name")
    _, report = apply(tmp_path / "fork", upstream, patch)
    assert report.patches[0].hunks[0].detail.startswith(f"followed rename {OLD} → tools/server/queue/queue.cpp")
