"""Run llama-server through the smoke scenario: start, wait for /health, send requests, stop.

Bounded and leak-free: every wait has a deadline; the server runs in a session of its own (a
Ctrl-C in the terminal reaches patchkit alone, which stops the server on the way out) and gets
SIGKILL from the kernel when patchkit dies (PR_SET_PDEATHSIG), even by SIGKILL.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import requests

from patchkit.errors import EnvironmentProblem
from patchkit.process import stop_group
from patchkit.smoke.scenario import ServerRun

HOST = "127.0.0.1"
STOP_GRACE = 10.0  # from SIGTERM to SIGKILL
_POLL = 0.1
_PORT_TRIES = 3
_BIND_FAILED = "couldn't bind"  # llama-server's message when the port was taken meanwhile
_PR_SET_PDEATHSIG = 1
# The lines that say why a process died: a rejected GGUF key or tensor ("error loading model:
# ..."), a failed GGML_ASSERT, an uncaught C++ exception, a port it could not bind.
_MEANINGFUL = re.compile(r"error|failed|GGML_ASSERT|GGML_ABORT|abort|terminate called|exception|"
                         r"couldn't", re.IGNORECASE)
_LOG_PREFIX = re.compile(r"^\d+(\.\d+)+ [A-Z] ")  # llama.cpp's log: time and level


@dataclass(frozen=True)
class RunResult:
    name: str
    ok: bool
    log: Path
    detail: str  # one line; empty when ok
    responses: int  # requests answered with 200
    seconds: float


def run_scenario(server: Path, model: Path, runs: list[ServerRun], *, env: Mapping[str, str],
                 workdir: Path, deadline: float = 120.0) -> list[RunResult]:
    """Each run in turn, all of them within DEADLINE seconds (each gets what the earlier left;
    stopping a server may add up to STOP_GRACE to that)."""
    end = time.monotonic() + deadline
    results = []
    for run in runs:
        left = end - time.monotonic()
        if left <= 0:
            results.append(RunResult(run.name, False, _log_path(workdir, run), "not run: the "
                                     f"scenario's {deadline:g} s were used up", 0, 0.0))
        else:
            results.append(run_server(server, model, run, env=env, workdir=workdir, deadline=left,
                                      health_timeout=min(60.0, left)))
    return results


def run_server(server: Path, model: Path, run: ServerRun, *, env: Mapping[str, str],
               workdir: Path, deadline: float = 120.0, health_timeout: float = 60.0) -> RunResult:
    """Start SERVER with `-m MODEL` and RUN's arguments on a free port of 127.0.0.1, wait up to
    HEALTH_TIMEOUT s for /health, send RUN's requests, stop it: all within DEADLINE s (plus up
    to STOP_GRACE to stop it). The server's output goes to a log in WORKDIR, kept and named."""
    if not sys.platform.startswith("linux"):
        raise EnvironmentProblem("the smoke test runs on Linux only",
                                 "run it on a Linux machine with glibc")
    workdir.mkdir(parents=True, exist_ok=True)
    log = _log_path(workdir, run)
    start = time.monotonic()
    end = start + deadline
    for _ in range(_PORT_TRIES):
        port = _free_port()
        with log.open("wb") as out:
            proc = _spawn([str(server), "--host", HOST, "--port", str(port), "-m", str(model),
                           *run.args], env=env, out=out, cwd=workdir)
        try:
            detail, responses = _drive(proc, f"http://{HOST}:{port}", run, log,
                                       health_wait=min(health_timeout, deadline), end=end)
        finally:
            stop = _stop(proc)
        if not (detail and responses == 0 and _BIND_FAILED in _tail(log)):
            break
    # A server that needed SIGKILL or died on SIGTERM may have lost what it writes at exit
    # (the interposer's record among it).
    detail = detail or (f"{stop}; see {log}" if stop else "")
    return RunResult(run.name, not detail, log, detail, responses,
                     round(time.monotonic() - start, 3))


