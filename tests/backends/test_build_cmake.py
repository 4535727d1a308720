"""Real cmake and ninja runs on the tiny llama.cpp stand-in in tests/backends/project."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from build_helpers import (MISSING_RECIPE, REPO_RECIPES, SCHEMA, copy_project, git_tree, needs_cmake,
                           patchkit, recipes_dir)

pytestmark = needs_cmake


class Shared:
    """One cpu build (and one skipped backend) that several tests read."""

    def __init__(self, tmp: Path) -> None:
        self.tree = copy_project(tmp)
        self.upstream = git_tree(self.tree)
        self.out = tmp / "out"
        self.recipes = recipes_dir(tmp, "cpu", missing=MISSING_RECIPE)
        self.run = patchkit("build", self.tree, "--backend", "cpu", "--backend", "missing",
                            "--recipes", self.recipes, "--json", self.out / "build.json",
                            "--markdown", self.out / "build.md", "--junit", self.out / "junit.xml")
        self.report = json.loads((self.out / "build.json").read_text())
        self.results = {r["backend"]: r for r in self.report["results"]}


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Shared:
    return Shared(tmp_path_factory.mktemp("shared"))


def test_cpu_build_ok_with_artifacts(shared: Shared) -> None:
    cpu = shared.results["cpu"]
    assert cpu["status"] == "ok", cpu
    assert {a["target"] for a in cpu["artifacts"]} == {"llama-server", "llama-cli", "llama-bench"}
    server = next(a for a in cpu["artifacts"] if a["target"] == "llama-server")
    assert Path(server["path"]) == shared.tree / "build/cpu/bin/llama-server"
    assert server["size"] == Path(server["path"]).stat().st_size > 0
    log = Path(cpu["log"])
    assert log == shared.tree / "build/cpu/build.log" and "[1/" in log.read_text()
    assert "--fresh" in log.read_text()


def test_build_number_from_the_upstream_ref(shared: Shared) -> None:
    short = shared.upstream[:7]
    assert shared.report["defines"]["LLAMA_BUILD_NUMBER"] == "1"
    assert shared.report["defines"]["LLAMA_BUILD_COMMIT"].startswith(short)
    out = subprocess.run([shared.tree / "build/cpu/bin/llama-server"], capture_output=True, text=True)
    assert f"version: 1 ({short}" in out.stdout


def test_missing_toolchain_is_skipped_with_reason(shared: Shared) -> None:
    missing = shared.results["missing"]
    assert missing["status"] == "skipped" and missing["log"] is None
    assert missing["reason"] == ("Imaginary compiler not found "
                                 "(patchkit-no-such-compiler is not on PATH)")
    assert shared.run.code == 1  # asked for by name


def test_json_report_matches_schema(shared: Shared) -> None:
    jsonschema.validate(shared.report, json.loads(SCHEMA.read_text()))
    assert shared.report["schema"] == 1 and shared.report["kind"] == "build"
    assert shared.report["requested_by_name"] is True and shared.report["interrupted"] is False
    assert shared.report["tree"] == str(shared.tree)


def test_terminal_markdown_and_junit(shared: Shared) -> None:
    assert "builds: 1 ok, 1 skipped" in shared.run.stdout
    assert "llama-server" in shared.run.stdout
    md = (shared.out / "build.md").read_text()
    assert "| `cpu` | ok |" in md and "| `missing` | skipped |" in md
    suite = ET.parse(shared.out / "junit.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("skipped")) == ("2", "1")


def test_allow_skip_and_all(tmp_path: Path) -> None:
    folder = recipes_dir(tmp_path, missing=MISSING_RECIPE)
    tree = copy_project(tmp_path)
    assert patchkit("build", tree, "-b", "missing", "--recipes", folder).code == 1
    assert patchkit("build", tree, "-b", "missing", "--allow-skip", "--recipes", folder).code == 0
    run = patchkit("build", tree, "--all", "--recipes", folder, "--json", "-")
    assert run.code == 0 and json.loads(run.stdout)["requested_by_name"] is False


def test_unused_define_fails_as_stale(tmp_path: Path) -> None:
    stale = (REPO_RECIPES / "cpu.yaml").read_text().replace("options:\n", "options:\n  GGML_CUDA_F16: ON\n")
    folder = recipes_dir(tmp_path, stale=stale)
    run = patchkit("build", copy_project(tmp_path), "-b", "stale", "--recipes", folder,
                   "-D", "LLAMA_CURL=OFF", "--json", tmp_path / "r.json")
    (result,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert run.code == 1 and result["status"] == "failed"
    assert result["unused_variables"] == [
        {"name": "GGML_CUDA_F16", "source": f"recipe stale ({folder / 'stale.yaml'})"},
        {"name": "LLAMA_CURL", "source": "-D on the command line"}]
    assert result["reason"].startswith("stale recipe: CMake did not use GGML_CUDA_F16 (set by recipe stale")
    assert result["build_seconds"] == 0  # nothing built from a stale recipe


def test_cudaarchs_reaches_cmake_as_the_architecture_list(tmp_path: Path) -> None:
    """CMake reads CUDAARCHS only at enable_language(CUDA), after llama.cpp set its own list:
    patchkit passes it on as CMAKE_CUDA_ARCHITECTURES (unused here, which is no stale recipe), and
    LDFLAGS reaches CMake's linker flags."""
    recipe = (REPO_RECIPES / "cpu.yaml").read_text().split("\nci:")[0]
    recipe += "\nenvironment:\n  CUDAARCHS: 89-real\n  LDFLAGS: -Wl,--allow-shlib-undefined\n"
    folder = recipes_dir(tmp_path, archs=recipe)
    tree = copy_project(tmp_path)
    run = patchkit("build", tree, "-b", "archs", "--recipes", folder)
    assert run.code == 0, run.stderr
    cache = (tree / "build/archs/CMakeCache.txt").read_text()
    assert "CMAKE_CUDA_ARCHITECTURES:UNINITIALIZED=89-real" in cache
    assert re.search(r"^CMAKE_EXE_LINKER_FLAGS:STRING=.*-Wl,--allow-shlib-undefined", cache, re.M)


