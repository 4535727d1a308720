"""The smoke fixture: a tiny libllama.so, a common library with the checkpoint wrapper and a
`llama-server` built from fixture/tools/server/server-context.cpp, run with the interposer.

Not a conftest.py: that module name would shadow tests/conftest.py for the tests importing it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from patchkit.smoke.interpose import StateCall, build_interposer, preload_env, read_log

FIXTURE = Path(__file__).resolve().parent / "fixture"
SERVER_CONTEXT = "tools/server/server-context.cpp"


@dataclass(frozen=True)
class Run:
    bin: Path  # the built libraries and program
    pid: int
    returncode: int
    stdout: str
    stderr: str
    calls: list[StateCall]


def site_lines() -> dict[str, int]:
    """The line of each `// site: NAME` comment in the fixture's server-context.cpp."""
    text = (FIXTURE / SERVER_CONTEXT).read_text().splitlines()
    return {m.group(1): number for number, line in enumerate(text, 1)
            if (m := re.search(r"// site: (\S+)", line))}


def _compile(*args: str) -> None:
    subprocess.run(list(args), check=True)


@pytest.fixture(scope="module")  # imported by each test module, so built once for each
def fixture_run(tmp_path_factory) -> Run:
    if shutil.which("cc") is None or shutil.which("c++") is None:
        pytest.skip("needs a C and a C++ compiler")
    out = tmp_path_factory.mktemp("smoke-fixture")
    include = f"-I{FIXTURE / 'include'}"
    # -O1, as optimised code is what the smoke test meets; -g for the line tables.
    _compile("cc", "-g", "-O1", "-fPIC", "-shared", include, "-o", str(out / "libllama.so"),
             str(FIXTURE / "src" / "llama.c"))
    _compile("c++", "-g", "-O1", "-fPIC", "-shared", include, "-o", str(out / "libcommon.so"),
             str(FIXTURE / "common" / "common.cpp"), f"-L{out}", "-lllama")
    _compile("c++", "-g", "-O1", include, f"-I{FIXTURE / 'common'}", "-o", str(out / "llama-server"),
             str(FIXTURE / SERVER_CONTEXT), f"-L{out}", "-lcommon", "-lllama", "-Wl,-rpath,$ORIGIN")
    so = build_interposer(out / "interposer")
    log = out / "calls.log"
    process = subprocess.Popen([str(out / "llama-server")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, **preload_env(so, log)})
    stdout, stderr = process.communicate()
    return Run(bin=out, pid=process.pid, returncode=process.returncode, stdout=stdout, stderr=stderr,
               calls=read_log(log))
