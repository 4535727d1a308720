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

from patchkit.backends.cmakelists import required_config_packages
from patchkit.backends.recipe import Recipe, Requirement

_SYSTEM_LIB_DIRS = ("/usr/local/lib", "/usr/lib", "/lib", "/usr/lib64", "/opt/homebrew/lib")
_SYSTEM_INCLUDE_DIRS = ("/usr/local/include", "/usr/include", "/opt/homebrew/include")
_SYSTEM_PREFIXES = ("/usr/local", "/usr", "/")  # CMAKE_SYSTEM_PREFIX_PATH on Unix
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


def probe(recipe: Recipe, tree: Path | None = None) -> Availability:
    """RECIPE's requirements; given the TREE, also the config packages its `cmake-lists` requires.

    A `cmake-lists` file the tree does not have adds nothing: the configure then tells the truth.
    """
    requires = list(recipe.requires)
    if tree is not None and recipe.cmake_lists and (tree / recipe.cmake_lists).is_file():
        text = (tree / recipe.cmake_lists).read_text(errors="replace")
        declared = {r.value.lower() for r in requires if r.kind == "cmake-package"}
        requires += [Requirement("cmake-package", p.name,
                                 f"{p.name} (find_package at {recipe.cmake_lists}:{p.line})")
                     for p in required_config_packages(text) if p.name.lower() not in declared]
    return Availability(recipe.name, tuple(probe_requirement(r) for r in requires))


def probe_requirement(req: Requirement) -> Finding:
    if req.kind == "command":
        return _command(req)
    if req.kind == "library":
        return _library(req)
    if req.kind == "header":
        return _header(req)
    if req.kind == "cmake-package":
        return _cmake_package(req)
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
    return _version(req, req.version, exe, proc.stdout.decode(errors="replace"),
                    f"the output of `{req.value} {' '.join(req.args)}`")


def _version(req: Requirement, pattern: str, where: str, text: str, source: str) -> Finding:
    """REQ found at WHERE: its version is PATTERN's first group in TEXT (which is SOURCE)."""
    match = re.search(pattern, text)
    if match is None:
        return Finding(req, False, f"{req.name} at {where}: no version in {source}")
    found = match.group(1)
    if req.minimum and _numeric(found) < _numeric(req.minimum):
        return Finding(req, False, f"{req.name} {found} at {where} is too old (needs >= {req.minimum})")
    return Finding(req, True, f"{req.name} {found} at {where}")


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
        path = Path(folder, req.value)
        if path.is_file():
            if req.version is None:
                return Finding(req, True, f"{req.name} at {path}")
            return _version(req, req.version, str(path), path.read_text(errors="replace"), "its text")
    return Finding(req, False, f"{req.name} not found (no {req.value} in the system's include "
                               f"folders{_or(req.paths)})")


def _cmake_package(req: Requirement) -> Finding:
    """Look for the config file `find_package(NAME CONFIG)` reads, where CMake looks for it.

    That is `<NAME>_DIR`, then under each prefix (the recipe's paths, `<NAME>_ROOT`,
    CMAKE_PREFIX_PATH, the parents of PATH's bin folders, the system's): `<prefix>/`,
    `<prefix>/(lib/<arch>|lib*|share)/cmake/<name>*/` and `<prefix>/(lib/<arch>|lib*|share)/<name>*/`
    (also with `cmake/` below it), the folder names matched ignoring case, as CMake does. `lib*`
    takes in lib64 and the like, which CMake searches for C and C++ projects on most systems.
    """
    files = (f"{req.value}Config.cmake", f"{req.value.lower()}-config.cmake")
    env = os.environ
    direct = [env[f"{req.value}_DIR"]] if env.get(f"{req.value}_DIR") else []
    prefixes = [*req.paths, *_env_paths(f"{req.value}_ROOT"), *_env_paths("CMAKE_PREFIX_PATH"),
                *(str(Path(p).parent) for p in _env_paths("PATH") if Path(p).name in ("bin", "sbin")),
                *_SYSTEM_PREFIXES]
    folders = [Path(d) for d in direct]
    for prefix in dict.fromkeys(prefixes):
        folders += _config_dirs(Path(prefix), req.value)
    for folder in folders:
        for name in files:
            if (folder / name).is_file():
                return Finding(req, True, f"{req.name} at {folder / name}")
    return Finding(req, False, f"{req.name} not found (no {files[0]} or {files[1]} under "
                               f"CMAKE_PREFIX_PATH, PATH's prefixes or {', '.join(_SYSTEM_PREFIXES)}"
                               f"{_or(req.paths)})")


def _config_dirs(prefix: Path, name: str) -> list[Path]:
    multiarch = sysconfig.get_config_var("MULTIARCH")
    bases = [prefix / "share", *sorted(prefix.glob("lib*"))]
    if multiarch:
        bases.insert(0, prefix / "lib" / multiarch)
    folders = [prefix, prefix / "cmake"]
    for base in bases:
        folders += _named(base / "cmake", name)
        for folder in _named(base, name):
            folders += [folder, folder / "cmake"]
    return folders


def _named(folder: Path, name: str) -> list[Path]:
    """The sub-folders of FOLDER whose names start with NAME, ignoring case (CMake's `<name>*`)."""
    try:
        return sorted(p for p in folder.iterdir() if p.name.lower().startswith(name.lower()) and p.is_dir())
    except OSError:
        return []


def _env_paths(variable: str) -> list[str]:
    return [p for p in os.environ.get(variable, "").split(os.pathsep) if p]


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