def _drive(proc: subprocess.Popen, url: str, run: ServerRun, log: Path, *, health_wait: float,
           end: float) -> tuple[str, int]:
    """Health within HEALTH_WAIT s, then the requests, all before END: (what went wrong or "",
    the requests answered)."""
    health_end = min(end, time.monotonic() + health_wait)
    healthy, last = _wait_healthy(proc, url, health_end)
    if not healthy:
        if proc.poll() is not None:
            return _died(proc, log, "before /health"), 0
        return f"health not ok after {health_wait:g} s (last: {last}); see {log}", 0
    total = len(run.requests)
    for number, body in enumerate(run.requests, 1):
        which = f"request {number} of {total}"
        left = end - time.monotonic()
        if left <= 0:
            return f"{which} not sent: the run's deadline passed; see {log}", number - 1
        try:
            # Bounds the wait for the answer: /completion without streaming says nothing until done.
            answer = requests.post(f"{url}/completion", json=body, timeout=(min(5.0, left), left))
        except requests.Timeout:
            return f"{which} got no answer within the run's deadline; see {log}", number - 1
        except requests.RequestException:
            if _exited(proc, 2.0):
                return _died(proc, log, f"during {which}"), number - 1
            return f"{which} failed: the connection broke; see {log}", number - 1
        if answer.status_code != 200:
            return f"{which} answered HTTP {answer.status_code}: {_message(answer)}; see {log}", \
                number - 1
    if proc.poll() is not None:
        return _died(proc, log, "after the last request"), total
    return "", total


def _wait_healthy(proc: subprocess.Popen, url: str, end: float) -> tuple[bool, str]:
    """Poll /health until 200, the process exits or END: (healthy, the last answer seen)."""
    last = "no answer"
    while proc.poll() is None:
        left = end - time.monotonic()
        if left <= 0:
            return False, last
        try:
            status = requests.get(f"{url}/health", timeout=min(2.0, left)).status_code
        except requests.RequestException:
            status = None  # not listening yet
        if status == 200:
            return True, "200"
        if status is not None:
            last = f"HTTP {status}"  # 503 while the model loads: keep waiting
        time.sleep(_POLL)
    return False, last


def _spawn(args: list[str], *, env: Mapping[str, str], out, cwd: Path) -> subprocess.Popen:
    """ARGS in a session of its own, killed by the kernel when this thread ends (the parent-death
    signal follows the thread that forked: run_server blocks in it until the server is gone)."""
    parent = os.getpid()
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork, not in the child

    def die_with_parent() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request took effect
            os._exit(1)

    return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                            env=dict(env), cwd=cwd, start_new_session=True,
                            preexec_fn=die_with_parent)


def _stop(proc: subprocess.Popen) -> str:
    """End PROC's session: SIGTERM, SIGKILL after STOP_GRACE. What was wrong with it, or ""."""
    running = proc.poll() is None
    code = stop_group(proc, STOP_GRACE)
    if not running:  # it ended by itself: _drive has said why
        return ""
    if code is None:
        return f"server ignored SIGTERM for {STOP_GRACE:g} s and was killed"
    if code not in (0, -signal.SIGTERM):
        return f"server {_exit_words(code)} when asked to stop"
    return ""


def _exited(proc: subprocess.Popen, timeout: float) -> bool:
    """Whether PROC ends within TIMEOUT (a broken connection comes just before the exit code)."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=timeout)
    return proc.returncode is not None


def _died(proc: subprocess.Popen, log: Path, when: str) -> str:
    last = _last_meaningful(_tail(log))
    return f"server {_exit_words(proc.returncode)} {when}" + (f": {last}" if last else "") + \
        f"; see {log}"


def _exit_words(code: int) -> str:
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with {code}"


def _tail(log: Path, size: int = 16384) -> str:
    with log.open("rb") as f:
        f.seek(max(0, log.stat().st_size - size))
        return f.read().decode(errors="replace")


def _last_meaningful(text: str) -> str:
    """The line that says why: the first error-like line of the last 40 (a rejected GGUF key comes
    before the lines that only repeat that loading failed), else the last line."""
    lines = [_LOG_PREFIX.sub("", line.strip()) for line in text.splitlines() if line.strip()][-40:]
    line = next((line for line in lines if _MEANINGFUL.search(line)), lines[-1] if lines else "")
    return line[:300]


def _message(answer: requests.Response) -> str:
    """The error message of a llama-server answer ({"error": {"message": ...}}), else its text."""
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        return str(answer.json()["error"]["message"])[:300]
    return " ".join(answer.text.split())[:300]


def _free_port() -> int:
    # Another process may take it before the server binds: run_server retries on "couldn't bind".
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _log_path(workdir: Path, run: ServerRun) -> Path:
    return workdir / f"llama-server-{run.name}.log"
