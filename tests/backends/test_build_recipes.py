from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from build_helpers import MISSING_RECIPE, REPO_RECIPES, SCHEMA, patchkit, recipes_dir
from patchkit.backends.recipe import DEFAULT_VERSION_PATTERN, load_recipes, select
from patchkit.errors import PatchkitError

BACKENDS = {"cpu", "cpu-native", "blas", "cuda", "vulkan", "hip", "metal", "sycl", "opencl"}
# Options that download or run npm at configure or build time when ON.
OFFLINE_OFF = ("GGML_OPENMP_FETCH", "LLAMA_BUILD_UI", "LLAMA_USE_PREBUILT_UI", "LLAMA_BUILD_TESTS")


def test_repository_recipes_are_offline_safe_and_portable() -> None:
    recipes = load_recipes(REPO_RECIPES)
    assert set(recipes) == BACKENDS
    for name, recipe in recipes.items():
        # The repository's recipes/ is the shipped folder itself: nothing overrides anything.
        assert (recipe.source, recipe.overrides) == ("shipped", False), name
        assert "LLAMA_CURL" not in recipe.options and "GGML_CUDA_F16" not in recipe.options
        assert all(recipe.options[o] == "OFF" for o in OFFLINE_OFF), name
        assert recipe.options["GGML_NATIVE"] == ("ON" if name == "cpu-native" else "OFF"), name
        assert recipe.generator == "Ninja" and "llama-server" in recipe.targets
        assert recipe.requires, f"{name} says nothing about what it needs"


def test_requirements_carry_versions_and_libraries() -> None:
    recipes = load_recipes(REPO_RECIPES)
    nvcc, cublas = recipes["cuda"].requires
    assert (nvcc.kind, nvcc.value, nvcc.minimum) == ("command", "nvcc", "12.0")
    assert (cublas.kind, cublas.value, cublas.name) == ("library", "cublas", "cuBLAS")
    assert recipes["hip"].requires[0].minimum == "6.1"
    assert recipes["metal"].requires[0].kind == "platform"
    assert {r.value for r in recipes["vulkan"].requires} >= {"glslc", "vulkan", "SPIRV-Headers"}
    header = next(r for r in recipes["vulkan"].requires if r.kind == "header")
    assert (header.value, header.minimum) == ("vulkan/vulkan_core.h", "272")
    assert recipes["vulkan"].cmake_lists == "ggml/src/ggml-vulkan/CMakeLists.txt"


def test_minimum_without_pattern_uses_the_first_dotted_number(tmp_path: Path) -> None:
    folder = recipes_dir(tmp_path, x="description: x\nrequires: [{command: cc, minimum: 4}]\n")
    (req,) = load_recipes(folder)["x"].requires
    assert (req.version, req.minimum) == (DEFAULT_VERSION_PATTERN, "4")


@pytest.mark.parametrize("text, expected", [
    ("description: x\ntarget: [a]\n", "unknown key 'target'"),
    ("description: x\ntargets: llama-server\n", "key 'targets'"),
    ("description: x\noptions: {A: [1]}\n", "key 'options.A'"),
    ("description: x\nrequires: [{pkg-config: vulkan}]\n", "unknown requirement 'pkg-config'"),
    ("description: x\nrequires: [{command: cc, verison: x}]\n", "unknown key 'requires[0].verison'"),
    ("description: x\nrequires: [{command: cc, library: m}]\n", "key 'requires[0]' needs exactly one"),
    ("description: x\nrequires: [{command: cc, version: 'no group'}]\n", "requires[0].version"),
    ("description: x\nrequires: [{command: cc, minimum: 'twelve'}]\n", "requires[0].minimum"),
    ("description: x\nrequires: [{library: m, minimum: 1}]\n", "only a command or a header has a version"),
    ("description: x\nrequires: [{cmake-package: X, minimum: 1}]\n", "only a command or a header"),
    ("description: x\nrequires: [{header: v.h, minimum: 1}]\n", "requires[0].version': a header's minimum"),
    ("description: x\nenvironment: {A=B: x}\n", "key 'environment': name 'A=B' cannot be passed on"),
    ("description: x\nenvironment: {'': x}\n", "key 'environment': name '' cannot be passed on"),
    ('description: x\nenvironment: {A: "a\\0b"}\n', "key 'environment.A': a value with a NUL"),
    ('description: x\noptions: {"GGML\\0": ON}\n', "key 'options': name 'GGML\\x00' cannot"),
    ('description: x\noptions: {GGML_X: "a\\0"}\n', "key 'options.GGML_X': a value with a NUL"),
    ("description: x\ncmake-lists: [a]\n", "key 'cmake-lists'"),
    ("description: x\nrequires: [{platform: beos}]\n", "unknown platform"),
    ("options: {}\n", "'description' is a required property"),
    ("description: x\nci: {runs-on: ubuntu-24.04, image: x}\n", "unknown key 'ci.image'"),
    ("description: x\nci: {container: x}\n", "'runs-on' is a required property"),
    ("description: x\nci: {runs-on: ubuntu-24.04, package-manager: yum}\n", "key 'ci.package-manager'"),
    ("description: x\nci: {runs-on: 'ubuntu latest'}\n", "key 'ci.runs-on'"),
    ("description: x\nci: {runs-on: x, packages: ['a; rm -rf /']}\n", "key 'ci.packages[0]'"),
    ("description: [unclosed\n", "not valid YAML"),
])
def test_bad_recipe_names_file_and_key(tmp_path: Path, text: str, expected: str) -> None:
    folder = recipes_dir(tmp_path, bad=text)
    with pytest.raises(PatchkitError) as info:
        load_recipes(folder)
    assert str(folder / "bad.yaml") in str(info.value) and expected in str(info.value)
    assert info.value.exit_code == 2


