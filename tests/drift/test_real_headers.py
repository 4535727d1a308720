"""Opt-in (PATCHKIT_LLAMA_CPP=<llama.cpp git checkout>): the declarations reader against the
compiler (libclang, C++17) on the real public headers, read as drift reads them, from the tree's
HEAD commit: every aggregate struct the compiler sees with all its members in order, every
enumerator with its value, every function's parameters. On the October tree: 82 structs, 503
enumerators, 1204 functions, no mismatch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

oracle = pytest.importorskip("oracle")

from patchkit import git  # noqa: E402
from patchkit.drift.declarations import value  # noqa: E402
from patchkit.drift.tree import Files  # noqa: E402

TREE = os.environ.get("PATCHKIT_LLAMA_CPP")
pytestmark = pytest.mark.skipif(not TREE, reason="set PATCHKIT_LLAMA_CPP=/path/to/llama.cpp (a git checkout)")


@pytest.fixture(scope="module")
def files():
    with git.ObjectReader(Path(TREE)) as reader:
        yield Files(Path(TREE), reader)


@pytest.mark.parametrize("header", oracle.public_headers(Path(TREE)) if TREE else [])
def test_every_declaration_of_a_public_header_reads_as_the_compiler_reads_it(files, header):
    root = Path(TREE)
    seen = oracle.read(root / header, [root / d for d in oracle.INCLUDES])
    found = files.declarations("HEAD", header)
    source = (root / header).read_bytes()

    def number(name: str) -> int | None:  # an array parameter's extent, by a macro here or included
        own = value(found, name)
        return own if own is not None else files.included_value("HEAD", header, source, name)

    problems = oracle.mismatches(seen, found, number)
    assert problems == [], f"{header}: {len(problems)} mismatches, first {problems[:5]}"
    if header == "tools/mtmd/mtmd.h":  # the header whose split `extern "C"` hid every declaration
        assert len(seen.structs) >= 14 and len(seen.enumerators) >= 9 and len(seen.functions) >= 74
