"""`record` and `absorb` write through one journal: stopped (SIGKILL, Ctrl-C) at every step that
writes, the next run finishes with the same names and bytes as an uninterrupted run, and
`--abort` gives back everything as it was before, byte for byte."""

from __future__ import annotations

import signal

import pytest

from record_helpers import amend_commit, cli, edit, fork, git, run, snapshot
from test_interrupt import start, stop, wait_for

POINTS = ["journal-plan", "journal-files", "journal-notes", "journal-refs", "journal-done"]


def record_edits(project) -> None:
    """An amended patch and a new commit: an edited and a new patch file, the series, the lock."""
    out = project.output_dir
    amend_commit(out, 2, lambda: edit(out, "src/b.c", 11, "int b11 = 1100;\n"))
    edit(out, "src/b.c", 20, "int b20 = 2000;\n")
    git("commit", "-q", "-am", "b : set b20", cwd=out)


def absorb_edits(project) -> None:
    edit(project.output_dir, "src/a.c", 5, "int a5 = 501;\n")
    edit(project.output_dir, "src/b.c", 11, "int b11 = 1100;\n")


EDITS = {"record": record_edits, "absorb": absorb_edits}


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """What each command gives uninterrupted (patches/ and the lock's tree)."""
    out = {}
    for command, edits in EDITS.items():
        project = fork(tmp_path_factory.mktemp(command))
        edits(project)
        run(project, command)
        out[command] = written(project)
    return out


def written(project) -> dict[str, object]:
    files = {p.name: p.read_bytes() for p in sorted(project.patches_dir.iterdir())}
    out = project.output_dir
    return {"files": files, "tree": project.lock().tree, "head": git("rev-parse", "HEAD^{tree}", cwd=out),
            "status": git("status", "--porcelain", cwd=out),
            "notes": git("log", "--format=%N", "--notes=patchkit", "refs/patchkit/upstream..HEAD", cwd=out)}


def interrupt(project, command: str, point: str, sig: signal.Signals) -> None:
    proc = start(command, cwd=project.root, pause=point)
    wait_for(proc, f"paused at {point}")
    stop(proc, sig)


CASES = [(c, p) for c in EDITS for p in POINTS + (["journal-reset"] if c == "absorb" else [])]


@pytest.mark.parametrize("command,point", CASES)
def test_stopped_at_each_write_abort_undoes_and_the_next_run_finishes(tmp_path, clean, command, point):
    project = fork(tmp_path)
    EDITS[command](project)
    before = snapshot(project)
    interrupt(project, command, point, signal.SIGKILL)
    refused = run(project, "apply", "upstream@locked", code=2)
    assert f"`patchkit {command}` was interrupted while writing" in refused.stderr
    run(project, command, "--abort")
    assert snapshot(project) == before
    interrupt(project, command, point, signal.SIGINT)  # Ctrl-C
    run(project, command)
    assert written(project) == clean[command]
    assert not (project.state_dir / "journal").exists()


def test_what_a_kill_in_the_middle_of_a_write_leaves_is_cleared(tmp_path, clean):
    project = fork(tmp_path)
    absorb_edits(project)
    (project.patches_dir / ".one.patch.swp").write_bytes(b"an editor's, not a leftover")
    before = snapshot(project)
    interrupt(project, "absorb", "journal-reset", signal.SIGKILL)
    # as a git reset and an atomic write killed half way leave them
    (project.output_dir / ".git" / "index.lock").write_bytes(b"")
    (project.patches_dir / ".one.patch.x1y2z3ab").write_bytes(b"half")
    run(project, "absorb", "--abort")
    assert snapshot(project) == before
    interrupt(project, "absorb", "journal-reset", signal.SIGKILL)
    (project.output_dir / ".git" / "index.lock").write_bytes(b"")
    run(project, "absorb")
    (project.patches_dir / ".one.patch.swp").unlink()  # kept through both: the user's own
    assert written(project) == clean["absorb"]
