"""process.stop_group on real process groups: a leader that stops on SIGTERM, one that ignores it,
one that already ended; in each case nothing it started is left running."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from patchkit.process import stop_group

# A child that ignores SIGTERM, as a compiler stuck in I/O or a forked server might.
_STUBBORN_CHILD = "(trap '' TERM; exec sleep 60) & echo $! > {pids}"


def start(script: str, tmp_path: Path) -> tuple[subprocess.Popen, int]:
    """SCRIPT in a session of its own, and the pid of the stubborn child it starts first."""
    pids = tmp_path / "child.pid"
    proc = subprocess.Popen(["sh", "-c", _STUBBORN_CHILD.format(pids=pids) + "\n" + script],
                            start_new_session=True)
    deadline = time.monotonic() + 10
    while not (pids.exists() and pids.read_text().strip()):
        assert time.monotonic() < deadline, "the child did not start"
        time.sleep(0.01)
    time.sleep(0.1)  # let the child's trap take effect before any signal comes
    return proc, int(pids.read_text())


def running(pid: int) -> bool:
    """True while PID runs (a zombie waiting for its reaper has stopped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def gone_soon(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_leader_that_stops_on_sigterm_gives_its_code_and_its_children_are_killed(tmp_path):
    proc, child = start("exec sleep 60", tmp_path)
    started = time.monotonic()
    assert stop_group(proc, grace=5) == -signal.SIGTERM
    assert time.monotonic() - started < 4  # no waiting out the grace
    assert gone_soon(child)


def test_a_leader_that_ignores_sigterm_is_killed_after_the_grace(tmp_path):
    proc, child = start("trap '' TERM; while :; do sleep 0.05; done", tmp_path)
    started = time.monotonic()
    assert stop_group(proc, grace=0.5) is None
    assert time.monotonic() - started >= 0.5
    assert proc.returncode == -signal.SIGKILL and gone_soon(child)


def test_a_leader_that_already_ended_keeps_its_code_and_what_it_left_is_killed(tmp_path):
    proc, child = start("exit 3", tmp_path)
    proc.wait()
    assert running(child)
    assert stop_group(proc, grace=5) == 3
    assert gone_soon(child)
