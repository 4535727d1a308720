from __future__ import annotations

from pathlib import Path

from patchkit.backends.result import BuildReport, BuildResult, Status


def report(*statuses: Status, by_name: bool = True, interrupted: bool = False, allow_skip: bool = False) -> BuildReport:
    results = tuple(BuildResult(f"b{i}", s) for i, s in enumerate(statuses))
    return BuildReport(Path("/t"), Path("/t/build"), by_name, results, {}, interrupted, allow_skip)


def test_exit_codes_follow_design() -> None:
    assert report(Status.OK).exit_code == 0
    assert report(Status.OK, Status.FAILED, allow_skip=True).exit_code == 1
    assert report(Status.OK, Status.SKIPPED).exit_code == 1  # asked for by name
    assert report(Status.OK, Status.SKIPPED, allow_skip=True).exit_code == 0
    assert report(Status.OK, Status.SKIPPED, by_name=False).exit_code == 0  # --all
    assert report(Status.FAILED, Status.NOT_RUN, interrupted=True).exit_code == 130
