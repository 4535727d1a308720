"""Progress in CI logs: plain lines, and a heartbeat while nothing new happens."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from conftest import run_cli, seed_patch_path, write_project

from patchkit.cli import progress
from patchkit.cli.progress import PlainBuildProgress, PlainStatus


def test_a_silent_step_still_prints_a_line_every_interval(capsys):
    with PlainStatus(interval=0.2, label="apply upstream@HEAD") as status:
        status.update("fetching /up: Receiving objects:   1%")  # the first line: at once
        status.update("fetching /up: Receiving objects:  42%")  # too soon after it
        time.sleep(0.7)  # git says nothing more for a while
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "apply upstream@HEAD: fetching /up: Receiving objects:   1%"
    assert lines[1] == "apply upstream@HEAD: fetching /up: Receiving objects:  42% (still running)"
    assert len(lines) >= 3  # and again while it lasts, saying the same line each time
    assert set(lines[1:]) == {"apply upstream@HEAD: fetching /up: Receiving objects:  42% (still running)"}


def test_quick_silent_work_prints_nothing_and_long_silent_work_says_so(capsys):
    with PlainStatus(interval=60, label="import"):
        pass
    assert capsys.readouterr().err == ""
    with PlainStatus(interval=0.2, label="import"):
        time.sleep(0.5)
    assert capsys.readouterr().err.splitlines()[0] == "import (still running)"  # the command, no step


def test_builds_say_each_phase_steps_on_the_heartbeat_and_each_result(capsys):
    with PlainStatus(interval=60) as status:
        progress = PlainBuildProgress(status)
        progress.phase("cpu", "configure")
        progress.phase("cpu", "build")
        for done in range(1, 101):
            progress.step("cpu", done, 100)
        progress.finished(SimpleNamespace(backend="cpu", status=SimpleNamespace(value="ok"), reason=""))
    assert capsys.readouterr().err.splitlines() == ["cpu: configure", "cpu: build", "cpu: ok"]


# -- the heartbeat names the work in progress, never a fetch that does not run -------------------

# The CLI with a heartbeat of 0.2 s instead of 30 s, so that a test sees it.
SHORT_HEARTBEAT = ("import patchkit.cli.progress as progress; progress.HEARTBEAT = 0.2; "
                   "from patchkit.cli import main; main()")


def test_a_slow_source_under_no_fetch_is_not_called_a_fetch(tmp_path, upstream):
    root = write_project(tmp_path / "fork", str(upstream.path), patches=[])
    assert run_cli("import", str(seed_patch_path()), "--at", "upstream@b1000", "--dry-run",
                   cwd=root).returncode == 0  # the mirror, fetched once
    proc = subprocess.Popen([sys.executable, "-c", SHORT_HEARTBEAT, "import", "-", "--no-fetch",
                             "--at", "upstream@b1000", "--dry-run"], cwd=root, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "NO_COLOR": "1"})
    time.sleep(1.0)  # the patch comes slowly, as a download's might: the import waits for it
    _, err = proc.communicate(seed_patch_path().read_text(), timeout=120)
    assert proc.returncode == 0, err
    lines = err.splitlines()
    assert "import (still running)" in lines  # the command, not its first step
    assert not [line for line in lines if "fetch" in line], err


def test_each_step_is_printed_as_it_starts_and_its_details_on_the_heartbeat(capsys):
    with PlainStatus(interval=60, label="dist x.tar") as status:
        status.update("fetching /up: Receiving objects:   1%")
        status.update("fetching /up: Receiving objects:  42%")  # the same step: the heartbeat's
        status.update("fetched /up")
        status.update("writing llama.cpp-b1/ into x.tar")
    assert capsys.readouterr().err.splitlines() == [
        "dist x.tar: fetching /up: Receiving objects:   1%",
        "dist x.tar: fetched /up",
        "dist x.tar: writing llama.cpp-b1/ into x.tar"]


def test_a_builds_phase_replaces_the_fetchs_line(capsys, monkeypatch):
    monkeypatch.setattr(progress, "HEARTBEAT", 0.2)
    with progress.progress_display("apply upstream@HEAD") as say, progress.build_progress() as builds:
        say("fetching /up: Receiving objects: 100% (9/9), done.")
        say("fetched /up")
        builds.phase("cpu", "build")
        time.sleep(0.7)  # a long build says nothing between its steps
    lines = capsys.readouterr().err.splitlines()
    assert lines[:3] == ["apply upstream@HEAD: fetching /up: Receiving objects: 100% (9/9), done.",
                         "apply upstream@HEAD: fetched /up",
                         "apply upstream@HEAD: cpu: build"]
    assert len(lines) > 3 and set(lines[3:]) == {"apply upstream@HEAD: cpu: build (still running)"}


def test_the_fetch_names_itself_and_says_when_it_is_over(project):
    from patchkit.upstream import Mirror

    said: list[str] = []
    mirror = Mirror.open(project)
    with mirror.locked():
        mirror.fetch(said.append)
    assert said[-1] == f"fetched {mirror.fetch_url}"  # what follows is not a fetch still running
    assert said[:-1] and all(line.startswith(f"fetching {mirror.fetch_url}: ") for line in said[:-1]), said


def test_a_failed_fetch_says_it_is_over_too(project, tmp_path):
    from patchkit.errors import EnvironmentProblem
    from patchkit.upstream import Mirror

    said: list[str] = []
    (tmp_path / "not-a-repository").mkdir()
    mirror = Mirror.open(project, str(tmp_path / "not-a-repository"))
    with mirror.locked(), pytest.raises(EnvironmentProblem):
        mirror.fetch(said.append)
    assert said[-1] == f"could not fetch {mirror.fetch_url}"  # not git's "fatal: ...", read as fetching
