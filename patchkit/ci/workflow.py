"""The GitHub Actions workflow that runs `patchkit nightly`, builds its result per backend, and
gives one verdict for the night.

Three kinds of job. `nightly` applies, checks and refreshes with read-only permissions and no
token, and hands its reports, refreshed patches and lock on as an artifact. One `build-BACKEND`
job per backend, each in its recipe's CI environment (`ci:`: runner, container, packages, setup),
applies the queue at the upstream commit the nightly applied and builds it (`patchkit nightly
--build`, which builds the unpatched commit too when the build fails, to say whose fault it is),
then smoke-tests it where it can run. `summary` (`if: always()`) alone holds the write permissions
and the token: it gathers every report into one (`patchkit ci summary`), keeps the GitHub issues,
and pushes the refresh and opens its pull request when the night allows it.

Nothing in a job holds a credential it does not use: every checkout leaves no token behind
(`persist-credentials: false`), and the token is in the `env:` of the two steps that push and call
the API only. Actions are pinned to commit ids (`actions.py`); patchkit itself is installed as
`install.py` says, never by a bare name.

Caches are keyed by the ISO week and restored by prefix (a saved key can never be overwritten, and
a key per run would fill the repository's cache quota in days), and saved only by a run on the
default branch when its key missed. actions/cache stores its paths relative to the workspace, and a container job has
another workspace and HOME than a runner's (`/__w/R/R`, `/github/home`): the mirror lives in the
workspace, where every job, host or container, saves and restores it alike.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Mapping

import yaml

from patchkit import __version__
from patchkit.backends.recipe import CiEnvironment, Recipe
from patchkit.ci.actions import uses, with_tags
from patchkit.ci.install import Install
from patchkit.errors import PatchkitError

DEFAULT_CRON = "17 3 * * *"  # off the hour: GitHub delays or drops runs scheduled at :00
# XDG_CACHE_HOME in every job that uses the mirror; git-ignored (all of .patchkit/ is), beside the
# report folders and not in them, and neither pushed nor uploaded.
CACHE_HOME = ".patchkit/cache"
DEFAULT_CACHE = f"{CACHE_HOME}/patchkit"  # patchkit's cache there, for a project whose patchkit.yaml names none
REPORT_DIR = ".patchkit/nightly"  # git-ignored, like all of .patchkit/
BUILD_REPORT_DIR = ".patchkit/build"
SUMMARY_DIR = ".patchkit/summary"
REPORTS = "reports"  # where the summary job downloads every artifact, one folder each
NIGHTLY_ARTIFACT = "patchkit-nightly"
BUILD_ARTIFACT = "patchkit-build-{}"
SUMMARY_ARTIFACT = "patchkit-summary"
TOKEN = "${{ secrets.PATCHKIT_TOKEN || github.token }}"
# A job's own ccache, in its HOME (a container has another HOME than its runner; `~` follows it).
CCACHE = "~/.cache/ccache"
CCACHE_MAXSIZE = "500M"  # per backend: a few of them stay inside the repository's 10 GB cache quota
# A cache is written only by the default branch's runs: any other branch's caches would be restored
# by nobody, or poison the default branch's. A scheduled run is the default branch's, and its event
# carries no `repository` (github.event.repository.default_branch is empty there).
_SAVE_CACHE = ("(github.event_name == 'schedule' || github.ref_name == github.event.repository.default_branch) "
               "&& steps.{}.outputs.cache-hit != 'true'")
WEEK = "${{ steps.week.outputs.week }}"
_CHECKOUT = {"uses": uses("actions/checkout"), "with": {"persist-credentials": False}}
BACKEND_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_CRON_RE = re.compile(r"^\S+( \S+){4}$")
_PYTHON_RE = re.compile(r"^[0-9]+\.[0-9]+$")
_BRANCH_RE = re.compile(r"^(?!/|.*//|.*\.\.|.*/$|.*\.lock$)[A-Za-z0-9._/-]+$")
_LABELS_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(,[A-Za-z0-9][A-Za-z0-9._-]*)*$")


def ci_environments(recipes: Mapping[str, Recipe], runs_on: Mapping[str, str]) -> dict[str, CiEnvironment]:
    """Each backend's CI environment: its recipe's, on the runner RUNS_ON gives where it gives one.
    A backend with neither is refused by name, as is a RUNS_ON for a backend not built. A label may
    be several, comma-separated: a runner must have them all (`self-hosted,gpu`)."""
    stray = [name for name in runs_on if name not in recipes]
    if stray:
        raise PatchkitError(f"--runs-on {stray[0]}=...: {stray[0]} is not a backend this workflow builds",
                            f"add --backend {stray[0]}, or drop the --runs-on")
    for name, label in runs_on.items():
        if not _LABELS_RE.match(label):
            raise PatchkitError(f"--runs-on {name}={label!r}: not a runner label",
                                "e.g. --runs-on cuda=self-hosted,gpu")
    missing = [name for name, recipe in recipes.items() if recipe.ci is None and name not in runs_on]
    if missing:
        raise PatchkitError(f"backend {', '.join(missing)} has no CI environment (no ci: section in its recipe)",
                            f"add a ci: section to recipes/{missing[0]}.yaml, or give --runs-on "
                            f"{missing[0]}=LABEL for a runner that has its toolchain")
    environments = {}
    for name, recipe in recipes.items():
        label, ci = runs_on.get(name), recipe.ci
        if ci is None:
            environments[name] = CiEnvironment(runs_on=str(label), platform=recipe.platform)
        else:
            environments[name] = ci if label is None else replace(ci, runs_on=label)
    return environments


# What actionlint knows without being told: a self-hosted runner's default labels, and (roughly)
# GitHub's hosted images. Any other label needs its config file.
_RUNNER_LABELS = {"self-hosted", "linux", "macos", "windows", "x64", "arm", "arm64"}
_HOSTED_RE = re.compile(r"^(ubuntu|macos|windows)-[a-z0-9.-]+$")


def actionlint_config(runs_on: Mapping[str, str]) -> str | None:
    """The lines `.github/actionlint.yaml` needs for the labels RUNS_ON gives, which actionlint
    rejects as unknown otherwise; None where it knows them all."""
    labels = [label for labels in runs_on.values() for label in labels.split(",")
              if label.lower() not in _RUNNER_LABELS and not _HOSTED_RE.match(label.lower())]
    if not labels:
        return None
    return yaml.safe_dump({"self-hosted-runner": {"labels": list(dict.fromkeys(labels))}},
                          default_flow_style=None, sort_keys=False)


def nightly_workflow(backends: Mapping[str, CiEnvironment], *, install: Install,
                     self_hosted: frozenset[str] = frozenset(),
                     smoke: bool = False, cron: str = DEFAULT_CRON, python: str = "3.11",
                     branch: str = "patchkit/refresh", cache: str = DEFAULT_CACHE) -> str:
    """The workflow file's text. BACKENDS: name -> where it builds (`ci_environments`);
    SELF_HOSTED: those on a runner --runs-on gave (one with the GPU its backend needs); SMOKE:
    `patchkit smoke` after each build that can run here; CACHE: patchkit's cache folder on the
    runners (the mirror); INSTALL: how the jobs install patchkit (`install.resolve`)."""
    _check(backends, cron, python, branch)
    mirror = {"path": cache, "key": f"patchkit-mirror-{WEEK}", "restore-keys": "patchkit-mirror-"}
    # The week keys the caches; XDG_CACHE_HOME puts the mirror in the workspace (see above).
    cache_home = {"name": "Keep patchkit's cache in the workspace", "id": "week",
                  "run": f'echo "XDG_CACHE_HOME=$GITHUB_WORKSPACE/{CACHE_HOME}" >> "$GITHUB_ENV"\n'
                         'echo "week=$(date -u +%G-w%V)" >> "$GITHUB_OUTPUT"\n'}
    install_step = _install_step(install)
    setup_python = {"uses": uses("actions/setup-python"), "with": {"python-version": python}}
    nightly_job = {
        "name": "Rebase the queue on upstream",
        "runs-on": "ubuntu-latest",
        "permissions": {"contents": "read"},
        "outputs": {"commit": "${{ steps.night.outputs.commit }}"},
        "env": {"REPORTS": REPORT_DIR},
        "steps": [
            cache_home,
            _CHECKOUT,
            setup_python,
            install_step,
            {"name": "Restore the upstream mirror", "id": "mirror", "uses": uses("actions/cache/restore"),
             "with": mirror},
            # A good night hands the commit it applied to the builds; a bad one (exit 1) builds nothing.
            {"name": "patchkit nightly", "id": "night", "run": _NIGHT},
            # Saved after a bad night too: the next run fetches less either way.
            {"name": "Save the upstream mirror", "if": "always() && " + _SAVE_CACHE.format("mirror"),
             "uses": uses("actions/cache/save"), "with": {"path": cache, "key": mirror["key"]}},
            # The refreshed patches are in the report folder already; the summary pushes them with the lock.
            {"name": "Keep the lock with the reports", "if": "always()",
             "run": 'if [ -f patchkit.lock ] && [ -d "$REPORTS" ]; then cp patchkit.lock "$REPORTS/"; fi'},
            _upload(NIGHTLY_ARTIFACT, REPORT_DIR),
        ],
    }
    jobs: dict[str, Any] = {"nightly": nightly_job}
    smoked = [name for name, ci in backends.items() if smoke and _smoke_skipped(name, ci, name in self_hosted) is None]
    for name, ci in backends.items():
        jobs[_job_id(name)] = _build_job(name, ci, smoke=smoke, self_hosted=name in self_hosted, python=python,
                                         mirror=mirror, cache_home=cache_home, install=install)
    gather = " ".join(["patchkit ci summary", REPORTS, *(f"--backend {name}" for name in backends),
                       *(f"--smoke {name}" for name in smoked), f"--report-dir {SUMMARY_DIR} --github-issues"])
    summary_job = {
        "name": "One verdict for the night",
        "needs": list(jobs),
        "if": "always()",
        "runs-on": "ubuntu-latest",
        "permissions": {"contents": "write", "issues": "write", "pull-requests": "write"},
        "steps": [
            _CHECKOUT,
            setup_python,
            install_step,
            {"name": "Download every report", "uses": uses("actions/download-artifact"),
             "with": {"pattern": "patchkit-*", "path": REPORTS}},
            {"name": "Gather the night", "id": "summary", "env": {"GITHUB_TOKEN": TOKEN}, "run": gather},
            _upload(SUMMARY_ARTIFACT, SUMMARY_DIR),
            # The summary says whether the refresh goes: a good night, where a backend broken by
            # upstream alone does not hold it back.
            # Only a push by a token other than GITHUB_TOKEN triggers the pull request's own
            # workflows (verify): PATCHKIT_TOKEN where the repository has one.
            {"name": "Push the refreshed patches and the lock", "id": "push",
             "if": "!cancelled() && steps.summary.outputs.refresh == 'true'",
             "env": {"GITHUB_TOKEN": TOKEN, "BRANCH": branch, "NIGHT": f"{REPORTS}/{NIGHTLY_ARTIFACT}",
                     "SUMMARY": SUMMARY_DIR},
             "run": _PUSH},
            {"name": "Open or update the pull request", "if": "!cancelled() && steps.push.outputs.ref != ''",
             "env": {"GITHUB_TOKEN": TOKEN, "BRANCH": branch},
             "run": 'patchkit ci pull-request "$BRANCH" --base "$GITHUB_REF_NAME" '
                    f"--body-file {SUMMARY_DIR}/report.md"},
        ],
    }
    jobs["summary"] = summary_job
    workflow = {
        "name": "patchkit nightly",
        "on": {"schedule": [{"cron": cron}], "workflow_dispatch": {}},
        # One nightly at a time: two would race on the lock, the branch and the issues.
        "concurrency": {"group": "patchkit-nightly", "cancel-in-progress": False},
        "permissions": {"contents": "read"},
        # bash -eo pipefail: a failing command in a pipe fails its step.
        "defaults": {"run": {"shell": "bash"}},
        "jobs": jobs,
    }
    header = (f"# Written by `patchkit ci github` (patchkit {__version__}); regenerate rather than edit.\n"
              "# Secret PATCHKIT_TOKEN (a fine-grained PAT or an app token with contents, issues and\n"
              "# pull-requests write): without it the pull request does not trigger its workflows.\n")
    return header + with_tags(yaml.dump(workflow, Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=True))


def _job_id(backend: str) -> str:
    return f"build-{backend}"


def _upload(name: str, path: str) -> dict[str, Any]:
    # include-hidden-files: the reports are under .patchkit/, which upload-artifact skips otherwise.
    return {"name": f"Upload {name}", "if": "always()", "uses": uses("actions/upload-artifact"),
            "with": {"name": name, "path": path, "if-no-files-found": "warn", "include-hidden-files": True}}


def _build_job(name: str, ci: CiEnvironment, *, smoke: bool, self_hosted: bool, python: str,
               mirror: dict[str, str], cache_home: dict[str, str], install: Install) -> dict[str, Any]:
    labels = ci.runs_on.split(",")
    packages = " ".join(["ccache", *ci.packages])
    steps: list[dict[str, Any]] = []
    if ci.container:
        # No sudo in a container, and git (which checkout needs for a repository rather than a
        # tarball), Python and zstd (the cache's compression, shared with the runners) may be missing.
        steps.append({"name": "Install the packages",
                      "run": "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
                             "--no-install-recommends git ca-certificates python3 python3-venv zstd "
                             + packages})
    steps.append(_CHECKOUT)
    if not ci.container:
        packages_run = f"brew install {packages}" if ci.package_manager == "brew" else \
            f"sudo apt-get update -qq && sudo apt-get install -y -qq {packages}"
        steps += [{"name": "Install the packages", "run": packages_run},
                  {"uses": uses("actions/setup-python"), "with": {"python-version": python}}]
    # cmake and ninja from pip: an image's cmake may be older than the 3.24 patchkit needs.
    python_bin = '"$HOME/.patchkit-venv/bin/python"' if ci.container else "python"
    steps.append(_install_step(install, python=python_bin, extra="cmake ninja", venv=bool(ci.container)))
    if ci.setup:
        steps.append({"name": f"Set up {name}", "run": "\n".join(ci.setup) + "\n"})
    ccache = {"path": CCACHE, "key": f"ccache-{name}-{WEEK}", "restore-keys": f"ccache-{name}-"}
    build = ('patchkit nightly "upstream@$COMMIT" --build "$BACKEND" --no-refresh --no-update-lock '
             '--report-dir "$REPORTS"')
    steps += [
        {"name": "Restore the upstream mirror", "uses": uses("actions/cache/restore"), "with": mirror},
        {"name": "Restore ccache", "id": "ccache", "uses": uses("actions/cache/restore"), "with": ccache},
        {"name": "Apply at the nightly's commit and build", "env": {"COMMIT": "${{ needs.nightly.outputs.commit }}"},
         "run": _sourced(ci, build)},
    ]
    if smoke:
        why = _smoke_skipped(name, ci, self_hosted)
        # After a failed build it does not run (the summary says "not run"), as no step does.
        steps.append({"name": "Smoke test",
                      "run": _sourced(ci, 'patchkit smoke --backend "$BACKEND" --json "$REPORTS/smoke.json"')}
                     if why is None else
                     {"name": "Smoke test (not run)", "run": f'echo "::notice::patchkit smoke not run on {name}: {why}"'})
    steps += [
        {"name": "Save ccache", "if": "always() && " + _SAVE_CACHE.format("ccache"), "uses": uses("actions/cache/save"),
         "with": {"path": CCACHE, "key": ccache["key"]}},
        _upload(BUILD_ARTIFACT.format(name), BUILD_REPORT_DIR),
    ]
    # CCACHE_DIR from HOME, which env: cannot expand; ccache's own default differs on macOS.
    ccache_dir = {"name": "Use the job's own ccache",
                  "run": f'echo "CCACHE_DIR={CCACHE.replace("~", "$HOME", 1)}" >> "$GITHUB_ENV"'}
    # Hosted runners have no GPU to hand over; a --runs-on runner is there for its GPU.
    container = {"image": ci.container, "options": ci.gpu_options} if self_hosted and ci.gpu_options else ci.container
    return {"name": f"Build {name}", "needs": "nightly", "runs-on": labels[0] if len(labels) == 1 else labels,
            **({"container": container} if container else {}),
            "permissions": {"contents": "read"},
            "env": {"BACKEND": name, "REPORTS": BUILD_REPORT_DIR, "CCACHE_MAXSIZE": CCACHE_MAXSIZE,
                    **(ci.gpu_environment if self_hosted and ci.gpu_environment else ci.environment)},
            "steps": [ccache_dir, cache_home, *steps]}


def _install_step(install: Install, *, python: str = "python", extra: str = "", venv: bool = False) -> dict[str, Any]:
    lines = install.commands(python=python, extra=extra)
    if venv:  # the image's Python may refuse pip outside a venv (PEP 668)
        lines = ['python3 -m venv "$HOME/.patchkit-venv"', 'echo "$HOME/.patchkit-venv/bin" >> "$GITHUB_PATH"', *lines]
    step: dict[str, Any] = {"name": "Install patchkit", "run": "\n".join(lines) + "\n"}
    if install.env:
        step["env"] = dict(install.env)
    return step


def _sourced(ci: CiEnvironment, script: str) -> str:
    """SCRIPT after the recipe's `source:` (oneAPI's setvars.sh), whose environment lasts for its
    own step only: so every step that builds or runs the binaries sources it."""
    return f'source "{ci.source}" >/dev/null\n{script}\n' if ci.source else script


def _smoke_skipped(name: str, ci: CiEnvironment, self_hosted: bool) -> str | None:
    """Why `patchkit smoke` cannot run in NAME's job; None where it can. The recipe's platform
    says the OS (a self-hosted Mac's labels are its owner's words); where it names none, a
    GitHub-hosted macOS or Windows image's label does."""
    hosted = {"macos": "darwin", "windows": "win32"}
    system = ci.platform or next((hosted[prefix] for label in ci.runs_on.lower().split(",")
                                  for prefix in hosted if label.startswith(prefix)), "linux")
    if system != "linux":
        return "its interposer is glibc's LD_PRELOAD (Linux only)"
    if ci.gpu and not self_hosted:
        return f"hosted runners have no GPU for {name} (--runs-on {name}=LABEL for a runner with one)"
    return None


