"""Where the cache goes without a `cache:` key: $XDG_CACHE_HOME/patchkit when XDG_CACHE_HOME is an
absolute path, else ~/.cache/patchkit (the XDG spec: a relative one is invalid and is ignored)."""

from __future__ import annotations

import pytest

from patchkit.project import Project


@pytest.fixture
def fork(tmp_path, monkeypatch):
    root = tmp_path / "fork"
    root.mkdir()
    (root / "patchkit.yaml").write_text("upstream:\n  url: https://example.invalid/llama.cpp.git\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return root


@pytest.mark.parametrize("xdg", ["cache", "./cache", "", None])
def test_a_relative_empty_or_unset_xdg_cache_home_means_the_home_cache(fork, tmp_path, monkeypatch, xdg):
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    assert Project.load(fork).cache_dir == tmp_path / "home" / ".cache" / "patchkit"


def test_an_absolute_xdg_cache_home_is_used(fork, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert Project.load(fork).cache_dir == tmp_path / "xdg" / "patchkit"
