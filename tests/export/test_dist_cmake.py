"""A packager's build from the tarball alone: no git, the build number read from PATCHKIT-SOURCE."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dist_helpers import dist, make_fork, make_upstream, report

needs_cmake = pytest.mark.skipif(not (shutil.which("cmake") and shutil.which("ninja")),
                                 reason="cmake and ninja are needed (.ci/run installs them)")


@needs_cmake
def test_a_tarball_build_reports_the_upstream_build_number(tmp_path: Path) -> None:
    stand_in = make_upstream(tmp_path / "stand-in")
    fork = make_fork(tmp_path / "fork", stand_in)
    result = report(dist(fork, tmp_path / "src.tar.xz"))
    unpacked = tmp_path / "unpacked"
    unpacked.mkdir()
    subprocess.run(["tar", "-xf", str(tmp_path / "src.tar.xz"), "-C", str(unpacked)], check=True)
    source = unpacked / result["top"]
    assert not (source / ".git").exists()
    fields = dict(line.split(": ", 1) for line in (source / "PATCHKIT-SOURCE").read_text().splitlines())
    build = tmp_path / "build"
    # As a packager's recipe does it; a build directory outside any git repository, so nothing
    # but these -D values can name the build.
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path.parent)}
    subprocess.run(["cmake", "-S", str(source), "-B", str(build), "-G", "Ninja",
                    f"-DLLAMA_BUILD_NUMBER={fields['build-number']}",
                    f"-DLLAMA_BUILD_COMMIT={fields['build-commit']}"], check=True, capture_output=True, env=env)
    subprocess.run(["cmake", "--build", str(build), "--target", "llama-cli"], check=True, capture_output=True, env=env)
    said = subprocess.run([str(build / "bin" / "llama-cli")], check=True, capture_output=True, text=True).stdout
    assert said == f"llama-cli (patched) version: 3 ({stand_in.head[:8]}) CPU\n"
    assert fields["build-number"] == "3" == str(result["build_number"])
