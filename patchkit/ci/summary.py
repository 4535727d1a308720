"""`patchkit ci summary`: one verdict for a night whose work ran in several CI jobs.

The nightly job's report and each build job's report (their artifacts, one folder each, as the
workflow downloads them) are read back and gathered: the night is good when the queue applied and
passed its checks and every backend built (and passed its smoke test where it ran). The refresh
goes when the queue is good and every backend that failed failed on the unpatched upstream too
(`nightly/night.py` built it): that never holds it back. A backend job that left no report (its
packages, setup or install failed) holds it back.

The build jobs ran upstream's code, so their artifacts are untrusted input: each report is
validated against its schema (an invalid one counts as none), its text is shown as text by the
renderers, and the verdict is re-derived here from the facts (the patched and the unpatched
build's status) rather than read from its `fault`. "Upstream's fault" needs more than a failing
unpatched build: `patchkit.builds.json` (ci/builds.py) must show this backend built before in the
same environment; else the recipe or the runner is as likely, and the verdict is "environment".

Then the outputs, as `nightly/publish.py` does for one job: report.json and report.md, the step
summary, `refresh=true|false` for the workflow's next steps, and one GitHub issue per failing
patch or backend (closed when it is good again).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from importlib.resources import files
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Sequence

import jsonschema

from patchkit.apply import Verdict
from patchkit.ci import builds
from patchkit.github import GitHub, GitHubConfig, Problem, Subject, run_url
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
# A failed build's fault: the queue's (builds without it), upstream's (fails without it, and built
# before in this environment), the environment's (fails without it, never known to build here),
# unknown (not built without it).
_WHY = {"queue": "builds without the queue: the queue's fault",
        "upstream": "fails without the queue too, and built in this environment before: upstream's fault",
        "environment": "fails without the queue too: check the recipe or runner",
        "unknown": "not built without the queue"}


@dataclass(frozen=True)
class Backend:
    name: str
    status: str
    fault: str | None  # a failed build: "queue", "upstream", "environment" or "unknown" (_WHY)
    smoke: bool | None  # the smoke test passed; None where it did not run
    detail: str  # one line: why it is not good, or what it built
    good: bool = field(init=False)
    holds_refresh: bool = field(init=False)

    def __post_init__(self) -> None:
        good = self.status == "ok" and self.smoke is not False
        object.__setattr__(self, "good", good)
        object.__setattr__(self, "holds_refresh", not good and self.status != NOT_BUILT
                           and self.fault not in ("upstream", "environment"))


@dataclass(frozen=True)
class PatchState:
    name: str
    verdict: str
    good: bool
    detail: str
    drifting: bool = False  # good, but what it relies on changed upstream, unreviewed: its issue stays open


@dataclass(frozen=True)
class NightSummary:
    night: NightState
    upstream_commit: str | None
    patches: tuple[PatchState, ...]
    backends: tuple[Backend, ...]
    findings: tuple[Finding, ...] = field(default=(), metadata=NOT_IN_JSON)
    nightly_markdown: str = field(default="", metadata=NOT_IN_JSON)  # the nightly job's report.md
    # backend -> environment id of tonight's good builds, for patchkit.builds.json
    built: Mapping[str, str] = field(default_factory=dict, metadata=NOT_IN_JSON)
    passed: bool = field(init=False)
    refresh: bool = field(init=False)  # the refreshed patches and the lock may be pushed

    def __post_init__(self) -> None:
        object.__setattr__(self, "passed", self.night == "good" and all(b.good for b in self.backends))
        object.__setattr__(self, "refresh", self.night == "good" and not any(b.holds_refresh for b in self.backends))

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def gather(folder: Path, backends: Sequence[str], smoked: Sequence[str] = (),
           environments: Mapping[str, str] | None = None, record: Mapping[str, Mapping[str, str]] | None = None
           ) -> NightSummary:
    """The night from FOLDER's artifacts: NIGHTLY_ARTIFACT/ and BUILD_ARTIFACT/ of each of BACKENDS;
    SMOKED: those whose jobs run the smoke test after a good build (no report from it is a failure);
    ENVIRONMENTS: each backend's environment id and RECORD: patchkit.builds.json (ci/builds.py)."""
    environments, record = environments or {}, record or {}
    if not folder.is_dir():
        raise PatchkitError(f"{folder}: no such folder", "give the folder the workflow downloads the reports to")
    for name in (*backends, *smoked):
        if not BACKEND_RE.match(name):
            raise PatchkitError(f"backend {name!r} is not a recipe name", "use names from `patchkit recipes list`")
    night = _read(folder / NIGHTLY_ARTIFACT / REPORT, "nightly")
    if night is None:
        return NightSummary("no-report", None, (), tuple(Backend(b, NOT_BUILT, None, None, "the nightly job left no "
                                                               "report") for b in backends))
    apply = night["apply"]
    drifting = {d["patch"] for d in apply.get("drift", []) if not d["reviewed"]}
    patches = tuple(PatchState(p["name"], p["verdict"], Verdict(p["verdict"]).good, p.get("detail") or "",
                               Verdict(p["verdict"]).good and p["name"] in drifting)
                    for p in apply["patches"])
    findings = tuple(_finding(f) for f in night.get("findings", []))
    state: NightState = "good" if night["passed"] else "needs-attention"
    try:
        markdown = (folder / NIGHTLY_ARTIFACT / "report.md").read_text(encoding="utf-8", errors="replace")
    except OSError:
        markdown = ""
    gathered = tuple(_backend(folder / BUILD_ARTIFACT.format(b), b, b in smoked,
                              builds.built_before(record, b, environments.get(b, "")))
                     if state == "good" else Backend(b, NOT_BUILT, None, None, "the night needs attention first")
                     for b in backends)
    built = {b.name: environments[b.name] for b in gathered if b.status == "ok" and b.name in environments}
    return NightSummary(state, apply["upstream_commit"], patches, gathered, findings, markdown, built)


