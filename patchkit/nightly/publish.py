"""A night's outputs: the report files and refreshed patches CI uploads, GitHub's step summary, and
one GitHub issue per failing patch.

The texts come rendered by the caller (report/ sits above this package); what goes where is
decided here. Where they go is checked before the night (`Destinations.check`): a refusal after
it would come after the lock and the patches moved.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from patchkit.ci.github import GitHub, GitHubConfig, PatchProblem
from patchkit.errors import PatchkitError
from patchkit.fileio import append, atomic_write, ensure_writable
from patchkit.nightly.night import NightlyReport
from patchkit.project import Project
from patchkit.queue import Queue

REPORT_FILES = ("report.json", "report.md", "junit.xml")
PATCHES = "patches"  # the refreshed patches, beside the reports, for CI to upload


@dataclass(frozen=True)
class Destinations:
    """Where a night's outputs go."""

    report_dir: Path
    step_summary: Path | None  # $GITHUB_STEP_SUMMARY: shown on the Actions run's page
    github: GitHubConfig | None  # None: no GitHub issues
    run_url: str | None  # the Actions run, linked from each issue

    @classmethod
    def check(cls, project: Project, report_dir: Path, github_issues: bool,
              environ: Mapping[str, str] = os.environ) -> Destinations:
        """Everything the night will write, checked before the work (exit 2 when it cannot be)."""
        ensure_writable(*(report_dir / name for name in REPORT_FILES),
                        *(report_dir / PATCHES / patch.name for patch in Queue.load(project).patches))
        run_url = None
        if environ.get("GITHUB_RUN_ID") and environ.get("GITHUB_REPOSITORY"):
            run_url = (f"{environ.get('GITHUB_SERVER_URL', 'https://github.com')}/"
                       f"{environ['GITHUB_REPOSITORY']}/actions/runs/{environ['GITHUB_RUN_ID']}")
        return cls(report_dir=report_dir,
                   step_summary=Path(environ["GITHUB_STEP_SUMMARY"]) if environ.get("GITHUB_STEP_SUMMARY") else None,
                   github=GitHubConfig.from_env(environ) if github_issues else None, run_url=run_url)


@dataclass(frozen=True)
class Rendered:
    """The night's report as the caller rendered it."""

    json: str
    markdown: str
    junit: str
    findings: Mapping[str, str]  # patch name -> its finding on one line, for its GitHub issue


def publish(project: Project, report: NightlyReport, rendered: Rendered, where: Destinations,
            warn: Callable[[str], None]) -> int:
    """Write the night's outputs to WHERE; the run's exit code (the report's, unless GitHub failed)."""
    for name, text in zip(REPORT_FILES, (rendered.json, rendered.markdown, rendered.junit)):
        atomic_write(where.report_dir / name, text.encode())
    for entry in report.refreshed:
        atomic_write(where.report_dir / PATCHES / entry.name, (project.patches_dir / entry.name).read_bytes())
    if where.step_summary is not None:
        append(where.step_summary, rendered.markdown + "\n")
    if where.github is not None:
        _sync_issues(report, rendered, where, warn)
    return report.exit_code


def _sync_issues(report: NightlyReport, rendered: Rendered, where: Destinations,
                 warn: Callable[[str], None]) -> None:
    """One issue per failing patch. An API failure on a bad night leaves exit 1 with a warning (the
    reports are written already); on a good night it is the run's failure."""
    problems = [PatchProblem(p.name, p.verdict.value, p.detail or p.verdict.value,
                             rendered.findings.get(p.name, p.detail))
                for p in report.apply.patches if not p.good or p.name in rendered.findings]
    good = [p.name for p in report.apply.patches if p.good and p.name not in rendered.findings]
    try:
        GitHub(where.github).sync_issues(problems, good, where.run_url)
    except PatchkitError as exc:
        if report.exit_code == 0:
            raise
        warn(f"GitHub issues not updated: {exc}")
