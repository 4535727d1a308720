"""`patchkit ci summary`: one verdict for a night whose work ran in several CI jobs.

The nightly job's report and each build job's report (their artifacts, one folder each, as the
workflow downloads them) are read back and gathered: the night is good when the queue applied and
passed its checks and every backend built (and passed its smoke test where it ran). The refresh
goes when the queue is good and every backend that failed failed on the unpatched upstream too
(`nightly/night.py` decided that by building it): upstream's fault alone never holds it back. A
backend job that left no report (its packages, setup or install failed) holds it back too.

Then the outputs, as `nightly/publish.py` does for one job: report.json and report.md, the step
summary, `refresh=true|false` for the workflow's next steps, and one GitHub issue per failing
patch or backend (closed when it is good again).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Sequence

from patchkit.apply import Verdict
from patchkit.ci.github import GitHub, GitHubConfig, Problem, Subject, run_url
from patchkit.ci.workflow import BACKEND_RE, BUILD_ARTIFACT, NIGHTLY_ARTIFACT
from patchkit.errors import PatchkitError
from patchkit.fileio import append, atomic_write
from patchkit.nightly.bisect import Culprit, Finding
from patchkit.nightly.publish import patch_issues
from patchkit.plain import NOT_IN_JSON
from patchkit.targets import Places, Target, check

REPORT = "report.json"
SMOKE = "smoke.json"
NightState = Literal["good", "needs-attention", "no-report"]
# A backend's state: a build's status (ok, failed, skipped, not-run), or what stood in its way.
NO_REPORT = "no-report"  # its job left no report: it failed before patchkit did (packages, setup)
NOT_BUILT = "not-built"  # the night needs attention first: no build job ran


@dataclass(frozen=True)
class Backend:
    name: str
    status: str
    fault: str | None  # a failed build: "upstream", "queue" or "unknown" (night.py's BuildBlame)
    smoke: bool | None  # the smoke test passed; None where it did not run
    detail: str  # one line: why it is not good, or what it built
    good: bool = field(init=False)
    holds_refresh: bool = field(init=False)

    def __post_init__(self) -> None:
        good = self.status == "ok" and self.smoke is not False
        object.__setattr__(self, "good", good)
        object.__setattr__(self, "holds_refresh", not good and self.status != NOT_BUILT and self.fault != "upstream")


@dataclass(frozen=True)
class PatchState:
    name: str
    verdict: str
    good: bool
    detail: str


@dataclass(frozen=True)
class NightSummary:
    night: NightState
    upstream_commit: str | None
    patches: tuple[PatchState, ...]
    backends: tuple[Backend, ...]
    findings: tuple[Finding, ...] = field(default=(), metadata=NOT_IN_JSON)
    nightly_markdown: str = field(default="", metadata=NOT_IN_JSON)  # the nightly job's report.md
    passed: bool = field(init=False)
    refresh: bool = field(init=False)  # the refreshed patches and the lock may be pushed

    def __post_init__(self) -> None:
        object.__setattr__(self, "passed", self.night == "good" and all(b.good for b in self.backends))
        object.__setattr__(self, "refresh", self.night == "good" and not any(b.holds_refresh for b in self.backends))

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def gather(folder: Path, backends: Sequence[str], smoked: Sequence[str] = ()) -> NightSummary:
    """The night from FOLDER's artifacts: NIGHTLY_ARTIFACT/ and BUILD_ARTIFACT/ of each of BACKENDS;
    SMOKED: those whose jobs run the smoke test after a good build (no report from it is a failure)."""
    if not folder.is_dir():
        raise PatchkitError(f"{folder}: no such folder", "give the folder the workflow downloads the reports to")
    for name in (*backends, *smoked):
        if not BACKEND_RE.match(name):
            raise PatchkitError(f"backend {name!r} is not a recipe name", "use names from `patchkit recipes list`")
    night = _read(folder / NIGHTLY_ARTIFACT / REPORT)
    if night is None:
        return NightSummary("no-report", None, (), tuple(Backend(b, NOT_BUILT, None, None, "the nightly job left no "
                                                               "report") for b in backends))
    apply = night["apply"]
    patches = tuple(PatchState(p["name"], p["verdict"], Verdict(p["verdict"]).good, p.get("detail") or "")
                    for p in apply["patches"])
    findings = tuple(_finding(f) for f in night.get("findings", []))
    state: NightState = "good" if night["passed"] else "needs-attention"
    try:
        markdown = (folder / NIGHTLY_ARTIFACT / "report.md").read_text(encoding="utf-8", errors="replace")
    except OSError:
        markdown = ""
    gathered = tuple(_backend(folder / BUILD_ARTIFACT.format(b), b, b in smoked) if state == "good"
                     else Backend(b, NOT_BUILT, None, None, "not built: the night needs attention first")
                     for b in backends)
    return NightSummary(state, apply["upstream_commit"], patches, gathered, findings, markdown)


def _read(path: Path) -> dict[str, Any] | None:
    """A report's JSON; None when there is none or it cannot be read (a job cut short)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("kind") in ("nightly", "smoke") else None


