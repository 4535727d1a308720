"""Semantic drift on a synthetic history with one commit per class: each relied-on declaration
that changed is named with the commit that changed it, and nothing else is."""

from __future__ import annotations

import pytest
from conftest import write_project
from drift_history import build

from patchkit.drift import find_drift
from patchkit.pipeline import ApplyOptions, run_apply
from patchkit.project import Project
from patchkit.queue import Queue
from patchkit.upstream import Mirror


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return build(tmp_path_factory.mktemp("drift"))


def drift_of(tmp_path, history, patch=None):
    project = Project.load(write_project(tmp_path / "fork", str(history.path), [patch or history.patch]))
    report = run_apply(project, ApplyOptions(spec=f"upstream@{history.target}", check=False))
    assert report.passed, report.patches
    mirror = Mirror.open(project)
    with mirror.locked():
        return find_drift(mirror, Queue.load(project).patches, report.patches, history.lock, history.target)


def test_each_class_is_named_with_its_commit_and_nothing_else(tmp_path, history):
    found = {d.kind: d for d in drift_of(tmp_path, history)}
    assert sorted(found) == ["default-argument", "enumerator", "macro", "members", "parameter-type"]
    expected = {"members": "members", "enumerator": "enum", "macro": "macro", "default-argument": "default",
                "parameter-type": "parameter"}
    for kind, change in expected.items():
        assert found[kind].culprit.commit == history.commits[change], kind
        assert not found[kind].reviewed
    members = found["members"]
    assert members.entity == "input_text" and members.declared_in == "include/lib.h"
    assert members.before == "text, add_special, parse_special"
    assert members.after == "text, text_len, add_special, parse_special"
    assert members.lines == ("src/app.cpp:5",)
    assert members.culprit.subject == "lib : pass the text's length (#101)" and members.culprit.pull == 101
    assert found["enumerator"].entity == "mode"
    assert found["enumerator"].before.endswith("(MODE_B = 1)") and found["enumerator"].after.endswith("(MODE_B = 2)")
    assert (found["macro"].before, found["macro"].after) == ("#define MAX_TOKENS 16", "#define MAX_TOKENS 32")
    assert (found["default-argument"].entity, found["default-argument"].before,
            found["default-argument"].after) == ("tokenize", "n_max = 8", "n_max = 64")
    assert (found["parameter-type"].entity, found["parameter-type"].before,
            found["parameter-type"].after) == ("resize", "int n", "size_t n")
    # The search reads the header at a few commits, not at each of the ten.
    assert all(d.probes <= 4 and d.candidates == 7 for d in found.values())


def test_nothing_is_flagged_when_nothing_the_patch_relies_on_changed(tmp_path, history):
    """Between two commits after every change, the patch's reliances read the same."""
    from patchkit import git

    project = Project.load(write_project(tmp_path / "fork", str(history.path), [history.patch]))
    report = run_apply(project, ApplyOptions(spec=f"upstream@{history.target}", check=False))
    mirror = Mirror.open(project)
    body = history.commits["body"]
    with mirror.locked():
        assert find_drift(mirror, Queue.load(project).patches, report.patches, body, history.target) == ()
        # Only the body of `twice` changed between these two: no finding.
        before_body = git.run(["rev-parse", f"{body}^"], cwd=history.path)
        assert find_drift(mirror, Queue.load(project).patches, report.patches, before_body, body) == ()


def test_the_patch_s_own_declarations_are_not_upstream_s(tmp_path):
    """A struct the patch declares itself and initialises by position is the patch's business."""
    own = ("struct mine {\n        int x;\n        int y;\n    };\n    mine m{1, 2};\n"
           "    input_text * t = new input_text{.text = text};\n")
    history = build(tmp_path / "own", added=own)
    assert drift_of(tmp_path, history) == ()