# Tonight's upstream commit, for the build jobs: reached only after a good night (bash -e).
_NIGHT = """\
patchkit nightly --report-dir "$REPORTS"
python -c 'import json, sys; print("commit=" + json.load(open(sys.argv[1]))["apply"]["upstream_commit"])' \\
  "$REPORTS/report.json" >> "$GITHUB_OUTPUT"
"""

# The nightly's refreshed patches and lock, committed on BRANCH (rebuilt from the checked-out
# commit every night, hence the force push); the ref goes to the next step. The token goes to
# this one git command, in its environment (GIT_CONFIG_*), as checkout's extraheader would, and
# never into .git/config; the URL is the server's own (GitHub Enterprise too).
_PUSH = """\
if [ -d "$NIGHT/patches" ]; then cp -R "$NIGHT/patches/." patches/; fi
if [ -f "$NIGHT/patchkit.lock" ]; then cp "$NIGHT/patchkit.lock" patchkit.lock; fi
if [ -f "$SUMMARY/patchkit.builds.json" ]; then cp "$SUMMARY/patchkit.builds.json" patchkit.builds.json; fi
if [ -z "$(git status --porcelain -- patches patchkit.lock patchkit.builds.json)" ]; then
  echo "nothing refreshed: no pull request"
  exit 0
fi
git config user.name "github-actions[bot]"
git config user.email "41898282+github-actions[bot]@users.noreply.github.com"
git switch -C "$BRANCH"
git add -A -- patches patchkit.lock patchkit.builds.json
git commit -q -m "patchkit nightly: refresh the queue and the lock"
auth="$(printf 'x-access-token:%s' "$GITHUB_TOKEN" | base64 -w0)"
echo "::add-mask::$auth"
GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0="http.$GITHUB_SERVER_URL/.extraheader" \\
  GIT_CONFIG_VALUE_0="AUTHORIZATION: basic $auth" \\
  git push --force "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git" "HEAD:refs/heads/$BRANCH"
echo "ref=$BRANCH" >> "$GITHUB_OUTPUT"
"""


def _check(backends: Mapping[str, CiEnvironment], cron: str, python: str, branch: str) -> None:
    if not backends:
        raise PatchkitError("no backend to build", "give --backend NAME at least once (e.g. --backend cpu)")
    for name in backends:
        if not BACKEND_RE.match(name):
            raise PatchkitError(f"backend {name!r} is not a recipe name", "use names from `patchkit recipes list`")
    if not _CRON_RE.match(cron):
        raise PatchkitError(f"--cron {cron!r} is not five cron fields", "e.g. --cron '17 3 * * *'")
    if not _PYTHON_RE.match(python):
        raise PatchkitError(f"--python {python!r} is not a Python version", "e.g. --python 3.12")
    if not _BRANCH_RE.match(branch) or branch.startswith("-"):
        raise PatchkitError(f"--branch {branch!r} is not a branch name", "e.g. --branch patchkit/refresh")
    if branch in ("main", "master"):  # the workflow force-pushes this branch every good night
        raise PatchkitError(f"--branch {branch} would be force-pushed every night",
                            "give the refresh a branch of its own, e.g. patchkit/refresh")


class _Dumper(yaml.SafeDumper):
    """Scripts as literal blocks and shared steps written out in full, as a person would."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)
