"""Drift in the night and in `apply`, on the real case: a C API wrapper builds
`new some_input_text{text, add_special, parse_special}`; upstream then inserts `size_t text_len;` as
the struct's second member. The patch still applies and compiles; the night exits 1 naming the
struct, its new member and the commit, and neither refreshes the patch nor moves the lock."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from conftest import apply, assert_matches_schema, run_cli, write_project
from drift_history import build
from test_drift_reviewed import reviewed

from patchkit.project import Project

HEADER = """\
#pragma once
#include <stddef.h>

struct some_input_text {
    const char * text;
    bool add_special;
    bool parse_special;
};
"""
WRAPPER = ("    auto * input = new some_input_text{text, add_special, parse_special};\n"
           "    (void) input;\n")
CHANGES = (
    (None, "docs : a readme line (#14100)", None, None),
    ("fix", "vocab : fix silent prompt truncation (#14123)",
     "    const char * text;\n", "    const char * text;\n    size_t text_len;\n"),
    (None, "docs : another readme line (#14150)", None, None),
)


@pytest.fixture
def case(tmp_path):
    history = build(tmp_path / "h", changes=CHANGES, added=WRAPPER, header=HEADER)
    project = Project.load(write_project(tmp_path / "fork", str(history.path), [history.patch]))
    apply(project, history.lock, update_lock=True)
    return history, project


def test_the_night_names_the_struct_its_new_member_and_the_commit_and_moves_nothing(case, tmp_path):
    history, project = case
    lock, before = project.lock(), {p.name: p.read_bytes() for p in project.patches_dir.iterdir()}
    env = {"GITHUB_REPOSITORY": "fork/llama.cpp", "GITHUB_TOKEN": "", "GITHUB_API_URL": "http://127.0.0.1:9"}
    proc = run_cli("nightly", "upstream@HEAD", "--report-dir", str(tmp_path / "r"), "--github-issues",
                   "--json", "-", cwd=project.root, env=env)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert_matches_schema(report)
    assert not report["passed"] and not report["lock_moved"] and report["refreshed"] == []
    (drift,) = report["apply"]["drift"]
    assert (drift["kind"], drift["entity"]) == ("members", "some_input_text")
    assert drift["before"] == "text, add_special, parse_special"
    assert drift["after"] == "text, text_len, add_special, parse_special"
    assert drift["culprit"]["commit"] == history.commits["fix"] and drift["culprit"]["pull"] == 14123
    (finding,) = report["findings"]
    assert finding["kind"] == "drift" and finding["culprit"]["commit"] == history.commits["fix"]
    assert project.lock() == lock
    assert {p.name: p.read_bytes() for p in project.patches_dir.iterdir()} == before
    # Filed like any other finding: report.md, JUnit, the GitHub issue (a dry run without a token).
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert "drift since the lock" in markdown and "text, text_len, add_special, parse_special" in markdown
    assert history.commits["fix"][:12] in markdown and "vocab : fix silent prompt truncation" in markdown
    assert "(#14123) (#14123)" not in markdown + proc.stderr  # the subject's own (#N), said once
    junit = ET.parse(tmp_path / "r" / "junit.xml").getroot()
    (case_,) = [c for c in junit.iter("testcase") if c.get("classname") == "patchkit.apply"]
    assert "some_input_text" in case_.find("failure").get("message", "") + case_.find("failure").text
    assert f"patch {history.patch.name} is drifting" in proc.stderr
    # The terminal names it too.
    terminal = run_cli("nightly", "upstream@HEAD", "--report-dir", str(tmp_path / "t"), cwd=project.root)
    assert terminal.returncode == 1
    assert "some_input_text" in terminal.stdout and history.commits["fix"][:12] in terminal.stdout


def test_the_queue_s_refresh_waits_for_a_drifting_patch_and_the_report_says_why(case, tmp_path):
    """The lock names one upstream commit for the whole queue: a clean patch refreshed onto the
    target under a lock that stays would be bytes `verify` cannot make at the locked commit. So
    nothing is refreshed, and the night says that the clean patch waits for the drifting one."""
    history, project = case
    clean = tmp_path / "0002-readme-note.patch"
    clean.write_text("From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\nFrom: A <a@b.c>\n"
                     "Date: Mon, 1 Jan 2024 00:00:00 +0000\nSubject: [PATCH] readme : note\n\n---\n README.md | 1 +\n"
                     " 1 file changed, 1 insertion(+)\n\ndiff --git a/README.md b/README.md\n--- a/README.md\n"
                     "+++ b/README.md\n@@ -1 +1,2 @@\n lib\n+note\n")
    project = Project.load(write_project(tmp_path / "fork2", str(history.path), [history.patch, clean]))
    apply(project, history.lock, update_lock=True)
    before = {p.name: p.read_bytes() for p in project.patches_dir.iterdir()}
    proc = run_cli("nightly", "upstream@HEAD", "--report-dir", str(tmp_path / "r"), "--json", "-", cwd=project.root)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["refreshed"] == [] and not report["lock_moved"]
    assert {p.name: p.read_bytes() for p in project.patches_dir.iterdir()} == before
    why = f"{history.patch.name} drifts"
    assert why in proc.stderr and "0002-readme-note.patch" in proc.stderr
    assert why in (tmp_path / "r" / "report.md").read_text()


def test_a_reviewed_drift_lets_the_night_refresh_and_lock(case, tmp_path):
    history, project = case
    patch = reviewed(history.patch, tmp_path, f"Reviewed-Drift: some_input_text {history.commits['fix'][:8]}")
    (project.patches_dir / patch.name).write_bytes(patch.read_bytes())
    proc = run_cli("nightly", "upstream@HEAD", "--report-dir", str(tmp_path / "r"), "--json", "-",
                   cwd=project.root)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["passed"] and report["lock_moved"] and report["findings"] == []
    assert report["apply"]["drift"][0]["reviewed"]


def test_apply_shows_the_drift_since_the_lock_and_exits_1_and_verify_does_not_run_it(case, tmp_path):
    history, project = case
    # The queue in patchkit's own form at the lock, so that verify has nothing to say about its bytes.
    assert run_cli("nightly", f"upstream@{history.lock}", "--report-dir", str(tmp_path / "n"),
                   cwd=project.root).returncode == 0
    proc = run_cli("apply", "upstream@HEAD", "--json", str(tmp_path / "a.json"), cwd=project.root)
    assert proc.returncode == 1, proc.stderr
    assert "drift by " + history.commits["fix"][:12] in proc.stdout
    assert f"`Reviewed-Drift: some_input_text {history.commits['fix'][:8]}`" in proc.stdout  # what silences it
    report = json.loads((tmp_path / "a.json").read_text())
    assert_matches_schema(report)
    assert [d["entity"] for d in report["drift"]] == ["some_input_text"] and not report["passed"]
    assert run_cli("apply", "upstream@HEAD", "--no-check", cwd=project.root).returncode == 0
    # verify applies at the locked commit: nothing moved there, nothing to compare.
    proc = run_cli("verify", cwd=project.root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
