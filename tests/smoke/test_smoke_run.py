"""`patchkit smoke` as a user runs it: the build variant, the scenario, the verdict and report.

The tiny CMake stand-in of llama.cpp builds a `llama-server` that prints and exits, so the run
shows the smoke's own plumbing and its refusal to pass a server that could not run the scenario;
the real server runs in the opt-in test at the end (PATCHKIT_LLAMA_CPP)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, assert_matches_schema, run_cli

RULES = REPO / "patches" / "server-keep-speculative-checkpoints-on-device.checks.yaml"
STAND_IN = REPO / "tests" / "backends" / "project"

needs_toolchain = pytest.mark.skipif(
    not (shutil.which("cmake") and shutil.which("ninja") and shutil.which("cc")) and not os.environ.get("CI"),
    reason="needs cmake, ninja and a C compiler")


@needs_toolchain
def test_a_server_that_cannot_run_the_scenario_fails_naming_its_log(tmp_path):
    tree = tmp_path / "llama.cpp"
    shutil.copytree(STAND_IN, tree)
    proc = run_cli("smoke", str(tree), "--rules", str(RULES), "--json", str(tmp_path / "smoke.json"),
                   "--junit", str(tmp_path / "smoke.xml"), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    report = json.loads((tmp_path / "smoke.json").read_text())
    assert_matches_schema(report)
    assert report["build"]["status"] == "ok" and not report["passed"]
    bin_dir = tree / "build" / "cpu-smoke" / "bin"
    assert (bin_dir / "libllama.so").is_file()  # BUILD_SHARED_LIBS=ON, in its own build directory
    assert "-g1" in (tree / "build" / "cpu-smoke" / "CMakeCache.txt").read_text()
    first = report["runs"][0]
    assert not first["ok"] and "before /health" in first["detail"] and Path(first["log"]).is_file()
    assert first["log"] in first["detail"]
    sites = report["attribution"]["sites"]
    assert sites == [] or all(s["verdict"] == "not-reached" for s in sites)  # nothing ran: nothing passed
    assert "failure" in (tmp_path / "smoke.xml").read_text()


def test_smoke_without_rules_is_bad_input(tmp_path):
    empty = tmp_path / "none.checks.yaml"
    empty.write_text("checks: []\n")
    (tmp_path / "tree").mkdir()
    proc = run_cli("smoke", str(tmp_path / "tree"), "--rules", str(empty), cwd=tmp_path)
    assert proc.returncode == 2 and "no site rules" in proc.stderr
    assert proc.stderr.count("\n") == 1


@pytest.mark.skipif(not os.environ.get("PATCHKIT_LLAMA_CPP"),
                    reason="set PATCHKIT_LLAMA_CPP=/path/to/llama.cpp (an unpatched tree) to run a real server")
def test_real_server_patched_passes_and_unpatched_fails_naming_the_sites(tmp_path):
    """~10 minutes cold (the CPU build), about 10 s warm with ccache."""
    tree = tmp_path / "llama.cpp"
    shutil.copytree(os.environ["PATCHKIT_LLAMA_CPP"], tree, ignore=shutil.ignore_patterns(".git", "build"))
    unpatched = run_cli("smoke", str(tree), "--rules", str(RULES), "--json", str(tmp_path / "u.json"), cwd=tmp_path)
    assert unpatched.returncode == 1, unpatched.stderr
    sites = json.loads((tmp_path / "u.json").read_text())["attribution"]["sites"]
    failing = [s for s in sites if s["verdict"] == "missing-flag"]
    assert failing and all(s["site_class"] == "speculative" and s["flags_seen"] == [1] for s in failing)
    subprocess.run(["patch", "-p1", "-i", str(REPO / "patches" / RULES.name.replace(".checks.yaml", ".patch"))],
                   cwd=tree, check=True, capture_output=True)
    patched = run_cli("smoke", str(tree), "--rules", str(RULES), "--json", str(tmp_path / "p.json"), cwd=tmp_path)
    assert patched.returncode == 0, patched.stdout + patched.stderr
    report = json.loads((tmp_path / "p.json").read_text())["attribution"]
    speculative = [s for s in report["sites"] if s["site_class"] == "speculative" and s["calls_seen"]]
    assert len(speculative) >= 5 and all(s["flags_seen"] == [3] for s in speculative)
    assert all(not c["missing"] for c in report["coverage"])
