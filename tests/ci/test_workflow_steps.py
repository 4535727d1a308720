"""The generated workflow, run: the nightly job's, the CPU job's and the summary job's `run:` steps in
order, with bash, in a temporary fork, on an upstream the CPU recipe really builds (the tiny
CMake-shaped llama.cpp of tests/backends/project), so that a typo in a command line fails here,
not on a night.

What GitHub Actions would provide is substituted, and nothing else:

- `${{ }}` expressions: `secrets.PATCHKIT_TOKEN` is unset, so `... || github.token` is the fake's
  token; `github.run_id` is 7; `steps.ID.outputs.NAME` and `needs.JOB.outputs.NAME` are what the
  steps wrote to `$GITHUB_OUTPUT` (a job's `outputs:` evaluated at its end). Any other expression
  fails the test. `if:` knows `always()`, `!cancelled()` (true), `&&`, `==` and `!=`; a step
  without one runs while every step before it succeeded, a job while the jobs it needs did.
- Each job runs in its own machine, laid out as GitHub's: a runner's HOME `home/runner` with the
  workspace `home/runner/work/fork/fork`; a job with a `container:` has HOME `github/home` and the
  workspace `__w/fork/fork`. `uses: actions/checkout` is a clone of the fork (its `origin` is a
  local bare remote, so `git push` goes there); `actions/setup-python` puts this interpreter on
  PATH as `python`; `actions/cache/restore|save` copy the path from and to a folder per key,
  stored as actions/cache stores it, relative to the workspace (`~` is the job's HOME), and
  restored relative to the restoring job's workspace (by exact key, else the newest under a
  `restore-keys` prefix); `actions/upload-artifact` copies the path to a
  folder per artifact, `actions/download-artifact` copies every one matching its pattern back,
  one folder each.
- The step "Install patchkit" is this checkout instead: a `patchkit` on PATH runs `python -m
  patchkit` with PYTHONPATH at this checkout (cmake and ninja are the machine's); the wheel it
  would install is tested in test_install.py.
  The step that installs packages with apt is skipped: the tools are present here (ccache or not,
  patchkit builds).
- `$GITHUB_OUTPUT`, `$GITHUB_ENV`, `$GITHUB_PATH` and `$GITHUB_STEP_SUMMARY` are files, read back as
  the runner does; GITHUB_REPOSITORY, GITHUB_REF_NAME (main), GITHUB_RUN_ID and GITHUB_API_URL (the
  tests' fake GitHub) are set; GITHUB_SERVER_URL is a `file://` folder holding the fork's remote
  as `owner/name.git`, where the push goes. `github.ref_name` and
  `github.event.repository.default_branch` are main; a cache restore's `cache-hit` is an output.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import git_identity, run_cli
from github_fake import REPO, TOKEN, FakeGitHub, fake_fixture  # noqa: F401 (a fixture)
from patchkit.ci.actions import PINS

PROJECT = Path(__file__).resolve().parents[1] / "backends" / "project"
CHECKOUT = Path(__file__).resolve().parents[2]
WORKFLOW = Path(".github/workflows/patchkit-nightly.yml")
RUN_ID = "7"

pytestmark = pytest.mark.skipif(not (shutil.which("cmake") and shutil.which("ninja")),
                                reason="cmake and ninja are needed (.ci/run installs them)")


def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, **git_identity(), "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@dataclass
class Runner:
    """GitHub Actions as far as the workflow's steps need it (see the module's docstring)."""

    root: Path
    fork_remote: Path
    github: FakeGitHub
    server: Path = field(init=False)  # GITHUB_SERVER_URL: the fork's remote is owner/name.git there
    job_outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    results: dict[str, str] = field(default_factory=dict)  # job id -> success, failure, skipped
    logs: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.server = self.root / "server"
        (self.server / f"{REPO}.git").parent.mkdir(parents=True)
        (self.server / f"{REPO}.git").symlink_to(self.fork_remote)

    def run_job(self, job_id: str, job: dict[str, Any]) -> None:
        needs = job.get("needs", [])
        needs = [needs] if isinstance(needs, str) else needs
        if job.get("if") != "always()" and any(self.results.get(n) != "success" for n in needs):
            self.results[job_id] = "skipped"
            return
        machine = self.root / "machines" / job_id
        home, workspace = ((machine / "github/home", machine / "__w/fork/fork") if "container" in job
                           else (machine / "home/runner", machine / "home/runner/work/fork/fork"))
        files = machine / "files"
        for folder in (home, workspace, files):
            folder.mkdir(parents=True)
        bin_dir = machine / "bin"
        bin_dir.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "XDG_", "PATCHKIT_"))}
        env.update(HOME=str(home), CI="true", GITHUB_ACTIONS="true", GITHUB_REPOSITORY=REPO, GITHUB_REF_NAME="main",
                   GITHUB_RUN_ID=RUN_ID, GITHUB_SERVER_URL=self.server.as_uri(), GITHUB_API_URL=self.github.url,
                   GITHUB_WORKSPACE=str(workspace), PYTHONPATH=str(CHECKOUT), NO_COLOR="1",
                   GITHUB_STEP_SUMMARY=str(files / "step-summary.md"), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        env.update({k: self.expand(str(v), {}) for k, v in job.get("env", {}).items()})
        steps: dict[str, dict[str, str]] = {}
        failed = False
        for index, step in enumerate(job["steps"]):
            condition = step.get("if")
            if condition is None and failed or condition is not None and not self.condition(condition, steps):
                continue
            ok = self.run_step(index, step, env, steps, machine, workspace, files, bin_dir)
            failed = failed or not ok
        self.job_outputs[job_id] = {k: self.expand(v, steps) for k, v in job.get("outputs", {}).items()}
        self.results[job_id] = "failure" if failed else "success"

    def run_step(self, index: int, step: dict[str, Any], env: dict[str, str], steps: dict[str, dict[str, str]],
                 machine: Path, workspace: Path, files: Path, bin_dir: Path) -> bool:
        name = step.get("name", step.get("uses"))
        if "uses" in step:
            outputs = self.use(step["uses"], {k: self.expand(str(v), steps) for k, v in step.get("with", {}).items()},
                               machine, workspace, bin_dir, env)
            if "id" in step:
                steps[step["id"]] = outputs
            return True
        script = self.expand(step["run"], steps)
        if name == "Install patchkit":  # this checkout instead
            shim = bin_dir / "patchkit"
            shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m patchkit "$@"\n')
            shim.chmod(0o755)
            return True
        if "apt-get install" in script:  # the tools are here
            return True
        output, more_env, more_path = (files / f"{index}.{kind}" for kind in ("output", "env", "path"))
        for file in (output, more_env, more_path):
            file.write_text("")
        step_env = {**env, **{k: self.expand(str(v), steps) for k, v in step.get("env", {}).items()},
                    "GITHUB_OUTPUT": str(output), "GITHUB_ENV": str(more_env), "GITHUB_PATH": str(more_path)}
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=workspace,
                              env=step_env, capture_output=True, text=True, timeout=900)
        self.logs.append(f"--- {name}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}")
        if "id" in step:
            steps[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        env.update(line.split("=", 1) for line in more_env.read_text().splitlines() if "=" in line)
        for folder in more_path.read_text().splitlines():
            env["PATH"] = f"{folder}{os.pathsep}{env['PATH']}"
        return proc.returncode == 0

    def use(self, action: str, inputs: dict[str, str], machine: Path, workspace: Path, bin_dir: Path,
            env: dict[str, str]) -> dict[str, str]:
        home = Path(env["HOME"])
        action, _, commit = action.partition("@")
        assert commit == PINS[action][0], f"{action}@{commit} is not pinned"

        def path(value: str) -> Path:
            return home / value[2:] if value.startswith("~/") else workspace / value

        def cached(relative: str) -> Path:  # tar -C WORKSPACE: a `..` above the machine's root stays there
            parts = list(workspace.relative_to(machine).parts)
            for part in Path(relative).parts:
                parts = parts[:-1] if part == ".." else [*parts, part]
            return machine.joinpath(*parts)

        store, artifacts = self.root / "cache-store", self.root / "artifacts"
        if action == "actions/checkout":
            assert inputs == {"persist-credentials": "False"}
            workspace.rmdir()
            git("clone", "-q", "--branch", "main", str(self.fork_remote), str(workspace), cwd=self.root)
        elif action == "actions/setup-python":
            (bin_dir / "python").symlink_to(sys.executable)
        elif action == "actions/cache/restore":
            key = store / inputs["key"]
            hit = key.exists()
            if not key.exists() and "restore-keys" in inputs and store.exists():
                keys = sorted((k for k in store.iterdir() if k.name.startswith(inputs["restore-keys"])),
                              key=lambda k: k.stat().st_mtime)
                key = keys[-1] if keys else key
            if key.exists():
                relative = (key / "path").read_text()
                shutil.copytree(key / "files", cached(relative), symlinks=True, dirs_exist_ok=True)
            return {"cache-hit": "true" if hit else "false"}
        elif action == "actions/cache/save":
            key, saved = store / inputs["key"], path(inputs["path"])
            if not key.exists() and saved.exists():  # a saved key never changes
                shutil.copytree(saved, key / "files", symlinks=True)
                (key / "path").write_text(os.path.relpath(saved, workspace))
        elif action == "actions/upload-artifact":
            assert inputs["include-hidden-files"] == "True"
            if path(inputs["path"]).exists():
                shutil.copytree(path(inputs["path"]), artifacts / inputs["name"])
        elif action == "actions/download-artifact":
            for artifact in sorted(artifacts.iterdir()):
                if fnmatch.fnmatch(artifact.name, inputs["pattern"]):
                    shutil.copytree(artifact, path(inputs["path"]) / artifact.name)
        else:
            raise AssertionError(f"the workflow uses {action}, which this runner does not know")
        return {}

    def expand(self, text: str, steps: dict[str, dict[str, str]]) -> str:
        return re.sub(r"\$\{\{\s*(.+?)\s*\}\}", lambda m: self.value(m.group(1), steps), text)

    def value(self, expression: str, steps: dict[str, dict[str, str]]) -> str:
        for operand in (o.strip() for o in expression.split("||")):
            if operand == "github.token":
                found = TOKEN
            elif operand == "github.event_name":
                found = "workflow_dispatch"
            elif operand == "github.run_id":
                found = RUN_ID
            elif operand in ("github.ref_name", "github.event.repository.default_branch"):
                found = "main"
            elif operand.startswith("secrets."):
                found = ""  # none is set
            elif m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", operand):
                found = steps.get(m.group(1), {}).get(m.group(2), "")
            elif m := re.fullmatch(r"needs\.([\w-]+)\.outputs\.([\w-]+)", operand):
                found = self.job_outputs[m.group(1)].get(m.group(2), "")
            elif m := re.fullmatch(r"'([^']*)'", operand):
                found = m.group(1)
            else:
                raise AssertionError(f"unknown expression {operand!r} in ${{{{ {expression} }}}}")
            if found:
                return found
        return ""

    def condition(self, expression: str, steps: dict[str, dict[str, str]]) -> bool:
        for term in (t.strip() for t in expression.split("&&")):
            if term in ("always()", "!cancelled()"):
                continue
            if not any(self.comparison(t, steps) for t in term.strip("()").split("||")):
                return False
        return True

    def comparison(self, term: str, steps: dict[str, dict[str, str]]) -> bool:
        m = re.fullmatch(r"(.+?)\s*(==|!=)\s*(.+)", term.strip())
        assert m, f"unknown condition {term!r}"
        left, right = self.value(m.group(1), steps), self.value(m.group(3), steps)
        return (left == right) == (m.group(2) == "==")


def upstream_and_fork(tmp_path: Path, recipes: dict[str, str] | None = None) -> tuple[Path, Path, Path]:
    """The tiny upstream (branch master), a fork carrying one patch to it (and RECIPES: the fork's
    recipes/NAME.yaml), and the fork's bare remote."""
    upstream = tmp_path / "upstream"
    shutil.copytree(PROJECT, upstream)
    git("init", "-q", "-b", "master", cwd=upstream)
    git("add", "-A", cwd=upstream)
    git("commit", "-q", "-m", "upstream", cwd=upstream)
    work = tmp_path / "work"
    git("clone", "-q", str(upstream), str(work), cwd=tmp_path)
    server = work / "tools/server/server.cpp"
    server.write_text(server.read_text().replace("int main() {", 'int main() {\n    std::puts("carried by the fork");'))
    git("commit", "-q", "-am", "server: say hello", cwd=work)
    fork = tmp_path / "fork"
    (fork / "patches").mkdir(parents=True)
    (fork / "patches/hello.patch").write_text(git("format-patch", "-1", "--stdout", cwd=work))
    (fork / "patches/series").write_text("hello.patch\n")
    (fork / "patchkit.yaml").write_text(f"upstream:\n  url: {upstream}\n  branch: master\n")
    (fork / ".gitignore").write_text("/.patchkit/\n/llama.cpp/\n")
    for name, text in (recipes or {}).items():
        (fork / "recipes").mkdir(exist_ok=True)
        (fork / "recipes" / f"{name}.yaml").write_text(text)
    generated = run_cli("ci", "github", "--backend", "cpu", cwd=fork)
    assert generated.returncode == 0, generated.stderr
    git("init", "-q", "-b", "main", cwd=fork)
    git("add", "-A", cwd=fork)
    git("commit", "-q", "-m", "the fork", cwd=fork)
    remote = tmp_path / "remote.git"
    git("clone", "-q", "--bare", str(fork), str(remote), cwd=tmp_path)
    return upstream, fork, remote


