"""GitHub's REST API for `nightly --github-issues` and `ci summary`: one issue per failing patch
or backend, and the refresh pull request.

Issues are found by a label and a hidden marker in their body (`<!-- patchkit:patch=NAME -->`,
`<!-- patchkit:backend=NAME -->`: the kind is in the marker, so no name of one kind can be taken
for the other), listing the open issues with that label: the search API lags behind writes by minutes and has its own tight rate limit, so a
re-run would open duplicates. Without a token nothing is sent; what would be sent is printed.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping, Sequence

import requests

from patchkit import __version__, http
from patchkit.errors import EnvironmentProblem, PatchkitError
from patchkit.untrusted import md_text

DEFAULT_API = "https://api.github.com"
LABEL = "patchkit-nightly"
LABEL_COLOR = "d93f0b"
_MARKER = "<!-- patchkit:{}={} -->"
# At the body's very start, where patchkit puts it: a marker further on (upstream's text, escaped
# as it is, or a person's) never claims the issue.
_MARKER_RE = re.compile(r"\A<!-- patchkit:(patch|backend)=(.+?) -->")
_REPOSITORY_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_BODY_LIMIT = 65_000  # GitHub refuses bodies over 65,536 characters
_MAX_BACKOFF = 60.0
DEADLINE = 900.0  # one call, its retries and waits included: up to two rate-limit waits fit
DEADLINE_VARIABLE = "PATCHKIT_GITHUB_DEADLINE"
# A wait past this (a primary rate limit resets hourly) is better reported than slept through:
# the job would hold a runner for nothing.
_MAX_RATE_LIMIT_WAIT = 300.0

ActionKind = Literal["open-issue", "update-issue", "close-issue", "open-pr", "update-pr"]
SubjectKind = Literal["patch", "backend"]


@dataclass(frozen=True)
class GitHubConfig:
    api: str  # API root: GITHUB_API_URL (GitHub Enterprise) or https://api.github.com
    repository: str  # owner/name
    token: str | None  # None: a dry run that prints what would be sent
    deadline: float = DEADLINE  # seconds for one call, its retries and waits included

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> GitHubConfig:
        """What GitHub Actions sets: GITHUB_REPOSITORY, GITHUB_API_URL, and the GITHUB_TOKEN the
        workflow passes on; PATCHKIT_GITHUB_DEADLINE bounds each call (as PATCHKIT_HTTP_DEADLINE
        does a download)."""
        repository = environ.get("GITHUB_REPOSITORY", "")
        if not _REPOSITORY_RE.match(repository):
            raise PatchkitError(f"GITHUB_REPOSITORY is {repository!r}, not owner/name",
                                "run in GitHub Actions, or set GITHUB_REPOSITORY=owner/name")
        api = (environ.get("GITHUB_API_URL") or DEFAULT_API).rstrip("/")
        if not api.startswith(("https://", "http://")):
            raise PatchkitError(f"GITHUB_API_URL is {api!r}, not an http(s) URL",
                                "unset it for github.com, or give the API root of your GitHub Enterprise")
        return cls(api=api, repository=repository, token=environ.get("GITHUB_TOKEN") or None,
                   deadline=_seconds(environ, DEADLINE_VARIABLE, DEADLINE))


def run_url(environ: Mapping[str, str] = os.environ) -> str | None:
    """The page of the GitHub Actions run this is (GITHUB_SERVER_URL, GITHUB_REPOSITORY,
    GITHUB_RUN_ID), for issues to link; None outside Actions."""
    if not (environ.get("GITHUB_RUN_ID") and environ.get("GITHUB_REPOSITORY")):
        return None
    return (f"{environ.get('GITHUB_SERVER_URL', 'https://github.com')}/"
            f"{environ['GITHUB_REPOSITORY']}/actions/runs/{environ['GITHUB_RUN_ID']}")


def _seconds(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = environ.get(name, "")
    if raw == "":  # empty is unset, as for PATCHKIT_HTTP_*
        return default
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise PatchkitError(f"{name}={raw!r} is not a number of seconds above 0",
                            f"unset it or give a number (default {default:g})")
    return value


@dataclass(frozen=True)
class Subject:
    """What an issue is about: a patch (its file name in patches/) or a backend (its recipe's name)."""

    kind: SubjectKind
    name: str


@dataclass(frozen=True)
class Problem:
    """What the night says about one failing patch or backend; the body is rendered by the caller."""

    subject: Subject
    verdict: str  # the title's end: "conflict", "broken by upstream"
    summary: str  # one line
    body_markdown: str


@dataclass(frozen=True)
class Action:
    """One thing done on GitHub or, in a dry run, that would have been done."""

    kind: ActionKind
    subject: str  # the patch's or backend's name, or the pull request's branch
    target: str | None  # "#12"; None when a dry run cannot know the number
    url: str | None
    dry_run: bool = False


@dataclass(frozen=True)
class _Reply:
    """One answer of the API, read whole."""

    what: str  # the call, "GET /repos/o/r/issues"
    status: int
    body: bytes
    next_url: str | None  # the Link header's next page

    def json(self) -> Any:
        """The body's JSON. One that is not (a proxy's or a portal's page) is the environment's."""
        try:
            return json.loads(self.body)
        except ValueError:
            shown = " ".join(self.body[:80].decode(errors="replace").split())
            raise EnvironmentProblem(f"GitHub API: {self.what} answered {self.status} without JSON ({shown!r})",
                                     "check GITHUB_API_URL and any proxy on the way") from None


def _to_stderr(line: str) -> None:
    """Dry-run lines: standard output may be carrying a --json - report."""
    print(line, file=sys.stderr)


class GitHub:
    def __init__(self, config: GitHubConfig, *, session: requests.Session | None = None,
                 timeout: float = 30, retries: int = 4, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.time, say: Callable[[str], None] = _to_stderr,
                 progress: Callable[[str], None] | None = None) -> None:
        """SAY: dry-run lines; PROGRESS: what each call is waiting for, as it starts."""
        self.config = config
        self._session = session or requests.Session()
        self._timeout = timeout
        self._retries = retries
        self._sleep = sleep
        self._clock = clock
        self._say = say
        self._progress = progress
        self._repo = f"/repos/{config.repository}"

    @property
    def dry_run(self) -> bool:
        return self.config.token is None

    # -- issues ---------------------------------------------------------------------------------

    def sync_issues(self, problems: Sequence[Problem], good: Sequence[Subject],
                    run_url: str | None) -> list[Action]:
        """Open or update one issue per failing patch or backend; close those of the GOOD ones.

        Subjects in neither list (not evaluated tonight) keep their issues as they are.
        """
        open_issues: dict[Subject, list[dict[str, Any]]] = {}
        for issue in self._open_issues():
            match = _MARKER_RE.match(issue.get("body") or "")
            if match:
                open_issues.setdefault(Subject(match.group(1), match.group(2)), []).append(issue)
        actions = []
        label_ready = False
        for problem in problems:
            subject = problem.subject
            title = f"Nightly: {subject.kind} {subject.name} is {problem.verdict}"
            body = _issue_body(problem, run_url)
            existing = open_issues.get(subject)
            if existing:
                # Duplicates made by hand stay as they are: the oldest one is the record.
                issue = min(existing, key=lambda i: i["number"])
                data = self._send("PATCH", f"{self._repo}/issues/{issue['number']}",
                                  {"title": title, "body": body})
                actions.append(self._action("update-issue", subject.name, data or issue))
                continue
            if not label_ready:
                self._ensure_label()
                label_ready = True
            data = self._send("POST", f"{self._repo}/issues", {"title": title, "body": body, "labels": [LABEL]})
            if data is not None and LABEL not in {label.get("name") for label in data.get("labels", [])}:
                # GitHub drops labels silently when the token may not set them; unlabelled, the
                # issue would be invisible tomorrow and duplicated every night.
                raise PatchkitError(f"GitHub opened issue #{data['number']} in {self.config.repository} "
                                    f"without the label {LABEL}",
                                    "give the token 'issues: write' (triage) permission")
            actions.append(self._action("open-issue", subject.name, data))
        where = f" in [the nightly run]({run_url})" if run_url else ""
        for subject in dict.fromkeys(good):
            again = ("applies and passes its checks again" if subject.kind == "patch" else "builds again")
            for issue in open_issues.get(subject, []):
                path = f"{self._repo}/issues/{issue['number']}"
                self._send("POST", f"{path}/comments",
                           {"body": f"{subject.kind.capitalize()} `{subject.name}` {again}{where}. Closing."})
                data = self._send("PATCH", path, {"state": "closed", "state_reason": "completed"})
                actions.append(self._action("close-issue", subject.name, data or issue))
        return actions

    def _open_issues(self) -> list[dict[str, Any]]:
        if self.dry_run:
            self._say(f"dry run (no GITHUB_TOKEN): open {LABEL} issues not listed, every failing patch "
                      "or backend counts as new")
            return []
        issues: list[dict[str, Any]] = []
        url: str | None = f"{self.config.api}{self._repo}/issues"
        params: dict[str, Any] | None = {"labels": LABEL, "state": "open", "per_page": 100}
        while url:
            reply = self._request("GET", url, params=params)
            # The issues list holds pull requests too; a PR cannot carry our marker on purpose.
            issues.extend(i for i in reply.json() if "pull_request" not in i)
            url, params = reply.next_url, None  # next carries the query
            if url and not url.startswith(self.config.api + "/"):
                raise EnvironmentProblem(f"GitHub's next page {url} is outside {self.config.api}",
                                         "check GITHUB_API_URL")
        return issues

    def _ensure_label(self) -> None:
        """GitHub creates a missing label on issue creation only for some tokens and drops it for
        others, so the label is made first."""
        if self.dry_run:
            return
        path = f"{self._repo}/labels/{LABEL}"
        if self._request("GET", f"{self.config.api}{path}", missing_ok=True).status == 404:
            self._send("POST", f"{self._repo}/labels",
                       {"name": LABEL, "color": LABEL_COLOR,
                        "description": "A patch or backend that patchkit's nightly could not carry"})

    # -- pull requests --------------------------------------------------------------------------

    def open_pull_request(self, branch: str, base: str, title: str, body: str) -> Action:
        """Open a pull request from BRANCH (already pushed) into BASE, or update the open one."""
        owner = self.config.repository.split("/")[0]
        existing: list[dict[str, Any]] = []
        if not self.dry_run:
            existing = self._request("GET", f"{self.config.api}{self._repo}/pulls",
                                     params={"head": f"{owner}:{branch}", "base": base, "state": "open"}).json()
        if existing:
            number = existing[0]["number"]
            data = self._send("PATCH", f"{self._repo}/pulls/{number}", {"title": title, "body": _clip(body)})
            return self._action("update-pr", branch, data)
        data = self._send("POST", f"{self._repo}/pulls",
                          {"title": title, "head": branch, "base": base, "body": _clip(body)})
        return self._action("open-pr", branch, data)

    # -- HTTP -----------------------------------------------------------------------------------

    def _action(self, kind: ActionKind, subject: str, data: dict[str, Any] | None) -> Action:
        if data is None:
            return Action(kind, subject, None, None, dry_run=True)
        return Action(kind, subject, f"#{data['number']}", data.get("html_url"))

    def _send(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """A write: sent with a token, printed without one (then None)."""
        if self.dry_run:
            shown = json.dumps(body, ensure_ascii=False)
            self._say(f"dry run (no GITHUB_TOKEN), not sent: {method} {path} "
                      f"{shown if len(shown) <= 200 else shown[:197] + '...'}")
            return None
        return self._request(method, f"{self.config.api}{path}", json_body=body).json()

    def _request(self, method: str, url: str, *, params: dict[str, Any] | None = None,
                 json_body: dict[str, Any] | None = None, missing_ok: bool = False) -> _Reply:
        """One call, retried with backoff on 5xx, rate limits and unreachable hosts (patchkit.http)."""
        headers = {"Authorization": f"Bearer {self.config.token}",
                   "Accept": "application/vnd.github+json",
                   "X-GitHub-Api-Version": "2022-11-28",
                   "User-Agent": f"patchkit/{__version__}"}
        what = f"{method} {url.removeprefix(self.config.api)}"

        def attempt(deadline: http.Deadline) -> _Reply:
            with http.send(self._session, method, url, deadline, params=params, json=json_body,
                           headers=headers) as response:
                wait = self._rate_limit_wait(response)
                if wait is not None:
                    raise http.Retry(f"{what} answered {response.status_code} {response.reason}", wait)
                retry = http.retry_for(response, what, self._clock)
                if retry is not None:
                    raise retry
                return _Reply(what, response.status_code, http.read(response, deadline),
                              response.links.get("next", {}).get("url"))

        policy = http.Policy(timeout=self._timeout, deadline=self.config.deadline, retries=self._retries,
                             backoff=2.0, max_backoff=_MAX_BACKOFF)
        if self._progress is not None:
            self._progress(f"waiting for GitHub: {what} (gives up after {policy.deadline:g} s)")
        try:
            reply = http.call(attempt, policy, sleep=self._sleep)
        except http.GaveUp as exc:
            raise EnvironmentProblem(f"GitHub API: {exc.reason}, {exc.tries} tries",
                                     "check the network and https://www.githubstatus.com, then rerun "
                                     f"({DEADLINE_VARIABLE} sets the seconds a call may take)") from None
        return self._checked(reply, what, missing_ok)

    def _rate_limit_wait(self, response: requests.Response) -> float | None:
        """Seconds to wait before retrying a rate-limited call; None when it was not one."""
        if response.status_code not in (403, 429):
            return None
        headers = response.headers
        wait = http.retry_after(response, self._clock)
        if wait is None and headers.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in headers:
            wait = max(1.0, float(headers["x-ratelimit-reset"]) - self._clock())
        elif wait is None and response.status_code == 429:
            wait = _MAX_BACKOFF
        elif wait is None:
            return None  # a plain 403: a permission, not a limit
        if wait > _MAX_RATE_LIMIT_WAIT:
            raise EnvironmentProblem(f"GitHub API rate limit for {self.config.repository}, "
                                     f"for another {wait:.0f} s", "rerun the job later")
        return wait

    def _checked(self, reply: _Reply, what: str, missing_ok: bool) -> _Reply:
        status = reply.status
        if status < 300 or (status == 404 and missing_ok):
            return reply
        repository = self.config.repository
        if status == 401:
            raise PatchkitError(f"GitHub refused the token for {repository} (401 on {what})",
                                "check that GITHUB_TOKEN (or the PATCHKIT_TOKEN secret) is set and not expired")
        if status == 403:
            raise PatchkitError(f"GitHub: the token may not do {what} in {repository} (403)",
                                "grant the workflow 'issues: write', 'pull-requests: write' and "
                                "'contents: write', or use a token that has them")
        if status == 404:
            raise PatchkitError(f"GitHub: {what} not found (404) in {repository}",
                                "check GITHUB_REPOSITORY and that the token can see the repository")
        raise PatchkitError(f"GitHub: {what} answered {status}: {_message(reply)}",
                            f"check the repository {repository} and the request")


def _issue_body(problem: Problem, run_url: str | None) -> str:
    seen = f"\n\n---\nLast seen in [this nightly run]({run_url})." if run_url else ""
    return _clip(f"{_MARKER.format(problem.subject.kind, problem.subject.name)}\n**{md_text(problem.summary)}**\n\n"
                 f"{problem.body_markdown}{seen}")


def _clip(body: str) -> str:
    if len(body) <= _BODY_LIMIT:
        return body
    return body[:_BODY_LIMIT] + "\n\n… (cut: see the full report in the run's artifacts)"


def _message(reply: _Reply) -> str:
    try:
        data = reply.json()
    except EnvironmentProblem:
        return reply.body.decode(errors="replace")[:200]
    if not isinstance(data, dict):
        return str(data)[:200]
    errors = "; ".join(str(e.get("message") or e.get("code")) for e in data.get("errors", []) if isinstance(e, dict))
    return f"{data.get('message', '')}{' (' + errors + ')' if errors else ''}"
