"""Shared test helpers: the queue's real patch, fork projects in temp dirs, the CLI as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# What only the tests and benchmarks build (long histories, the bulk upstream) lives outside the
# package, in testing/; the tests import its modules by name, as they do their own helpers.
sys.path.insert(0, str(REPO / "testing"))
PATCH_NAME = "server-keep-speculative-checkpoints-on-device.patch"
# pytest-xdist's workers set COLUMNS=80 and LINES=24; the CLI the tests start would then wrap its
# lines at 80 columns as on a terminal. A test that wants a width asks for it.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)
# Bytecode written as on CI: under PYTHONDONTWRITEBYTECODE each CLI a test starts would compile
# again all of patchkit it imports (a fifth of the suite's time).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def git_identity(name: str = "Fork Dev", email: str = "dev@fork.invalid",
                 date: str = "1790600000 +0000") -> dict[str, str]:
    """Author and committer for commits a test makes itself (fixed, so ids are stable)."""
    return {f"GIT_{role}_{key}": value for role in ("AUTHOR", "COMMITTER")
            for key, value in (("NAME", name), ("EMAIL", email), ("DATE", date))}


def seed_patch_path() -> Path:
    return REPO / "patches" / PATCH_NAME


def write_project(root: Path, upstream: str, patches: list[Path] | None = None,
                  extra: str = "") -> Path:
    """A fork repository with patchkit.yaml, a series of PATCHES (default: the real queue) and
    a cache of its own, so tests never share a mirror."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "patchkit.yaml").write_text(
        f"upstream:\n  url: {upstream}\n  branch: master\ncache: {root / 'cache'}\n{extra}")
    (root / "patches").mkdir(exist_ok=True)
    names = []
    for patch in patches if patches is not None else [seed_patch_path()]:
        shutil.copy(patch, root / "patches" / patch.name)
        checks = patch.with_name(patch.name.removesuffix(".patch") + ".checks.yaml")
        if checks.exists():
            shutil.copy(checks, root / "patches" / checks.name)
        names.append(patch.name)
    (root / "patches" / "series").write_text("".join(f"{n}\n" for n in names))
    return root


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "patchkit", *args], cwd=cwd, text=True,
                          capture_output=True, env={**os.environ, "NO_COLOR": "1", **(env or {})})


def run_json(*args: str, cwd: Path, code: int, env: dict[str, str] | None = None) -> dict:
    """The CLI with `--json -`: it exits CODE and its report is valid against its schema."""
    proc = run_cli(*args, "--json", "-", cwd=cwd, env=env)
    assert proc.returncode == code, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert_matches_schema(report)
    return report


def assert_matches_schema(data: dict) -> None:
    """A JSON report is valid against the schema the package ships for its kind."""
    from importlib.resources import files

    import jsonschema

    schema = json.loads(files("patchkit").joinpath(f"schemas/{data['kind']}.schema.json").read_text())
    jsonschema.validate(data, schema)


@pytest.fixture
def github_issues(httpserver):
    """A GitHub with no issue open and the label in place, on 127.0.0.1: the environment that
    points the CLI at it, and the bodies of what it posts (the new issues kept)."""
    import re

    from werkzeug import Response

    posted: list[dict] = []

    def github(request):
        if request.method == "POST":
            posted.append(request.get_json())
            return Response(json.dumps({"number": 1, "html_url": "https://github.invalid/1"}), 201,
                            content_type="application/json")
        return Response("[]" if request.path.endswith("/issues") else '{"name": "patchkit"}', 200,
                        content_type="application/json")

    httpserver.expect_request(re.compile(".*")).respond_with_handler(github)
    env = {"GITHUB_REPOSITORY": "fork/llama.cpp", "GITHUB_TOKEN": "t",
           "GITHUB_API_URL": httpserver.url_for("").rstrip("/")}
    return env, posted


@pytest.fixture(scope="session")
def installed_patchkit(tmp_path_factory) -> Path:
    """This checkout installed as a user installs it (`pip install .`, not editable) into a folder
    of its own, for PYTHONPATH: `ci github` then packs it as the wheel the workflow installs.
    The editable install the tests run from is refused there. Here, not in a module that test
    modules import: each importing module would get a fixture of its own, and a pip install."""
    root = tmp_path_factory.mktemp("installed")
    source = root / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for name in ("patchkit", "recipes"):
        shutil.copytree(REPO / name, source / name, ignore=ignore)
    target = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(source)],
                   check=True, capture_output=True, timeout=300)
    return target


@pytest.fixture
def as_installed(installed_patchkit, monkeypatch) -> Path:
    """`python -m patchkit` in subprocesses (run_cli) runs the installed copy."""
    monkeypatch.setenv("PYTHONPATH", str(installed_patchkit))
    return installed_patchkit


@pytest.fixture(scope="session")
def upstream(tmp_path_factory):
    """The llama.cpp-shaped upstream with every scenario branch, built once per session."""
    from patchkit.fixture import build_upstream

    return build_upstream(tmp_path_factory.mktemp("upstream") / "llama.cpp", seed_patch_path())


@pytest.fixture
def project(tmp_path, upstream):
    """A fork of the fixture upstream carrying the real queue."""
    from patchkit.project import Project

    return Project.load(write_project(tmp_path / "fork", str(upstream.path)))


def apply(project, ref: str, **options):
    """`patchkit apply upstream@REF` in this process, without site checks unless asked."""
    from patchkit.pipeline import ApplyOptions, run_apply

    options.setdefault("check", False)
    return run_apply(project, ApplyOptions(spec=f"upstream@{ref}", **options))

