"""The synthetic upstreams: the pre-image where the patch says, one property per scenario branch,
expected texts that real git agrees with, determinism, and the bulk benchmark queue."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import tree_sitter
import tree_sitter_cpp
from unidiff import PatchSet

from bulk_upstream import build_bulk_upstream
from conftest import seed_patch_path
from patchkit.fixture import RENAMED_CONTEXT, SCENARIOS, SERVER_CONTEXT, FixtureUpstream, build_upstream
from patchkit.errors import PatchkitError
from patchkit.git import git_env


PATCH = seed_patch_path()
HUNKS = list(next(f for f in PatchSet(PATCH.read_text()) if f.path == SERVER_CONTEXT))


def pre(hunk) -> list[str]:
    return [ln.value.removesuffix("\n") for ln in hunk if not ln.is_added]


def post(hunk) -> list[str]:
    return [ln.value.removesuffix("\n") for ln in hunk if not ln.is_removed]


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@invalid", *args],
                          cwd=cwd, env=git_env(), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc


def show(up: FixtureUpstream, ref: str, path: str = SERVER_CONTEXT) -> str:
    return git(up.path, "show", f"{ref}:{path}").stdout


def worktree(up: FixtureUpstream, ref: str, tmp_path: Path) -> Path:
    wt = tmp_path / "wt"
    git(up.path, "worktree", "add", "--quiet", "--detach", str(wt), ref)
    return wt


def offsets(apply_output: str) -> list[int]:
    return [int(n) for n in re.findall(r"\(offset (-?\d+) lines?\)", apply_output)]


def merge(ours: str, base: str, theirs: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    names = []
    for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
        (tmp_path / name).write_text(text)
        names.append(name)
    return git(tmp_path, "merge-file", "-p", *names, check=False)


@pytest.fixture(scope="session")
def up(upstream: FixtureUpstream) -> FixtureUpstream:
    return upstream


def test_scenarios_and_history(up: FixtureUpstream) -> None:
    assert list(up.scenarios) == [s.name for s in SCENARIOS]
    for s in SCENARIOS:
        assert git(up.path, "rev-parse", "--verify", "--quiet", f"{s.ref}^{{commit}}").stdout
        if s.ref.startswith("scenario/"):
            assert git(up.path, "merge-base", s.ref, "b1000").stdout.strip() == up.base_commit
    chain = git(up.path, "rev-list", "--first-parent", "master").stdout.split()
    tags = [git(up.path, "rev-parse", f"b100{i}^{{commit}}").stdout.strip() for i in range(4)]
    assert chain == tags[::-1] and tags[0] == up.base_commit
    changed = [git(up.path, "diff", "--name-only", f"b100{i}", f"b100{i + 1}").stdout.split()
               for i in range(3)]
    assert changed == [["tools/server/server-common.cpp"], [SERVER_CONTEXT], ["CMakeLists.txt"]]
    tree = git(up.path, "ls-tree", "-r", "--name-only", "b1000").stdout.split()
    assert {"CMakeLists.txt", "README.md", "include/llama.h", "tools/server/CMakeLists.txt",
            "tools/server/server-common.cpp", ".gitignore", SERVER_CONTEXT} == set(tree)
    assert git(up.path, "symbolic-ref", "HEAD").stdout.strip() == "refs/heads/master"
    with pytest.raises(KeyError):
        up.expected_patched("no-such-scenario")


def test_pre_image_at_the_recorded_lines(up: FixtureUpstream) -> None:
    lines = show(up, "b1000").split("\n")
    assert 4000 <= len(lines) <= 4300
    assert [h.source_start for h in HUNKS] == [255, 3020, 3059, 3078, 3090, 3942]
    for h in HUNKS:
        assert lines[h.source_start - 1:h.source_start - 1 + len(pre(h))] == pre(h)


def test_patch_applies_to_base_exactly_and_gives_the_expected_text(up, tmp_path) -> None:
    wt = worktree(up, "b1000", tmp_path)
    check = git(wt, "apply", "--check", "-v", str(PATCH))
    assert "offset" not in check.stderr + check.stdout and "fuzz" not in check.stderr
    git(wt, "apply", str(PATCH))
    assert (wt / SERVER_CONTEXT).read_text() == up.expected_patched("base")
    # git's own diff of the construction reproduces the patch's hunks, headers included
    ours = git(wt, "diff").stdout
    theirs = PATCH.read_text().split("\n-- \n")[0]
    assert ours[ours.index("@@ "):] == theirs[theirs.index("@@ "):] + "\n"


def checkpoint_calls(text: str) -> list[str]:
    """Receiver of each update_tgt/update_dft/load_tgt/load_dft call, found by a C++ parse."""
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_cpp.language()))
    root = parser.parse(text.encode()).root_node
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        fn = node.child_by_field_name("function") if node.type == "call_expression" else None
        if fn is not None and fn.type == "field_expression":
            name, receiver = fn.child_by_field_name("field"), fn.child_by_field_name("argument")
            assert name is not None and name.text is not None
            assert receiver is not None and receiver.text is not None
            if name.text.decode() in {"update_tgt", "update_dft", "load_tgt", "load_dft"}:
                found.append(receiver.text.decode())
    return found


def test_every_variant_parses_as_cpp(up: FixtureUpstream) -> None:
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_cpp.language()))
    texts = [show(up, s.ref, s.path) for s in SCENARIOS]
    texts += [t for t in map(up.expected_patched, up.scenarios) if t is not None]
    for text in texts:
        assert not parser.parse(text.encode()).root_node.has_error


def test_six_speculative_and_four_prompt_cache_calls(up: FixtureUpstream) -> None:
    receivers = sorted(checkpoint_calls(show(up, "b1000")))
    assert receivers == sorted(["ckpt"] * 5 + ["slot.spec_ckpt"] + ["cur"] * 2 + ["it"] * 2)
    patched = up.expected_patched("base")
    assert patched is not None and patched.count("slot.spec_ckpt_flags);") == 6
    assert patched.count("LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);") == 4


def test_filler_never_repeats_a_hunk_context(up: FixtureUpstream) -> None:
    text = "\n" + show(up, "b1000")
    for h in HUNKS:
        lines = pre(h)
        for i in range(len(lines) - 2):
            window = "\n" + "\n".join(lines[i:i + 3]) + "\n"
            assert text.count(window) == 1, (h.source_start, lines[i:i + 3])


@pytest.mark.parametrize("scenario", ["master", "offset"])
def test_offset_scenarios_need_an_offset_for_every_hunk(up, tmp_path, scenario) -> None:
    wt = worktree(up, up.scenarios[scenario].ref, tmp_path)
    found = offsets(git(wt, "apply", "--check", "-v", str(PATCH)).stderr)
    assert len(found) == 6 and all(n > 0 for n in found)
    if scenario == "offset":
        assert len(set(found)) == 3
    git(wt, "apply", str(PATCH))
    assert (wt / SERVER_CONTEXT).read_text() == up.expected_patched(scenario)


def test_ambiguous_has_two_copies_of_hunk_6_and_none_at_its_site(up: FixtureUpstream) -> None:
    h = HUNKS[5]
    text = show(up, up.scenarios["ambiguous"].ref)
    assert text.count("\n".join(pre(h)) + "\n") == 2
    lines = text.split("\n")
    assert lines[h.source_start - 1:h.source_start - 1 + len(pre(h))] != pre(h)
    assert up.expected_patched("ambiguous") is None


@pytest.mark.parametrize("scenario", ["merged", "members-added"])
def test_three_way_merge_resolves(up, tmp_path, scenario) -> None:
    wt = worktree(up, up.scenarios[scenario].ref, tmp_path)
    assert git(wt, "apply", "--check", str(PATCH), check=False).returncode != 0
    result = merge(show(up, up.scenarios[scenario].ref), show(up, "b1000"),
                   up.expected_patched("base"), tmp_path)
    assert result.returncode == 0 and result.stdout == up.expected_patched(scenario)
    if scenario == "members-added":  # less context (like fuzz 2) still finds the right place
        git(wt, "apply", "-C1", str(PATCH))
        assert (wt / SERVER_CONTEXT).read_text() == up.expected_patched(scenario)


def test_conflict_changes_the_removed_line(up, tmp_path) -> None:
    wt = worktree(up, up.scenarios["conflict"].ref, tmp_path)
    assert git(wt, "apply", "--check", str(PATCH), check=False).returncode != 0
    result = merge(show(up, "scenario/conflict"), show(up, "b1000"), up.expected_patched("base"),
                   tmp_path)
    assert result.returncode == 1 and "LLAMA_STATE_SEQ_FLAGS_NO_SYNC" in result.stdout
    assert up.expected_patched("conflict") is None


def test_already_and_partially_applied(up, tmp_path) -> None:
    full = up.expected_patched("base")
    assert show(up, "scenario/already-applied") == full == up.expected_patched("already-applied")
    assert up.expected_patched("partially-applied") == full
    lines = show(up, "scenario/partially-applied").split("\n")
    for i, h in enumerate(HUNKS):  # hunk k sits where the patched file has it
        want = post(h) if i < 3 else pre(h)
        assert lines[h.target_start - 1:h.target_start - 1 + len(want)] == want
    wt = worktree(up, "scenario/already-applied", tmp_path)
    git(wt, "apply", "--check", "--reverse", str(PATCH))


def test_renamed_is_found_by_rename_detection(up: FixtureUpstream) -> None:
    s = up.scenarios["renamed"]
    assert s.path == RENAMED_CONTEXT
    status = git(up.path, "diff", "-M", "--name-status", "b1000", s.ref).stdout
    assert f"R100\t{SERVER_CONTEXT}\t{RENAMED_CONTEXT}" in status
    assert show(up, s.ref, RENAMED_CONTEXT) == show(up, "b1000")
    assert up.expected_patched("renamed") == up.expected_patched("base")


def test_refuses_a_used_directory_and_a_foreign_patch(tmp_path) -> None:
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "file").write_text("x")
    with pytest.raises(PatchkitError, match="not empty"):
        build_upstream(tmp_path / "used", PATCH)
    one_hunk = PATCH.read_text().split("\n@@ -3020")[0] + "\n"
    with pytest.raises(PatchkitError, match="6 hunks"):
        build_upstream(tmp_path / "new", one_hunk)


def test_builds_are_deterministic_from_path_or_text(up, tmp_path) -> None:
    again = build_upstream(tmp_path / "again", PATCH.read_text())
    assert again.base_commit == up.base_commit
    assert git(again.path, "show-ref").stdout == git(up.path, "show-ref").stdout


# --- the bulk benchmark upstream --------------------------------------------------------------

@pytest.fixture(scope="session")
def bulk(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    root = tmp_path_factory.mktemp("bulk")
    return root / "upstream", build_bulk_upstream(root / "upstream")


def test_bulk_queue_shape(bulk) -> None:
    repo, patches = bulk
    assert len(patches) == 40 and len(git(repo, "ls-files").stdout.split()) == 1500
    series = (patches[0].parent / "series").read_text().split()
    assert series == [p.name for p in patches]
    seen: set[str] = set()
    for p in patches:
        text = p.read_text()
        assert text.startswith("From ") and "\nSubject: [PATCH " in text and "\nindex " in text
        files = list(PatchSet(text))
        assert 1 <= len(files) <= 3 and all(1 <= len(f) <= 3 for f in files)
        assert not seen & {f.path for f in files}
        seen |= {f.path for f in files}


def test_bulk_patches_are_exact_on_base_and_offset_on_head(bulk, tmp_path) -> None:
    repo, patches = bulk
    n_hunks = sum(len(f) for p in patches for f in PatchSet(p.read_text()))
    wt = tmp_path / "base"
    git(repo, "worktree", "add", "--quiet", "--detach", str(wt), "base")
    assert offsets(git(wt, "apply", "--check", "-v", *map(str, patches)).stderr) == []
    head = git(repo, "apply", "--check", "-v", *map(str, patches)).stderr
    assert len(offsets(head)) == n_hunks and all(n > 0 for n in offsets(head))


def test_bulk_patches_apply_with_git_am_3way(bulk, tmp_path) -> None:
    repo, patches = bulk
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", str(repo), str(clone))
    git(clone, "am", "--quiet", "-3", *map(str, patches))
    assert int(git(clone, "rev-list", "--count", "HEAD").stdout) == 2 + len(patches)


def test_bulk_is_deterministic(tmp_path) -> None:
    runs = [build_bulk_upstream(tmp_path / f"r{i}" / "up", n_files=60, n_patches=5) for i in (1, 2)]
    assert [p.read_bytes() for p in runs[0]] == [p.read_bytes() for p in runs[1]]
    refs = [git(tmp_path / f"r{i}" / "up", "show-ref").stdout for i in (1, 2)]
    assert refs[0] == refs[1]
