from __future__ import annotations

import json
import re
import stat
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from build_helpers import REPO_RECIPES, SCHEMA, copy_project, needs_cmake, patchkit, recipes_dir
from patchkit.backends.cmakelists import FindPackage, required_config_packages
from patchkit.backends.probe import probe, probe_requirement
from patchkit.backends.recipe import DEFAULT_VERSION_PATTERN, Recipe, Requirement, load_recipes
from patchkit.backends.result import Status
from patchkit.backends.runner import run_builds

VK_VERSION = r"#define\s+VK_HEADER_VERSION\s+(\d+)"


def fake_tool(folder: Path, name: str, prints: str) -> Path:
    """An executable that prints PRINTS, standing in for nvcc or hipconfig."""
    folder.mkdir(exist_ok=True)
    tool = folder / name
    tool.write_text(f"#!/bin/sh\necho '{prints}'\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return tool


def command(tmp_path: Path, minimum: str | None, pattern: str | None) -> Requirement:
    return Requirement("command", "nvcc-fake", "CUDA compiler (nvcc)", version=pattern,
                       minimum=minimum, paths=(str(tmp_path / "bin"),))


def test_missing_command_names_where_it_looked(tmp_path: Path) -> None:
    f = probe_requirement(command(tmp_path, None, None))
    assert not f.ok
    assert f.detail == f"CUDA compiler (nvcc) not found (nvcc-fake is not on PATH or {tmp_path / 'bin'})"


def test_command_version_against_minimum(tmp_path: Path) -> None:
    fake_tool(tmp_path / "bin", "nvcc-fake", "Cuda compilation tools, release 11.8, V11.8.89")
    old = probe_requirement(command(tmp_path, "12.0", r"release (\d+\.\d+)"))
    assert not old.ok and "CUDA compiler (nvcc) 11.8" in old.detail and "needs >= 12.0" in old.detail
    fake_tool(tmp_path / "bin", "nvcc-fake", "Cuda compilation tools, release 13.0, V13.0.88")
    new = probe_requirement(command(tmp_path, "12", r"release (\d+\.\d+)"))
    assert new.ok and new.detail.startswith("CUDA compiler (nvcc) 13.0 at ")


def test_rocm_5_2_is_too_old_for_hip(tmp_path: Path) -> None:
    fake_tool(tmp_path / "bin", "nvcc-fake", "5.2.21153-0")
    f = probe_requirement(command(tmp_path, "6.1", DEFAULT_VERSION_PATTERN))
    assert not f.ok and "5.2.21153 " in f.detail and "needs >= 6.1" in f.detail


def test_no_version_in_output(tmp_path: Path) -> None:
    fake_tool(tmp_path / "bin", "nvcc-fake", "hello")
    f = probe_requirement(command(tmp_path, "12", r"release (\d+\.\d+)"))
    assert not f.ok and "no version in the output of `nvcc-fake --version`" in f.detail


def test_library_needs_the_development_link(tmp_path: Path) -> None:
    req = Requirement("library", "cublas-fake", "cuBLAS", paths=(str(tmp_path),))
    missing = probe_requirement(req)
    assert not missing.ok
    assert missing.detail == f"cuBLAS not found (no libcublas-fake.so in the linker's folders or {tmp_path})"
    (tmp_path / "libcublas-fake.so").write_bytes(b"")
    assert probe_requirement(req).ok


def test_header_in_extra_paths(tmp_path: Path) -> None:
    req = Requirement("header", "CL/cl-fake.h", "OpenCL headers", paths=(str(tmp_path),))
    assert not probe_requirement(req).ok
    (tmp_path / "CL").mkdir()
    (tmp_path / "CL/cl-fake.h").write_text("")
    assert probe_requirement(req).detail == f"OpenCL headers at {tmp_path / 'CL/cl-fake.h'}"


def test_platform() -> None:
    here = probe_requirement(Requirement("platform", sys.platform, "This OS"))
    other = "darwin" if sys.platform != "darwin" else "linux"
    elsewhere = probe_requirement(Requirement("platform", other, "Metal"))
    assert here.ok and not elsewhere.ok
    assert elsewhere.detail == f"Metal needs {other}, this machine is {sys.platform}"


def test_header_version_against_minimum(tmp_path: Path) -> None:
    """Debian 12's Vulkan headers (239) are too old for a tree that uses vk::LayerSettingEXT."""
    header = tmp_path / "vulkan/vulkan_core.h"
    header.parent.mkdir()
    req = Requirement("header", "vulkan/vulkan_core.h", "Vulkan headers", version=VK_VERSION,
                      minimum="272", paths=(str(tmp_path),))
    header.write_text("#define VK_HEADER_VERSION_COMPLETE 1\n#define VK_HEADER_VERSION 239\n")
    old = probe_requirement(req)
    assert not old.ok
    assert old.detail == f"Vulkan headers 239 at {header} is too old (needs >= 272)"
    header.write_text("#define VK_HEADER_VERSION 290\n")
    assert probe_requirement(req).detail == f"Vulkan headers 290 at {header}"
    header.write_text("/* no version here */\n")
    assert probe_requirement(req).detail == f"Vulkan headers at {header}: no version in its text"


def test_shipped_vulkan_recipe_reads_the_header_version() -> None:
    (header,) = [r for r in load_recipes()["vulkan"].requires if r.kind == "header"]
    assert re.search(header.version or "", "#define VK_HEADER_VERSION 239\n").group(1) == "239"


# Where a package may put its config file, and whether CMake (and so the probe) finds it there.
LAYOUTS = [
    ("lib/cmake/PatchkitFake/PatchkitFakeConfig.cmake", True),
    ("share/cmake/patchkitfake-1.0/patchkitfake-config.cmake", True),
    ("lib/PatchkitFake-2/cmake/PatchkitFakeConfig.cmake", True),
    ("share/PATCHKITFAKE/PatchkitFakeConfig.cmake", True),
    ("PatchkitFakeConfig.cmake", True),
    ("lib/cmake/PatchkitFake/patchkitfakeConfig.cmake", False),  # file names are case-sensitive
    ("lib/cmake/Other/PatchkitFakeConfig.cmake", False),
    ("include/PatchkitFakeConfig.cmake", False),
]


@needs_cmake
@pytest.mark.parametrize("layout, found", LAYOUTS)
def test_cmake_package_probe_agrees_with_cmake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               layout: str, found: bool) -> None:
    prefix = tmp_path / "prefix"
    config = prefix / layout
    config.parent.mkdir(parents=True)
    config.write_text("set(PatchkitFake_FOUND TRUE)\n")
    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.16)\nproject(p NONE)\n"
                                           "find_package(PatchkitFake CONFIG REQUIRED)\n")
    cmake = subprocess.run(["cmake", "-S", source, "-B", tmp_path / "build", f"-DCMAKE_PREFIX_PATH={prefix}"],
                           capture_output=True)
    assert (cmake.returncode == 0) is found, cmake.stderr.decode()
    monkeypatch.setenv("CMAKE_PREFIX_PATH", str(prefix))
    finding = probe_requirement(Requirement("cmake-package", "PatchkitFake", "Fake package"))
    assert finding.ok is found
    if found:
        assert finding.detail == f"Fake package at {config}"
    else:
        assert finding.detail.startswith("Fake package not found (no PatchkitFakeConfig.cmake or "
                                         "patchkitfake-config.cmake under CMAKE_PREFIX_PATH")


