"""Renderers of a `NightSummary` (`patchkit ci summary`): terminal, Markdown, the backends' issues
(JSON is the generic `to_json`)."""

from __future__ import annotations

import re

from patchkit.ci.summary import NO_REPORT, NOT_BUILT, Backend, NightSummary
from patchkit.ci.workflow import BUILD_ARTIFACT
from patchkit.report import md_table
from patchkit.untrusted import md_text

_FAULT = {"upstream": "upstream's fault", "queue": "the queue's fault",
          "environment": "fails without the queue too", "unknown": "whose fault is unknown"}


def build_label(backend: Backend) -> str:
    if backend.status == "failed":
        return f"failed ({_FAULT[backend.fault or 'unknown']})"
    if backend.smoke is False:
        return "smoke test failed"
    return {NO_REPORT: "no report", NOT_BUILT: "not built"}.get(backend.status, backend.status)


def summary_line(summary: NightSummary) -> str:
    if summary.night == "no-report":
        return "night: NEEDS ATTENTION: the nightly job left no report; nothing built, no refresh"
    good = sum(p.good for p in summary.patches)
    head = "good" if summary.passed else "NEEDS ATTENTION"
    parts = [f"night: {head}: {good} of {len(summary.patches)} patches good on {(summary.upstream_commit or '')[:12]}"]
    if summary.backends:
        parts.append("builds: " + ", ".join(f"{b.name} {build_label(b)}" for b in summary.backends))
    parts.append("the refresh goes" if summary.refresh else "no refresh")
    return "; ".join(parts)


def render_terminal(summary: NightSummary, console) -> None:
    for b in summary.backends:
        console.print(f"{b.name}: {build_label(b)}: {b.detail}", markup=False)
    console.print(f"[{'green' if summary.passed else 'red'}]{summary_line(summary)}[/]")


def to_markdown(summary: NightSummary) -> str:
    parts = [f"# patchkit night: {'good' if summary.passed else 'needs attention'}\n\n",
             f"**{summary_line(summary)}**\n\n"]
    if summary.backends:
        # Smoke: "not run" where the build made nothing to run.
        rows = [[b.name, build_label(b), {True: "passed", False: "failed", None: "not run"}[b.smoke], md_text(b.detail)]
                for b in summary.backends]
        parts += ["## Builds\n\n", md_table(["backend", "build", "smoke", "detail"], rows), "\n"]
        if any(b.fault in ("upstream", "environment") for b in summary.backends):
            parts.append("A backend that fails without the queue too does not hold the refresh back.\n\n")
    if summary.nightly_markdown:
        # The nightly job's own report, one heading level down.
        parts += ["---\n\n", re.sub(r"(?m)^#", "##", summary.nightly_markdown)]
    return "".join(parts)


def backend_issue(backend: Backend, summary: NightSummary) -> tuple[str, str]:
    """A failing backend's issue: the end of its title, and its body."""
    verdict = {"failed": {"upstream": "broken by upstream", "queue": "broken by the queue",
                          "environment": "failing to build without the queue too"}.get(
        backend.fault or "", "failing to build"), NO_REPORT: "without a report"}.get(backend.status, backend.status)
    if backend.status == "ok":
        verdict = "failing its smoke test"
    why = {"upstream": "The unpatched upstream fails to build too, and this backend built in the same "
                       "environment before: upstream's fault. It does not hold the refresh back.",
           "environment": "The unpatched upstream fails to build too, and this backend is not known to have "
                          "built in this environment: check the recipe or the runner. It does not hold the "
                          "refresh back.",
           "queue": "The unpatched upstream builds: the queue's fault. The refresh waits until it builds."
           }.get(backend.fault or "", "The refresh waits until it is good.")
    commit = f" on upstream `{summary.upstream_commit[:12]}`" if summary.upstream_commit else ""
    logs = (f"`logs/{backend.name}.log`" + (f" and `logs/{backend.name}-unpatched.log`" if backend.fault else "")
            if backend.status == "failed" else "its log")
    body = (f"Backend `{backend.name}`{commit}: {build_label(backend)}.\n\n{md_text(backend.detail)}\n\n{why}\n\n"
            f"Its report and {logs} are in the run's `{BUILD_ARTIFACT.format(backend.name)}` artifact.")
    return verdict, body
