"""Stopping a process patchkit started, with everything it started in turn.

A process started with `start_new_session=True` leads a process group of its own: CMake and the
compilers Ninja runs, llama-server and whatever it forks. Stopping only the leader would leave the
rest running after patchkit returns.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess


def stop_group(proc: subprocess.Popen, grace: float) -> int | None:
    """End PROC's process group: SIGTERM, then after up to GRACE seconds SIGKILL to whatever is
    left, PROC if it lingers and what it left behind. PROC's exit code when it ended by itself or
    within GRACE (negative: the signal), None when it ignored SIGTERM and was killed."""
    code = proc.poll()
    try:
        if code is None:
            _signal_group(proc, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = proc.wait(timeout=grace)
    finally:
        _signal_group(proc, signal.SIGKILL)
        proc.wait()
    return code


def _signal_group(proc: subprocess.Popen, sig: signal.Signals) -> None:
    # Gone already, or the group's last member is a zombie another user owns: nothing to stop.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
