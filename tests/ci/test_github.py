"""The GitHub client against a small stateful GitHub on 127.0.0.1: issues, labels, pull requests."""

from __future__ import annotations

import socket

import pytest

from conftest import run_cli
from github_fake import REPO, RUN, TOKEN, FakeGitHub, fake_fixture  # noqa: F401 (a fixture)
from patchkit.errors import EnvironmentProblem, PatchkitError
from patchkit.github import LABEL, Action, GitHub, GitHubConfig, Problem, Subject

class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def client(fake: FakeGitHub, token: str | None = TOKEN, **options) -> GitHub:
    config = GitHubConfig(api=fake.url, repository=REPO, token=token)
    return GitHub(config, sleep=options.pop("sleep", Sleeps()), **options)


def patches(*names: str) -> list[Subject]:
    return [Subject("patch", name) for name in names]


def problem(patch: str, verdict: str = "conflict") -> Problem:
    return Problem(Subject("patch", patch), verdict=verdict, summary=f"{patch} does not apply",
                   body_markdown=f"Broken by upstream commit abc123 (#{len(patch)}).")


def test_issue_lifecycle_open_update_close(fake):
    """Night 1 opens one labelled issue per failing patch; night 2 updates the one still failing
    (no second issue) and closes the other with a comment; night 3 leaves nothing open."""
    night1 = client(fake).sync_issues([problem("a.patch"), problem("b.patch", "missing-file")], patches("c.patch"), RUN)
    assert fake.calls() == [("GET", f"/repos/{REPO}/issues"), ("GET", f"/repos/{REPO}/labels/{LABEL}"),
                            ("POST", f"/repos/{REPO}/labels"), ("POST", f"/repos/{REPO}/issues"),
                            ("POST", f"/repos/{REPO}/issues")]
    assert fake.log[0].query == {"labels": LABEL, "state": "open", "per_page": "100"}
    assert fake.log[2].body["name"] == LABEL
    created = fake.log[3].body
    assert created["labels"] == [LABEL]
    assert created["title"] == "Nightly: patch a.patch is conflict"
    assert created["body"].startswith("<!-- patchkit:patch=a.patch -->\n**a.patch does not apply**\n")
    assert "Broken by upstream commit abc123" in created["body"] and RUN in created["body"]
    assert fake.log[4].body["title"] == "Nightly: patch b.patch is missing-file"
    assert fake.open_issues() == {"a.patch": 1, "b.patch": 2}
    assert night1 == [Action("open-issue", "a.patch", "#1", f"https://github.com/{REPO}/issues/1"),
                      Action("open-issue", "b.patch", "#2", f"https://github.com/{REPO}/issues/2")]

    fake.log.clear()
    night2 = client(fake).sync_issues([problem("a.patch", "ambiguous")], patches("b.patch", "c.patch"), RUN + "0")
    assert fake.calls() == [("GET", f"/repos/{REPO}/issues"), ("PATCH", f"/repos/{REPO}/issues/1"),
                            ("POST", f"/repos/{REPO}/issues/2/comments"), ("PATCH", f"/repos/{REPO}/issues/2")]
    assert fake.log[1].body["title"] == "Nightly: patch a.patch is ambiguous"
    assert RUN + "0" in fake.log[1].body["body"]
    assert fake.log[3].body == {"state": "closed", "state_reason": "completed"}
    assert "b.patch" in fake.comments[2][0] and RUN + "0" in fake.comments[2][0]
    assert [(a.kind, a.subject, a.target) for a in night2] == [("update-issue", "a.patch", "#1"),
                                                               ("close-issue", "b.patch", "#2")]
    assert fake.open_issues() == {"a.patch": 1} and len(fake.issues) == 2

    night3 = client(fake).sync_issues([], patches("a.patch", "b.patch"), None)
    assert [(a.kind, a.target) for a in night3] == [("close-issue", "#1")]
    assert fake.open_issues() == {}
    assert fake.comments[1] == ["Patch `a.patch` applies and passes its checks again. Closing."]


