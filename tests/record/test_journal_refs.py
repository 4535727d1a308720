"""An interrupted absorb's journal moves the branch only from where it left it: a commit the user
made on the branch since is never moved away, by the next run nor by `--abort`; patchkit refuses
(one line, exit 2, what to do), and once the user did that, it finishes or undoes as usual."""

from __future__ import annotations

import re
import signal

from record_helpers import fork, git, run
from test_journal import absorb_edits, interrupt


def test_a_commit_made_on_the_branch_after_an_interruption_is_not_moved_away(tmp_path):
    project = fork(tmp_path)
    out = project.output_dir
    absorb_edits(project)
    interrupt(project, "absorb", "journal-refs", signal.SIGKILL)  # the files written, the branch not moved yet
    git("commit", "-q", "--allow-empty", "-m", "mine, made after the interruption", cwd=out)
    mine = git("rev-parse", "HEAD", cwd=out)
    branch = git("symbolic-ref", "HEAD", cwd=out)
    patches = {p.name: p.read_bytes() for p in project.patches_dir.iterdir()}

    for then in ("--abort",), ():  # undone, or finished
        refused = run(project, "absorb", *then, code=2)
        message = refused.stderr.strip()
        assert len(message.splitlines()) == 1, message
        assert f"{branch} moved since the `patchkit absorb` was interrupted: it is at {mine[:12]}" in message
        assert f"rerun `patchkit absorb{' --abort' if then else ''}`" in message
        assert git("rev-parse", "HEAD", cwd=out) == mine  # not moved away
        assert {p.name: p.read_bytes() for p in project.patches_dir.iterdir()} == patches  # nothing written
        assert (project.state_dir / "journal").exists()

    # What it says to do: keep the commit, put the branch back, rerun.
    for command in re.findall(r"\(git -C \S+ ((?:branch|update-ref) [^)]*)\)", message):
        git(*command.split(), cwd=out)
    run(project, "absorb")
    assert not (project.state_dir / "journal").exists()
    assert git("rev-parse", "refs/heads/keep-mine", cwd=out) == mine
