"""The bulk upstream of the apply and export benchmarks: many files, and a queue against them.

`build_bulk_upstream` writes a large repository of generated C++ and a queue of format-patch
files whose every hunk needs an offset on its HEAD. Deterministic, like the fixture upstream it
borrows its code generator and commit writer from.
"""

from __future__ import annotations

import random
from pathlib import Path

from patchkit.errors import PatchkitError
from patchkit.fixture import EPOCH, Commit, fast_import, init_repo, namespace_code
from patchkit.git import run

_FORK = "Fork Maintainer <fork@downstream.invalid>"
_BULK_DIRS = ("src", "common", "ggml/src", "ggml/src/ggml-cpu", "ggml/src/ggml-cuda",
              "ggml/src/ggml-vulkan", "tools/server", "tools/cli", "examples/simple", "tests")
_BULK_STEMS = ("model", "graph", "sampling", "kv-cache", "batch", "vocab", "arch", "quant", "ops",
               "utils")
_BULK_HEADER = 5  # lines before the first function; HEAD inserts its lines right there


def _bulk_path(i: int) -> str:
    ext = ".h" if i % 7 == 0 else ".cpp"
    return f"{_BULK_DIRS[i % len(_BULK_DIRS)]}/{_BULK_STEMS[i // 10 % len(_BULK_STEMS)]}-{i:04d}{ext}"


def _bulk_file(i: int, head: bool = False) -> str:
    """File i at the base, or at HEAD (helpers inserted above the first function)."""
    body, inserted = namespace_code(i, 40 + i % 50, 5 + i % 4)
    return "\n".join([f"// {_bulk_path(i)}: part of patchkit's benchmark upstream",
                      '#include "ggml.h"', '#include "llama.h"', "#include <cstdint>", "",
                      *(inserted if head else ()), *body]).rstrip("\n") + "\n"


def _carried_change(text: str, rng: random.Random, n_hunks: int, tag: str) -> str:
    """Change n_hunks statements far enough apart that each becomes its own hunk."""
    lines = text.split("\n")
    candidates = [i for i, ln in enumerate(lines)
                  if i >= _BULK_HEADER + 6 and " = " in ln and ln.endswith(";") and '"' not in ln]
    picked: list[int] = []
    for i in rng.sample(candidates, len(candidates)):
        if len(picked) < n_hunks and all(abs(i - j) >= 10 for j in picked):
            picked.append(i)
    for i in sorted(picked, reverse=True):
        pad = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        lines[i] = lines[i][:-1] + " + 1;"
        lines.insert(i + 1, f'{pad}LOG_DBG("%s: {tag}\\n", __func__);')
    return "\n".join(lines)


def build_bulk_upstream(dest: Path, n_files: int = 1500, n_patches: int = 40,
                        patches_dir: Path | None = None) -> list[Path]:
    """Write a large upstream into `dest` and a queue of patches against its base commit.

    `dest` holds n_files generated C++ files: the base commit (tag `base`) and, on `master`, a HEAD
    commit that inserts lines near the top of every file a patch touches, so that every hunk needs
    an offset there. The patches (git format-patch mboxes, each touching 1-3 files with 1-3 hunks
    apiece, no two patches touching the same file) go to `patches_dir` (default
    `dest.parent / "bench-patches"`) with a quilt `series` file; their paths are returned in order.
    """
    patches_dir = patches_dir or dest.parent / "bench-patches"
    if patches_dir.exists() and any(patches_dir.iterdir()):
        raise PatchkitError(f"{patches_dir} is not empty", "give the patches a new directory")
    rng = random.Random(n_files * 7919 + n_patches)
    base = {_bulk_path(i): _bulk_file(i) for i in range(n_files)}
    unused = rng.sample(range(n_files), n_files)
    series_tree = dict(base)
    commits = [Commit("refs/heads/master", None, base, "import the benchmark upstream\n", EPOCH,
                       tag="base")]
    touched: list[int] = []
    for k in range(1, n_patches + 1):
        files = [unused.pop() for _ in range(min(rng.randint(1, 3), len(unused)))]
        if not files:
            raise PatchkitError(f"{n_files} files are too few for {n_patches} patches",
                                "ask for more files or fewer patches")
        touched += files
        series_tree = {**series_tree, **{
            _bulk_path(i): _carried_change(base[_bulk_path(i)], rng, rng.randint(1, 3), f"fix {k}")
            for i in files}}
        area = _bulk_path(files[0]).split("/")[-2]
        commits.append(Commit(
            "refs/heads/bench-series", len(commits) - 1 if k > 1 else 0, series_tree,
            f"{area} : carried fix {k}\n\nLog the adjusted values of fix {k}.\n\n"
            "Forwarded: not-needed\n", EPOCH + 600 * k, author=_FORK))
    head = {**base, **{_bulk_path(i): _bulk_file(i, head=True) for i in touched}}
    commits.append(Commit("refs/heads/master", 0, head, "move helpers to the top of files\n",
                           EPOCH + 86400))
    init_repo(dest)
    fast_import(dest, commits)
    patches_dir.mkdir(parents=True, exist_ok=True)
    names = run(["format-patch", "--zero-commit", "--full-index", "--no-signature",
                 "-o", str(patches_dir.resolve()), "base..bench-series"], cwd=dest)
    # the patch commits only served format-patch: the upstream does not carry them
    run(["update-ref", "-d", "refs/heads/bench-series"], cwd=dest)
    run(["reset", "--quiet", "--hard", "master"], cwd=dest)
    paths = [Path(line) for line in names.splitlines()]
    (patches_dir / "series").write_text("".join(f"{p.name}\n" for p in paths))
    return paths
