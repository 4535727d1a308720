"""Ctrl-C or SIGTERM while patchkit is still starting (importing typer, rich and the commands,
building the command line) ends it the way an interrupted command ends: one line, exit 130 or 143,
no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO

# `python -m patchkit status`, after saying that Python and the `patchkit` package (its version,
# nothing else) are loaded, so that a test can time a signal from patchkit's first steps on. The
# instants before, Python's own start-up (`site`, runpy), are out of any program's reach.
BOOT = ("import runpy, sys, patchkit; print('python up', file=sys.stderr, flush=True); "
        "sys.argv[0] = 'patchkit'; runpy.run_module('patchkit', run_name='__main__', alter_sys=True)")


def start(cwd: Path, pause: str) -> subprocess.Popen:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO), "PATCHKIT_TEST_PAUSE": pause}
    return subprocess.Popen([sys.executable, "-c", BOOT, "status"], cwd=cwd, env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for(proc: subprocess.Popen, text: str) -> None:
    assert proc.stderr
    for line in proc.stderr:
        if text in line:
            return
    raise AssertionError(f"the process ended (exit {proc.wait()}) before saying {text!r}")


def stop(proc: subprocess.Popen, sig: signal.Signals) -> tuple[int, list[str]]:
    proc.send_signal(sig)
    try:
        _, rest = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:  # never hang the suite: a lost signal is this test's failure
        proc.kill()
        _, rest = proc.communicate()
        pytest.fail(f"{sig.name} was lost: the process went on to its pause point\n{rest}")
    return proc.returncode, [line for line in rest.splitlines() if "paused at" not in line]


@pytest.mark.parametrize("sig, code, line", [(signal.SIGINT, 130, "patchkit: interrupted"),
                                              (signal.SIGTERM, 143, "patchkit: terminated")],
                         ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("point", ["start", "commands"])
def test_a_signal_at_each_start_up_point_ends_in_one_line(tmp_path, point, sig, code, line):
    proc = start(tmp_path, pause=point)
    wait_for(proc, f"paused at {point}")
    assert stop(proc, sig) == (code, [line])


@pytest.mark.parametrize("delay", [0.02, 0.04, 0.07, 0.1, 0.15, 0.2, 0.3])
def test_ctrl_c_at_any_moment_of_start_up_ends_in_one_line(tmp_path, delay):
    """Timed from patchkit's first line: through the imports, typer's set-up and the parse, up
    to the pause that holds the process once everything is loaded (so it never ends first)."""
    proc = start(tmp_path, pause="commands")
    wait_for(proc, "python up")
    time.sleep(delay)
    code, lines = stop(proc, signal.SIGINT)
    assert not any("Traceback" in text for text in lines), "\n".join(lines)
    assert (code, lines) == (130, ["patchkit: interrupted"])
