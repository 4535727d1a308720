"""Bisect on real git histories written with fast-import: the commit named, the probe budget."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import git_identity, seed_patch_path, write_project
from history_upstream import FIRST_PULL, Event, build_history

from patchkit import git
from patchkit.apply import Applier, Verdict
from patchkit.checks import queue_rules, run_checks
from patchkit.fixture import SERVER_CONTEXT
from patchkit.nightly.bisect import bisect_queue
from patchkit.project import Project
from patchkit.queue import Queue
from patchkit.upstream import Mirror

WEB = "https://github.com/ggml-org/llama.cpp"


def bisect(tmp_path, upstream, events, patches=None, length=300, merge_every=0):
    """Build the history, apply the queue at its tip, bisect from its first commit (the lock)."""
    history = build_history(tmp_path / "history", upstream, length, events, merge_every=merge_every)
    project = Project.load(write_project(tmp_path / "fork", f"{WEB}.git", patches))
    queue = Queue.load(project).patches
    mirror = Mirror(history.path / ".git", f"{WEB}.git", "master", None)
    target = history.commits[-1]
    with mirror.reader() as reader:
        applier = Applier(mirror, mirror.resolve(target, fetch=False), reader)
        results = [applier.apply(p).result for p in queue]
        checks = run_checks(queue_rules(project, queue), applier.tree.read)
    lines: list[str] = []
    findings = bisect_queue(mirror, project, queue, history.commits[0], target, results, checks,
                            progress=lines.append)
    return history, results, checks, findings, lines


def within_budget(finding):
    assert finding.bound == math.ceil(math.log2(finding.candidates)) + 2
    assert 0 < finding.probes <= finding.bound


def test_names_the_commit_that_broke_the_patch(tmp_path, upstream):
    history, results, _, findings, lines = bisect(
        tmp_path, upstream, [Event(137, "conflict", "server : also sync the draft state")], merge_every=25)
    assert results[0].verdict is Verdict.CONFLICT
    (finding,) = findings
    culprit = finding.culprit
    assert finding.kind == "broke"
    assert culprit.commit == history.commits[137]
    assert culprit.subject == f"server : also sync the draft state (#{FIRST_PULL + 137})"
    assert culprit.pull == FIRST_PULL + 137
    assert culprit.url == f"{WEB}/commit/{history.commits[137]}"
    assert culprit.pull_url == f"{WEB}/pull/{FIRST_PULL + 137}"
    assert culprit.author == "Upstream Developer <dev@upstream.invalid>"
    assert culprit.date.startswith("2026-")
    # only commits touching the patch's file are candidates: every third one, plus the event
    assert finding.candidates == len([i for i in range(1, 300) if i % 3 == 0 or i == 137])
    within_budget(finding)
    assert finding.parent_good and finding.monotonic
    assert len(lines) == finding.probes and all(ln.startswith("bisect server-keep") for ln in lines)


def test_names_the_merge_that_brought_a_seventh_site(tmp_path, upstream):
    """Applies cleanly, only the site check fails; the change came through a side branch, and
    the first-parent culprit is the merge, not the side commit."""
    history, results, checks, findings, _ = bisect(
        tmp_path, upstream, [Event(211, "new-site", "server : replay speculative rounds", via_merge=True)])
    assert results[0].good and not checks.passed
    (finding,) = findings
    assert finding.kind == "broke"
    assert finding.culprit.commit == history.commits[211] != history.side_commits[211]
    assert finding.culprit.subject.startswith("Merge branch 'side-211'")
    within_budget(finding)


@pytest.mark.parametrize("scenario, kind", [("already-applied", "superseded"),
                                            ("partially-applied", "partially-applied")])
def test_names_the_commit_that_adopted_the_patch(tmp_path, upstream, scenario, kind):
    history, results, _, findings, _ = bisect(
        tmp_path, upstream, [Event(90, scenario, "server : keep speculative checkpoints on device")])
    assert results[0].verdict.value == scenario
    (finding,) = findings
    commit = history.commits[90]
    assert (finding.kind, finding.culprit.commit) == (kind, commit)
    within_budget(finding)
    if kind == "superseded":
        assert finding.applied_upstream == f"Applied-Upstream: {WEB}/commit/{commit}"
        assert "drop the patch" in finding.detail and finding.applied_upstream in finding.detail
    else:
        assert finding.applied_upstream is None


def dependent_patch(tmp_path, upstream) -> Path:
    """A patch on top of the seed patch: it edits a line the seed patch adds."""
    repo = tmp_path / "dependent"
    git.run(["init", "--quiet", str(repo)])
    patched = upstream.expected_patched("base")
    target = repo / SERVER_CONTEXT
    target.parent.mkdir(parents=True)
    env = git_identity()
    said = "so its tensor data can stay on the device"
    assert said in patched
    for text, message in ((patched, "base"), (patched.replace(said, f"{said}: it holds one live round"),
                                              "server : say why the speculative checkpoint stays on the device")):
        target.write_text(text)
        git.run(["add", "-A"], cwd=repo)
        git.run(["commit", "--quiet", "-m", message], cwd=repo, env=env)
    git.run(["format-patch", "--quiet", "--zero-commit", "--full-index", "-1", "-o", str(tmp_path / "out")],
            cwd=repo)
    (patch,) = (tmp_path / "out").iterdir()
    return patch


def test_a_patch_blocked_by_an_earlier_one_shares_its_culprit(tmp_path, upstream):
    second = dependent_patch(tmp_path, upstream)
    history, results, _, findings, _ = bisect(
        tmp_path, upstream, [Event(137, "conflict", "server : also sync the draft state")],
        patches=[seed_patch_path(), second])
    assert [r.verdict for r in results] == [Verdict.CONFLICT, Verdict.BLOCKED]
    first, blocked = findings
    assert first.culprit.commit == history.commits[137]
    assert blocked.kind == "blocked" and blocked.blocked_by == first.patch
    assert blocked.culprit == first.culprit and blocked.probes == 0


def test_a_history_that_goes_good_again_is_reported_not_monotonic(tmp_path, upstream):
    history, _, _, findings, _ = bisect(tmp_path, upstream, [
        Event(40, "conflict", "server : also sync the draft state"),
        Event(110, "base", "Revert \"server : also sync the draft state\""),
        Event(250, "conflict", "server : sync the draft state again")])
    (finding,) = findings
    assert finding.kind == "broke" and not finding.monotonic
    assert finding.culprit.commit in (history.commits[40], history.commits[250])
    assert "not monotonic" in finding.detail
    within_budget(finding)


def test_a_patch_bad_at_the_lock_too_is_unknown(tmp_path, upstream):
    history = build_history(tmp_path / "history", upstream, 20,
                            [Event(5, "conflict", "server : also sync the draft state")])
    project = Project.load(write_project(tmp_path / "fork", f"{WEB}.git"))
    queue = Queue.load(project).patches
    mirror = Mirror(history.path / ".git", f"{WEB}.git", "master", None)
    with mirror.reader() as reader:
        results = [Applier(mirror, mirror.resolve(history.commits[-1], fetch=False), reader).apply(queue[0]).result]
    (finding,) = bisect_queue(mirror, project, queue, history.commits[10], history.commits[-1], results, None)
    assert finding.kind == "unknown" and finding.culprit is None and finding.probes == 1
    assert "already at the lock" in finding.detail
    (no_lock,) = bisect_queue(mirror, project, queue, None, history.commits[-1], results, None)
    assert no_lock.kind == "unknown" and "no lock" in no_lock.detail
