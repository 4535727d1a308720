"""The CMake and Ninja subprocesses: command lines, logged runs that can be stopped, artifacts.

Every command is an argument list, never a shell string. Each run gets its own process group so
that Ctrl-C can stop the whole tree of compilers it started, not only CMake.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence, TextIO

from patchkit.errors import EnvironmentProblem
from patchkit.process import stop_group

MIN_CMAKE = (3, 24)  # `cmake --fresh`
# Languages a compiler launcher is set for; CMake never reports these as unused, even when the
# project does not enable the language, so one list serves every backend.
LAUNCHER_LANGUAGES = ("C", "CXX", "CUDA", "HIP")
_STOP_GRACE = 5.0  # seconds between SIGTERM and SIGKILL
_CODEMODEL_QUERY = Path(".cmake/api/v1/query/codemodel-v2")


@dataclass(frozen=True)
class Tools:
    cmake: str
    ccache: str | None


def find_tools() -> Tools:
    """cmake (new enough for --fresh), ninja and ccache if any; exit 3 saying what is missing."""
    cmake = shutil.which("cmake")
    if cmake is None:
        raise EnvironmentProblem("cmake was not found on PATH", "install cmake >= 3.24 and run again")
    out = subprocess.run([cmake, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         check=False).stdout.decode(errors="replace")
    m = re.search(r"version (\d+)\.(\d+)", out)
    if m is None or (int(m.group(1)), int(m.group(2))) < MIN_CMAKE:
        found = f"{m.group(1)}.{m.group(2)}" if m else "unknown"
        raise EnvironmentProblem(f"cmake {found} at {cmake} is too old (--fresh needs >= 3.24)",
                                 "install a newer cmake and run again")
    if not (shutil.which("ninja") or shutil.which("ninja-build")):
        raise EnvironmentProblem("ninja was not found on PATH", "install ninja and run again")
    return Tools(cmake=cmake, ccache=shutil.which("ccache"))


def launcher_defines(ccache: str | None) -> dict[str, str]:
    if ccache is None:
        return {}
    return {f"CMAKE_{lang}_COMPILER_LAUNCHER": ccache for lang in LAUNCHER_LANGUAGES}


def architecture_defines(environ: Mapping[str, str]) -> dict[str, str]:
    """CUDAARCHS and HIPARCHS, CMake's own variables for the architecture lists, as the defines
    they stand for: CMake reads them only at enable_language(), after llama.cpp has set its own
    list (ggml-cuda's `if (NOT DEFINED CMAKE_CUDA_ARCHITECTURES)`), so only the define reaches it."""
    return {f"CMAKE_{lang}_ARCHITECTURES": environ[f"{lang}ARCHS"] for lang in ("CUDA", "HIP")
            if environ.get(f"{lang}ARCHS")}


def configure_command(tools: Tools, tree: Path, build: Path, generator: str,
                      defines: Mapping[str, str]) -> list[str]:
    # --fresh: a cache left from an earlier run would hide unused variables and stale options.
    return [tools.cmake, "--fresh", "-G", generator, "-S", str(tree), "-B", str(build),
            *(f"-D{k}={v}" for k, v in defines.items())]


def build_command(tools: Tools, build: Path, targets: Sequence[str], jobs: int | None) -> list[str]:
    cmd = [tools.cmake, "--build", str(build), "--target", *targets]
    return cmd + ["--parallel", str(jobs)] if jobs else cmd


def run_logged(args: list[str], *, env: Mapping[str, str], log: TextIO,
               on_line: Callable[[str], None]) -> int:
    """Run ARGS with output (stdout and stderr, in order) to LOG and to ON_LINE, line by line.

    Any exception while it runs (KeyboardInterrupt above all) stops the whole process group
    before it propagates, so no compiler is left running after patchkit returns.
    """
    log.write(f"$ {' '.join(args)}\n")
    log.flush()
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=dict(env), start_new_session=True)
    assert proc.stdout is not None
    try:
        for raw in proc.stdout:
            line = raw.decode(errors="replace")
            log.write(line)
            on_line(line.rstrip("\n"))
        return proc.wait()
    except BaseException:
        stop_group(proc, _STOP_GRACE)  # SIGTERM first: Ninja passes it on to the compilers
        raise
    finally:
        proc.stdout.close()
        log.flush()


def request_codemodel(build: Path) -> None:
    """Ask CMake's file API for the code model, so artifacts are read, not guessed."""
    query = build / _CODEMODEL_QUERY
    query.parent.mkdir(parents=True, exist_ok=True)
    query.touch()


def target_artifacts(build: Path) -> dict[str, list[Path]]:
    """Each target the project defines -> the files it builds (absolute), from the file API."""
    reply = build / ".cmake/api/v1/reply"
    indexes = sorted(reply.glob("index-*.json"))
    if not indexes:
        return {}
    index = json.loads(indexes[-1].read_text())
    model_file = next((r["jsonFile"] for r in index["objects"] if r["kind"] == "codemodel"), None)
    if model_file is None:
        return {}
    model = json.loads((reply / model_file).read_text())
    found: dict[str, list[Path]] = {}
    for target in model["configurations"][0]["targets"]:
        data = json.loads((reply / target["jsonFile"]).read_text())
        found[target["name"]] = [build / a["path"] for a in data.get("artifacts", [])]
    return found

