"""record and absorb look for a rebase in progress holding the loop lock, so that none starts
between the look and their work; a run the lock turns away is told whose run holds it."""

from __future__ import annotations

import signal

from record_helpers import fork, run
from test_interrupt import start, stop, wait_for


def test_nothing_else_of_the_loop_starts_once_record_is_past_its_guard_and_it_is_named(tmp_path):
    project = fork(tmp_path)
    record = start("record", cwd=project.root, pause="loop-guarded")  # no rebase found, nothing read yet
    try:
        wait_for(record, "paused at loop-guarded")
        for args in (["rebase", "upstream@HEAD"], ["absorb"], ["absorb", "--abort"]):
            refused = run(project, *args, code=2)
            assert f"`patchkit record` (pid {record.pid}) is running in {project.root}" in refused.stderr, refused.stderr
            assert "rebase, record and absorb run one at a time" in refused.stderr
    finally:
        stop(record, signal.SIGKILL)
    run(project, "record")  # no rebase started: record would refuse (exit 2)