def test_issues_are_found_on_every_page_and_others_left_alone(fake):
    """Open issues come 2 a page here: the one on page 3 is updated, not duplicated; issues
    without the marker, closed ones and pull requests are not touched."""
    fake.labels.add(LABEL)
    fake.page_size = 2
    label = [{"name": LABEL}]
    for n, patch in enumerate(["p1", "p2", "p3", "p4"], start=1):
        fake.issues[n] = {"number": n, "title": patch, "body": f"<!-- patchkit:patch={patch}.patch -->",
                          "state": "open", "labels": label}
    fake.issues[5] = {"number": 5, "title": "by hand", "body": "no marker", "state": "open", "labels": label}
    fake.issues[6] = {"number": 6, "title": "old", "body": "<!-- patchkit:patch=p5.patch -->", "state": "closed",
                      "labels": label}
    fake.issues[7] = {"number": 7, "title": "a PR", "body": "<!-- patchkit:patch=p5.patch -->", "state": "open",
                      "labels": label, "pull_request": {}}
    actions = client(fake).sync_issues([problem("p4.patch")], patches("p5.patch"), RUN)
    pages = [c.query.get("page") for c in fake.log if c.method == "GET"]
    assert pages == [None, "2", "3"]
    assert [(a.kind, a.target) for a in actions] == [("update-issue", "#4")]
    assert fake.calls()[3:] == [("PATCH", f"/repos/{REPO}/issues/4")]
    assert len(fake.issues) == 7 and fake.issues[7]["state"] == "open"


def test_retries_5xx_with_growing_delays(fake):
    fake.failures = [(502, {}), (503, {}), (500, {})]
    sleeps = Sleeps()
    action = client(fake, sleep=sleeps).open_pull_request("patchkit/refresh", "main", "t", "b")
    assert action.kind == "open-pr"
    assert sleeps == [2.0, 4.0, 8.0]
    assert fake.calls()[-1] == ("POST", f"/repos/{REPO}/pulls") and len(fake.pulls) == 1


