"""`Reviewed-Drift: <entity> <commit>` silences a finding until the entity changes again."""

from __future__ import annotations

import subprocess

from drift_history import CHANGES, build
from test_drift_history import drift_of


def reviewed(patch, tmp_path, *trailers: str):
    """PATCH with TRAILERS at the end of its message."""
    text = patch.read_text()
    head, sep, rest = text.partition("\n---\n")
    out = tmp_path / "reviewed" / patch.name
    out.parent.mkdir()
    out.write_text(head + "\n\n" + "".join(f"{t}\n" for t in trailers).rstrip("\n") + sep + rest)
    return out


def test_a_reviewed_change_is_kept_as_reviewed_and_the_others_are_findings(tmp_path):
    history = build(tmp_path / "h")
    members = history.commits["members"]
    patch = reviewed(history.patch, tmp_path, f"Reviewed-Drift: input_text {members[:8]}",
                     f"Reviewed-Drift: mode {history.commits['macro'][:8]}")  # another commit: no silence
    found = {d.kind: d for d in drift_of(tmp_path, history, patch)}
    assert found["members"].reviewed and found["members"].culprit.commit == members
    assert [k for k, d in found.items() if not d.reviewed] == ["enumerator", "macro", "default-argument",
                                                                "parameter-type"]


def test_a_later_change_of_a_reviewed_entity_is_a_finding_naming_the_later_commit(tmp_path):
    again = ("members-again", "lib : count the text's tokens too (#111)",
             "    size_t text_len;\n", "    size_t text_len;\n    size_t n_tokens;\n")
    history = build(tmp_path / "h", changes=CHANGES + (again,))
    patch = reviewed(history.patch, tmp_path, f"Reviewed-Drift: input_text {history.commits['members'][:10]}")
    (members,) = [d for d in drift_of(tmp_path, history, patch) if d.kind == "members"]
    assert not members.reviewed
    assert members.culprit.commit == history.commits["members-again"]
    assert members.before == "text, text_len, add_special, parse_special"
    assert members.after == "text, text_len, n_tokens, add_special, parse_special"


def test_a_drift_with_no_commit_to_name_says_how_to_silence_it_and_the_lock_s_commit_does(tmp_path):
    """The lock is not an ancestor of the target (upstream rewound): no commit can be named; the
    finding says which trailer silences it, with the lock's commit, and that trailer does."""
    from conftest import write_project

    from patchkit.drift import find_drift
    from patchkit.pipeline import ApplyOptions, run_apply
    from patchkit.project import Project
    from patchkit.queue import Queue
    from patchkit.upstream import Mirror

    history = build(tmp_path / "h", changes=CHANGES[:1])
    # The lock as a rewound upstream leaves it: a commit beside the target's history.
    git = ["git", "-C", str(history.path), "-c", "user.name=U", "-c", "user.email=u@x.invalid"]
    subprocess.run([*git, "checkout", "-q", "-b", "rewound", history.lock], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "lib : the lock, before a force-push"], check=True)
    lock = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run([*git, "checkout", "-q", "master"], check=True)

    def found(patch, name):
        project = Project.load(write_project(tmp_path / name, str(history.path), [patch]))
        report = run_apply(project, ApplyOptions(spec=f"upstream@{history.target}", check=False))
        mirror = Mirror.open(project)
        with mirror.locked():
            (d,) = find_drift(mirror, Queue.load(project).patches, report.patches, lock, history.target)
        return d

    d = found(history.patch, "fork")
    assert d.culprit is None and not d.reviewed
    assert f"`Reviewed-Drift: input_text {lock[:8]}` (the lock's commit)" in d.detail
    assert found(reviewed(history.patch, tmp_path, f"Reviewed-Drift: input_text {lock[:8]}"), "fork2").reviewed