def test_cmake_package_in_the_recipe_paths(tmp_path: Path) -> None:
    req = Requirement("cmake-package", "SPIRV-Headers-Fake", "SPIRV-Headers", paths=(str(tmp_path),))
    missing = probe_requirement(req)
    assert not missing.ok and missing.detail.endswith(f"or {tmp_path})")
    config = tmp_path / "share/cmake/SPIRV-Headers-Fake/SPIRV-Headers-FakeConfig.cmake"
    config.parent.mkdir(parents=True)
    config.write_text("")
    assert probe_requirement(req).detail == f"SPIRV-Headers at {config}"


def test_find_package_lines_of_a_cmakelists() -> None:
    text = (
        "find_package(Vulkan COMPONENTS glslc REQUIRED)   # a Find module: not ours to judge\n"
        "# find_package(Commented CONFIG REQUIRED)\n"
        "find_package(Optional CONFIG)\n"
        "FIND_PACKAGE(\n    SPIRV-Headers\n    CONFIG REQUIRED)\n"
        "find_package(${VAR} CONFIG REQUIRED)\n"
        "find_package(Other 1.2 REQUIRED NO_MODULE COMPONENTS a)\n"
    )
    assert required_config_packages(text) == [FindPackage("SPIRV-Headers", 4),
                                               FindPackage("Other", 8)]


