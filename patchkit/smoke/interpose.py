"""The interposer: compiled here from the packaged interposer.c, preloaded into the program under
test, and its log read back as `StateCall`s.

    so = build_interposer(build_dir)
    subprocess.run([server, ...], env={**os.environ, **preload_env(so, log)})
    calls = read_log(log)
"""

from __future__ import annotations

import os
import platform
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path
from typing import Mapping

from patchkit.errors import EnvironmentProblem, PatchkitError

LOG_VARIABLE = "PATCHKIT_SMOKE_LOG"
_NAME = "libpatchkit-smoke-interposer.so"


@dataclass(frozen=True)
class ReturnAddress:
    address: int  # as the process saw it
    module: str  # the executable or shared library holding it
    offset: int  # the address in the module's ELF address space: what a symbolizer takes


@dataclass(frozen=True)
class StateCall:
    pid: int
    function: str  # the interposed libllama function, e.g. llama_state_seq_get_data_ext
    flags: int | None  # None: a variant without a flags argument (not the same as flags 0)
    seq_id: int
    size: int  # what the call returned: bytes saved or restored, 0 when it failed
    frames: tuple[ReturnAddress, ...]  # the callers' return addresses, innermost first


def build_interposer(out_dir: Path, cc: str | None = None) -> Path:
    """Compile interposer.c into OUT_DIR with CC (default: $CC, else cc or gcc); the .so's path."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        raise EnvironmentProblem(f"the smoke test needs Linux with glibc (LD_PRELOAD); this is "
                                 f"{platform.system()} {' '.join(platform.libc_ver()).strip() or 'without glibc'}",
                                 "run it on a Linux machine or container with glibc")
    compiler = shlex.split(cc or os.environ.get("CC", "")) or [shutil.which("cc") or shutil.which("gcc") or "cc"]
    if shutil.which(compiler[0]) is None:
        raise EnvironmentProblem(f"no C compiler to build the smoke interposer ({compiler[0]} not found)",
                                 "install gcc or clang, or set CC")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / _NAME
    with as_file(files("patchkit.smoke").joinpath("interposer.c")) as source:
        result = subprocess.run([*compiler, "-shared", "-fPIC", "-O2", "-o", str(target), str(source),
                                 "-ldl", "-pthread"], capture_output=True, text=True)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or [f"exit status {result.returncode}"])[-1]
        raise EnvironmentProblem(f"{compiler[0]} could not build the smoke interposer: {last}",
                                 "check that the compiler works and has the glibc headers (libc6-dev)")
    return target


def preload_env(so: Path, log: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables that preload SO and send its records to LOG, SO after any preload BASE
    (default: this process's environment) already has."""
    # ld.so splits LD_PRELOAD at spaces and colons: such a path would preload something else.
    if any(c in str(so) for c in " :"):
        raise PatchkitError(f"cannot preload {so}: the path has a space or a colon",
                            "use a build directory whose path has neither")
    existing = (os.environ if base is None else base).get("LD_PRELOAD", "").strip()
    return {"LD_PRELOAD": f"{existing}:{so}" if existing else str(so), LOG_VARIABLE: str(log)}


def read_log(log: Path) -> list[StateCall]:
    """The calls recorded in LOG, in order. The interposer creates LOG when it is loaded, so a
    missing LOG means the program never loaded it."""
    try:
        text = log.read_text(errors="surrogateescape")
    except FileNotFoundError:
        raise EnvironmentProblem(f"the smoke interposer was never loaded: {log} was not created",
                                 "the program must be dynamically linked and not set-uid") from None
    return [_call(line, log, number) for number, line in enumerate(text.splitlines(), 1)]


def _call(line: str, log: Path, number: int) -> StateCall:
    fields = line.split("\t")
    try:
        kind, pid, function, flags, seq_id, size = fields[:6]
        if kind != "call":
            raise ValueError(kind)
        frames = tuple(_frame(field) for field in fields[6:])
        return StateCall(pid=int(pid), function=function, flags=None if flags == "-" else int(flags),
                         seq_id=int(seq_id), size=int(size), frames=frames)
    except ValueError:
        raise PatchkitError(f"{log}:{number}: not a line the smoke interposer writes: {line[:80]!r}",
                            "was the log written by another program or another patchkit version?") from None


def _frame(field: str) -> ReturnAddress:
    address, offset, module = field.split(" ", 2)
    return ReturnAddress(address=int(address, 16), module=module, offset=int(offset, 16))