def test_rate_limit_waits_until_the_reset_then_succeeds(fake):
    fake.labels.add(LABEL)
    fake.failures = [(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1000042"}),
                     (429, {"retry-after": "7"})]
    sleeps = Sleeps()
    actions = client(fake, sleep=sleeps, clock=lambda: 1000000.0).sync_issues([problem("a.patch")], [], RUN)
    assert sleeps == [42.0, 7.0]
    assert [a.kind for a in actions] == ["open-issue"] and fake.open_issues() == {"a.patch": 1}


def test_a_rate_limit_far_away_is_an_environment_problem_without_waiting(fake):
    fake.failures = [(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1003600"})]
    sleeps = Sleeps()
    with pytest.raises(EnvironmentProblem, match="rate limit"):
        client(fake, sleep=sleeps, clock=lambda: 1000000.0).sync_issues([problem("a.patch")], [], RUN)
    assert sleeps == []


def test_keeps_failing_is_an_environment_problem(fake):
    fake.failures = [(502, {})] * 3
    sleeps = Sleeps()
    with pytest.raises(EnvironmentProblem, match=r"GET /repos/.*/issues answered 502 .*3 tries") as error:
        client(fake, sleep=sleeps, retries=2).sync_issues([problem("a.patch")], [], RUN)
    assert error.value.exit_code == 3 and sleeps == [2.0, 4.0]


def test_unreachable_api_is_an_environment_problem():
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sleeps = Sleeps()
    github = GitHub(GitHubConfig(api=f"http://127.0.0.1:{port}", repository=REPO, token=TOKEN),
                    sleep=sleeps, timeout=5)
    with pytest.raises(EnvironmentProblem, match=f"cannot reach http://127.0.0.1:{port}") as error:
        github.sync_issues([problem("a.patch")], [], RUN)
    assert error.value.exit_code == 3 and len(sleeps) == 4


@pytest.mark.parametrize("status, words", [(401, "refused the token"), (404, "not found")])
def test_401_and_404_name_the_repository_and_what_to_check(fake, status, words):
    fake.failures = [(status, {})]
    with pytest.raises(PatchkitError, match=words) as error:
        client(fake).sync_issues([problem("a.patch")], [], RUN)
    assert REPO in str(error.value) and "check" in str(error.value) and error.value.exit_code == 2


def test_a_dropped_label_is_an_error_not_a_silent_duplicate_tomorrow(fake):
    """GitHub silently drops the labels of a new issue when the token may not set them."""
    fake.labels.add(LABEL)
    fake.drop_labels = True
    with pytest.raises(PatchkitError, match=f"without the label {LABEL}"):
        client(fake).sync_issues([problem("a.patch")], [], RUN)


def test_dry_run_prints_and_sends_nothing(fake):
    said: list[str] = []
    github = client(fake, token=None, say=said.append)
    actions = github.sync_issues([problem("a.patch")], patches("b.patch"), RUN)
    pr = github.open_pull_request("patchkit/refresh", "main", "Refresh", "body")
    assert fake.log == []
    assert actions == [Action("open-issue", "a.patch", None, None, dry_run=True)]
    assert pr == Action("open-pr", "patchkit/refresh", None, None, dry_run=True)
    assert any(f"POST /repos/{REPO}/issues" in line and "patchkit:patch=a.patch" in line for line in said)
    assert any(f"POST /repos/{REPO}/pulls" in line and '"head": "patchkit/refresh"' in line for line in said)


def test_pull_request_is_opened_then_updated(fake):
    first = client(fake).open_pull_request("patchkit/refresh", "main", "Refresh on abc", "report 1")
    assert fake.log[0].query == {"head": "fork-owner:patchkit/refresh", "base": "main", "state": "open"}
    assert fake.log[1].body == {"title": "Refresh on abc", "head": "patchkit/refresh", "base": "main",
                                "body": "report 1"}
    assert first == Action("open-pr", "patchkit/refresh", "#1", f"https://github.com/{REPO}/pull/1")
    fake.log.clear()
    second = client(fake).open_pull_request("patchkit/refresh", "main", "Refresh on def", "report 2")
    assert fake.calls() == [("GET", f"/repos/{REPO}/pulls"), ("PATCH", f"/repos/{REPO}/pulls/1")]
    assert fake.log[1].body == {"title": "Refresh on def", "body": "report 2"}
    assert (second.kind, second.target) == ("update-pr", "#1") and len(fake.pulls) == 1


def test_config_from_the_actions_environment():
    config = GitHubConfig.from_env({"GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": "https://ghe.example/api/v3/",
                                    "GITHUB_TOKEN": ""})
    assert config == GitHubConfig(api="https://ghe.example/api/v3", repository=REPO, token=None)
    assert GitHubConfig.from_env({"GITHUB_REPOSITORY": REPO}).api == "https://api.github.com"
    for bad in ({}, {"GITHUB_REPOSITORY": "no-slash"}, {"GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": "ftp://x"}):
        with pytest.raises(PatchkitError):
            GitHubConfig.from_env(bad)


def test_ci_pull_request_command(fake, tmp_path):
    body = tmp_path / "report.md"
    body.write_text("# nightly\nall good\n")
    env = {"GITHUB_API_URL": fake.url, "GITHUB_REPOSITORY": REPO, "GITHUB_TOKEN": TOKEN}
    result = run_cli("ci", "pull-request", "patchkit/refresh", "--base", "main", "--body-file", str(body),
                     cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "opened pull request #1 for patchkit/refresh" in result.stdout
    assert fake.pulls[1]["body"] == "# nightly\nall good\n" and fake.pulls[1]["title"] == "patchkit: queue refreshed"
    missing = run_cli("ci", "pull-request", "x", "--base", "main", cwd=tmp_path, env={**env, "GITHUB_REPOSITORY": ""})
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "GITHUB_REPOSITORY" in missing.stderr
