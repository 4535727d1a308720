"""The GitHub Actions workflow that runs `patchkit nightly` and builds its result.

Two jobs: `nightly` alone talks to the API and moves the lock (so parallel jobs never race on
it); `build`, a matrix over the chosen recipes, builds what the nightly left. Caches are keyed by
run id and restored by prefix, because a cache key, once saved, can never be overwritten.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import yaml

from patchkit import __version__
from patchkit.errors import PatchkitError

DEFAULT_CRON = "17 3 * * *"  # off the hour: GitHub delays or drops runs scheduled at :00
DEFAULT_CACHE = "~/.cache/patchkit"  # patchkit's cache on a runner (XDG_CACHE_HOME is unset there)
REPORT_DIR = ".patchkit/nightly"  # git-ignored, like all of .patchkit/
TOKEN = "${{ secrets.PATCHKIT_TOKEN || github.token }}"
_BACKEND_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_CRON_RE = re.compile(r"^\S+( \S+){4}$")
_PYTHON_RE = re.compile(r"^[0-9]+\.[0-9]+$")
_BRANCH_RE = re.compile(r"^(?!/|.*//|.*\.\.|.*/$|.*\.lock$)[A-Za-z0-9._/-]+$")


def nightly_workflow(backends: Sequence[str], *, cron: str = DEFAULT_CRON, python: str = "3.11",
                     branch: str = "patchkit/refresh", cache: str = DEFAULT_CACHE,
                     requirement: str = f"patchkit=={__version__}") -> str:
    """The workflow file's text. CACHE is patchkit's cache folder on the runner (the mirror);
    REQUIREMENT is what pip installs as patchkit."""
    _check(backends, cron, python, branch, requirement)
    setup = [
        {"uses": "actions/setup-python@v5", "with": {"python-version": python}},
        {"name": "Install patchkit", "run": 'python -m pip install "$PATCHKIT"',
         "env": {"PATCHKIT": requirement}},
    ]
    mirror = {"path": cache, "key": "patchkit-mirror-${{ github.run_id }}", "restore-keys": "patchkit-mirror-"}
    ccache = {"path": "${{ github.workspace }}/.ccache",
              "key": "ccache-${{ matrix.backend }}-${{ github.run_id }}",
              "restore-keys": "ccache-${{ matrix.backend }}-"}
    nightly_job = {
        "name": "Rebase the queue on upstream",
        "runs-on": "ubuntu-latest",
        "permissions": {"contents": "write", "issues": "write", "pull-requests": "write"},
        "outputs": {"ref": "${{ steps.push.outputs.ref }}"},
        "steps": [
            # The token that checks out is the one that pushes: only a push by a token other
            # than GITHUB_TOKEN triggers the pull request's own workflows (verify).
            {"uses": "actions/checkout@v4", "with": {"token": TOKEN}},
            *setup,
            {"name": "Restore the upstream mirror", "uses": "actions/cache/restore@v4", "with": mirror},
            {"name": "patchkit nightly",
             "env": {"GITHUB_TOKEN": TOKEN},
             "run": f"patchkit nightly --report-dir {REPORT_DIR} --github-issues"},
            # Saved after a bad night too: the next run fetches less either way.
            {"name": "Save the upstream mirror", "if": "always()", "uses": "actions/cache/save@v4",
             "with": {"path": cache, "key": mirror["key"]}},
            {"name": "Upload the reports", "if": "always()", "uses": "actions/upload-artifact@v4",
             "with": {"name": "patchkit-nightly", "path": REPORT_DIR, "if-no-files-found": "warn"}},
            {"name": "Push the refreshed patches and the lock", "id": "push",
             "env": {"BRANCH": branch},
             "run": _PUSH},
            {"name": "Open or update the pull request", "if": "steps.push.outputs.ref != ''",
             "env": {"GITHUB_TOKEN": TOKEN, "BRANCH": branch},
             "run": 'patchkit ci pull-request "$BRANCH" --base "$GITHUB_REF_NAME" '
                    f"--body-file {REPORT_DIR}/report.md"},
        ],
    }
    build_job = {
        "name": "Build ${{ matrix.backend }}",
        "needs": "nightly",
        "runs-on": "ubuntu-latest",
        "permissions": {"contents": "read"},
        "strategy": {"fail-fast": False, "matrix": {"backend": list(backends)}},
        "env": {"CCACHE_DIR": "${{ github.workspace }}/.ccache", "BACKEND": "${{ matrix.backend }}"},
        "steps": [
            # The branch the nightly pushed; without one (nothing refreshed), the commit it ran on.
            {"uses": "actions/checkout@v4", "with": {"ref": "${{ needs.nightly.outputs.ref || github.sha }}"}},
            *setup,
            {"name": "Install the build tools",
             "run": "sudo apt-get update -qq && sudo apt-get install -y -qq ccache ninja-build"},
            {"name": "Restore the upstream mirror", "uses": "actions/cache/restore@v4", "with": mirror},
            {"name": "Restore ccache", "uses": "actions/cache/restore@v4", "with": ccache},
            {"name": "Apply the queue at the locked commit", "run": "patchkit apply upstream@locked"},
            {"name": "Build", "run": 'patchkit build --backend "$BACKEND" --json build.json'},
            {"name": "Save ccache", "if": "always()", "uses": "actions/cache/save@v4",
             "with": {"path": ccache["path"], "key": ccache["key"]}},
            {"name": "Upload the build report", "if": "always()", "uses": "actions/upload-artifact@v4",
             "with": {"name": "patchkit-build-${{ matrix.backend }}", "path": "build.json",
                      "if-no-files-found": "ignore"}},
        ],
    }
    workflow = {
        "name": "patchkit nightly",
        "on": {"schedule": [{"cron": cron}], "workflow_dispatch": {}},
        # One nightly at a time: two would race on the lock, the branch and the issues.
        "concurrency": {"group": "patchkit-nightly", "cancel-in-progress": False},
        "permissions": {"contents": "read"},
        "jobs": {"nightly": nightly_job, "build": build_job},
    }
    header = (f"# Written by `patchkit ci github` (patchkit {__version__}); regenerate rather than edit.\n"
              "# Secret PATCHKIT_TOKEN (a fine-grained PAT or an app token with contents, issues and\n"
              "# pull-requests write): without it the pull request does not trigger its workflows.\n")
    return header + yaml.dump(workflow, Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=True)


# On a good night with something refreshed: commit patches/ and the lock on BRANCH (rebuilt from
# the checked-out commit every night, hence the force push) and hand the ref to the next steps.
_PUSH = """\
if [ -z "$(git status --porcelain -- patches patchkit.lock)" ]; then
  echo "nothing refreshed: no pull request"
  exit 0
fi
git config user.name "github-actions[bot]"
git config user.email "41898282+github-actions[bot]@users.noreply.github.com"
git switch -C "$BRANCH"
git add -A -- patches patchkit.lock
git commit -q -m "patchkit nightly: refresh the queue and the lock"
git push --force origin "HEAD:refs/heads/$BRANCH"
echo "ref=$BRANCH" >> "$GITHUB_OUTPUT"
"""


def _check(backends: Sequence[str], cron: str, python: str, branch: str, requirement: str) -> None:
    if not backends:
        raise PatchkitError("no backend to build", "give --backend NAME at least once (e.g. --backend cpu)")
    for name in backends:
        if not _BACKEND_RE.match(name):
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
    if not requirement.strip() or "\n" in requirement:
        raise PatchkitError(f"--patchkit {requirement!r} is not a pip requirement",
                            "e.g. --patchkit 'patchkit==0.1.0' or a git+https URL")


class _Dumper(yaml.SafeDumper):
    """Scripts as literal blocks and shared steps written out in full, as a person would."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)
