"""Drift for a patch that does not apply at the target: its added lines are read as it applies at
the lock, and what they rely on is compared between the lock and the target as for a good patch.
The one who resolves the conflict is the one who must learn that the struct changed under it."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from conftest import apply, run_cli, run_json, write_project
from drift_history import build
from test_drift_nightly import CHANGES, HEADER, WRAPPER

from patchkit.project import Project

# Upstream rewrites the line the patch's lines follow: the patch no longer applies.
CONFLICT = ("conflict", "app : say why text is unused (#14160)",
            "    (void) text;\n", "    (void) text; // kept for the ABI\n    (void) parse_special;\n", "src/app.cpp")


@pytest.fixture
def case(tmp_path):
    history = build(tmp_path / "h", changes=CHANGES + (CONFLICT,), added=WRAPPER, header=HEADER)
    project = Project.load(write_project(tmp_path / "fork", str(history.path), [history.patch]))
    apply(project, history.lock, update_lock=True)
    return history, project


def test_the_night_names_the_drift_beside_the_conflict(case, tmp_path, github_issues):
    history, project = case
    env, posted = github_issues
    report = run_json("nightly", "upstream@HEAD", "--report-dir", str(tmp_path / "r"), "--github-issues",
                      cwd=project.root, code=1, env=env)
    assert [p["verdict"] for p in report["apply"]["patches"]] == ["conflict"]
    (drift,) = report["apply"]["drift"]
    assert (drift["kind"], drift["entity"], drift["patched_at"]) == ("members", "some_input_text", history.lock)
    assert drift["after"] == "text, text_len, add_special, parse_special"
    assert drift["culprit"]["commit"] == history.commits["fix"] and drift["culprit"]["pull"] == 14123
    kinds = {f["kind"]: f for f in report["findings"]}
    assert len(kinds) == 2 and "drift" in kinds  # the conflict's finding, and the drift's beside it
    assert kinds["drift"]["culprit"]["commit"] == history.commits["fix"]
    assert "does not apply at the target" in kinds["drift"]["detail"]
    markdown = (tmp_path / "r" / "report.md").read_text()
    # The pull request's number, not linked: a file:// upstream has no pull requests to link to.
    assert "text_len" in markdown and "#\u200b14123" in markdown
    junit = ET.parse(tmp_path / "r" / "junit.xml").getroot()
    failures = " ".join((f.get("message", "") + (f.text or "")) for f in junit.iter("failure"))
    assert "some_input_text" in failures and "text_len" in failures
    (issue,) = [p for p in posted if "body" in p]
    assert r"some\_input\_text" in issue["body"] and "#\u200b14123" in issue["body"] and "broke by" in issue["body"]
    terminal = run_cli("nightly", "upstream@HEAD", "--report-dir", str(tmp_path / "t"), cwd=project.root)
    assert terminal.returncode == 1
    assert "some_input_text" in terminal.stdout and history.commits["fix"][:12] in terminal.stdout