def _read(path: Path, kind: str) -> dict[str, Any] | None:
    """A report's JSON, valid against KIND's schema (and a nightly's apply report against
    apply's); None when there is none, it cannot be read (a job cut short) or it is not valid."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        _schema(kind).validate(data)
        if kind == "nightly":
            _schema("apply").validate({**data["apply"], "schema": 1, "kind": "apply"})
            for result in (data["apply"]["builds"] or {}).get("results", []):
                _schema("build", "#/$defs/result").validate(result)
    except (OSError, ValueError, AttributeError, jsonschema.ValidationError):
        return None
    return data


@lru_cache(maxsize=None)
def _schema(kind: str, part: str = "#") -> jsonschema.Draft202012Validator:
    """The validator of KIND's schema, or of PART of it."""
    schema = json.loads(files("patchkit").joinpath(f"schemas/{kind}.schema.json").read_text())
    return jsonschema.Draft202012Validator({"$ref": part, **{k: v for k, v in schema.items() if k != "oneOf"}}
                                           if part != "#" else schema)


def _finding(data: Mapping[str, Any]) -> Finding:
    culprit = data.get("culprit")
    return Finding(**{**data, "culprit": Culprit(**culprit) if culprit else None})


def _backend(folder: Path, name: str, smoked: bool, built_before: bool) -> Backend:
    """NAME's build from its job's folder; BUILT_BEFORE: patchkit.builds.json shows it built in
    this environment before."""
    report = _read(folder / REPORT, "nightly")
    if report is None:
        return Backend(name, NO_REPORT, None, None, "its job left no valid report: it failed before the build "
                                                    "(packages, setup or install; see the job's log)")
    results = (report["apply"].get("builds") or {}).get("results", [])
    result = next((r for r in results if r["backend"] == name), None)
    if result is None:
        return Backend(name, "not-run", None, None, _first_warning(report))
    status = result["status"]
    if status != "ok":  # no smoke test runs after a build that did not make the binaries
        if status != "failed":
            return Backend(name, status, None, None, result.get("reason") or status)
        blame = next((b for b in report.get("build_blame", []) if b["backend"] == name), None)
        unpatched = (blame or {}).get("unpatched", "not-run")
        fault = ("queue" if unpatched == "ok" else "unknown" if unpatched != "failed"
                 else "upstream" if built_before else "environment")
        return Backend(name, status, fault, None, f"{_error(result)}; {_WHY[fault]} (logs/{name}.log)")
    smoke = _read(folder / SMOKE, "smoke")
    passed = bool(smoke["passed"]) if smoke is not None else False if smoked else None
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
    """Why the build job built nothing, said once ("not built: ...")."""
    warnings = [*report["apply"].get("warnings", []), *report.get("warnings", [])]
    why = warnings[0] if warnings else "the queue did not apply in the build job"
    return "not built: " + why.removeprefix("not built: ")


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
        for name in (REPORT, "report.md", builds.FILE):
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
            progress: Callable[[str], None] | None = None,
            record: Mapping[str, Mapping[str, str]] | None = None) -> None:
    """The reports, the step summary and output, then GitHub. A GitHub call that fails is a warning:
    the exit code stays the night's, and the next night updates the issues again. With a refresh,
    RECORD (patchkit.builds.json) with tonight's good builds goes beside the reports, for the
    workflow to push with the lock."""
    where.report_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(where.report_dir / REPORT, rendered.json.encode())
    atomic_write(where.report_dir / "report.md", rendered.markdown.encode())
    if summary.refresh and summary.built and summary.upstream_commit:
        atomic_write(where.report_dir / builds.FILE, builds.updated(record or {}, summary.built, summary.upstream_commit))
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
        problems, good = patch_issues([(p.name, "drifting" if p.drifting else p.verdict, p.good and not p.drifting,
                                        p.detail) for p in summary.patches],
                                      rendered.findings, summary.upstream_commit)
    for backend in summary.backends:
        if backend.good:
            good.append(Subject("backend", backend.name))
        elif backend.status != NOT_BUILT:
            verdict, body = rendered.backend_issues[backend.name]
            problems.append(Problem(Subject("backend", backend.name), verdict, backend.detail, body))
    return problems, good
