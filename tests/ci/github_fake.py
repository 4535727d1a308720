"""A small stateful GitHub on 127.0.0.1 (issues, labels, pull requests), for the tests of the
GitHub client and of the commands and workflow steps that call it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from werkzeug import Request, Response

REPO = "fork-owner/llama-fork"
TOKEN = "ghp_test"
RUN = "https://github.com/fork-owner/llama-fork/actions/runs/7"
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/vnd.github+json",
           "X-GitHub-Api-Version": "2022-11-28"}


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    body: Any


@dataclass
class FakeGitHub:
    """The part of GitHub's REST API the nightly uses, with state, and a log of every call.

    A call without the right headers is answered 400, so the client fails loudly; `failures` are
    answered, in order, before any real handling.
    """

    url: str
    page_size: int = 100
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, list[str]] = field(default_factory=dict)
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    labels: set[str] = field(default_factory=set)
    failures: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    drop_labels: bool = False  # as GitHub does for a token that may not set labels
    log: list[Call] = field(default_factory=list)

    def handle(self, request: Request) -> Response:
        body = request.get_json(silent=True) if request.data else None
        self.log.append(Call(request.method, request.path, dict(request.args), body))
        for name, value in HEADERS.items():
            if request.headers.get(name) != value:
                return _json({"message": f"bad header {name}: {request.headers.get(name)!r}"}, 400)
        if not request.headers.get("User-Agent", "").startswith("patchkit/"):
            return _json({"message": "no User-Agent"}, 400)
        if self.failures:
            status, headers = self.failures.pop(0)
            return _json({"message": "injected"}, status, headers)
        route = f"{request.method} {request.path.removeprefix(f'/repos/{REPO}')}"
        for pattern, handler in self._routes():
            match = re.fullmatch(pattern, route)
            if match:
                return handler(request, body, *match.groups())
        return _json({"message": "Not Found"}, 404)

    def _routes(self):
        return [(r"GET /issues", self._list_issues), (r"POST /issues", self._create_issue),
                (r"PATCH /issues/(\d+)", self._edit_issue), (r"POST /issues/(\d+)/comments", self._comment),
                (r"GET /labels/(.+)", self._get_label), (r"POST /labels", self._create_label),
                (r"GET /pulls", self._list_pulls), (r"POST /pulls", self._create_pull),
                (r"PATCH /pulls/(\d+)", self._edit_pull)]

    def _list_issues(self, request: Request, body: Any) -> Response:
        assert request.args["state"] == "open" and request.args["per_page"] == "100"
        wanted = request.args["labels"]
        found = [i for _, i in sorted(self.issues.items())
                 if i["state"] == "open" and wanted in [label["name"] for label in i["labels"]]]
        page = int(request.args.get("page", "1"))
        headers = {}
        if len(found) > page * self.page_size:
            query = "&".join(f"{k}={v}" for k, v in {**request.args, "page": page + 1}.items())
            headers["Link"] = f'<{self.url}/repos/{REPO}/issues?{query}>; rel="next"'
        return _json(found[(page - 1) * self.page_size:page * self.page_size], 200, headers)

    def _create_issue(self, request: Request, body: Any) -> Response:
        number = self._next_number()
        self.issues[number] = {"number": number, "title": body["title"], "body": body["body"], "state": "open",
                               "labels": [{"name": n} for n in body.get("labels", [])
                                          if n in self.labels and not self.drop_labels],
                               "html_url": f"https://github.com/{REPO}/issues/{number}"}
        return _json(self.issues[number], 201)

    def _edit_issue(self, request: Request, body: Any, number: str) -> Response:
        self.issues[int(number)].update(body)
        return _json(self.issues[int(number)], 200)

    def _comment(self, request: Request, body: Any, number: str) -> Response:
        self.comments.setdefault(int(number), []).append(body["body"])
        return _json({"id": 1, "body": body["body"]}, 201)

    def _get_label(self, request: Request, body: Any, name: str) -> Response:
        return _json({"name": name}, 200) if name in self.labels else _json({"message": "Not Found"}, 404)

    def _create_label(self, request: Request, body: Any) -> Response:
        self.labels.add(body["name"])
        return _json(body, 201)

    def _list_pulls(self, request: Request, body: Any) -> Response:
        owner, branch = request.args["head"].split(":")
        assert owner == REPO.split("/")[0]
        return _json([p for p in self.pulls.values() if p["head"] == branch and p["base"] == request.args["base"]
                      and p["state"] == request.args["state"]], 200)

    def _create_pull(self, request: Request, body: Any) -> Response:
        number = self._next_number()
        self.pulls[number] = {**body, "number": number, "state": "open",
                              "html_url": f"https://github.com/{REPO}/pull/{number}"}
        return _json(self.pulls[number], 201)

    def _edit_pull(self, request: Request, body: Any, number: str) -> Response:
        self.pulls[int(number)].update(body)
        return _json(self.pulls[int(number)], 200)

    def _next_number(self) -> int:
        return max([0, *self.issues, *self.pulls]) + 1

    def open_issues(self) -> dict[str, int]:
        """patch name -> issue number, from the markers of the open issues."""
        return {re.search(r"patchkit:(?:patch|backend)=(\S+) -->", i["body"]).group(1): n
                for n, i in self.issues.items() if i["state"] == "open"}

    def calls(self) -> list[tuple[str, str]]:
        return [(c.method, c.path) for c in self.log]


def _json(data: Any, status: int, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(data), status, headers=headers, content_type="application/json")


@pytest.fixture(name="fake")
def fake_fixture(httpserver):
    github = FakeGitHub(url=httpserver.url_for("").rstrip("/"))
    httpserver.expect_request(re.compile(".*")).respond_with_handler(github.handle)
    return github
