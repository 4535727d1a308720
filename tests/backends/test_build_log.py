from __future__ import annotations

from pathlib import Path

from patchkit.backends.log import first_error, ninja_progress, unused_variables
from patchkit.backends.result import FirstError

CONFIGURE = """\
-- Configuring done
CMake Warning:
  Manually-specified variables were not used by the project:

    GGML_CUDA_F16
    LLAMA_CURL


-- Generating done
"""


def test_unused_variables_block() -> None:
    assert unused_variables(CONFIGURE.splitlines()) == ["GGML_CUDA_F16", "LLAMA_CURL"]
    assert unused_variables(["-- Configuring done", "-- Generating done"]) == []


def test_ninja_progress() -> None:
    assert ninja_progress("[12/345] Building CXX object src/llama.o") == (12, 345)
    assert ninja_progress("-- Configuring done") is None


def test_gcc_error_relative_to_tree(tmp_path: Path) -> None:
    lines = ["[3/8] Building CXX object tools/server.o", "FAILED: tools/server.o",
             f"{tmp_path}/tools/server/server.cpp: In function 'int main()':",
             f"{tmp_path}/tools/server/server.cpp:7:5: error: 'oops' was not declared in this scope",
             f"{tmp_path}/tools/server/server.cpp:9:1: error: second one"]
    assert first_error(lines, tmp_path) == FirstError("tools/server/server.cpp", 7,
                                                      "'oops' was not declared in this scope")


def test_nvcc_error() -> None:
    lines = ["/src/ggml-cuda/mmq.cu(42): error: identifier \"x\" is undefined"]
    assert first_error(lines, Path("/elsewhere")) == FirstError("/src/ggml-cuda/mmq.cu", 42,
                                                                'identifier "x" is undefined')


def test_cmake_error() -> None:
    lines = ["CMake Error at ggml/src/ggml-vulkan/CMakeLists.txt:12 (message):",
             "", "  Vulkan SDK not found", "-- Configuring incomplete"]
    assert first_error(lines, Path("/t")) == FirstError("ggml/src/ggml-vulkan/CMakeLists.txt", 12,
                                                        "Vulkan SDK not found")


def test_linker_error() -> None:
    lines = ["FAILED: bin/llama-server", "/usr/bin/ld: server.cpp:(.text+0x5): undefined reference to `foo'",
             "collect2: error: ld returned 1 exit status"]
    assert first_error(lines, Path("/t")).message.endswith("undefined reference to `foo'")
