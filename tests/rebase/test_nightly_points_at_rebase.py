"""A bad night names the one command that walks it to a fix: in the terminal, report.md and the
GitHub issue; a patch `rebase --skip` disabled is said to need attention."""

from __future__ import annotations

import json
import re

from werkzeug import Response

from conftest import apply, run_cli
from patchkit import git


def test_a_bad_night_gives_the_rebase_command_everywhere(project, upstream, tmp_path, httpserver):
    apply(project, "b1000", update_lock=True)
    commit = git.run(["rev-parse", "scenario/conflict"], cwd=upstream.path)
    posted = []

    def github(request):  # no issues open, a label that exists; the new issue's body kept
        if request.method == "POST":
            posted.append(request.get_json())
            return Response(json.dumps({"number": 1, "html_url": "https://github.invalid/1"}), 201,
                            content_type="application/json")
        return Response("[]" if request.path.endswith("/issues") else '{"name": "patchkit"}', 200,
                        content_type="application/json")

    httpserver.expect_request(re.compile(".*")).respond_with_handler(github)
    env = {"GITHUB_REPOSITORY": "fork/llama.cpp", "GITHUB_TOKEN": "t",
           "GITHUB_API_URL": httpserver.url_for("").rstrip("/")}
    proc = run_cli("nightly", "upstream@scenario/conflict", "--github-issues", "--report-dir", str(tmp_path / "r"),
                   cwd=project.root, env=env)
    assert proc.returncode == 1, proc.stderr
    command = f"patchkit rebase upstream@{commit}"
    assert f"to fix it: {command}" in proc.stdout
    assert f"To fix it: `{command}`" in (tmp_path / "r" / "report.md").read_text()
    (issue,) = [p for p in posted if "body" in p]
    assert f"`{command}`" in issue["body"]


def test_a_good_night_names_no_rebase_but_a_disabled_patch(project, tmp_path):
    apply(project, "b1000", update_lock=True)
    series = project.patches_dir / "series"
    series.write_text(series.read_text() + "# disabled: old.patch (on 2026-12-01 by `patchkit rebase --skip`: "
                      "conflict at upstream 0123456789ab)\n")
    proc = run_cli("nightly", "upstream@HEAD", "--report-dir", str(tmp_path / "r"), cwd=project.root)
    assert proc.returncode == 0, proc.stderr
    assert "patchkit rebase" not in proc.stdout
    assert "old.patch is disabled in the series" in proc.stderr
    warnings = json.loads((tmp_path / "r" / "report.json").read_text())["warnings"]
    assert any("old.patch is disabled" in w for w in warnings)
