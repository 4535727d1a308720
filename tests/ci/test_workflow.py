"""`patchkit ci github`: the nightly workflow, through actionlint and by its structure."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from patchkit.errors import PatchkitError
from patchkit.backends.recipe import CiEnvironment
from patchkit.ci.actions import PINS
from patchkit.ci.install import Install
from patchkit.ci.workflow import nightly_workflow

WORKFLOW = Path(".github/workflows/patchkit-nightly.yml")
TOKEN = "${{ secrets.PATCHKIT_TOKEN || github.token }}"


@pytest.fixture(autouse=True)
def _installed(as_installed):
    """`ci github` as a user runs it: from patchkit installed, not editable (which it refuses)."""


def fork(tmp_path: Path, config: str = "") -> Path:
    root = tmp_path / "fork"
    root.mkdir()
    (root / "patchkit.yaml").write_text(f"upstream:\n  url: /nowhere\n{config}")
    return root


def actionlint(path: Path, *options: str) -> subprocess.CompletedProcess:
    tool = shutil.which("actionlint")
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail("actionlint is missing: pip install -e '.[test]'")
        pytest.skip("actionlint not installed (pip install -e '.[test]')")
    return subprocess.run([tool, "-no-color", *options, str(path)], capture_output=True, text=True, timeout=120)


def steps_by_name(job: dict) -> dict[str, dict]:
    return {step.get("name", step.get("uses", "").split("@")[0]): step for step in job["steps"]}


def lint_clean(path: Path, *options: str) -> None:
    lint = actionlint(path, *options)
    assert (lint.returncode, lint.stdout + lint.stderr) == (0, "")


def test_generated_workflow_passes_actionlint_and_has_the_structure(tmp_path):
    root = fork(tmp_path)
    result = run_cli("ci", "github", "--backend", "cpu", "--backend", "vulkan", cwd=root)
    assert result.returncode == 0, result.stderr
    path = root / WORKFLOW
    lint_clean(path)

    workflow = yaml.safe_load(path.read_text())
    assert workflow["on"] == {"schedule": [{"cron": "17 3 * * *"}], "workflow_dispatch": {}}
    assert workflow["permissions"] == {"contents": "read"}
    assert workflow["defaults"] == {"run": {"shell": "bash"}}
    jobs = workflow["jobs"]
    assert list(jobs) == ["nightly", "build-cpu", "build-vulkan", "summary"]
    nightly, summary = jobs["nightly"], jobs["summary"]
    # Only the last job may write, and only it sees the token.
    assert nightly["permissions"] == {"contents": "read"} and TOKEN not in yaml.dump(nightly)
    assert summary["permissions"] == {"contents": "write", "issues": "write", "pull-requests": "write"}
    assert summary["if"] == "always()" and summary["needs"] == ["nightly", "build-cpu", "build-vulkan"]

    steps = steps_by_name(nightly)
    night = steps["patchkit nightly"]
    assert night["id"] == "night" and night["run"].startswith('patchkit nightly --report-dir "$REPORTS"\n')
    assert '>> "$GITHUB_OUTPUT"' in night["run"] and "--github-issues" not in night["run"]
    assert nightly["env"] == {"REPORTS": ".patchkit/nightly"}
    assert nightly["outputs"] == {"commit": "${{ steps.night.outputs.commit }}"}
    mirror = steps["Restore the upstream mirror"]["with"]
    # In the workspace, where a container job restores it too, and patchkit told so.
    # Keyed by the week: one new entry a week, not one a night.
    assert mirror == {"path": ".patchkit/cache/patchkit", "key": "patchkit-mirror-${{ steps.week.outputs.week }}",
                      "restore-keys": "patchkit-mirror-"}
    cache_home = ('echo "XDG_CACHE_HOME=$GITHUB_WORKSPACE/.patchkit/cache" >> "$GITHUB_ENV"\n'
                  'echo "week=$(date -u +%G-w%V)" >> "$GITHUB_OUTPUT"\n')
    assert nightly["steps"][0]["run"] == cache_home and nightly["steps"][0]["id"] == "week"
    save = steps["Save the upstream mirror"]
    # Saved by the default branch's runs alone, and only when this week's key is not there yet.
    assert save["uses"] == f"actions/cache/save@{PINS['actions/cache/save'][0]}"
    assert save["if"] == ("always() && (github.event_name == 'schedule' || github.ref_name == "
                          "github.event.repository.default_branch) && steps.mirror.outputs.cache-hit != 'true'")
    assert save["with"] == {"path": ".patchkit/cache/patchkit", "key": mirror["key"]}
    upload = steps["Upload patchkit-nightly"]
    assert upload["uses"] == f"actions/upload-artifact@{PINS['actions/upload-artifact'][0]}" and upload["if"] == "always()"
    assert upload["with"]["path"] == ".patchkit/nightly" and upload["with"]["include-hidden-files"] is True

    for backend, packages in (("cpu", "ccache"), ("vulkan", "ccache glslc libvulkan-dev spirv-headers")):
        job = jobs[f"build-{backend}"]
        assert job["needs"] == "nightly" and job["runs-on"] == "ubuntu-24.04" and "container" not in job
        assert job["permissions"] == {"contents": "read"} and job["env"]["BACKEND"] == backend
        steps = steps_by_name(job)
        assert steps["Install the packages"]["run"] == f"sudo apt-get update -qq && sudo apt-get install -y -qq {packages}"
        assert steps["Install patchkit"]["run"] == (
            "python -m pip install -q --no-deps --require-hashes -r .github/patchkit/requirements.txt\n"
            "python -m pip install -q -r .github/patchkit/dependencies.txt cmake ninja\n")
        assert job["env"]["CCACHE_MAXSIZE"] == "500M"
        assert steps["Restore the upstream mirror"]["with"] == mirror
        assert steps["Keep patchkit's cache in the workspace"]["run"] == cache_home
        ccache = steps["Restore ccache"]["with"]
        assert ccache == {"path": "~/.cache/ccache", "key": f"ccache-{backend}-${{{{ steps.week.outputs.week }}}}",
                          "restore-keys": f"ccache-{backend}-"}
        assert steps["Save ccache"]["with"] == {"path": "~/.cache/ccache", "key": ccache["key"]}
        build = steps["Apply at the nightly's commit and build"]
        assert build["env"] == {"COMMIT": "${{ needs.nightly.outputs.commit }}"}
        assert build["run"].startswith('patchkit nightly "upstream@$COMMIT" --build "$BACKEND" --no-refresh --no-update-lock')
        assert steps[f"Upload patchkit-build-{backend}"]["if"] == "always()"
        assert not any("smoke" in name.lower() for name in steps)  # no --smoke

    steps = steps_by_name(summary)
    assert steps["Download every report"]["with"] == {"pattern": "patchkit-*", "path": "reports"}
    gather = steps["Gather the night"]
    assert gather["run"] == ("patchkit ci summary reports --backend cpu --backend vulkan "
                             "--report-dir .patchkit/summary --github-issues")
    assert gather["env"] == {"GITHUB_TOKEN": TOKEN}
    push = steps["Push the refreshed patches and the lock"]
    assert push["if"] == "!cancelled() && steps.summary.outputs.refresh == 'true'"
    assert push["env"] == {"GITHUB_TOKEN": TOKEN, "BRANCH": "patchkit/refresh", "NIGHT": "reports/patchkit-nightly",
                           "SUMMARY": ".patchkit/summary"}
    # The URL is the server's (GitHub Enterprise too); the token in git's environment, not in .git/config.
    assert 'git push --force "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git" "HEAD:refs/heads/$BRANCH"' in push["run"]
    assert 'GIT_CONFIG_KEY_0="http.$GITHUB_SERVER_URL/.extraheader"' in push["run"]
    assert "git add -A -- patches patchkit.lock patchkit.builds.json" in push["run"]
    # The cache is neither uploaded nor in a folder uploaded, nor pushed.
    uploads = [step["with"]["path"] for job in jobs.values() for step in job["steps"]
               if step.get("uses", "").startswith("actions/upload-artifact@")]
    assert uploads and not any(".patchkit/cache/patchkit".startswith(f"{u}/") or u.startswith(".patchkit/cache")
                               for u in uploads)
    pr = steps["Open or update the pull request"]
    assert pr["if"] == "!cancelled() && steps.push.outputs.ref != ''" and pr["env"]["GITHUB_TOKEN"] == TOKEN
    assert pr["run"] == ('patchkit ci pull-request "$BRANCH" --base "$GITHUB_REF_NAME" '
                         "--body-file .patchkit/summary/report.md")

    # No credential where it is not used: no checkout leaves one behind, and the token is in the
    # env: of the three steps that call the API or push, and nowhere else.
    every = [step for job in jobs.values() for step in job["steps"]]
    checkouts = [step for step in every if step.get("uses", "").startswith("actions/checkout@")]
    assert len(checkouts) == 4 and all(step["with"] == {"persist-credentials": False} for step in checkouts)
    holders = [step["name"] for step in every if TOKEN in yaml.dump(step)]
    assert holders == ["Gather the night", "Push the refreshed patches and the lock", "Open or update the pull request"]
    assert all(step["env"]["GITHUB_TOKEN"] == TOKEN for step in every if step.get("name") in holders)
    # Every action by its commit id, with its tag beside it for people.
    text = path.read_text()
    for step in every:
        if "uses" in step:
            action, commit = step["uses"].split("@")
            assert commit == PINS[action][0], step
            assert f"uses: {action}@{commit}  # {PINS[action][1]}\n" in text


def test_every_backend_builds_in_its_recipes_environment_with_the_smoke_test(tmp_path):
    """The Done-when command: containers install without sudo and bring git, Python and cmake
    from pip; macOS uses brew and says why it has no smoke test; GPU backends say hosted
    runners have no GPU; the CPU job smoke-tests."""
    root = fork(tmp_path)
    args = [a for b in ("cpu", "cuda", "vulkan", "hip", "metal", "sycl") for a in ("--backend", b)]
    result = run_cli("ci", "github", *args, "--smoke", cwd=root)
    assert result.returncode == 0, result.stderr
    path = root / WORKFLOW
    lint_clean(path)
    jobs = yaml.safe_load(path.read_text())["jobs"]
    assert list(jobs) == ["nightly", *(f"build-{b}" for b in ("cpu", "cuda", "vulkan", "hip", "metal", "sycl")),
                          "summary"]

    cuda, hip = jobs["build-cuda"], jobs["build-hip"]
    assert (cuda["runs-on"], cuda["container"]) == ("ubuntu-24.04", "nvidia/cuda:12.6.2-devel-ubuntu24.04")
    assert (hip["runs-on"], hip["container"]) == ("ubuntu-22.04", "rocm/dev-ubuntu-22.04:6.1.2")
    for job in (cuda, hip):
        names = list(steps_by_name(job))
        # git before checkout: without it, checkout downloads a tarball, not a repository.
        assert names.index("Install the packages") < names.index("actions/checkout")
        steps = steps_by_name(job)
        install = steps["Install the packages"]["run"]
        assert "sudo" not in install and "apt-get install" in install
        assert {"git", "python3", "python3-venv", "ccache"} <= set(install.split())
        assert "actions/setup-python" not in steps
        assert ('"$HOME/.patchkit-venv/bin/python" -m pip install -q -r .github/patchkit/dependencies.txt cmake ninja'
                in steps["Install patchkit"]["run"])
        assert '"$GITHUB_PATH"' in steps["Install patchkit"]["run"]
        assert "GPU" in steps["Smoke test (not run)"]["run"]
    assert "build-essential rocblas-dev hipblas-dev" in steps_by_name(hip)["Install the packages"]["run"]
    # CUDA as llama.cpp's own CI builds it in a driverless image: one architecture, the driver's
    # stub allowed at link time, and a host compiler.
    assert "build-essential" in steps_by_name(cuda)["Install the packages"]["run"].split()
    assert (cuda["env"]["CUDAARCHS"], cuda["env"]["LDFLAGS"]) == ("89-real", "-Wl,--allow-shlib-undefined")

    metal = steps_by_name(jobs["build-metal"])
    assert jobs["build-metal"]["runs-on"] == "macos-latest" and metal["Install the packages"]["run"] == "brew install ccache"
    assert "LD_PRELOAD" in metal["Smoke test (not run)"]["run"]

    sycl = steps_by_name(jobs["build-sycl"])
    assert "intel-oneapi-compiler-dpcpp-cpp" in sycl["Set up sycl"]["run"]
    assert sycl["Apply at the nightly's commit and build"]["run"].startswith(
        'source "/opt/intel/oneapi/setvars.sh" >/dev/null\npatchkit nightly ')
    assert "intel-oneapi-dnnl-devel" in sycl["Set up sycl"]["run"]

    cpu = steps_by_name(jobs["build-cpu"])
    assert cpu["Smoke test"]["run"] == 'patchkit smoke --backend "$BACKEND" --json "$REPORTS/smoke.json"'
    # The summary knows whose smoke test ran: one that left no report failed.
    gather = steps_by_name(jobs["summary"])["Gather the night"]["run"]
    assert " --smoke cpu --report-dir" in gather and "--smoke cuda" not in gather
    names = list(cpu)
    assert names.index("Apply at the nightly's commit and build") < names.index("Smoke test") < names.index("Save ccache")


def test_a_backend_without_a_ci_environment_is_refused_unless_runs_on_gives_one(tmp_path):
    root = fork(tmp_path)
    refused = run_cli("ci", "github", "--backend", "cpu", "--backend", "cpu-native", cwd=root)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "backend cpu-native has no CI environment" in refused.stderr and "--runs-on cpu-native=" in refused.stderr
    assert not (root / WORKFLOW).exists()
    for args, words in ((["--runs-on", "cuda=gpu"], "cuda is not a backend this workflow builds"),
                        (["--runs-on", "cpu-native"], "expected BACKEND=LABEL"),
                        (["--runs-on", "cpu-native=a b"], "not a runner label")):
        bad = run_cli("ci", "github", "--backend", "cpu-native", *args, cwd=root)
        assert bad.returncode == 2 and words in bad.stderr and bad.stderr.count("\n") == 1, args

    result = run_cli("ci", "github", "--backend", "cpu-native", "--backend", "cuda", "--smoke",
                     "--runs-on", "cpu-native=self-hosted,linux", "--runs-on", "cuda=self-hosted,gpu", cwd=root)
    assert result.returncode == 0, result.stderr
    # actionlint knows GitHub's hosted labels; a self-hosted runner's own ones are told to it.
    config = tmp_path / "actionlint.yaml"
    config.write_text("self-hosted-runner:\n  labels: [gpu]\n")
    lint_clean(root / WORKFLOW, "-config-file", str(config))
    jobs = yaml.safe_load((root / WORKFLOW).read_text())["jobs"]
    native, cuda = jobs["build-cpu-native"], jobs["build-cuda"]
    assert native["runs-on"] == ["self-hosted", "linux"] and "container" not in native
    # The recipe's environment stays; the runner is the one given, with the GPU the smoke test
    # needs, handed to the container by the recipe's gpu-options.
    assert cuda["runs-on"] == ["self-hosted", "gpu"]
    assert cuda["container"] == {"image": "nvidia/cuda:12.6.2-devel-ubuntu24.04", "options": "--gpus all"}
    assert "Smoke test" in steps_by_name(cuda)
    # There, with the GPU and its driver: built for that GPU, the driver linked for real.
    assert cuda["env"]["CUDAARCHS"] == "native" and "LDFLAGS" not in cuda["env"]


def test_a_gpu_container_gets_its_vendors_gpu_options_on_a_runs_on_runner_only(tmp_path):
    root = fork(tmp_path)
    result = run_cli("ci", "github", "--backend", "cuda", "--backend", "hip", "--smoke",
                     "--runs-on", "hip=self-hosted,rocm", cwd=root)
    assert result.returncode == 0, result.stderr
    config = tmp_path / "actionlint.yaml"
    config.write_text("self-hosted-runner:\n  labels: [rocm]\n")
    lint_clean(root / WORKFLOW, "-config-file", str(config))
    jobs = yaml.safe_load((root / WORKFLOW).read_text())["jobs"]
    assert jobs["build-cuda"]["container"] == "nvidia/cuda:12.6.2-devel-ubuntu24.04"  # hosted: no GPU to hand over
    assert jobs["build-hip"]["container"] == {"image": "rocm/dev-ubuntu-22.04:6.1.2",
                                              "options": "--device /dev/kfd --device /dev/dri --group-add video"}
    assert "Smoke test" in steps_by_name(jobs["build-hip"])


def test_oneapis_environment_is_sourced_in_every_step_that_builds_or_runs(tmp_path):
    """setvars.sh changes its own step's environment only: the smoke test, which runs the SYCL
    binaries, sources it as the build does."""
    root = fork(tmp_path)
    result = run_cli("ci", "github", "--backend", "sycl", "--smoke", "--runs-on", "sycl=self-hosted,arc", cwd=root)
    assert result.returncode == 0, result.stderr
    steps = steps_by_name(yaml.safe_load((root / WORKFLOW).read_text())["jobs"]["build-sycl"])
    source = 'source "/opt/intel/oneapi/setvars.sh" >/dev/null\n'
    assert steps["Apply at the nightly's commit and build"]["run"].startswith(source)
    assert steps["Smoke test"]["run"] == source + 'patchkit smoke --backend "$BACKEND" --json "$REPORTS/smoke.json"\n'


def test_a_self_hosted_mac_is_known_by_its_recipe_not_its_labels(tmp_path):
    """Metal requires darwin: on a self-hosted Mac whose labels say nothing of macOS, no smoke
    step (it needs glibc's LD_PRELOAD) and the summary waits for no smoke report from it, which
    would hold the refresh every night. A recipe that names no OS goes by a hosted image's label."""
    root = fork(tmp_path)
    result = run_cli("ci", "github", "--backend", "metal", "--backend", "cpu", "--backend", "cpu-native", "--smoke",
                     "--runs-on", "metal=self-hosted,apple-m2", "--runs-on", "cpu=macos-14",
                     "--runs-on", "cpu-native=self-hosted,linux", cwd=root)
    assert result.returncode == 0, result.stderr
    config = tmp_path / "actionlint.yaml"
    config.write_text("self-hosted-runner:\n  labels: [apple-m2]\n")
    lint_clean(root / WORKFLOW, "-config-file", str(config))
    jobs = yaml.safe_load((root / WORKFLOW).read_text())["jobs"]
    assert jobs["build-metal"]["runs-on"] == ["self-hosted", "apple-m2"]
    for backend in ("metal", "cpu"):
        steps = steps_by_name(jobs[f"build-{backend}"])
        assert "Smoke test" not in steps and "LD_PRELOAD" in steps["Smoke test (not run)"]["run"], backend
    assert "Smoke test" in steps_by_name(jobs["build-cpu-native"])
    gather = steps_by_name(jobs["summary"])["Gather the night"]["run"]
    assert "--smoke cpu-native" in gather and "--smoke metal" not in gather and "--smoke cpu " not in gather


def test_custom_runner_labels_come_with_the_actionlint_config_they_need(tmp_path):
    """actionlint rejects a self-hosted runner's own labels unless its config names them: `ci
    github` prints those lines (it does not write the file, which may hold the user's settings)."""
    root = fork(tmp_path)
    result = run_cli("ci", "github", "--backend", "metal", "--backend", "cuda", "--backend", "cpu", "--smoke",
                     "--runs-on", "metal=self-hosted,apple-m2", "--runs-on", "cuda=self-hosted,linux,gpu,X64",
                     "--runs-on", "cpu=ubuntu-22.04", cwd=root)
    assert result.returncode == 0, result.stderr
    first, wheel, said, *lines = result.stdout.splitlines(keepends=True)
    assert first.startswith("wrote ") and ".github/patchkit/requirements.txt" in wheel
    assert ".github/actionlint.yaml" in said
    assert yaml.safe_load("".join(lines)) == {"self-hosted-runner": {"labels": ["apple-m2", "gpu"]}}
    config = tmp_path / "actionlint.yaml"
    config.write_text("".join(lines))
    lint_clean(root / WORKFLOW, "-config-file", str(config))
    assert not (root / ".github/actionlint.yaml").exists()
    again = run_cli("ci", "github", "--backend", "metal", "--backend", "cuda", "--backend", "cpu", "--smoke",
                    "--runs-on", "metal=self-hosted,apple-m2", "--runs-on", "cuda=self-hosted,linux,gpu,X64",
                    "--runs-on", "cpu=ubuntu-22.04", cwd=root)
    assert "up to date" in again.stdout and "labels: [apple-m2, gpu]" in again.stdout
    hosted = run_cli("ci", "github", "--backend", "cpu", "--runs-on", "cpu=ubuntu-22.04", "--force", cwd=root)
    assert hosted.returncode == 0 and "actionlint" not in hosted.stdout


def test_the_ci_environment_carries_its_recipes_platform(tmp_path):
    from patchkit.backends.recipe import load_recipes, shipped_recipes_dir

    shipped = load_recipes(shipped_recipes_dir())
    assert (shipped["metal"].ci.platform, shipped["cuda"].ci.platform) == ("darwin", None)
    metal = (shipped_recipes_dir() / "metal.yaml").read_text()
    (tmp_path / "metal.yaml").write_text(metal[:metal.index("\nci:")] + "\n")  # takes the shipped ci:
    assert load_recipes(tmp_path)["metal"].ci == shipped["metal"].ci


@pytest.mark.parametrize("ci, expected", [
    ("{runs-on: x, gpu: true, gpu-options: --gpus all}", "'container' is a dependency of 'gpu-options'"),
    ("{runs-on: x, container: y, gpu-options: --gpus all}", "'gpu' is a dependency of 'gpu-options'"),
    ("{runs-on: x, container: y, gpu: true, gpu-options: ''}", "key 'ci.gpu-options'"),
])
def test_gpu_options_need_a_gpu_container(tmp_path, ci, expected):
    from patchkit.backends.recipe import load_recipe

    path = tmp_path / "mine.yaml"
    path.write_text(f"description: x\nci: {ci}\n")
    with pytest.raises(PatchkitError, match=expected):
        load_recipe(path)


def test_actionlint_does_catch_a_broken_workflow(tmp_path):
    """The lint above proves something: the same file with a job that needs a missing job fails."""
    path = tmp_path / "broken.yml"
    workflow = nightly_workflow({"cpu": CiEnvironment("ubuntu-24.04")}, install=Install("wheel", None, {}))
    path.write_text(workflow.replace("needs: nightly", "needs: nightlyy"))
    lint = actionlint(path)
    assert lint.returncode == 1 and "nightlyy" in lint.stdout


def test_refuses_to_overwrite_a_different_workflow_without_force(tmp_path):
    root = fork(tmp_path)
    path = root / WORKFLOW
    path.parent.mkdir(parents=True)
    path.write_text("name: mine\n")
    refused = run_cli("ci", "github", cwd=root)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "--force" in refused.stderr
    assert path.read_text() == "name: mine\n"
    assert run_cli("ci", "github", "--force", cwd=root).returncode == 0
    assert list(yaml.safe_load(path.read_text())["jobs"]) == ["nightly", "build-cpu", "summary"]
    again = run_cli("ci", "github", cwd=root)  # the same text again: nothing to refuse
    assert again.returncode == 0 and "up to date" in again.stdout


def test_options_and_a_cache_inside_the_repository(tmp_path):
    root = fork(tmp_path, "cache: .cache/patchkit\n")
    out = tmp_path / "elsewhere.yml"
    result = run_cli("ci", "github", "-o", str(out), "--cron", "30 2 * * 1-5", "--python", "3.12",
                     "--branch", "bot/rebase", "--patchkit", "patchkit-queue @ git+https://example.invalid/pk@v1",
                     cwd=root)
    assert result.returncode == 0, result.stderr
    workflow = yaml.safe_load(out.read_text())
    nightly = steps_by_name(workflow["jobs"]["nightly"])
    assert workflow["on"]["schedule"] == [{"cron": "30 2 * * 1-5"}]
    assert nightly["Restore the upstream mirror"]["with"]["path"] == ".cache/patchkit"
    assert nightly["actions/setup-python"]["with"] == {"python-version": "3.12"}
    assert nightly["Install patchkit"]["env"] == {"PATCHKIT": "patchkit-queue @ git+https://example.invalid/pk@v1"}
    summary = steps_by_name(workflow["jobs"]["summary"])
    assert summary["Push the refreshed patches and the lock"]["env"]["BRANCH"] == "bot/rebase"
    assert not (root / WORKFLOW).exists()


def test_a_cache_outside_the_repository_is_refused_where_a_job_runs_in_a_container(tmp_path):
    """A container has another HOME and workspace than its runner: a mirror the nightly saved at
    an absolute path outside the checkout would be restored elsewhere than patchkit looks."""
    root = fork(tmp_path, f"cache: {tmp_path / 'cache'}\n")
    refused = run_cli("ci", "github", "--backend", "cpu", "--backend", "cuda", cwd=root)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "outside the repository" in refused.stderr and "cuda" in refused.stderr
    assert not (root / WORKFLOW).exists()
    assert run_cli("ci", "github", "--backend", "cpu", cwd=root).returncode == 0  # runners only: as it is
    nightly = steps_by_name(yaml.safe_load((root / WORKFLOW).read_text())["jobs"]["nightly"])
    assert nightly["Restore the upstream mirror"]["with"]["path"] == str(tmp_path / "cache")


def test_unknown_backend_and_bad_values_are_one_line_errors(tmp_path):
    root = fork(tmp_path)
    for args, words in ((["--backend", "nope"], "no recipe for backend nope"),
                        (["--cron", "daily"], "five cron fields"),
                        (["--branch", "a..b"], "not a branch name")):
        result = run_cli("ci", "github", *args, cwd=root)
        assert result.returncode == 2 and words in result.stderr and result.stderr.count("\n") == 1, args
    assert not (root / WORKFLOW).exists()
    with pytest.raises(PatchkitError, match="no backend"):
        nightly_workflow({}, install=Install("wheel", None, {}))


def test_the_workflow_goes_through_a_fifo_and_never_into_a_folder(project, tmp_path):
    import os
    import threading

    from conftest import run_cli

    refused = run_cli("ci", "github", "-o", str(tmp_path), cwd=project.root)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "is a folder" in refused.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    proc = run_cli("ci", "github", "-o", str(fifo), cwd=project.root)
    reader.join(timeout=60)
    assert proc.returncode == 0 and received and "patchkit nightly" in received[0]