def tree_recipe(folder: Path) -> Recipe:
    return Recipe("fake", folder / "fake.yaml", "x", options={"GGML_NATIVE": "OFF"},
                  requires=(Requirement("cmake-package", "PatchkitDeclared", "Declared",
                                        paths=(str(folder),)),),
                  cmake_lists="ggml/CMakeLists.txt")


@needs_cmake
def test_new_requirement_upstream_is_a_probe_reason_not_a_failed_build(tmp_path: Path) -> None:
    tree = copy_project(tmp_path)
    config = tmp_path / "lib/cmake/PatchkitDeclared/PatchkitDeclaredConfig.cmake"
    config.parent.mkdir(parents=True)
    config.write_text("")
    recipe = tree_recipe(tmp_path)
    assert probe(recipe, tree).ok
    cmakelists = tree / "ggml/CMakeLists.txt"
    # Upstream starts to require a package; the one the recipe declares is not probed twice.
    cmakelists.write_text("find_package(PatchkitDeclared CONFIG REQUIRED)\n"
                          "find_package(PatchkitNewDep CONFIG REQUIRED)\n" + cmakelists.read_text())
    without_tree = probe(recipe)
    assert without_tree.ok and len(without_tree.findings) == 1
    with_tree = probe(recipe, tree)
    assert [f.requirement.value for f in with_tree.findings] == ["PatchkitDeclared", "PatchkitNewDep"]
    assert with_tree.reason.startswith("PatchkitNewDep (find_package at ggml/CMakeLists.txt:2) not "
                                       "found (no PatchkitNewDepConfig.cmake")
    (result,) = run_builds(tree, [recipe], build_dir=tmp_path / "build").results
    assert result.status is Status.SKIPPED and result.reason == with_tree.reason
    assert not (tmp_path / "build/fake").exists()  # nothing configured


def test_recipes_list_probes_the_tree_it_is_given(tmp_path: Path) -> None:
    tree = copy_project(tmp_path)
    cmakelists = tree / "ggml/src/ggml-vulkan/CMakeLists.txt"
    cmakelists.parent.mkdir(parents=True)
    cmakelists.write_text("find_package(PatchkitSpirvFake CONFIG REQUIRED)\n")
    vulkan = (REPO_RECIPES / "vulkan.yaml").read_text().replace("SPIRV-Headers", "PatchkitSpirvFake")
    folder = recipes_dir(tmp_path, vulkan=vulkan)
    run = patchkit("recipes", "list", tree, "--recipes", folder, "--json", "-")
    assert run.code == 0, run.stderr
    data = json.loads(run.stdout)
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    assert data["tree"] == str(tree)
    (recipe,) = [r for r in data["recipes"] if r["name"] == "vulkan"]
    assert (recipe["source"], recipe["overrides"]) == ("project", True)
    kinds = [(r["kind"], r["value"]) for r in recipe["requirements"]]
    # Declared by the recipe, so not listed a second time from the tree.
    assert kinds.count(("cmake-package", "PatchkitSpirvFake")) == 1
    assert recipe["available"] is False and "PatchkitSpirvFake" in recipe["reason"]
    cmakelists.write_text(cmakelists.read_text() + "find_package(PatchkitLater CONFIG REQUIRED)\n")
    data = json.loads(patchkit("recipes", "list", tree, "--recipes", folder, "--json", "-").stdout)
    (recipe,) = [r for r in data["recipes"] if r["name"] == "vulkan"]
    later = recipe["requirements"][-1]
    assert later["name"] == "PatchkitLater (find_package at ggml/src/ggml-vulkan/CMakeLists.txt:2)"
    assert later["ok"] is False and later["detail"].startswith(f"{later['name']} not found")
    no_tree = patchkit("recipes", "list", tmp_path / "nowhere", "--recipes", folder)
    assert no_tree.code == 2 and "no CMakeLists.txt in" in no_tree.stderr
