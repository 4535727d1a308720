"""Upstream's text in the apply, build, check and smoke reports' Markdown (report.md, the step
summary, the pull request) is text: read by a CommonMark parser, nothing of it is HTML, a mention,
an issue reference or a link but the ones patchkit makes (upstream's commit and pull request)."""

from __future__ import annotations

import re
from pathlib import Path

from markdown_it import MarkdownIt

from patchkit.apply import HunkVerdict, PatchResult, Verdict
from patchkit.backends.result import Artifact, BuildReport, BuildResult, FirstError, Status
from patchkit.checks.results import CheckReport, Region, RuleResult, SiteReport, SiteStatus
from patchkit.culprit import Culprit
from patchkit.drift.find import Drift
from patchkit.pipeline import ApplyReport
from patchkit.report.apply import to_markdown as apply_markdown
from patchkit.report.build import to_markdown as build_markdown
from patchkit.report.check import to_markdown as check_markdown
from patchkit.report.smoke import to_markdown as smoke_markdown
from patchkit.smoke.attribution import Attribution, OtherCall, RuntimeSite, RuntimeVerdict
from patchkit.smoke.driver import RunResult
from patchkit.smoke.run import SmokeReport
from patchkit.untrusted import md_text

UPSTREAM = "https://github.com/ggml-org/llama.cpp"
# Every way upstream's text could act in GitHub's Markdown: a mention, HTML, another repository's
# issue, GH-N, a bare #N (the fork's own issue), a URL, and backticks and a fence to break out of code.
HOSTILE = ("pwned` @ggerganov <img src=x onerror=alert(1)> ggml-org/llama.cpp#1 GH-12 gh-3 #7 "
           "`` ``` www.evil.example https://evil.example [x](https://evil.example) ~~~")
# What GitHub would act on in text (outside code): a mention, a reference, a URL.
ACTS = re.compile(r"(?<!\w)@\w|[\w.-]+/[\w.-]+#\d|\w#\d|(?i:\bgh-\d)|(?<![\w/])#\d|(?i:https?:|www\.)")


def acting(markdown: str) -> list[str]:
    """What in MARKDOWN is HTML, a link other than upstream's, or text GitHub would act on (the
    text of upstream's own links aside: `[#7](.../pull/7)`)."""
    found: list[str] = []
    inline = [child for token in MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(markdown)
              for child in [token, *(token.children or [])]]
    in_upstreams_link = False
    for token in inline:
        if token.type in ("html_block", "html_inline"):
            found.append(token.content)
        elif token.type == "link_open":
            in_upstreams_link = str(token.attrs.get("href", "")).startswith(UPSTREAM + "/")
            found += [] if in_upstreams_link else [str(token.attrs.get("href"))]
        elif token.type == "link_close":
            in_upstreams_link = False
        elif token.type == "text" and not in_upstreams_link:
            found += ACTS.findall(token.content)
    return found


def test_md_text_breaks_every_issue_reference_but_upstreams_pull_request():
    shown = md_text("see ggml-org/llama.cpp#123, org#4, GH-12 and gh-5 (#8)", f"{UPSTREAM}/pull/")
    assert shown.endswith(f"([#8]({UPSTREAM}/pull/8))")
    assert not acting(shown)
    assert shown.replace("\u200b", "").replace("\\", "").startswith("see ggml-org/llama.cpp#123, org#4, GH-12 and gh-5")


