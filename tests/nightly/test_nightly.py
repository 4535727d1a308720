"""`patchkit nightly` end to end on the fixture upstream: a good night refreshes and moves the
lock, a bad one names the commit and moves nothing, a fuzzed one is not good."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

from conftest import apply, assert_matches_schema, run_cli
from patchkit import git


def night(project, *args: str, env: dict[str, str] | None = None):
    return run_cli("nightly", *args, cwd=project.root, env=env)


def test_a_good_night_refreshes_the_patches_moves_the_lock_and_reports(project, upstream, tmp_path):
    apply(project, "b1000", update_lock=True)
    before = {p.name: p.read_bytes() for p in project.patches_dir.iterdir()}
    summary = tmp_path / "summary.md"
    proc = night(project, "upstream@HEAD", "--report-dir", str(tmp_path / "reports"),
                 env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "reports" / "report.json").read_text())
    assert_matches_schema(report)
    assert report["passed"] and report["lock_moved"] and report["findings"] == []
    (entry,) = report["refreshed"]
    assert entry["change"] == "format-only"  # the first rewrite of the seed patch
    patch = project.patches_dir / entry["name"]
    assert patch.read_bytes() != before[entry["name"]]
    assert (tmp_path / "reports" / "patches" / entry["name"]).read_bytes() == patch.read_bytes()
    lock = project.lock()
    assert lock.upstream_commit == git.run(["rev-parse", "master"], cwd=upstream.path)
    assert lock.patches == {entry["name"]: entry["new_sha256"]}
    assert "# patchkit nightly: good" in summary.read_text()
    # Each output names the change in the report's words.
    assert f"refreshed {entry['name']}: format-only\n" in proc.stdout
    assert f"| `{entry['name']}` | format-only |" in (tmp_path / "reports" / "report.md").read_text()
    cases = ET.parse(tmp_path / "reports" / "junit.xml").getroot().iter("testcase")
    assert [c.get("name") for c in cases if c.get("classname") == "patchkit.apply"] == [entry["name"]]
    # The refreshed queue applies as it is to the next upstream: nothing left to refresh.
    again = night(project, "upstream@HEAD", "--report-dir", str(tmp_path / "again"))
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "again" / "report.json").read_text())["refreshed"][0]["change"] == "unchanged"


def test_a_bad_night_names_the_commit_and_moves_nothing(project, upstream, tmp_path):
    apply(project, "b1000", update_lock=True)
    lock = project.lock()
    before = {p.name: p.read_bytes() for p in project.patches_dir.iterdir()}
    proc = night(project, "upstream@scenario/conflict", "--report-dir", str(tmp_path / "r"), "--json", "-")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert_matches_schema(report)
    (finding,) = report["findings"]
    culprit = git.run(["rev-parse", "scenario/conflict"], cwd=upstream.path)
    assert finding["kind"] == "broke" and finding["culprit"]["commit"] == culprit
    assert finding["probes"] <= finding["bound"]
    assert project.lock() == lock
    assert {p.name: p.read_bytes() for p in project.patches_dir.iterdir()} == before
    junit = ET.parse(tmp_path / "r" / "junit.xml").getroot()
    (case,) = [c for c in junit.iter("testcase") if c.get("classname") == "patchkit.apply"]
    assert culprit[:12] in case.find("failure").text


def test_without_a_lock_the_night_says_it_cannot_bisect(project, tmp_path):
    proc = night(project, "upstream@scenario/conflict", "--report-dir", str(tmp_path / "r"))
    assert proc.returncode == 1
    assert "no patchkit.lock" in proc.stderr
    (finding,) = json.loads((tmp_path / "r" / "report.json").read_text())["findings"]
    assert finding["kind"] == "unknown" and finding["culprit"] is None


def test_a_fuzzed_patch_is_not_good_not_refreshed_and_not_locked(project, tmp_path):
    before = {p.name: p.read_bytes() for p in project.patches_dir.iterdir()}
    proc = night(project, "upstream@scenario/merged", "--fuzz", "1", "--report-dir", str(tmp_path / "r"))
    assert proc.returncode == 1, proc.stderr
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["apply"]["patches"][0]["verdict"] == "fuzzed" and not report["passed"]
    assert report["refreshed"] == [] and not report["lock_moved"] and project.lock() is None
    assert {p.name: p.read_bytes() for p in project.patches_dir.iterdir()} == before
    assert "needed fuzz" in proc.stderr


def test_the_nightly_never_moves_the_lock_backwards(project, tmp_path):
    apply(project, "HEAD", update_lock=True)
    proc = night(project, "upstream@b1000", "--report-dir", str(tmp_path / "r"))
    assert proc.returncode == 2 and "does not contain the locked commit" in proc.stderr
    assert not (tmp_path / "r" / "report.json").exists()


def test_github_issues_without_a_token_print_what_they_would_send(project, tmp_path):
    apply(project, "b1000", update_lock=True)
    env = {"GITHUB_REPOSITORY": "fork/llama.cpp", "GITHUB_TOKEN": "", "GITHUB_API_URL": "http://127.0.0.1:9"}
    proc = night(project, "upstream@scenario/conflict", "--github-issues", "--report-dir", str(tmp_path / "r"), env=env)
    assert proc.returncode == 1, proc.stderr
    # on standard error: standard output may carry a --json - report
    assert "server-keep-speculative-checkpoints-on-device.patch" in proc.stderr
    assert "POST /repos/fork/llama.cpp/issues" in proc.stderr


def test_a_refused_night_writes_nothing(project, tmp_path):
    apply(project, "b1000", update_lock=True)
    lock, before = project.lock(), {p.name: p.read_bytes() for p in project.patches_dir.iterdir()}
    (tmp_path / "r" / "report.md").mkdir(parents=True)  # a report the night could not write
    proc = night(project, "upstream@HEAD", "--report-dir", str(tmp_path / "r"))
    assert proc.returncode == 2 and "report.md is a folder" in proc.stderr
    proc = night(project, "upstream@HEAD", "--github-issues", "--report-dir", str(tmp_path / "s"),
                 env={"GITHUB_REPOSITORY": ""})
    assert proc.returncode == 2 and "GITHUB_REPOSITORY" in proc.stderr
    assert project.lock() == lock
    assert {p.name: p.read_bytes() for p in project.patches_dir.iterdir()} == before
    assert not (tmp_path / "s").exists()


def test_a_github_refusal_is_a_warning_on_a_bad_night_and_on_a_good_one(project, tmp_path, httpserver):
    apply(project, "b1000", update_lock=True)
    httpserver.expect_request(re.compile(".*")).respond_with_json({"message": "Bad credentials"}, status=401)
    env = {"GITHUB_REPOSITORY": "fork/llama.cpp", "GITHUB_TOKEN": "expired",
           "GITHUB_API_URL": httpserver.url_for("").rstrip("/")}
    bad = night(project, "upstream@scenario/conflict", "--github-issues", "--report-dir", str(tmp_path / "bad"),
                env=env)
    assert bad.returncode == 1, bad.stderr  # the night's own verdict: the reports are written
    assert "GitHub issues not updated: GitHub refused the token" in bad.stderr
    assert (tmp_path / "bad" / "report.json").is_file()
    # A good night stays good (exit 0: the workflow pushes and opens the pull request); the next
    # night updates the issues again.
    good = night(project, "upstream@HEAD", "--github-issues", "--report-dir", str(tmp_path / "good"), env=env)
    assert good.returncode == 0, good.stderr
    assert "GitHub issues not updated: GitHub refused the token for fork/llama.cpp" in good.stderr
    assert json.loads((tmp_path / "good" / "report.json").read_text())["passed"]
