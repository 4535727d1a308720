"""A GitHub that fails (answers 500) never turns the night's result into another: a good night
stays exit 0, with its reports and its terminal or JSON output, and a warning; a bad one exit 1."""

from __future__ import annotations

import json
import re

from conftest import apply, run_cli


def test_a_failing_github_is_a_warning_and_the_exit_code_is_the_nights(project, tmp_path, httpserver):
    apply(project, "b1000", update_lock=True)
    httpserver.expect_request(re.compile(".*")).respond_with_json({"message": "Server Error"}, status=500)
    env = {"GITHUB_REPOSITORY": "fork/llama.cpp", "GITHUB_TOKEN": "t", "PATCHKIT_GITHUB_DEADLINE": "1",
           "GITHUB_API_URL": httpserver.url_for("").rstrip("/")}

    bad = run_cli("nightly", "upstream@scenario/conflict", "--github-issues", "--report-dir", str(tmp_path / "bad"),
                  cwd=project.root, env=env)
    assert bad.returncode == 1 and "GitHub issues not updated" in bad.stderr
    assert bad.stdout.strip()  # the night's verdict is printed

    good = run_cli("nightly", "upstream@HEAD", "--github-issues", "--report-dir", str(tmp_path / "good"),
                   "--json", "-", cwd=project.root, env=env)
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["passed"] and json.loads(good.stdout)["lock_moved"]
    assert re.search(r"warning: GitHub issues not updated: GitHub API: .*answered 500", good.stderr)
    assert "nightly: waiting for GitHub: GET /repos/fork/llama.cpp/issues (gives up after 1 s)" in good.stderr
    assert json.loads((tmp_path / "good" / "report.json").read_text())["passed"]

    terminal = run_cli("nightly", "upstream@HEAD", "--github-issues", "--report-dir", str(tmp_path / "again"),
                       cwd=project.root, env=env)
    assert terminal.returncode == 0 and "good" in terminal.stdout, terminal.stderr
