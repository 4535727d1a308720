"""Toolchain probes: can this machine build a backend, and if not, why not.

Every requirement is probed before any build starts, so a missing toolchain is reported up front
as a reason instead of failing late inside CMake.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from patchkit.backends.recipe import Recipe, Requirement

_SYSTEM_LIB_DIRS = ("/usr/local/lib", "/usr/lib", "/lib", "/usr/lib64", "/opt/homebrew/lib")
_SYSTEM_INCLUDE_DIRS = ("/usr/local/include", "/usr/include", "/opt/homebrew/include")
_PROBE_TIMEOUT = 20  # seconds; a compiler's --version answers in well under one


@dataclass(frozen=True)
class Finding:
    """One requirement probed: whether it holds, and what was found or looked for."""

    requirement: Requirement
    ok: bool
    detail: str


@dataclass(frozen=True)
class Availability:
    backend: str
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.findings)

    @property
    def reason(self) -> str:
        """Why the backend cannot be built here (empty when it can)."""
        return "; ".join(f.detail for f in self.findings if not f.ok)


def probe(recipe: Recipe) -> Availability:
    return Availability(recipe.name, tuple(probe_requirement(r) for r in recipe.requires))


def probe_requirement(req: Requirement) -> Finding:
    if req.kind == "command":
        return _command(req)
    if req.kind == "library":
        return _library(req)
    if req.kind == "header":
        return _header(req)
    ok = sys.platform.startswith(req.value)
    return Finding(req, ok, f"runs on {sys.platform}" if ok else
                   f"{req.name} needs {req.value}, this machine is {sys.platform}")


def _command(req: Requirement) -> Finding:
    search = os.pathsep.join([*req.paths, os.environ.get("PATH", os.defpath)])
    exe = shutil.which(req.value, path=search)
    if exe is None:
        where = " or ".join(["PATH", *req.paths])
        return Finding(req, False, f"{req.name} not found ({req.value} is not on {where})")
    if req.version is None:
        return Finding(req, True, f"{req.name} at {exe}")
    try:
        proc = subprocess.run([exe, *req.args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=_PROBE_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Finding(req, False, f"{req.name} at {exe} could not be run ({exc})")
    match = re.search(req.version, proc.stdout.decode(errors="replace"))
    if match is None:
        return Finding(req, False, f"{req.name} at {exe}: no version in the output of "
                                   f"`{req.value} {' '.join(req.args)}`")
    found = match.group(1)
    if req.minimum and _numeric(found) < _numeric(req.minimum):
        return Finding(req, False, f"{req.name} {found} at {exe} is too old (needs >= {req.minimum})")
    return Finding(req, True, f"{req.name} {found} at {exe}")


def _library(req: Requirement) -> Finding:
    """Look for the link-time library (`libX.so`, `.dylib`, `.a`) that CMake's find modules need.

    A runtime-only `libX.so.N` (the package without -dev) is named in the reason, because it is
    the usual way a backend looks present and then fails in CMake.
    """
    stem = f"lib{req.value}"
    dirs = [*req.paths, *_lib_dirs()]
    for folder in dirs:
        for suffix in (".so", ".dylib", ".a"):
            if Path(folder, stem + suffix).exists():
                return Finding(req, True, f"{req.name} at {Path(folder, stem + suffix)}")
    runtime = _ldconfig().get(stem)
    if runtime:
        return Finding(req, False, f"{req.name}: only the runtime {runtime} is installed, not the "
                                   f"development library {stem}.so")
    return Finding(req, False, f"{req.name} not found (no {stem}.so in the linker's folders"
                               f"{_or(req.paths)})")


def _header(req: Requirement) -> Finding:
    dirs = [*req.paths, *_SYSTEM_INCLUDE_DIRS]
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch:
        dirs.append(f"/usr/include/{multiarch}")
    for folder in dirs:
        if Path(folder, req.value).is_file():
            return Finding(req, True, f"{req.name} at {Path(folder, req.value)}")
    return Finding(req, False, f"{req.name} not found (no {req.value} in the system's include "
                               f"folders{_or(req.paths)})")


def _or(paths: tuple[str, ...]) -> str:
    return f" or {', '.join(paths)}" if paths else ""


def _numeric(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def _lib_dirs() -> list[str]:
    """Folders the dynamic linker knows (from the ldconfig cache) and the usual system ones."""
    dirs = list(_SYSTEM_LIB_DIRS)
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch:
        dirs += [f"/usr/lib/{multiarch}", f"/lib/{multiarch}"]
    dirs += [str(Path(p).parent) for p in _ldconfig().values()]
    return list(dict.fromkeys(dirs))


@functools.lru_cache(maxsize=1)
def _ldconfig() -> dict[str, str]:
    """`libX` -> one path of it, from `ldconfig -p` (read once; empty where there is none)."""
    exe = shutil.which("ldconfig") or shutil.which("ldconfig", path="/sbin:/usr/sbin")
    if exe is None:
        return {}
    try:
        out = subprocess.run([exe, "-p"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             timeout=_PROBE_TIMEOUT).stdout.decode(errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found: dict[str, str] = {}
    for line in out.splitlines():
        m = re.match(r"\s*(lib[^\s.]+)\.so\S*\s.*=>\s*(\S+)", line)
        if m:
            found.setdefault(m.group(1), m.group(2))
    return found
