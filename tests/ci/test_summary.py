"""`patchkit ci summary`: the night's reports from several jobs, gathered into one verdict, one
refresh decision and one GitHub issue per failing patch or backend."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import assert_matches_schema, run_cli
from github_fake import REPO, TOKEN, fake_fixture  # noqa: F401 (a fixture)
from patchkit.backends.recipe import load_recipes
from patchkit.ci.builds import environment_id

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def result(status: str, **fields) -> dict:
    """A build result as build.schema.json has it."""
    return {"status": status, "reason": "" if status == "ok" else f"the build {status}", "configure_seconds": 1.0,
            "build_seconds": 2.0, "artifacts": [], "first_error": None, "unused_variables": [], "log": None, **fields}


def nightly_report(patches: dict[str, str], *, builds: dict[str, dict] | None = None,
                   blame: dict[str, str] | None = None, drift: tuple[str, ...] = ()) -> dict:
    """A `patchkit nightly` report.json, valid against its schema. BLAME: backend -> the unpatched
    build's status."""
    good = all(v in ("clean", "offset", "merged") for v in patches.values())
    results = [{"backend": b, **result(r.pop("status"), **r)} for b, r in
               ((b, dict(r)) for b, r in (builds or {}).items())]
    passed = good and all(r["status"] == "ok" for r in results) and not drift
    builds_report = {"tree": "/t", "build_dir": "/t/build", "requested_by_name": True, "results": results,
                     "defines": {}, "interrupted": False, "allow_skip": False} if builds is not None else None
    return {"schema": 1, "kind": "nightly", "passed": passed, "locked_commit": None, "refreshed": [],
            "lock_moved": False,
            "apply": {"upstream_url": "https://github.com/ggml-org/llama.cpp", "ref": "HEAD", "upstream_commit": COMMIT,
                      "branch": "patchkit/HEAD", "output": None, "tip": COMMIT, "tree": COMMIT, "checks": None,
                      "drift": [_drift(name) for name in drift], "lock_updated": False, "bases_recorded": 0,
                      "passed": passed, "smoke": None, "warnings": [],
                      "patches": [{"name": n, "verdict": v, "detail": "" if v == "clean" else f"{n} is {v}",
                                   "subject": n, "sha256": "0" * 64, "hunks": [], "commit": None, "blocked_by": []}
                                  for n, v in patches.items()],
                      "builds": builds_report},
            "findings": [], "build_blame": [{"backend": b, "fault": "unknown", "detail": "whatever it says",
                                             "unpatched": status} for b, status in (blame or {}).items()],
            "warnings": []}


def _drift(patch: str) -> dict:
    return {"patch": patch, "kind": "parameter-type", "entity": "f", "declared_in": "a.h", "before": "int f()",
            "after": "int f(int)", "lines": [], "culprit": None, "probes": 0, "candidates": 0, "reviewed": False,
            "detail": "f changed", "patched_at": None}


def smoke_report(passed: bool, detail: str) -> dict:
    return {"schema": 1, "kind": "smoke", "tree": "/t", "backend": "cpu", "build": {}, "runs": [],
            "attribution": None, "static": None, "seconds": 1.0, "detail": detail, "passed": passed}


def artifacts(root: Path, night: dict | None, builds: dict[str, dict | None]) -> Path:
    folder = root / "reports"
    (folder / "patchkit-nightly").mkdir(parents=True)
    if night is not None:
        (folder / "patchkit-nightly/report.json").write_text(json.dumps(night))
        (folder / "patchkit-nightly/report.md").write_text("# patchkit nightly: good\n\nthe nightly's own words\n")
    for backend, report in builds.items():
        (folder / f"patchkit-build-{backend}").mkdir()
        if report is not None:
            (folder / f"patchkit-build-{backend}/report.json").write_text(json.dumps(report))
    return folder


