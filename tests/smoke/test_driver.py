"""The smoke driver against a stand-in llama-server (a real process, real HTTP on 127.0.0.1):
it waits for health within a deadline, reports a server that dies or hangs with its exit code and
log, stops every server it started, and leaves none behind when it is itself killed."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from patchkit.smoke import driver
from patchkit.smoke.driver import run_scenario, run_server
from patchkit.smoke.scenario import ServerRun, scenario

REPO = Path(__file__).resolve().parents[2]
STANDIN = Path(__file__).with_name("standin_server.py")
LIVENESS_BOUND = 30.0  # generous: only how long a test waits before calling a process leaked
BODIES = tuple({"prompt": [10, 11, 12], "n_predict": n} for n in (1, 2, 3))


@pytest.fixture
def server(tmp_path: Path) -> Path:
    """An executable that runs the stand-in with this Python (exec: the driver's pid is its pid)."""
    path = tmp_path / "llama-server"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" -u "{STANDIN}" "$@"\n')
    path.chmod(0o755)
    return path


def run(server: Path, tmp_path: Path, *args: str, requests: tuple[dict, ...] = BODIES,
        **limits: float) -> driver.RunResult:
    return run_server(server, tmp_path / "model.gguf", ServerRun("standin", args, requests),
                      env={"PATH": os.environ["PATH"]}, workdir=tmp_path / "work", **limits)


def standin_pid(log: Path) -> int:
    return int(re.search(r"^standin: pid (\d+)$", log.read_text(), re.MULTILINE).group(1))


def alive(pid: int) -> bool:
    """Running (a zombie left to an init that does not reap counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def wait_until(condition, what: str) -> None:
    end = time.monotonic() + LIVENESS_BOUND
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"not within {LIVENESS_BOUND:g} s: {what}")
        time.sleep(0.05)


def requests_seen(log: Path) -> list[dict]:
    return [json.loads(line.removeprefix("standin: request "))
            for line in log.read_text().splitlines() if line.startswith("standin: request ")]


def test_normal_run_waits_out_loading_sends_every_request_and_stops_the_server(server, tmp_path):
    result = run(server, tmp_path, "--unhealthy-for", "3")

    assert (result.ok, result.detail, result.responses) == (True, "", 3)
    assert result.log == tmp_path / "work" / "llama-server-standin.log"
    assert requests_seen(result.log) == list(BODIES)
    assert "standin: stopping on SIGTERM" in result.log.read_text()
    assert not alive(standin_pid(result.log))


def test_server_never_healthy_fails_at_the_health_deadline_and_is_stopped(server, tmp_path):
    result = run(server, tmp_path, "--never-healthy", health_timeout=1.0)

    assert not result.ok and result.responses == 0
    assert result.detail.startswith("health not ok after 1 s (last: HTTP 503)")
    assert str(result.log) in result.detail
    assert requests_seen(result.log) == []
    assert not alive(standin_pid(result.log))


def test_server_that_rejects_the_model_names_exit_code_reason_and_log(server, tmp_path):
    result = run(server, tmp_path, "--fail-load", "key not found in model: mamba.ssm.d_state")

    assert not result.ok
    assert result.detail == ("server exited with 1 before /health: llama_model_load: error loading"
                             f" model: key not found in model: mamba.ssm.d_state; see {result.log}")


def test_crash_mid_run_names_the_request_exit_code_and_log(server, tmp_path):
    result = run(server, tmp_path, "--crash-on", "2")

    assert not result.ok and result.responses == 1
    assert result.detail == ("server exited with 3 during request 2 of 3: GGML_ASSERT(n_past > 0) "
                             f"failed on request 2; see {result.log}")
    assert len(requests_seen(result.log)) == 2


def test_a_request_never_answered_ends_at_the_run_deadline(server, tmp_path):
    result = run(server, tmp_path, "--hang-on", "2", deadline=3.0)

    assert not result.ok and result.responses == 1
    assert result.detail == ("request 2 of 3 got no answer within the run's deadline; "
                             f"see {result.log}")
    assert not alive(standin_pid(result.log))


def test_server_ignoring_sigterm_is_killed_and_the_run_fails(server, tmp_path, monkeypatch):
    monkeypatch.setattr(driver, "STOP_GRACE", 0.5)
    result = run(server, tmp_path, "--ignore-term")

    assert not result.ok and result.responses == 3
    assert result.detail == f"server ignored SIGTERM for 0.5 s and was killed; see {result.log}"
    assert not alive(standin_pid(result.log))


def test_a_port_taken_before_the_server_binds_it_is_retried(server, tmp_path, monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = iter([taken.getsockname()[1]])
        free = driver._free_port
        monkeypatch.setattr(driver, "_free_port", lambda: next(ports, None) or free())
        result = run(server, tmp_path)

    assert (result.ok, result.responses) == (True, 3)


def test_the_scenario_deadline_is_shared_by_the_runs(server, tmp_path):
    runs = [ServerRun("first", ("--hang-on", "1"), BODIES), ServerRun("second", (), BODIES)]
    first, second = run_scenario(server, tmp_path / "model.gguf", runs, env={}, workdir=tmp_path,
                                 deadline=2.0)

    assert first.detail.startswith("request 1 of 3 got no answer within the run's deadline")
    assert (second.ok, second.detail) == (False, "not run: the scenario's 2 s were used up")
    assert not second.log.exists()


PARENT = (
    "import sys\nfrom pathlib import Path\n"
    "from patchkit.smoke.driver import run_server\n"
    "from patchkit.smoke.scenario import ServerRun\n"
    "run_server(Path(sys.argv[1]), Path('model.gguf'), ServerRun('hang', ('--hang-on', '1'),"
    " ({},)), env={}, workdir=Path(sys.argv[2]), deadline=600)\n")


@pytest.mark.parametrize("sig, stopped", [(signal.SIGKILL, False), (signal.SIGINT, True)],
                         ids=["killed", "ctrl-c"])
def test_server_dies_with_the_process_running_the_driver(server, tmp_path, sig, stopped):
    """SIGKILL leaves the driver no chance to clean up: the kernel's parent-death signal must end
    the server. A Ctrl-C lets it stop the server the ordinary way (SIGTERM, so the server can
    write what it writes at exit)."""
    log = tmp_path / "llama-server-hang.log"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(server), str(tmp_path)],
                              env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True,
                              stderr=subprocess.DEVNULL)
    pid = None
    try:
        wait_until(lambda: log.exists() and "standin: request" in log.read_text(),
                   "the stand-in got the request")
        pid = standin_pid(log)
        parent.send_signal(sig)
        parent.wait()
        wait_until(lambda: not alive(pid), f"the stand-in (pid {pid}) died with its parent")
        assert ("standin: stopping on SIGTERM" in log.read_text()) == stopped
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_scenario_runs_an_ngram_and_a_draft_model_server_on_the_same_requests(tmp_path):
    ngram, draft = scenario(tmp_path / "draft.gguf")

    assert ngram.args[ngram.args.index("--spec-type") + 1] == "ngram-simple"
    assert "--model-draft" not in ngram.args
    assert draft.args[draft.args.index("--spec-type") + 1] == "draft-simple"
    assert draft.args[draft.args.index("--model-draft") + 1] == str(tmp_path / "draft.gguf")
    first, second, third = ngram.requests
    assert ngram.requests == draft.requests and first == third
    # the second prompt shares all but the last tokens of the first: a checkpoint is restored
    assert first["prompt"][:-2] == second["prompt"][:-2] != second["prompt"]
    assert all(r["temperature"] == 0 and r["id_slot"] == 0 for r in ngram.requests)
