"""The queue's version in `patchkit status`: the locked commit's, the same string dist gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_matches_schema, run_cli
from dist_helpers import Upstream, dist, make_fork, make_upstream, report


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory) -> Upstream:
    return make_upstream(tmp_path_factory.mktemp("stand-in"))


def status(fork: Path) -> dict:
    done = run_cli("status", "--json", "-", cwd=fork)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert_matches_schema(data)
    return data


def test_status_gives_the_version_dist_gives(tmp_path: Path, stand_in: Upstream) -> None:
    fork = make_fork(tmp_path / "fork", stand_in)
    version = report(dist(fork, tmp_path / "src.tar.gz"))["version"]
    assert status(fork)["version"] == version and "version_note" not in status(fork)
    shown = run_cli("status", cwd=fork)
    assert shown.returncode == 0 and f"version at the locked base: {version}\n" in shown.stdout


def test_no_lock_no_version(tmp_path: Path, stand_in: Upstream) -> None:
    data = status(make_fork(tmp_path / "fork", stand_in, lock=False))
    assert data["lock"] is None and "version" not in data and "version_note" not in data


def test_a_locked_commit_the_mirror_lacks_gives_a_note(tmp_path: Path, stand_in: Upstream) -> None:
    fork = make_fork(tmp_path / "fork", stand_in)
    lock = json.loads((fork / "patchkit.lock").read_text())
    lock["upstream"]["commit"] = "0123456789" * 4
    (fork / "patchkit.lock").write_text(json.dumps(lock))
    data = status(fork)
    assert "version" not in data and "012345678901 is not in the mirror" in data["version_note"]
    assert "is not in the mirror" in run_cli("status", cwd=fork).stdout


def test_no_mirror_yet_gives_a_note(tmp_path: Path, stand_in: Upstream) -> None:
    fork = make_fork(tmp_path / "fork", stand_in)
    for mirror in (fork / "cache" / "mirrors").iterdir():
        mirror.rename(tmp_path / mirror.name)  # moved away: status must not fetch it back
    data = status(fork)
    assert "version" not in data and "no mirror" in data["version_note"]
    assert not any((fork / "cache" / "mirrors").glob("*/HEAD"))
