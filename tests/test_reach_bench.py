"""The reach benchmark's ground truth and scoring on a tiny history, so that it cannot silently rot:
a patch git am -3 places right scores right, a patch whose function became twins has no right
place and GNU patch's placement of it scores wrong, and the truth follows a renamed file. Issue
25's shapes: patchkit places none wrong (with and without --fuzz 2), each has the place git am -3
or GNU patch finds, and each trap fools one of them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import reach_bench
from reach_bench import Placement, score
from reach_shapes import BASE, HEAD, build_shapes
from reach_upstream import build_reach_upstream


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_reach_upstream(tmp_path_factory.mktemp("reach") / "upstream", files=120, commits=40, patches=0.5)


def test_scoring_needs_the_exact_files():
    expected = {"src/a.cpp": "int a = 1;\n"}
    assert score(expected, Placement(dict(expected))) == "right"
    assert score(expected, Placement({"src/a.cpp": "int a = 2;\n"})) == "wrong"
    assert score(expected, Placement({**expected, "src/b.cpp": "\n"})) == "wrong"
    assert score(expected, Placement(None, "conflict")) == "refused"
    assert score(None, Placement(dict(expected))) == "wrong"  # no right place: placing it is wrong
    assert score(None, Placement(None)) == "refused"


def test_git_am_places_a_plain_patch_right_at_its_base(tiny, tmp_path):
    fp = next(q for q in tiny.queues if q.style == "format-patch")
    patch = next(p for p in fp.patches if p.fate == "none" and not p.form)
    placed = reach_bench.git_am(tiny.repo, [fp.folder / patch.name], fp.base, tmp_path / "am")
    assert placed[patch.name].changed == tiny.expected[(fp.name, patch.name, fp.base)]
    assert score(tiny.expected[(fp.name, patch.name, fp.base)], placed[patch.name]) == "right"


def test_a_function_that_became_twins_has_no_right_place_and_gnu_patch_takes_a_twin(tiny, tmp_path):
    queue = next(q for q in tiny.queues if q.style == "format-patch")
    last = queue.points[-1]
    twins = [p for p in queue.patches if p.fate in ("split-twins", "twin-slide") and not p.form
             and tiny.expected[(queue.name, p.name, last)] is None]
    assert twins and all(tiny.expected[(queue.name, p.name, queue.base)] for p in twins)  # a place at the base
    scratch = tmp_path / "scratch"
    subprocess.run(["git", "worktree", "add", "--quiet", "--detach", str(scratch), last],
                   cwd=tiny.repo, check=True, capture_output=True)
    placed = reach_bench.gnu_patch(scratch, [queue.folder / p.name for p in twins], 2)
    taken = [name for name, placement in placed.items() if placement.changed is not None]
    assert taken  # the twin's text matches: a naive tool takes it ...
    assert {score(None, placed[name]) for name in taken} == {"wrong"}  # ... and that counts as wrong


def test_the_right_result_follows_a_renamed_file(tiny):
    queue, patch = next((q, p) for q in tiny.queues for p in q.patches if p.fate == "renamed-file"
                        and tiny.expected[(q.name, p.name, q.points[-1])] is not None)
    before = tiny.expected[(queue.name, patch.name, queue.base)]
    after = tiny.expected[(queue.name, patch.name, queue.points[-1])]
    assert any(path.endswith(f"-impl.{path.rsplit('.', 1)[-1]}") for path in after)
    assert set(before) != set(after)
    assert all(path in (queue.folder / patch.name).read_text() for path in before)


# --- issue 25's shapes ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    root = tmp_path_factory.mktemp("shapes")
    up = build_shapes(root / "upstream")
    return up, reach_bench.measure_shapes(up, root)


def _outcomes(results, shape: str, point: str) -> dict[str, str]:
    return {r.tool: r.outcome for r in results if r.patch == shape and r.point == point}


def test_patchkit_places_no_shape_wrong(shapes):
    _, results = shapes
    wrong = [(r.tool, r.patch, r.point) for r in results if r.tool.startswith("patchkit") and r.outcome == "wrong"]
    assert not wrong


def test_each_shape_is_placed_right_by_git_am_or_gnu_patch(shapes):
    """The fixtures are what issue 25 says: a place git am -3 or patch -F2 finds, at the base and at the
    head (a trap has none there; where upstream adopted the patch, the right result is to change nothing)."""
    up, results = shapes
    for shape in up.shapes:
        for point in (BASE, HEAD) if shape.expected(HEAD) else (BASE,):
            outcomes = _outcomes(results, shape.name, point)
            assert "right" in (outcomes["git am -3"], outcomes["patch -F2"]), (shape.name, point, outcomes)


def test_each_trap_fools_git_am_or_gnu_patch(shapes):
    """A trap has no right place at the head, and a tool that only matches text places it there."""
    up, results = shapes
    traps = [s for s in up.shapes if s.trap]
    assert len(traps) >= 3
    for shape in traps:
        assert shape.expected(HEAD) is None
        assert "wrong" in _outcomes(results, shape.name, HEAD).values(), shape.name


def test_an_adopted_patch_changes_nothing_and_git_am_merges_a_second_copy(shapes):
    up, results = shapes
    adopted = next(s for s in up.shapes if s.name == "adopted")
    assert adopted.expected(HEAD) == {}
    assert _outcomes(results, "adopted", HEAD)["git am -3"] == "wrong"