def summarize(root: Path, *backends: str, env: dict[str, str] | None = None, issues: bool = False,
              smoked: tuple[str, ...] = ()):
    args = [a for b in backends for a in ("--backend", b)] + [a for b in smoked for a in ("--smoke", b)]
    out = root / "output.txt"
    step = root / "step-summary.md"
    proc = run_cli("ci", "summary", "reports", *args, "--report-dir", "summary", *(["--github-issues"] if issues else []),
                   cwd=root, env={"GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(step), **(env or {})})
    report = json.loads((root / "summary/report.json").read_text()) if (root / "summary/report.json").exists() else None
    return proc, report, out.read_text() if out.exists() else ""


FAILED = {"status": "failed", "first_error": {"file": "ggml/x.cu", "line": 7, "message": "error: no"}}


def test_a_good_night_with_every_backend_built_refreshes(tmp_path):
    artifacts(tmp_path, nightly_report({"a.patch": "clean"}),
              {"cpu": nightly_report({"a.patch": "clean"}, builds={"cpu": {"status": "ok"}})})
    proc, report, output = summarize(tmp_path, "cpu")
    assert proc.returncode == 0, proc.stderr
    assert_matches_schema(report)
    assert (report["passed"], report["refresh"], output) == (True, True, "refresh=true\n")
    markdown = (tmp_path / "summary/report.md").read_text()
    assert markdown.startswith("# patchkit night: good\n") and "| cpu | ok |" in markdown
    assert "## patchkit nightly: good" in markdown and "the nightly's own words" in markdown
    assert (tmp_path / "step-summary.md").read_text() == markdown + "\n"


def test_whose_fault_a_failed_build_is_comes_from_the_facts_and_the_forks_record(tmp_path):
    """A build failing without the queue too is upstream's fault only where patchkit.builds.json
    (beside the lock) shows the backend built in the same environment before; else "environment"
    (check the recipe or runner). Neither holds the refresh back (exit 1: someone should know).
    The artifact's own `fault` is not believed: the unpatched build's status decides."""
    cpu = nightly_report({"a.patch": "clean"}, builds={"cpu": {"status": "ok"}})
    cuda = nightly_report({"a.patch": "clean"}, builds={"cuda": FAILED}, blame={"cuda": "failed"})
    cuda["build_blame"][0]["fault"] = "queue"  # what the artifact claims: not what decides

    def night(name: str, record: dict | None, build: dict = cuda) -> tuple:
        root = tmp_path / name
        root.mkdir()
        (root / "patchkit.yaml").write_text("upstream:\n  url: /nowhere\n")
        if record is not None:
            (root / "patchkit.builds.json").write_text(json.dumps({"schema": 1, "backends": record}))
        artifacts(root, nightly_report({"a.patch": "clean"}), {"cpu": cpu, "cuda": build})
        return summarize(root, "cpu", "cuda")

    cuda_env = environment_id(load_recipes()["cuda"])
    proc, report, output = night("unknown-here", None)
    assert proc.returncode == 1 and output == "refresh=true\n"
    assert [(b["name"], b["status"], b["fault"], b["holds_refresh"]) for b in report["backends"]] == [
        ("cpu", "ok", None, False), ("cuda", "failed", "environment", False)]
    assert report["backends"][1]["detail"] == ("ggml/x.cu:7: error: no; fails without the queue too: "
                                               "check the recipe or runner (logs/cuda.log)")
    assert "cuda failed (fails without the queue too)" in proc.stdout and "upstream" not in proc.stdout

    proc, report, output = night("built-here", {"cuda": {"environment": cuda_env, "commit": "1" * 40}})
    assert output == "refresh=true\n" and report["backends"][1]["fault"] == "upstream"
    assert "cuda failed (upstream's fault)" in proc.stdout
    # Tonight's good builds join the record, beside the reports, for the push.
    written = json.loads((tmp_path / "built-here/summary/patchkit.builds.json").read_text())
    assert written["backends"] == {"cpu": {"environment": environment_id(load_recipes()["cpu"]), "commit": COMMIT},
                                   "cuda": {"environment": cuda_env, "commit": "1" * 40}}

    proc, report, output = night("built-elsewhere", {"cuda": {"environment": "0" * 16, "commit": "1" * 40}})
    assert output == "refresh=true\n" and report["backends"][1]["fault"] == "environment"

    queue = nightly_report({"a.patch": "clean"}, builds={"cuda": FAILED}, blame={"cuda": "ok"})
    queue["build_blame"][0]["fault"] = "upstream"  # claimed; the unpatched build built
    proc, report, output = night("queue", {"cuda": {"environment": cuda_env, "commit": "1" * 40}}, queue)
    assert proc.returncode == 1 and output == "refresh=false\n"
    assert (report["backends"][1]["fault"], report["backends"][1]["holds_refresh"]) == ("queue", True)

    lost = tmp_path / "lost"
    lost.mkdir()
    artifacts(lost, nightly_report({"a.patch": "clean"}), {"cpu": cpu, "cuda": None})
    proc, report, output = summarize(lost, "cpu", "cuda", "vulkan")  # vulkan: no folder at all
    assert proc.returncode == 1 and output == "refresh=false\n"
    assert [b["status"] for b in report["backends"]] == ["ok", "no-report", "no-report"]


def test_a_smoke_test_that_failed_or_left_no_report_holds_the_refresh_back(tmp_path):
    cpu = nightly_report({"a.patch": "clean"}, builds={"cpu": {"status": "ok"}})
    blas = nightly_report({"a.patch": "clean"}, builds={"blas": {"status": "ok"}})
    folder = artifacts(tmp_path, nightly_report({"a.patch": "clean"}), {"cpu": cpu, "blas": blas})
    (folder / "patchkit-build-cpu/smoke.json").write_text(json.dumps(smoke_report(False, "the flag missed a save")))
    proc, report, output = summarize(tmp_path, "cpu", "blas", smoked=("cpu", "blas"))
    assert proc.returncode == 1 and output == "refresh=false\n"
    assert [(b["smoke"], b["detail"]) for b in report["backends"]] == [
        (False, "the smoke test failed: the flag missed a save"),
        (False, "the smoke test failed: it left no report (see the job's log)")]


def test_a_bad_night_builds_nothing_and_a_lost_nightly_is_said(tmp_path):
    artifacts(tmp_path, nightly_report({"a.patch": "conflict"}), {})
    proc, report, output = summarize(tmp_path, "cpu")
    assert proc.returncode == 1 and output == "refresh=false\n"
    assert (report["night"], report["backends"][0]["status"]) == ("needs-attention", "not-built")
    lost = tmp_path / "lost"
    lost.mkdir()
    artifacts(lost, None, {})
    proc, report, output = summarize(lost, "cpu")
    assert proc.returncode == 1 and report["night"] == "no-report" and "left no report" in proc.stdout


def test_one_issue_per_failing_patch_and_backend_whose_markers_never_collide(tmp_path, fake):
    """A patch and a backend of one name are two issues; a backend good again closes its own only."""
    env = {"GITHUB_API_URL": fake.url, "GITHUB_REPOSITORY": REPO, "GITHUB_TOKEN": TOKEN,
           "GITHUB_RUN_ID": "9", "GITHUB_SERVER_URL": "https://github.com"}
    cuda = nightly_report({"cuda": "clean"}, builds={"cuda": FAILED}, blame={"cuda": "ok"})
    artifacts(tmp_path, nightly_report({"cuda": "clean"}), {"cuda": cuda})
    proc, _, _ = summarize(tmp_path, "cuda", env=env, issues=True)
    assert proc.returncode == 1, proc.stderr
    (issue,) = fake.issues.values()
    assert issue["title"] == "Nightly: backend cuda is broken by the queue"
    assert issue["body"].startswith("<!-- patchkit:backend=cuda -->\n")
    assert "the queue's fault" in issue["body"] and "patchkit-build-cuda" in issue["body"]
    assert f"https://github.com/{REPO}/actions/runs/9" in issue["body"]

    night2 = tmp_path / "night2"
    night2.mkdir()
    bad = nightly_report({"cuda": "conflict"})
    bad["findings"] = [{"patch": "cuda", "kind": "broke", "probes": 3, "reused": 0, "candidates": 4, "bound": 4,
                        "monotonic": True, "parent_good": True, "blocked_by": None, "applied_upstream": None,
                        "detail": "conflict", "culprit": {
                            "commit": "f" * 40, "subject": "server : rework checkpoints (#4242)",
                            "author": "Up Stream <up@example.org>", "date": "2026-11-30T10:00:00+00:00",
                            "pull": 4242, "url": None, "pull_url": None}}]
    artifacts(night2, bad, {})
    proc, _, _ = summarize(night2, "cuda", env=env, issues=True)
    assert proc.returncode == 1, proc.stderr
    assert [(i["title"], i["state"]) for i in fake.issues.values()] == [
        ("Nightly: backend cuda is broken by the queue", "open"), ("Nightly: patch cuda is conflict", "open")]
    # The patch's issue names the upstream commit the nightly's bisect found, as the nightly's own would.
    assert "`cuda`: broke by `ffffffffffff` server : rework checkpoints" in fake.issues[2]["body"]

    night3 = tmp_path / "night3"
    night3.mkdir()
    artifacts(night3, nightly_report({"cuda": "clean"}),
              {"cuda": nightly_report({"cuda": "clean"}, builds={"cuda": {"status": "ok"}})})
    proc, _, output = summarize(night3, "cuda", env=env, issues=True)
    assert proc.returncode == 0 and output == "refresh=true\n", proc.stderr
    assert [i["state"] for i in fake.issues.values()] == ["closed", "closed"]
    assert fake.comments[1][0].startswith("Backend `cuda` builds again")
    assert fake.comments[2][0].startswith("Patch `cuda` applies and passes its checks again")


def test_bad_input_is_one_line(tmp_path):
    for args, words in ((["nowhere"], "no such folder"), (["reports", "--backend", "../x"], "not a recipe name")):
        (tmp_path / "reports").mkdir(exist_ok=True)
        proc = run_cli("ci", "summary", *args, cwd=tmp_path)
        assert proc.returncode == 2 and words in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_a_hostile_upstream_prints_no_workflow_command_and_renders_no_html_or_mention(tmp_path, fake):
    """The Done-when case: a build message holding workflow commands, and a culprit whose subject
    and author hold a mention, HTML, a marker of patchkit's and `(#N)`: the output has no line the
    runner would execute, and the Markdown (report, step summary, issues) shows all of it as text."""
    env = {"GITHUB_API_URL": fake.url, "GITHUB_REPOSITORY": REPO, "GITHUB_TOKEN": TOKEN, "GITHUB_ACTIONS": "true",
           "GITHUB_RUN_ID": "9", "GITHUB_SERVER_URL": "https://github.com"}
    message = "error: no\n::add-mask::hidden\n  ::error file=x::pwned\n::stop-commands::tok\n##[error]old <img src=x>"
    cuda = nightly_report({"a.patch": "clean"}, builds={"cuda": {"status": "failed", "first_error": {
        "file": "ggml/x.cu", "line": 7, "message": message}}}, blame={"cuda": "ok"})
    night = nightly_report({"a.patch": "conflict", "b.patch": "clean"})
    hostile = "@someone <img src=x> <!-- patchkit:patch=b.patch --> https://evil.example (#12345)"
    night["findings"] = [{"patch": "a.patch", "kind": "broke", "probes": 3, "reused": 0, "candidates": 4, "bound": 4,
                          "monotonic": True, "parent_good": True, "blocked_by": None, "applied_upstream": None,
                          "detail": "conflict", "culprit": {
                              "commit": "f" * 40, "subject": f"server : {hostile}", "author": "Eve <@evil>",
                              "date": "2026-11-30T10:00:00+00:00", "pull": 12345,
                              "url": f"https://github.com/ggml-org/llama.cpp/commit/{'f' * 40}",
                              "pull_url": "https://github.com/ggml-org/llama.cpp/pull/12345"}}]
    artifacts(tmp_path, night, {"cuda": cuda})
    # The night needs attention: no build job ran; the build report is read in a good night below.
    proc, _, _ = summarize(tmp_path, "cuda", env=env, issues=True)
    good = tmp_path / "good"
    good.mkdir()
    artifacts(good, nightly_report({"a.patch": "clean"}), {"cuda": cuda})
    proc2, _, _ = summarize(good, "cuda", env=env, issues=True)
    printed = proc.stdout + proc.stderr + proc2.stdout + proc2.stderr
    assert "pwned" in printed
    assert not re.search(r"^[ \t\r]*(::|##\[)", printed, re.M), printed

    markdown = [(root / "summary/report.md").read_text() + (root / "step-summary.md").read_text()
                for root in (tmp_path, good)] + [issue["body"] for issue in fake.issues.values()]
    for text in markdown:
        assert "<img" not in text and "@someone" not in text and "@evil" not in text
        assert "https://evil" not in text and text.count("<!-- patchkit:") <= 1
        assert "(#12345)" not in text  # linked to upstream's pull request, not the fork's issue
    patch_issue = next(i for i in fake.issues.values() if i["body"].startswith("<!-- patchkit:patch=a.patch -->"))
    assert "[#12345](https://github.com/ggml-org/llama.cpp/pull/12345)" in patch_issue["body"]
    # b.patch's issue is not a.patch's, whatever a.patch's culprit says.
    assert not any(i["body"].startswith("<!-- patchkit:patch=b.patch") for i in fake.issues.values())


def test_drift_keeps_its_issue_open_a_failed_build_has_no_smoke_and_each_message_is_said_once(tmp_path, fake):
    env = {"GITHUB_API_URL": fake.url, "GITHUB_REPOSITORY": REPO, "GITHUB_TOKEN": TOKEN}
    # Night 1: a.patch fails its checks (an open issue). Night 2: it applies, but drifts unreviewed.
    first = nightly_report({"a.patch": "conflict"})
    artifacts(tmp_path, first, {})
    summarize(tmp_path, env=env, issues=True)
    assert [i["title"] for i in fake.issues.values()] == ["Nightly: patch a.patch is conflict"]
    second = tmp_path / "second"
    second.mkdir()
    cpu = nightly_report({"a.patch": "clean"}, builds={"cpu": FAILED}, blame={"cpu": "ok"})
    cuda = nightly_report({"a.patch": "clean"}, builds={})
    cuda["warnings"] = ["not built: the queue did not apply in the build job"]
    artifacts(second, nightly_report({"a.patch": "clean"}, drift=("a.patch",)), {"cpu": cpu, "cuda": cuda})
    proc, report, _ = summarize(second, "cpu", "cuda", env=env, issues=True, smoked=("cpu",))
    assert proc.returncode == 1
    (issue,) = fake.issues.values()
    assert (issue["state"], issue["title"]) == ("open", "Nightly: patch a.patch is drifting")
    assert report["patches"][0]["drifting"] is True
    # The night needed attention (drift): nothing was built; then with a good night, the builds.
    third = tmp_path / "third"
    third.mkdir()
    artifacts(third, nightly_report({"a.patch": "clean"}), {"cpu": cpu, "cuda": cuda})
    proc, report, _ = summarize(third, "cpu", "cuda", smoked=("cpu",))
    cpu_state, cuda_state = report["backends"]
    assert (cpu_state["status"], cpu_state["smoke"]) == ("failed", None)  # not run: it built nothing
    assert cuda_state["detail"] == "not built: the queue did not apply in the build job"
    markdown = (third / "summary/report.md").read_text()
    assert "| cpu | failed (the queue's fault) | not run |" in markdown and "not built: not built" not in proc.stdout


def test_an_artifact_that_is_not_a_valid_report_counts_as_none(tmp_path):
    """The build jobs ran upstream's code, which may have written their reports: one that is not
    valid against its schema is no report (the job failed), whatever it says."""
    forged = nightly_report({"a.patch": "clean"}, builds={"cpu": {"status": "ok"}})
    forged["apply"]["builds"]["results"][0]["status"] = "ok, trust me"
    smoke = tmp_path / "smoke"
    smoke.mkdir()
    artifacts(tmp_path, nightly_report({"a.patch": "clean"}), {"cpu": forged})
    proc, report, output = summarize(tmp_path, "cpu")
    assert proc.returncode == 1 and output == "refresh=false\n"
    assert report["backends"][0]["status"] == "no-report" and "no valid report" in report["backends"][0]["detail"]
    # A smoke report that says it passed without the fields of one: no smoke report, which is a failure.
    folder = artifacts(smoke, nightly_report({"a.patch": "clean"}),
                       {"cpu": nightly_report({"a.patch": "clean"}, builds={"cpu": {"status": "ok"}})})
    (folder / "patchkit-build-cpu/smoke.json").write_text('{"schema": 1, "kind": "smoke", "passed": true}')
    proc, report, output = summarize(smoke, "cpu", smoked=("cpu",))
    assert proc.returncode == 1 and report["backends"][0]["smoke"] is False