def test_shipped_recipes_say_where_they_build_in_ci() -> None:
    """The facts of llama.cpp's own CI (2026-08): CUDA and HIP in their images, Vulkan's packages on
    Ubuntu 24.04, SYCL's oneAPI sourced where it builds and runs, Metal on macOS; cpu-native has none."""
    recipes = load_recipes(REPO_RECIPES)
    ci = {name: recipe.ci for name, recipe in recipes.items()}
    assert ci["cpu-native"] is None
    assert (ci["cpu"].runs_on, ci["cpu"].container, ci["cpu"].packages, ci["cpu"].gpu) == ("ubuntu-24.04", None, (),
                                                                                             False)
    assert ci["cuda"].container == "nvidia/cuda:12.6.2-devel-ubuntu24.04" and ci["cuda"].gpu
    # The image has no driver: one architecture, the driver's stub allowed at link time; on a GPU runner, native.
    assert ci["cuda"].packages == ("build-essential",)
    assert ci["cuda"].environment == {"CUDAARCHS": "89-real", "LDFLAGS": "-Wl,--allow-shlib-undefined"}
    assert ci["cuda"].gpu_environment == {"CUDAARCHS": "native"}
    assert (ci["hip"].container, ci["hip"].packages) == ("rocm/dev-ubuntu-22.04:6.1.2",
                                                         ("build-essential", "rocblas-dev", "hipblas-dev"))
    assert (ci["vulkan"].runs_on, ci["vulkan"].packages) == ("ubuntu-24.04", ("glslc", "libvulkan-dev", "spirv-headers"))
    assert ci["sycl"].source == "/opt/intel/oneapi/setvars.sh" and any("intel-oneapi" in c for c in ci["sycl"].setup)
    assert (ci["metal"].runs_on, ci["metal"].package_manager) == ("macos-latest", "brew")
    assert ci["opencl"].packages == ("ocl-icd-opencl-dev", "opencl-headers")
    assert ci["blas"].packages == ("libopenblas-dev",)


def test_a_project_recipe_without_ci_takes_the_shipped_ones(tmp_path: Path) -> None:
    cuda = (REPO_RECIPES / "cuda.yaml").read_text()
    folder = recipes_dir(tmp_path, cuda=cuda[:cuda.index("\nci:")] + "\n",
                         vulkan="description: ours\nci: {runs-on: ubuntu-22.04, packages: [libvulkan-dev]}\n",
                         mine="description: only ours\n")
    recipes = load_recipes(folder)
    assert (recipes["cuda"].source, recipes["cuda"].ci) == ("project", load_recipes(REPO_RECIPES)["cuda"].ci)
    assert (recipes["vulkan"].ci.runs_on, recipes["vulkan"].ci.packages) == ("ubuntu-22.04", ("libvulkan-dev",))
    assert recipes["mine"].ci is None


def test_unknown_backend_is_a_usage_error() -> None:
    with pytest.raises(PatchkitError, match="no recipe for backend cuda-13"):
        select(load_recipes(REPO_RECIPES), ["cpu", "cuda-13"])


def test_bad_recipe_exits_2_from_the_command_line(tmp_path: Path) -> None:
    folder = recipes_dir(tmp_path, "cpu", broken="description: x\ngenerator: Unix Makefiles\n")
    run = patchkit("build", tmp_path, "--backend", "cpu", "--recipes", folder)
    assert run.code == 2
    assert f"{folder / 'broken.yaml'}: key 'generator'" in run.stderr


def test_environment_name_with_equals_exits_2_naming_file_and_key(tmp_path: Path) -> None:
    folder = recipes_dir(tmp_path, bad="description: x\nenvironment: {CC=gcc: x}\n")
    for args in (["build", tmp_path, "-b", "bad"], ["recipes", "list"]):
        run = patchkit(*args, "--recipes", folder)
        assert run.code == 2 and "Traceback" not in run.stderr
        assert run.stderr.strip().splitlines() == [
            f"patchkit: error: {folder / 'bad.yaml'}: key 'environment': name 'CC=gcc' cannot be "
            "passed on; a name is a non-empty string with no '=' and no NUL"]


def test_build_needs_backends_or_all(tmp_path: Path) -> None:
    run = patchkit("build", tmp_path, "--recipes", REPO_RECIPES)
    assert run.code == 2 and "--backend NAME" in run.stderr


def test_recipes_list_says_what_is_available_and_why_not(tmp_path: Path) -> None:
    folder = recipes_dir(tmp_path, "cpu", missing=MISSING_RECIPE)
    run = patchkit("recipes", "list", "--recipes", folder, "--json", "-")
    data = json.loads(run.stdout)
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    by_name = {r["name"]: r for r in data["recipes"]}
    assert by_name["cpu"]["available"] is True and by_name["cpu"]["reason"] == ""
    assert by_name["missing"]["available"] is False
    assert "patchkit-no-such-compiler is not on PATH" in by_name["missing"]["reason"]
    assert by_name["cpu"]["ci"]["runs_on"] == "ubuntu-24.04" and by_name["missing"]["ci"] is None
    table = patchkit("recipes", "list", "--recipes", folder)
    assert table.code == 0 and "Imaginary compiler not found" in table.stdout
    assert "CI" in table.stdout and "ubuntu-24.04" in table.stdout


def test_define_needs_key_and_value(tmp_path: Path) -> None:
    run = patchkit("build", tmp_path, "-b", "cpu", "--recipes", REPO_RECIPES, "-D", "GGML_NATIVE")
    assert run.code == 2 and "expected KEY=VALUE" in run.stderr
