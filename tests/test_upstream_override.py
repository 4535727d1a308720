"""`--upstream` changes where patchkit fetches from, nothing else (issue 16, item 14): the lock and
the reports keep patchkit.yaml's upstream URL, the lock's pin applies, `upstream@locked` resolves.

Two local upstreams: the configured one, whose master has moved one commit past the override's
(a mirror a night runs against, not yet up to date)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import git_identity, run_cli, write_project
from patchkit import git
from patchkit.project import Lock, Project
from patchkit.upstream import Mirror


class Forked:
    def __init__(self, root: Path, configured: Path, override: Path) -> None:
        self.root, self.configured, self.override = root, configured, override

    def cli(self, *args: str) -> tuple[int, str, str]:
        proc = run_cli("-q", *args, cwd=self.root)
        return proc.returncode, proc.stdout, proc.stderr

    def lock(self) -> Lock | None:
        return Lock.read(self.root / "patchkit.lock")

    def commit(self, rev: str, where: Path | None = None) -> str:
        return git.run(["rev-parse", f"{rev}^{{commit}}"], cwd=where or self.override)


@pytest.fixture
def forked(tmp_path, upstream) -> Forked:
    configured, override = tmp_path / "configured.git", tmp_path / "override.git"
    for path in (configured, override):
        git.run(["clone", "--quiet", "--mirror", "--", str(upstream.path), str(path)])
    tree = git.run(["rev-parse", "master^{tree}"], cwd=configured)
    moved = git.run(["commit-tree", tree, "-p", "master", "-m", "upstream moves on"], cwd=configured,
                    env=git_identity("Upstream", "up@upstream.invalid"))
    git.run(["update-ref", "refs/heads/master", moved], cwd=configured)
    return Forked(write_project(tmp_path / "fork", str(configured)), configured, override)


def test_apply_update_lock_under_upstream_records_the_configured_url(forked):
    code, out, err = forked.cli("apply", "upstream@b1000", "--upstream", str(forked.override), "--update-lock",
                                "--no-check", "--json", "-")
    assert code == 0, err
    lock = forked.lock()
    assert (lock.upstream_url, lock.upstream_commit) == (str(forked.configured), forked.commit("b1000"))
    assert json.loads(out)["upstream_url"] == str(forked.configured)
    # The objects came from the override, so the checkout's origin is where it can fetch them again,
    assert git.run(["remote", "get-url", "origin"], cwd=forked.root / "llama.cpp") == str(forked.override)
    # and the override has a mirror of its own: two repositories' refs never mix in one.
    project = Project.load(forked.root)
    assert Mirror.open(project, str(forked.override)).exists and not Mirror.open(project).exists


def test_nightly_under_upstream_keeps_the_configured_url_in_the_lock(forked, tmp_path):
    assert forked.cli("apply", "upstream@b1000", "--update-lock", "--no-check")[0] == 0
    code, _, err = forked.cli("nightly", "upstream@HEAD", "--upstream", str(forked.override),
                              "--report-dir", str(tmp_path / "reports"))
    assert code == 0, err
    lock = forked.lock()
    assert (lock.upstream_url, lock.upstream_commit) == (str(forked.configured), forked.commit("master"))
    report = json.loads((tmp_path / "reports" / "report.json").read_text())
    assert report["lock_moved"] and report["apply"]["upstream_url"] == str(forked.configured)


@pytest.mark.parametrize("command", [["apply", "--no-check"], ["nightly"]])
def test_the_pin_guard_applies_under_upstream(forked, tmp_path, command):
    """The lock is at the configured master, which the override's master does not contain."""
    assert forked.cli("apply", "upstream@HEAD", "--update-lock", "--no-check")[0] == 0
    locked = forked.lock()
    assert locked.upstream_commit == forked.commit("master", forked.configured)
    extra = ["--report-dir", str(tmp_path / "reports")] if command == ["nightly"] else ["--update-lock"]
    code, _, err = forked.cli(*command, "upstream@HEAD", "--upstream", str(forked.override), *extra)
    assert code == 2
    assert err == (f"patchkit: error: upstream {forked.commit('master')[:12]} does not contain the locked commit "
                   f"{locked.upstream_commit[:12]}: the lock would move backwards or sideways; name a newer "
                   "upstream ref, or pass --allow-rewind\n")
    assert forked.lock() == locked


def test_allow_rewind_under_upstream_moves_the_lock_and_keeps_the_url(forked):
    assert forked.cli("apply", "upstream@HEAD", "--update-lock", "--no-check")[0] == 0
    code, _, err = forked.cli("apply", "upstream@b1000", "--upstream", str(forked.override), "--update-lock",
                              "--allow-rewind", "--no-check")
    assert code == 0, err
    lock = forked.lock()
    assert (lock.upstream_url, lock.upstream_commit) == (str(forked.configured), forked.commit("b1000"))


def test_upstream_locked_resolves_under_upstream(forked):
    assert forked.cli("apply", "upstream@b1000", "--update-lock", "--no-check")[0] == 0
    code, out, err = forked.cli("apply", "upstream@locked", "--upstream", str(forked.override), "--no-check",
                                "--json", "-")
    assert code == 0, err
    report = json.loads(out)
    assert (report["ref"], report["upstream_commit"]) == ("locked", forked.commit("b1000"))


def test_upstream_locked_missing_from_the_override_says_so(forked):
    assert forked.cli("apply", "upstream@HEAD", "--update-lock", "--no-check")[0] == 0
    locked = forked.lock().upstream_commit
    code, _, err = forked.cli("apply", "upstream@locked", "--upstream", str(forked.override), "--no-check")
    assert code == 2
    assert err == (f"patchkit: error: upstream@locked: the locked commit {locked[:12]} is not in the "
                   f"mirror of {forked.override}; fetch from an upstream that has it, or name another upstream ref\n")


def test_messages_about_fetching_name_the_override(forked):
    code, _, err = forked.cli("apply", "upstream@HEAD", "--upstream", str(forked.override), "--no-fetch",
                              "--no-check")
    assert code == 3
    assert err.startswith(f"patchkit: error: no mirror of {forked.override} yet;")
