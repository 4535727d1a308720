"""Test-only: stop the process at a named point so a test can interrupt it exactly there.

`PATCHKIT_TEST_PAUSE=<point>` makes `pause(point)` print `patchkit: paused at <point>` to
standard error and sleep until a signal ends it. Unset (always, outside tests) it does nothing.
The points: `start` (the CLI's first step, nothing imported yet), `commands` (typer and the
commands imported, the command line not yet parsed), `fetch` (at git's first progress line of the
mirror fetch), `fast-import` (the result written to the mirror), `clone` (the output cloned aside,
not yet in place), `checkout` (just before it), `record` (before the bases and the lock are
written), `night-write` (a good night's refreshed patches written, its lock not yet, its reports
staged), `import-write` (an imported patch file written, the series not yet), the journal's of
record and absorb (`journal-plan`: the plan saved, nothing written yet; `journal-files`: half the
files written; `journal-notes`: the files written, the notes not yet; `journal-refs`: the notes
written, the refs not yet; `journal-reset`: absorb's branch moved, the index not yet;
`journal-done`: all written, the journal not yet removed; `loop-guarded`: the loop lock held and
no rebase found in progress, nothing read yet), and the rebase's: `rebase-stop` (the stopped
patch written into the checkout, the state not yet saying so), `rebase-fixed` (a fixed patch file
written, the state not yet moved on) and `rebase-abort` (the checkout restored, patches/ and the
lock not yet).

`PATCHKIT_TEST_KILL_AT=<n>` makes the process SIGKILL itself just before its n-th git call
(`git_call`), for the sweep that interrupts a command between every two git calls.
"""

from __future__ import annotations

import os
import signal
import sys
import time

_calls = 0


def pause(point: str) -> None:
    if os.environ.get("PATCHKIT_TEST_PAUSE") != point:
        return
    print(f"patchkit: paused at {point}", file=sys.stderr, flush=True)
    while True:
        time.sleep(60)


def git_call() -> None:
    global _calls
    kill_at = os.environ.get("PATCHKIT_TEST_KILL_AT")
    if not kill_at:
        return
    _calls += 1
    if _calls == int(kill_at):
        os.kill(os.getpid(), signal.SIGKILL)