def test_compile_error_reported_with_file_and_line(tmp_path: Path) -> None:
    tree = copy_project(tmp_path)
    server = tree / "tools/server/server.cpp"
    server.write_text(server.read_text().replace("return 0;", "return not_declared_here;"))
    run = patchkit("build", tree, "-b", "cpu", "--target", "llama-server",
                   "--recipes", REPO_RECIPES, "--json", tmp_path / "r.json")
    (result,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert run.code == 1 and result["status"] == "failed"
    line = server.read_text().splitlines().index("    return not_declared_here;") + 1
    assert result["first_error"]["file"] == "tools/server/server.cpp"
    assert result["first_error"]["line"] == line
    assert "not_declared_here" in result["first_error"]["message"]
    assert f"tools/server/server.cpp:{line}: error:" in run.stdout


def test_unknown_target_fails_before_building(tmp_path: Path) -> None:
    run = patchkit("build", copy_project(tmp_path), "-b", "cpu", "--target", "llama-nope",
                   "--recipes", REPO_RECIPES, "--json", "-")
    (result,) = json.loads(run.stdout)["results"]
    assert run.code == 1 and result["reason"] == "the tree defines no target llama-nope"


def test_presets_accepted_by_cmake(tmp_path: Path) -> None:
    tree = copy_project(tmp_path)  # ships a CMakePresets.json with a "vulkan" preset, as llama.cpp does
    run = patchkit("recipes", "presets", tree, "--recipes", REPO_RECIPES)
    assert run.code == 0 and (tree / "CMakeUserPresets.json").is_file()
    data = json.loads((tree / "CMakeUserPresets.json").read_text())
    assert data["version"] == 6
    listed = subprocess.run(["cmake", "--list-presets=all"], cwd=tree, capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert '"patchkit-cpu"' in listed.stdout and '"patchkit-vulkan"' in listed.stdout
    built = subprocess.run(["cmake", "--workflow", "--preset", "patchkit-cpu"], cwd=tree,
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tree / "build/cpu/bin/llama-server").is_file()


def test_presets_to_chosen_file(tmp_path: Path) -> None:
    run = patchkit("recipes", "presets", "-o", tmp_path / "P.json", "--recipes", REPO_RECIPES)
    assert run.code == 0 and json.loads((tmp_path / "P.json").read_text())["configurePresets"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find leftovers")
def test_ctrl_c_stops_the_build_and_names_what_did_not_run(tmp_path: Path) -> None:
    tree = copy_project(tmp_path)
    marker = f"61.{os.getpid()}"  # a sleep nobody else runs, to find leftovers
    with (tree / "tools/CMakeLists.txt").open("a") as fh:
        fh.write(f"add_custom_target(fixture-sleep COMMAND sleep {marker})\n"
                 "add_dependencies(llama-server fixture-sleep)\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "patchkit", "build", tree, "-b", "cpu", "-b", "cpu-native",
         "--recipes", REPO_RECIPES, "--json", tmp_path / "r.json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not _sleeping(marker):  # Ninja prints a step when it ends, so watch the processes
            assert time.monotonic() < deadline and proc.poll() is None, "the build never started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert "interrupted, did not run: cpu-native" in stdout
    results = {r["backend"]: r for r in json.loads((tmp_path / "r.json").read_text())["results"]}
    assert results["cpu"]["status"] == "failed" and results["cpu"]["reason"] == "interrupted during build"
    assert results["cpu-native"]["status"] == "not-run"
    assert not _sleeping(marker), "a build step outlived patchkit"


def _sleeping(marker: str) -> bool:
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if cmdline.read_bytes().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                return True
        except OSError:
            continue
    return False


@pytest.mark.skipif(not os.environ.get("PATCHKIT_LLAMA_CPP"),
                    reason="set PATCHKIT_LLAMA_CPP=/path/to/llama.cpp to build a real tree")
def test_real_llama_cpp_cpu_build(tmp_path: Path) -> None:
    tree = Path(os.environ["PATCHKIT_LLAMA_CPP"])
    run = patchkit("build", tree, "-b", "cpu", "--target", "llama-server", "--build-dir", tmp_path,
                   "--recipes", REPO_RECIPES, "--json", tmp_path / "r.json")
    (result,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert run.code == 0 and result["status"] == "ok", result
    assert [a["target"] for a in result["artifacts"]] == ["llama-server"]


# Upstream's CMake at its most hostile: it writes to the runner's command files, reads the tokens,
# and fails with a message made of workflow commands.
HOSTILE = """
if(DEFINED ENV{GITHUB_ENV})
  file(APPEND "$ENV{GITHUB_ENV}" "LD_PRELOAD=/tmp/evil.so\\n")
endif()
file(WRITE "${CMAKE_BINARY_DIR}/seen.txt" "[$ENV{GITHUB_TOKEN}][$ENV{ACTIONS_RUNTIME_TOKEN}][$ENV{GITHUB_OUTPUT}]")
execute_process(COMMAND "${CMAKE_COMMAND}" -E environment OUTPUT_FILE "${CMAKE_BINARY_DIR}/environment.txt")
message(STATUS "::add-mask::hidden")
message(FATAL_ERROR "\\n::error file=ggml.c,line=1::pwned\\n::stop-commands::tok\\n##[error]legacy")
"""


def test_a_hostile_upstream_build_reaches_no_command_file_token_or_workflow_command(tmp_path):
    tree = copy_project(tmp_path)
    with (tree / "CMakeLists.txt").open("a") as cmake_lists:
        cmake_lists.write(HOSTILE)
    command_file = tmp_path / "github-env"
    command_file.write_text("")
    env = {**os.environ, "NO_COLOR": "1", "GITHUB_ACTIONS": "true", "GITHUB_ENV": str(command_file),
           "GITHUB_OUTPUT": str(command_file), "GITHUB_TOKEN": "ghp_secret", "ACTIONS_RUNTIME_TOKEN": "rt_secret",
           "GH_TOKEN": "gh_secret", "AWS_SECRET_ACCESS_KEY": "aws_secret", "TWINE_PASSWORD": "pw_secret",
           "GOOGLE_APPLICATION_CREDENTIALS": "gcp_secret"}
    proc = subprocess.run([sys.executable, "-m", "patchkit", "build", str(tree), "-b", "cpu", "--recipes",
                           str(REPO_RECIPES)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert command_file.read_text() == ""
    assert (tree / "build/cpu/seen.txt").read_text() == "[][][]"
    seen = (tree / "build/cpu/environment.txt").read_text()
    assert "PATH=" in seen and not re.search(r"=\w+_secret$", seen, re.M), seen
    printed = proc.stdout + proc.stderr
    assert "pwned" in printed  # the message is shown ...
    assert not re.search(r"^[ \t\r]*(::|##\[)", printed, re.M), printed  # ... as text
