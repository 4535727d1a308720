"""Progress while long work runs: live on a terminal; in CI logs, plain lines with a heartbeat.

A CI log that stays silent for minutes looks like a hung job (and some CI systems kill jobs that
print nothing for a while), so off a terminal the current state is printed when it changes phase
and then again at least every HEARTBEAT seconds for as long as the work goes on.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Iterator

from patchkit.cli.app import console, is_quiet

HEARTBEAT = 30.0


class PlainStatus:
    """The latest status line, printed to stderr on every `say` and at least every INTERVAL s."""

    def __init__(self, interval: float = HEARTBEAT, first: str = "") -> None:
        """FIRST: the state before anything is said (printed only if the work outlasts INTERVAL)."""
        self._console = console(stderr=True)
        self._interval = interval
        self._line = first
        self._last = time.monotonic()
        self._fresh = True  # the first update prints at once: the work has visibly started
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
        """Remember LINE; print it when the last print is an interval old."""
        with self._lock:
            self._line = line.strip()
            due = self._fresh or time.monotonic() - self._last >= self._interval
        if due:
            self.say(self._line)

    def say(self, line: str) -> None:
        with self._lock:
            self._line = line.strip()
        self._print(self._line)

    def _print(self, text: str) -> None:
        with self._lock:
            self._last, self._fresh = time.monotonic(), False
            self._console.print(text, markup=False, highlight=False)

    def _beat(self) -> None:
        while not self._stop.wait(self._interval / 3):
            with self._lock:
                due = self._line and time.monotonic() - self._last >= self._interval
            if due:
                self._print(f"{self._line} (still running)")  # the line itself stays as it was


@contextlib.contextmanager
def progress_display(what: str) -> Iterator:
    """A callable taking progress lines (git's): a live status line on a terminal; elsewhere the
    first line at once, then the latest at least every heartbeat (nothing for work that is quick
    and silent, such as a local fetch)."""
    err = console(stderr=True)
    if is_quiet():
        yield lambda line: None
    elif err.is_terminal:
        with err.status(what) as status:
            yield lambda line: status.update(f"{what}: {line.strip()}")
    else:
        with PlainStatus(first=what) as status:
            yield lambda line: status.update(f"{what}: {line.strip()}")


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
    else:
        with PlainStatus() as status:
            yield PlainBuildProgress(status)
