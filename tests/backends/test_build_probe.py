from __future__ import annotations

import stat
import sys
from pathlib import Path

from patchkit.backends.probe import probe_requirement
from patchkit.backends.recipe import DEFAULT_VERSION_PATTERN, Requirement


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
