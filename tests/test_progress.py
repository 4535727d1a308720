"""Progress in CI logs: plain lines, and a heartbeat while nothing new happens."""

from __future__ import annotations

import time
from types import SimpleNamespace

from patchkit.cli.progress import PlainBuildProgress, PlainStatus


def test_a_silent_step_still_prints_a_line_every_interval(capsys):
    with PlainStatus(interval=0.2, first="fetching upstream") as status:
        status.update("fetching upstream: Receiving objects:   1%")  # the first line: at once
        status.update("fetching upstream: Receiving objects:  42%")  # too soon after it
        time.sleep(0.7)  # git says nothing more for a while
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "fetching upstream: Receiving objects:   1%"
    assert lines[1] == "fetching upstream: Receiving objects:  42% (still running)"
    assert len(lines) >= 3  # and again while it lasts, saying the same line each time
    assert set(lines[1:]) == {"fetching upstream: Receiving objects:  42% (still running)"}


def test_quick_silent_work_prints_nothing_and_long_silent_work_says_so(capsys):
    with PlainStatus(interval=60, first="fetching upstream"):
        pass
    assert capsys.readouterr().err == ""
    with PlainStatus(interval=0.2, first="fetching upstream"):
        time.sleep(0.5)
    assert capsys.readouterr().err.splitlines()[0] == "fetching upstream (still running)"


def test_builds_say_each_phase_steps_on_the_heartbeat_and_each_result(capsys):
    with PlainStatus(interval=60) as status:
        progress = PlainBuildProgress(status)
        progress.phase("cpu", "configure")
        progress.phase("cpu", "build")
        for done in range(1, 101):
            progress.step("cpu", done, 100)
        progress.finished(SimpleNamespace(backend="cpu", status=SimpleNamespace(value="ok"), reason=""))
    assert capsys.readouterr().err.splitlines() == ["cpu: configure", "cpu: build", "cpu: ok"]
