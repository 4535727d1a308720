"""A GitHub that does not answer as GitHub does, met unattended: `patchkit ci pull-request` against
one that accepts the connection and never answers says what it is waiting for and gives up at
PATCHKIT_GITHUB_DEADLINE with one line, exit 3; an answer that is not JSON is the environment's
too (exit 3), never an internal error."""

from __future__ import annotations

import re
import socket
import time

from conftest import run_cli


def test_a_github_that_never_answers_is_given_up_on_at_the_deadline(tmp_path):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)  # the kernel accepts the connections; nobody ever reads or answers
        env = {"GITHUB_API_URL": f"http://127.0.0.1:{server.getsockname()[1]}", "GITHUB_REPOSITORY": "o/r",
               "GITHUB_TOKEN": "t", "PATCHKIT_GITHUB_DEADLINE": "2"}
        start = time.monotonic()
        proc = run_cli("ci", "pull-request", "patchkit/refresh", "--base", "main", cwd=tmp_path, env=env)
        took = time.monotonic() - start
    assert proc.returncode == 3, proc.stderr
    assert took < 15
    lines = proc.stderr.splitlines()
    assert "waiting for GitHub: GET /repos/o/r/pulls (gives up after 2 s)" in lines[0]
    assert lines[-1].startswith("patchkit: error: GitHub API: no answer within ")
    assert "PATCHKIT_GITHUB_DEADLINE" in lines[-1] and proc.stdout == ""


def test_a_bad_deadline_is_refused(tmp_path):
    env = {"GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": "t", "PATCHKIT_GITHUB_DEADLINE": "soon"}
    proc = run_cli("ci", "pull-request", "x", "--base", "main", cwd=tmp_path, env=env)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "PATCHKIT_GITHUB_DEADLINE='soon' is not a number of seconds" in proc.stderr


def test_an_answer_that_is_not_json_is_the_environments(tmp_path, httpserver):
    httpserver.expect_request(re.compile(".*")).respond_with_data("<html>Sign in to the proxy</html>",
                                                                  content_type="text/html")
    env = {"GITHUB_API_URL": httpserver.url_for("").rstrip("/"), "GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": "t"}
    proc = run_cli("ci", "pull-request", "x", "--base", "main", cwd=tmp_path, env=env)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.splitlines()[-1].startswith(
        "patchkit: error: GitHub API: GET /repos/o/r/pulls answered 200 without JSON ('<html>Sign in")
    assert "Traceback" not in proc.stderr
