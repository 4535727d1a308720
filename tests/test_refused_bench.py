"""The refused-heavy benchmark's queue and far upstream, on a small tree of our own: every patch
applies at its base, and 20 commits later git am -3 refuses exactly the patches whose changed
line upstream rewrote (the twin and the context edit still place), as the benchmark reports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from reach_bench import GIT_ENV, _am_skipping, git
from refused_bench import BASE, FAR, build, statement_sites


def _tree(root: Path, files: int) -> Path:
    tree = root / "tree"
    (tree / "src").mkdir(parents=True)
    for f in range(files):
        body = [f"    const int64_t n_{f}_{k} = ctx->n[{k}] + {f * 1000 + k};" for k in range(340)]
        (tree / "src" / f"unit-{f}.c").write_text("\n".join([f"// unit {f}", "void f(void) {", *body, "}", ""]))
    subprocess.run(["git", "init", "--quiet", "--initial-branch=master"], cwd=tree, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tree, check=True)
    subprocess.run(["git", "commit", "--quiet", "-m", "a tree"], cwd=tree, env=GIT_ENV, check=True)
    return tree


def test_statement_sites_are_unique_indented_statements():
    lines = ["int x;", "    const int a = b + c;", "    return;", "    const int a = b + c;",
             "    const int64_t unique_one = 1;", "    // a comment that ends with a semicolon, long;"]
    assert statement_sites(lines) == [4, 5]


def test_git_am_refuses_exactly_the_rewritten_patches(tmp_path):
    repo, queue, lost = build(_tree(tmp_path, 8), tmp_path, 8)
    paths = [queue / n for n in (queue / "series").read_text().split()]
    assert len(paths) == 8 and lost == 5  # patches 0-4 of each eight: their first changed line rewritten
    for tag, refused in ((BASE, set()), (FAR, set(range(5)))):
        tree = tmp_path / f"am-{tag}"
        git(["worktree", "add", "--quiet", "--detach", str(tree), tag], repo)
        assert _am_skipping(tree, paths) == refused
