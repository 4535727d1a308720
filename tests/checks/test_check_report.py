"""Renderers of the check report: JSON (against the shipped schema), JUnit, Markdown, SARIF
(against the SARIF project's own validator), and the terminal view."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest

from check_helpers import PROMPT, SPEC, check_fixture, shipped_rules, uncounted_rules
from patchkit.checks import run_checks
from patchkit.report import check as render
from patchkit.report import to_json
from patchkit.untrusted import md_text

FIXTURES = ["server-context.patched.cpp", "server-context.eight-sites.cpp",
            "server-context.conflict.cpp", "server-context.runtime-flags.cpp"]


def schema() -> dict:
    return json.loads(resources.files("patchkit").joinpath("schemas/check.schema.json").read_text())


@pytest.mark.parametrize("name", FIXTURES + ["shapes.cpp"])
def test_json_report_matches_the_shipped_schema(name):
    rules = uncounted_rules() if name == "shapes.cpp" else None
    document = json.loads(to_json("check", check_fixture(name, rules)))
    jsonschema.validate(document, schema())
    assert (document["schema"], document["kind"]) == (1, "check")
    assert document["passed"] is (name == "server-context.patched.cpp")


def test_json_report_of_a_missing_file_matches_the_schema():
    document = json.loads(to_json("check", run_checks(shipped_rules(), lambda path: None)))
    jsonschema.validate(document, schema())
    assert document["rules"][0]["found"] == 0


def test_junit_has_one_testcase_per_rule_and_a_failure_lists_its_sites():
    report = check_fixture("server-context.eight-sites.cpp")
    root = ET.fromstring(render.to_junit(report))
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == [SPEC, PROMPT]
    failure = cases[0].find("failure")
    assert failure is not None and failure.get("message").endswith("new sites at lines 146, 148")
    assert failure.text.count("] flags {") == 8  # every site, not only the failing ones
    assert "server-context.cpp:146: ckpt.load_tgt(...) [missing-flag]" in failure.text
    assert cases[1].find("failure") is None
    assert "it->load_tgt(...) [ok]" in cases[1].find("system-out").text


def test_junit_shows_a_rule_that_found_nothing():
    root = ET.fromstring(render.to_junit(run_checks(shipped_rules(), lambda path: None)))
    failures = root.findall("./testsuite/testcase/failure")
    assert len(failures) == 2 and all("not found" in f.get("message") for f in failures)


def test_markdown_lists_rules_problems_sites_and_regions():
    text = render.to_markdown(check_fixture("server-context.prompt-on-device.cpp"))
    assert "**check: 1 of 2 rules failed on server-context.prompt-on-device.cpp**" in text
    assert "| prompt-cache-checkpoints-on-host | `tools/server/server-context.cpp` | 4 | 4 | **fail** |" in text
    # upstream's code quoted as text (md_text: `it-&gt;load\_tgt` shows as it->load_tgt)
    assert "- " + md_text("tools/server/server-context.cpp:152: prompt-cache site it->load_tgt(...) carries "
                          "ON_DEVICE") in text
    assert "| `tools/server/server-context.cpp:152` | `it->load_tgt(...)` | checkpoints | prompt-cache " \
           f"| {md_text('ON_DEVICE, PARTIAL_ONLY')} | **forbidden-flag** |" in text
    assert "lines 176-179: #if 0 (not compiled)" in text
    assert text.count("line 43: parse error") == 1  # a file's regions once, though two rules read it


def test_sarif_points_at_each_failing_site():
    document = json.loads(render.to_sarif(check_fixture("server-context.eight-sites.cpp"), Path("/src/tree")))
    run = document["runs"][0]
    assert document["version"] == "2.1.0"
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [SPEC, PROMPT]
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == "file:///src/tree/"
    regions = [(r["message"]["text"][:60], r["locations"][0]["physicalLocation"]["region"]["startLine"])
               for r in run["results"]]
    assert [line for _, line in regions] == [146, 146, 148]  # the count problem, then both sites
    site = run["results"][1]["locations"][0]["physicalLocation"]
    assert site["artifactLocation"] == {"uri": "tools/server/server-context.cpp", "uriBaseId": "SRCROOT"}
    assert site["region"] == {"startLine": 146, "startColumn": 13, "endLine": 146, "endColumn": 85,
                              "snippet": {"text": "ckpt.load_tgt(slot.ctx_tgt, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY)"}}


def _validator() -> str | None:
    return shutil.which("sarif-multitool-linux") or shutil.which("sarif-multitool")


def test_sarif_passes_the_sarif_multitool_validator(tmp_path):
    tool = _validator()
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail("the SARIF validator is missing: npm install -g @microsoft/sarif-multitool-linux")
        pytest.skip("SARIF validator not installed (npm install -g @microsoft/sarif-multitool-linux)")
    logs = []
    for name in FIXTURES:  # one validator run for all: it takes a second to start
        logs.append(tmp_path / f"{name}.sarif")
        logs[-1].write_text(render.to_sarif(check_fixture(name), tmp_path))
    out = tmp_path / "validation.sarif"
    proc = subprocess.run([tool, "validate", *map(str, logs), "--output", str(out), "--log", "ForceOverwrite"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    findings = json.loads(out.read_text())["runs"][0].get("results", [])
    # informationUri needs a home page in the package metadata, which patchkit does not have yet
    problems = [f for f in findings if f["message"].get("id") != "Warning_ProvideToolnformationUri"]
    assert problems == [], proc.stdout
    assert "4 files scanned" in proc.stdout


def test_terminal_view(monkeypatch):
    from rich.console import Console

    console = Console(record=True, width=200, color_system=None)
    render.render_terminal(check_fixture("server-context.eight-sites.cpp"), console)
    text = console.export_text()
    assert "server-context.cpp:146 │ ckpt.load_tgt(...)" in text
    assert "✗ tools/server/server-context.cpp: expected 6 speculative sites, found 8: new sites at lines 146, 148" in text
    assert "2 region(s) not read as code" in text
    assert text.rstrip().endswith("check: 1 of 2 rules failed on server-context.eight-sites.cpp")

    quiet = Console(record=True, width=200, color_system=None)
    render.render_terminal(check_fixture("server-context.patched.cpp"), quiet, quiet=True)
    assert quiet.export_text().strip() == "check: all 2 rules passed on server-context.patched.cpp"