def test_the_nightly_cpu_and_summary_jobs_run_as_written(tmp_path, fake, as_installed):
    """A good night: the nightly applies and refreshes without a token, the CPU job builds at the
    commit it applied, and the summary pushes the refresh to the remote and opens its pull request
    with the night's one verdict; no issue is opened."""
    upstream, fork, remote = upstream_and_fork(tmp_path)
    upstream_commit = git("rev-parse", "HEAD", cwd=upstream).strip()
    workflow = yaml.safe_load((fork / WORKFLOW).read_text())
    runner = Runner(tmp_path, remote, fake)
    for job_id in ("nightly", "build-cpu", "summary"):
        runner.run_job(job_id, workflow["jobs"][job_id])
    log = "\n".join(runner.logs)
    assert runner.results == {"nightly": "success", "build-cpu": "success", "summary": "success"}, log
    assert runner.job_outputs["nightly"] == {"commit": upstream_commit}

    build = tmp_path / "artifacts/patchkit-build-cpu/report.json"
    assert '"status": "ok"' in build.read_text(), log
    assert "# patchkit build cpu" in (tmp_path / "artifacts/patchkit-build-cpu/logs/cpu.log").read_text()
    summary = (tmp_path / "artifacts/patchkit-summary/report.json").read_text()
    assert '"refresh": true' in summary and '"passed": true' in summary

    # The refresh went to the remote, on its branch, with the lock at tonight's commit.
    lock = git("show", "patchkit/refresh:patchkit.lock", cwd=remote)
    assert upstream_commit in lock
    # The record of what built where goes with it: cpu built tonight at this commit.
    record = json.loads(git("show", "patchkit/refresh:patchkit.builds.json", cwd=remote))
    assert record["backends"]["cpu"]["commit"] == upstream_commit
    assert git("rev-parse", "patchkit/refresh~1", cwd=remote) == git("rev-parse", "main", cwd=remote)
    # The push carried the token in git's environment for that command: nothing of it stays on disk.
    for config in (tmp_path / "machines").glob("*/**/.git/config"):
        assert "extraheader" not in config.read_text() and TOKEN not in config.read_text(), config
    (pull,) = fake.pulls.values()
    assert (pull["head"], pull["base"]) == ("patchkit/refresh", "main")
    assert pull["body"].startswith("# patchkit night: good\n") and "cpu ok" in pull["body"]
    assert fake.issues == {}
    step_summary = (tmp_path / "machines/summary/files/step-summary.md").read_text()
    assert step_summary.startswith("# patchkit night: good\n")

    # The run proves something: the summary job with a typo in its command fails, and then
    # neither pushes nor touches the pull request.
    broken = yaml.safe_load((fork / WORKFLOW).read_text().replace("patchkit ci summary", "patchkit ci sumary"))
    fake.log.clear()
    runner.run_job("summary-with-a-typo", broken["jobs"]["summary"])
    assert runner.results["summary-with-a-typo"] == "failure"
    assert "no such command 'sumary'" in runner.logs[-1] and fake.log == []


