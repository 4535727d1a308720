"""`patchkit import --repair`: the web copy of the on-device patch (newlines collapsed, <...>
stripped) rebuilt against upstream into a queue entry with the clean patch's effect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO, apply, assert_matches_schema, run_cli, seed_patch_path, write_project
from import_helpers import git, patches_state, seed_web_copy, series, work_clone

from patchkit.project import Project

AUTHOR = "Mike Lothian <mike@fireburn.co.uk>"
NAME = seed_patch_path().name
SUBJECT = "server : keep speculative checkpoints on device"


def init_fork(tmp_path: Path, upstream) -> tuple[Path, dict[str, str]]:
    """A fork made by `patchkit init` (empty queue) whose upstream is the fixture's."""
    root = tmp_path / "fork"
    root.mkdir()
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = run_cli("init", "--upstream", str(upstream.path), cwd=root, env=env)
    assert result.returncode == 0, result.stderr
    return root, env


def applied_tree(tmp_path: Path, upstream, ref: str) -> str:
    """The tree the clean patch gives at REF."""
    clean = Project.load(write_project(tmp_path / f"clean-{ref}", str(upstream.path)))
    report = apply(clean, ref, output=tmp_path / f"clean-{ref}-out")
    assert [p.verdict.value for p in report.patches] in (["clean"], ["offset"])
    return report.tree


@pytest.mark.parametrize("at", ["b1000", None])
def test_the_web_copy_repairs_into_the_clean_patchs_effect(tmp_path, upstream, at):
    root, env = init_fork(tmp_path, upstream)
    web = tmp_path / "web-copy-of-the-patch.txt"
    web.write_text(seed_web_copy())
    report = tmp_path / "import.json"
    result = run_cli("import", "--repair", str(web), "--author", AUTHOR, *(["--at", f"upstream@{at}"] if at else []),
                     "--json", str(report), cwd=root, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(report.read_text())
    assert_matches_schema(data)
    [entry] = data["entries"]
    assert (entry["name"], entry["verdict"], entry["author"]) == (NAME, "clean", AUTHOR)
    assert entry["date"] == "Sun, 27 Sep 2026 15:06:40 +0100" and not entry["date_set"]
    assert len(entry["repairs"]) == 6 and all(r["file"] == "tools/server/server-context.cpp" for r in entry["repairs"])
    assert [r["index"] for r in entry["repairs"]] == [1, 2, 3, 4, 5, 6]
    assert "repaired hunk 1" in result.stdout
    assert series(root) == [NAME]

    # The queue entry applies clean where it was repaired, with exactly the clean patch's post-image.
    ref = at or "master"
    out = tmp_path / "out"
    applied = run_cli("apply", f"upstream@{ref}", "--no-fetch", "-o", str(out), "--json", str(tmp_path / "a.json"),
                      cwd=root, env=env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    apply_data = json.loads((tmp_path / "a.json").read_text())
    assert [p["verdict"] for p in apply_data["patches"]] == ["clean"]
    assert apply_data["tree"] == applied_tree(tmp_path, upstream, ref)
    expected = upstream.expected_patched("base" if ref == "b1000" else "master")
    assert (out / "tools/server/server-context.cpp").read_text() == expected


def test_a_stripped_email_is_asked_for_not_guessed(tmp_path, upstream):
    root, env = init_fork(tmp_path, upstream)
    web = tmp_path / "web.txt"
    web.write_text(seed_web_copy())
    before = patches_state(root)
    result = run_cli("import", "--repair", str(web), "--at", "upstream@b1000", cwd=root, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.splitlines()[-1].startswith("patchkit: error: ") and "--author" in result.stderr
    assert patches_state(root) == before


def test_a_hunk_whose_place_is_not_unique_is_refused(tmp_path, upstream):
    """Hunk 2's pre-image, copied into another function upstream: two candidate places."""
    repo = work_clone(tmp_path, upstream)
    path = repo / "tools/server/server-context.cpp"
    lines = path.read_text().splitlines(keepends=True)
    hunk = lines[3019:3026]  # the pre-image of hunk 2 (@@ -3020,7): seven lines
    assert "slot.spec_ckpt.update_dft" in "".join(hunk)
    path.write_text("".join(lines) + "\nstatic void twin_of_hunk_two() {\n" + "".join(hunk) + "}\n")
    git("commit", "--quiet", "-am", "server : a twin of hunk 2's lines", cwd=repo)
    git("tag", "twin", cwd=repo)
    root, env = init_fork(tmp_path, upstream)
    web = tmp_path / "web.txt"
    web.write_text(seed_web_copy())
    before = patches_state(root)
    result = run_cli("import", "--repair", str(web), "--author", AUTHOR, "--subject", SUBJECT, "--upstream", str(repo),
                     "--at", "upstream@twin", cwd=root, env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "hunk 2" in result.stderr and str(web) in result.stderr
    assert patches_state(root) == before


def test_the_web_copy_made_here_is_the_seed():
    """The tests' web copy is byte for byte the one in ../shared/seeds, where that is at hand."""
    seed = REPO.parent / "shared" / "seeds" / "web-copy-of-the-patch.txt"
    if not seed.exists():
        pytest.skip("../shared/seeds is not beside this clone")
    assert seed_web_copy() == seed.read_text()
