"""`patchkit check` as users run it: exit codes, reports, default rules, --on-upstream."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from check_helpers import PROMPT, SERVER_CONTEXT, SHIPPED_RULES, SPEC, fixture_text
from conftest import run_cli, write_project


def tree_with(root: Path, fixture: str) -> Path:
    """A tree whose tools/server/server-context.cpp is the fixture."""
    (root / "tools" / "server").mkdir(parents=True, exist_ok=True)
    (root / SERVER_CONTEXT).write_bytes(fixture_text(fixture))
    return root


def test_a_passing_tree_exits_0(tmp_path):
    tree = tree_with(tmp_path / "tree", "server-context.patched.cpp")
    proc = run_cli("check", str(tree), "--rules", str(SHIPPED_RULES), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "check: all 2 rules passed" in proc.stdout
    assert "server-context.cpp:166" in proc.stdout  # the site table


def test_a_failing_tree_exits_1_and_writes_every_report(tmp_path):
    tree = tree_with(tmp_path / "tree", "server-context.eight-sites.cpp")
    out = tmp_path / "out"
    proc = run_cli("check", str(tree), "--rules", str(SHIPPED_RULES),
                   "--json", str(out / "c.json"), "--markdown", str(out / "c.md"),
                   "--junit", str(out / "c.xml"), "--sarif", str(out / "c.sarif"), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "expected 6 speculative sites, found 8: new sites at lines 146, 148" in proc.stdout
    assert "server-context.cpp:146: speculative site ckpt.load_tgt(...) has flags {PARTIAL_ONLY}; " \
           "ON_DEVICE missing" in proc.stdout
    report = json.loads((out / "c.json").read_text())
    assert report["passed"] is False and report["target"] == str(tree.resolve())
    assert [r["found"] for r in report["rules"]] == [8, 4]
    assert "new sites at lines 146, 148" in (out / "c.md").read_text()
    assert len(ET.parse(out / "c.xml").findall(".//testcase")) == 2
    sarif = json.loads((out / "c.sarif").read_text())
    assert sarif["runs"][0]["originalUriBaseIds"]["SRCROOT"]["uri"] == tree.resolve().as_uri() + "/"


def test_json_to_stdout_is_the_whole_output(tmp_path):
    tree = tree_with(tmp_path / "tree", "server-context.runtime-flags.cpp")
    proc = run_cli("check", str(tree), "--rules", str(SHIPPED_RULES), "--json", "-", cwd=tmp_path)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert {s["status"] for s in report["rules"][0]["sites"]} == {"dynamic"}


def test_default_rules_come_from_the_series_and_patchkit_yaml(tmp_path):
    extra = ("checks:\n"
             "  - id: one-speculative-restore\n"
             "    file: tools/server/server-context.cpp\n"
             "    calls: [load_tgt]\n"
             "    receiver: {bound-to: spec_ckpt}\n"
             "    expect-count: 1\n")
    project = write_project(tmp_path / "fork", "https://example.invalid/llama.cpp.git", extra=extra)
    tree_with(project / "llama.cpp", "server-context.patched.cpp")  # the default output tree
    proc = run_cli("check", "--json", "-", cwd=project)
    assert proc.returncode == 0, proc.stderr
    rules = json.loads(proc.stdout)["rules"]
    assert [(r["id"], r["found"]) for r in rules] == [(SPEC, 6), (PROMPT, 4), ("one-speculative-restore", 1)]
    assert rules[0]["source"].endswith("patches/server-keep-speculative-checkpoints-on-device.checks.yaml")
    assert rules[2]["source"].endswith("patchkit.yaml")


def test_a_bad_rule_exits_2_naming_file_rule_and_key(tmp_path):
    rules = tmp_path / "bad.checks.yaml"
    rules.write_text("checks:\n  - id: spec\n    file: a.cpp\n    calls: [load_tgt]\n    expect-count: six\n")
    proc = run_cli("check", str(tmp_path), "--rules", str(rules), cwd=tmp_path)
    assert proc.returncode == 2
    assert f"{rules}: rule 'spec': key 'expect-count': must be a whole number" in proc.stderr


@pytest.mark.parametrize("args, error", [
    (["no-such-dir"], "no such directory"),
    (["some-dir", "--on-upstream", "upstream@HEAD"], "give a DIR or --on-upstream, not both"),
])
def test_usage_errors_exit_2(tmp_path, args, error):
    proc = run_cli("check", *args, "--rules", str(SHIPPED_RULES), cwd=tmp_path)
    assert proc.returncode == 2 and error in proc.stderr


def test_on_upstream_says_whether_the_intent_already_holds_there(tmp_path, upstream):
    project = write_project(tmp_path / "fork", str(upstream.path))
    still_needed = run_cli("check", "--on-upstream", "upstream@b1000", cwd=project)
    assert still_needed.returncode == 1, still_needed.stderr
    assert "the intent does not hold on upstream: the patch is still needed" in still_needed.stdout
    assert "check: 1 of 2 rules failed on upstream@b1000 (" in still_needed.stdout

    adopted = run_cli("check", "--on-upstream", "upstream@scenario/already-applied", "--no-fetch",
                      "--json", str(tmp_path / "up.json"), cwd=project)
    assert adopted.returncode == 0, adopted.stderr
    assert "the intent already holds on upstream" in adopted.stdout
    report = json.loads((tmp_path / "up.json").read_text())
    assert report["passed"] and report["target"].startswith("upstream@scenario/already-applied (")