def _finding(data: Mapping[str, Any]) -> Finding:
    culprit = data.get("culprit")
    return Finding(**{**data, "culprit": Culprit(**culprit) if culprit else None})


def _backend(folder: Path, name: str, smoked: bool) -> Backend:
    report = _read(folder / REPORT)
    if report is None:
        return Backend(name, NO_REPORT, None, None, "its job left no report: it failed before the build "
                                                    "(packages, setup or install; see the job's log)")
    builds = (report["apply"].get("builds") or {}).get("results", [])
    result = next((r for r in builds if r["backend"] == name), None)
    if result is None:
        return Backend(name, "not-run", None, None, "not built: " + _first_warning(report))
    blame = next((b for b in report.get("build_blame", []) if b["backend"] == name), None)
    smoke = _read(folder / SMOKE)
    passed = bool(smoke.get("passed")) if smoke is not None else False if smoked else None
    status = result["status"]
    if status == "failed":
        fault = blame["fault"] if blame else "unknown"
        why = blame["detail"] if blame else "not built on the unpatched upstream"
        return Backend(name, status, fault, passed, f"{_error(result)}; {why}")
    if status != "ok":
        return Backend(name, status, None, passed, result.get("reason") or status)
    if passed is False:
        why = "it left no report (see the job's log)" if smoke is None else smoke.get("detail") or "see smoke.json"
        return Backend(name, status, None, passed, f"the smoke test failed: {why}")
    return Backend(name, status, None, passed, "built" + (" and passed the smoke test" if passed else ""))


def _error(result: Mapping[str, Any]) -> str:
    error = result.get("first_error")
    if not error:
        return result.get("reason") or "the build failed"
    where = f"{error['file']}:{error['line']}: " if error.get("file") and error.get("line") else ""
    return where + error["message"]


def _first_warning(report: Mapping[str, Any]) -> str:
    warnings = [*report["apply"].get("warnings", []), *report.get("warnings", [])]
    return warnings[0] if warnings else "the queue did not apply in the build job"


@dataclass(frozen=True)
class Destinations:
    """Where a summary goes; checked before anything is read or written."""

    report_dir: Path
    step_summary: Path | None  # $GITHUB_STEP_SUMMARY
    step_output: Path | None  # $GITHUB_OUTPUT: `refresh=true|false` for the workflow's next steps
    github: GitHubConfig | None  # None: no GitHub issues
    run_url: str | None

    @classmethod
    def check(cls, report_dir: Path, github_issues: bool, places: Places,
              environ: Mapping[str, str] = os.environ) -> Destinations:
        folder = check(report_dir, Target.FOLDER, places)
        for name in (REPORT, "report.md"):
            check(folder / name, Target.FILE, places)
        summary, output = environ.get("GITHUB_STEP_SUMMARY") or None, environ.get("GITHUB_OUTPUT") or None
        check(summary, Target.FILE, places)
        check(output, Target.FILE, places)
        return cls(folder, Path(summary) if summary else None, Path(output) if output else None,
                   GitHubConfig.from_env(environ) if github_issues else None, run_url(environ))


@dataclass(frozen=True)
class Rendered:
    """The summary as the caller rendered it."""

    json: str
    markdown: str
    findings: Mapping[str, str]  # patch name -> its finding on one line
    backend_issues: Mapping[str, tuple[str, str]]  # a failing backend -> its issue's (verdict, body)


def publish(summary: NightSummary, rendered: Rendered, where: Destinations, warn: Callable[[str], None],
            progress: Callable[[str], None] | None = None) -> None:
    """The reports, the step summary and output, then GitHub. A GitHub call that fails is a warning:
    the exit code stays the night's, and the next night updates the issues again."""
    where.report_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(where.report_dir / REPORT, rendered.json.encode())
    atomic_write(where.report_dir / "report.md", rendered.markdown.encode())
    if where.step_summary is not None:
        append(where.step_summary, rendered.markdown + "\n")
    if where.step_output is not None:
        append(where.step_output, f"refresh={'true' if summary.refresh else 'false'}\n")
    if where.github is None:
        return
    problems, good = issues(summary, rendered)
    try:
        GitHub(where.github, progress=progress).sync_issues(problems, good, where.run_url)
    except PatchkitError as exc:
        warn(f"GitHub issues not updated: {exc}")


def issues(summary: NightSummary, rendered: Rendered) -> tuple[list[Problem], list[Subject]]:
    """One issue per failing patch and per failing backend; the good ones' are closed. Without the
    nightly's report no patch was judged, and a backend not built is judged neither way."""
    problems: list[Problem] = []
    good: list[Subject] = []
    if summary.night != "no-report":
        problems, good = patch_issues([(p.name, p.verdict, p.good, p.detail) for p in summary.patches],
                                      rendered.findings, summary.upstream_commit)
    for backend in summary.backends:
        if backend.good:
            good.append(Subject("backend", backend.name))
        elif backend.status != NOT_BUILT:
            verdict, body = rendered.backend_issues[backend.name]
            problems.append(Problem(Subject("backend", backend.name), verdict, backend.detail, body))
    return problems, good
