"""Opt-in (PATCHKIT_LLAMA_CPP=<llama.cpp git checkout>): on the real tree, a C/C++ file's parse
that starts from its base's tree (`CppScopes` given another version's parse and the line
differences) names every line's scope as a parse from nothing does, across the edits upstream
makes: a block of lines moved in near the top, a statement rewritten, lines deleted, a brace
opened. The tree is only read (its HEAD blobs)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from patchkit.apply import _differences, _lines
from patchkit.scopes import CppScopes, is_cpp

TREE = os.environ.get("PATCHKIT_LLAMA_CPP")
pytestmark = pytest.mark.skipif(not TREE, reason="set PATCHKIT_LLAMA_CPP=/path/to/llama.cpp (a git checkout)")


def _show(path: str) -> bytes:
    return subprocess.run(["git", "show", f"HEAD:{path}"], cwd=TREE, check=True, capture_output=True).stdout


def _files() -> list[str]:
    paths = subprocess.run(["git", "ls-files"], cwd=TREE or ".", check=True, capture_output=True,
                           text=True).stdout.split() if TREE else []
    sized = sorted(((Path(TREE, p).stat().st_size, p) for p in paths if is_cpp(p) and Path(TREE, p).is_file()),
                   reverse=True)
    return [p for _, p in sized[:60:3]]  # twenty of the largest, spread


def _edited(lines: list[str]) -> list[str]:
    third = len(lines) // 3
    out = lines[:10] + ["// a line of a block moved in above\n"] * 12 + lines[10:]
    out[third] = out[third].rstrip("\n") + " // reworked upstream\n"
    del out[2 * third:2 * third + 5]
    out.insert(len(out) // 2, "namespace opened_upstream {\n")
    return out


@pytest.mark.parametrize("path", _files())
def test_a_parse_from_the_base_tree_names_every_line_as_a_fresh_parse(path):
    old = _lines(_show(path))
    new = _edited(old)
    base = CppScopes(old)
    base.scope_at(0)
    edited = CppScopes(new, (base, lambda: _differences(old, new)))
    fresh = CppScopes(new)
    assert [edited.scope_at(i) for i in range(len(new))] == [fresh.scope_at(i) for i in range(len(new))]