def hostile_report() -> ApplyReport:
    culprit = Culprit(commit="d" * 40, subject=HOSTILE, author="a <a@b>", date="2026-10-01T00:00:00Z", pull=None,
                      url=f"{UPSTREAM}/commit/{'d' * 40}", pull_url=None)
    hunk = HunkVerdict(file="ggml/src/ggml.c", hunk=1, verdict=Verdict.CONFLICT, expected_line=10, detail=HOSTILE,
                       nearest_line=12, nearest=("```", HOSTILE, "~~~~", HOSTILE), nearest_differs=(0,))
    patch = PatchResult(name="0001-fix.patch", subject=HOSTILE, sha256="0" * 64, verdict=Verdict.CONFLICT,
                        hunks=(hunk,), detail=HOSTILE)
    drift = Drift(patch="0001-fix.patch", kind="members", entity=f"llama_{HOSTILE}", declared_in=HOSTILE,
                  before=HOSTILE, after=f"`{HOSTILE}`", lines=(HOSTILE,), culprit=culprit, probes=1, candidates=1,
                  reviewed=False, detail=HOSTILE)
    build = BuildResult("cpu", Status.FAILED, reason=HOSTILE, first_error=FirstError("ggml.c", 1, HOSTILE),
                        artifacts=(Artifact(HOSTILE, Path("/b") / HOSTILE.replace("/", "-"), 1),))
    builds = BuildReport(tree=Path("/t"), build_dir=Path("/t/build"), requested_by_name=True, results=(build,),
                         defines={})
    return ApplyReport(upstream_url=UPSTREAM, ref="upstream@master", upstream_commit="a" * 40, branch="patchkit/applied",
                       output=None, tip="b" * 40, tree="c" * 40, patches=(patch,), builds=builds, drift=(drift,),
                       warnings=(HOSTILE,))


def test_upstreams_text_in_the_apply_report_is_text():
    markdown = apply_markdown(hostile_report())
    assert not acting(markdown), markdown
    # Shown, not dropped: the detail, the drift, the hunk's nearest lines, the warning and the build's error.
    assert markdown.count("pwned") >= 8


def test_upstreams_text_in_the_build_report_is_text():
    markdown = build_markdown(hostile_report().builds)
    assert not acting(markdown), markdown
    assert markdown.count("pwned") == 2  # the artifact and the first error


def hostile_check() -> CheckReport:
    site = SiteReport(rule="r1", file=f"src/{HOSTILE}", line=3, column=1, end_line=3, end_column=9, function=HOSTILE,
                      code=HOSTILE, call=HOSTILE, receiver="", bound_to=HOSTILE, site_class="speculative",
                      flags=(HOSTILE,), status=SiteStatus.MISSING_FLAG, message=HOSTILE)
    rule = RuleResult(id="r1", site_class="speculative", file=f"src/{HOSTILE}", source="checks.yaml", calls=("f",),
                      require_flag="FLAG", forbid_flag=None, expected=1, found=1, passed=False, messages=(HOSTILE,),
                      sites=(site,), regions=(Region("disabled", 1, 1, 2, 1, HOSTILE),), renamed_from=HOSTILE)
    return CheckReport(target=HOSTILE, rules=(rule,))


def test_upstreams_code_in_the_check_report_is_text():
    markdown = check_markdown(hostile_check())
    assert not acting(markdown), markdown
    assert markdown.count("pwned") >= 8


def test_upstreams_code_and_server_in_the_smoke_report_are_text():
    site = RuntimeSite(file=f"src/{HOSTILE}", line=3, call=HOSTILE, site_class="unknown", rule="r1", calls_seen=1,
                       flags_seen=(None,), verdict=RuntimeVerdict.UNEXPECTED_SITE, message=HOSTILE)
    attribution = Attribution(sites=(site,), other=(OtherCall(HOSTILE, HOSTILE, 1, 1),), coverage=(), passed=False,
                              messages=(HOSTILE,))
    build = BuildResult("cpu", Status.OK)
    ran = SmokeReport(Path("/t"), "cpu", build, runs=(RunResult(HOSTILE, False, Path("/l"), HOSTILE, 0, 1.0),),
                      attribution=attribution)
    markdown = smoke_markdown(ran)
    assert not acting(markdown), markdown
    assert markdown.count("pwned") >= 5
    not_run = smoke_markdown(SmokeReport(Path("/t"), "cpu", build, detail=f"the smoke build failed: {HOSTILE}"))
    assert not acting(not_run) and "pwned" in not_run, not_run
