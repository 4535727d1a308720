"""Progress while long work runs: live on a terminal; in CI logs, plain lines with a heartbeat.

A CI log that stays silent for minutes looks like a hung job (and some CI systems kill jobs that
print nothing for a while), so off a terminal the current state is printed when it changes step
and then again at least every HEARTBEAT seconds for as long as the work goes on.

The state is the command (its label, as typed: `import`, `apply upstream@HEAD`) and the latest
line the running code said, which names its own step (`fetching URL: Receiving objects: 42%`,
`fetched URL`, `bisect NAME: probe 2/5`, `cpu: build [10/90]`). The label never names a step: a
heartbeat says what is running now, not what ran first.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from typing import Iterator

from patchkit.cli.app import console, is_quiet

HEARTBEAT = 30.0

# The command's plain status line, while progress_display draws one: builds say their phases on
# it too, so that one heartbeat says the latest of everything (a second one would keep repeating
# the fetch's last line through a whole build).
_running: contextvars.ContextVar[PlainStatus | None] = contextvars.ContextVar("patchkit_status", default=None)


def _step(line: str) -> str:
    """The step a progress line is about: what precedes its first ': ' (the whole line if none)."""
    return line.split(": ", 1)[0]


class PlainStatus:
    """The status line, LABEL and the latest line said, printed to stderr when a step starts and
    at least every INTERVAL s (HEARTBEAT unless given)."""

    def __init__(self, interval: float | None = None, label: str = "") -> None:
        """LABEL: the command; alone it is the state before anything is said (printed only if the
        work outlasts INTERVAL)."""
        self._console = console(stderr=True)
        self._interval = HEARTBEAT if interval is None else interval
        self._label = label
        self._said: str | None = None
        self._line = label
        self._last = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def __enter__(self) -> PlainStatus:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def update(self, line: str) -> None:
        """LINE, the running code's latest: printed at once when it starts another step, else
        remembered for the heartbeat (or printed when the last print is an interval old)."""
        with self._lock:
            said = line.strip()
            due = (self._said is None or _step(said) != _step(self._said)
                   or time.monotonic() - self._last >= self._interval)
            self._remember(said)
        if due:
            self._print(self._line)

    def say(self, line: str) -> None:
        """LINE, printed at once."""
        with self._lock:
            self._remember(line.strip())
        self._print(self._line)

    def _remember(self, said: str) -> None:
        self._said = said
        self._line = f"{self._label}: {said}" if self._label else said

    def _print(self, text: str) -> None:
        with self._lock:
            self._last = time.monotonic()
            self._console.print(text, markup=False, highlight=False)

    def _beat(self) -> None:
        while not self._stop.wait(self._interval / 3):
            with self._lock:
                due = self._line and time.monotonic() - self._last >= self._interval
            if due:
                self._print(f"{self._line} (still running)")  # the line itself stays as it was


@contextlib.contextmanager
def progress_display(what: str) -> Iterator:
    """A callable taking progress lines, each naming its step, for the command WHAT (its name and
    arguments, never a step): a live status line on a terminal; elsewhere each step as it starts,
    then the latest line at least every heartbeat (nothing for work that says nothing and ends
    within a heartbeat)."""
    err = console(stderr=True)
    if is_quiet():
        yield lambda line: None
    elif err.is_terminal:
        with err.status(what) as status:
            yield lambda line: status.update(f"{what}: {line.strip()}")
    else:
        with PlainStatus(label=what) as status:
            token = _running.set(status)
            try:
                yield status.update
            finally:
                _running.reset(token)


class PlainBuildProgress:
    """A BuildProgress for CI logs: each phase, Ninja's [done/total] on the heartbeat, each result."""

    def __init__(self, status: PlainStatus) -> None:
        self._status = status

    def phase(self, backend: str, phase: str) -> None:
        self._status.say(f"{backend}: {phase}")

    def step(self, backend: str, done: int, total: int) -> None:
        self._status.update(f"{backend}: build [{done}/{total}]")

    def finished(self, result) -> None:  # result: patchkit.backends.BuildResult
        self._status.say(f"{result.backend}: {result.status.value}" + (f": {result.reason}" if result.reason else ""))


@contextlib.contextmanager
def build_progress(wanted: bool = True) -> Iterator:
    """The BuildProgress to hand to builds (None when there are none, or with --quiet)."""
    if not wanted or is_quiet():
        yield None
    elif console(stderr=True).is_terminal:
        from patchkit.report.build import LiveProgress

        with LiveProgress(console(stderr=True)) as live:
            yield live
    elif (running := _running.get()) is not None:  # the command's own line: one heartbeat
        yield PlainBuildProgress(running)
    else:
        with PlainStatus() as status:
            yield PlainBuildProgress(status)