def test_a_container_job_builds_from_the_mirror_the_nightly_saved(tmp_path, fake, as_installed):
    """The CPU job in a container (its own workspace and HOME, as CUDA's and HIP's are): patchkit
    there finds the upstream mirror the nightly saved on the runner, and clones none of its own."""
    recipe = (CHECKOUT / "recipes/cpu.yaml").read_text().split("\nci:")[0]
    recipe += "\nci:\n  runs-on: ubuntu-24.04\n  container: ubuntu:24.04\n"
    upstream, fork, remote = upstream_and_fork(tmp_path, {"cpu": recipe})
    workflow = yaml.safe_load((fork / WORKFLOW).read_text())
    assert workflow["jobs"]["build-cpu"]["container"] == "ubuntu:24.04"
    runner = Runner(tmp_path, remote, fake)
    for job_id in ("nightly", "build-cpu"):
        runner.run_job(job_id, workflow["jobs"][job_id])
    log = "\n".join(runner.logs)
    assert runner.results == {"nightly": "success", "build-cpu": "success"}, log
    machine = tmp_path / "machines/build-cpu"
    mirrors = [head.parent for head in machine.glob("**/mirrors/*/HEAD")]
    assert len(mirrors) == 1, mirrors
    assert mirrors[0].is_relative_to(machine / "__w/fork/fork")  # in the workspace, restored there
