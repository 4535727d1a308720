from __future__ import annotations

import subprocess
from pathlib import Path

from build_helpers import git_tree
from patchkit import refs
from patchkit.backends.version import build_info


def test_from_the_upstream_ref(tmp_path: Path) -> None:
    (tmp_path / "CMakeLists.txt").write_text("")
    commit = git_tree(tmp_path)
    info = build_info(tmp_path, fallback_commit="0" * 40)  # the ref wins over the lock
    assert info["LLAMA_BUILD_NUMBER"] == "1" and commit.startswith(info["LLAMA_BUILD_COMMIT"])


def test_from_the_lock_when_there_is_no_ref(tmp_path: Path) -> None:
    (tmp_path / "CMakeLists.txt").write_text("")
    commit = git_tree(tmp_path)
    subprocess.run(["git", "update-ref", "-d", refs.UPSTREAM], cwd=tmp_path, check=True)
    assert build_info(tmp_path) == {}
    info = build_info(tmp_path, fallback_commit=commit)
    assert info["LLAMA_BUILD_NUMBER"] == "1" and commit.startswith(info["LLAMA_BUILD_COMMIT"])


def test_lock_commit_outside_the_tree_gives_the_commit_only(tmp_path: Path) -> None:
    assert build_info(tmp_path, fallback_commit="a" * 40) == {"LLAMA_BUILD_COMMIT": "aaaaaaaa"}


def test_unknown_means_nothing_is_passed(tmp_path: Path) -> None:
    assert build_info(tmp_path) == {}
