"""A patch upstream adopted is told whole (issue 25, item 4): when its other hunks are upstream's
already and the block a hunk adds stands a few lines off its place (upstream put the same test case
three lines above), that hunk is already-applied too, never merged in as a second copy. Where the
rest of the patch is not upstream's, a like block nearby proves nothing: the hunk is placed."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from conftest import git_identity, run_cli, write_project

from patchkit.git import git_env

CASES = [f"    cases.emplace_back(new test_{name}());\n" for name in ("sum", "mean", "argmax", "count", "pad", "norm")]
BLOCK = "    for (int n : {1, 7, 512}) {\n        cases.emplace_back(new test_top_k(n));\n    }\n"
FILLER = "".join(f"static int helper_{i}(int x) {{\n    return x * {i} + {i * 7};\n}}\n\n" for i in range(8))


def text(enum_top_k: bool, *blocks_after: str) -> str:
    cases = "".join(c + (BLOCK if any(c.startswith(f"    cases.emplace_back(new test_{name}(") for name in blocks_after)
                         else "") for c in CASES)
    return ("enum op {\n    OP_SUM,\n    OP_ARGSORT,\n" + ("    OP_ARGSORT_TOP_K,\n" if enum_top_k else "")
            + "    OP_COUNT,\n};\n\n" + FILLER + "static void make_cases(std::vector<test *> & cases) {\n" + cases + "}\n")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True,
                          env=git_env(git_identity())).stdout.strip()


def apply_at_head(tmp_path: Path, head: str, *base_blocks: str, index: bool = True) -> dict:
    """The patch made on a base whose blocks are after the cases BASE_BLOCKS, applied at HEAD;
    without its index lines unless INDEX (a hand-written queue's: no base is known)."""
    repo = tmp_path / "upstream"
    repo.mkdir()
    git(repo, "init", "--quiet", "-b", "master")
    (repo / "ops.cpp").write_text(text(False, *base_blocks))
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "base")
    git(repo, "checkout", "--quiet", "-b", "fork")
    (repo / "ops.cpp").write_text(text(True, *base_blocks, "count"))  # the patch: an enum value and a test case
    git(repo, "commit", "--quiet", "-am", "top-k")
    patch = Path(git(repo, "format-patch", "-1", "-o", str(tmp_path / "out")))
    if not index:
        patch.write_text(re.sub(r"(?m)^index .*\n", "", patch.read_text()))
    git(repo, "checkout", "--quiet", "master")
    (repo / "ops.cpp").write_text(head)
    git(repo, "commit", "--quiet", "-am", "upstream")
    fork = write_project(tmp_path / "fork", str(repo), [patch])
    done = run_cli("-q", "apply", "--no-check", "--json", str(fork / "r.json"), cwd=fork)
    assert done.returncode in (0, 1), done.stderr
    return json.loads((fork / "r.json").read_text())["patches"][0]


def test_an_adopted_patch_whose_test_case_stands_three_lines_above_is_already_applied(tmp_path):
    result = apply_at_head(tmp_path, text(True, "mean"))  # upstream took it, the block 3 lines above
    assert result["verdict"] == "already-applied"
    assert [h["verdict"] for h in result["hunks"]] == ["already-applied", "already-applied"]
    assert "upstream adopted it" in result["hunks"][1]["detail"]


def test_an_adopted_patch_without_index_lines_is_told_whole_by_upstreams_one_copy(tmp_path):
    # the block 5 lines above the place, clear of the context: the line steps place it, no merge needed
    result = apply_at_head(tmp_path, text(True, "sum"), index=False)
    assert result["verdict"] == "already-applied", result
    assert "upstream adopted it" in result["hunks"][1]["detail"]


def test_a_like_block_nearby_is_no_adoption_while_the_rest_is_not_upstreams(tmp_path):
    result = apply_at_head(tmp_path, text(False, "mean"))  # the enum value is not upstream's
    assert result["verdict"] not in ("already-applied", "partially-applied")
    assert result["hunks"][1]["verdict"] != "already-applied"


def test_a_block_the_base_already_had_beside_the_place_is_no_adoption(tmp_path):
    # the base has the block after `mean` already; upstream took only the enum value: the patch's
    # own copy after `count` is still to add, not upstream's
    result = apply_at_head(tmp_path, text(True, "mean"), "mean")
    assert result["hunks"][0]["verdict"] == "already-applied"
    assert result["hunks"][1]["verdict"] in ("clean", "offset", "merged"), result["hunks"][1]


def test_a_patch_with_a_binary_file_beside_a_change_upstream_has_is_judged_not_crashed(tmp_path):
    repo = tmp_path / "upstream"
    repo.mkdir()
    git(repo, "init", "--quiet", "-b", "master")
    (repo / "a.c").write_text("int f(void)\n{\n    return 1;\n}\n")
    (repo / "img.bin").write_bytes(b"\x00\x01binary\x00")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "base")
    git(repo, "checkout", "--quiet", "-b", "fork")
    (repo / "a.c").write_text("int f(void)\n{\n    return 2;\n}\n")
    (repo / "img.bin").write_bytes(b"\x00\x01binary2\x00")
    git(repo, "commit", "--quiet", "-am", "both")
    patch = Path(git(repo, "format-patch", "--binary", "-1", "-o", str(tmp_path / "out")))
    git(repo, "checkout", "--quiet", "master")
    (repo / "a.c").write_text("int f(void)\n{\n    return 2;\n}\n")  # upstream made the text change
    git(repo, "commit", "--quiet", "-am", "upstream")
    fork = write_project(tmp_path / "fork", str(repo), [patch])
    done = run_cli("-q", "apply", "--no-check", "--json", str(fork / "r.json"), cwd=fork)
    assert done.returncode == 1 and "internal error" not in done.stderr, done.stderr
    result = json.loads((fork / "r.json").read_text())["patches"][0]
    assert result["verdict"] == "partially-applied"
    assert [h["verdict"] for h in result["hunks"]] == ["already-applied", "clean"]
