"""patchkit installed as a user installs it, for the tests of `ci github`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def installed_patchkit(tmp_path_factory) -> Path:
    """This checkout installed as a user installs it (`pip install .`, not editable) into a folder
    of its own, for PYTHONPATH: `ci github` then packs it as the wheel the workflow installs.
    The editable install the tests run from is refused there."""
    root = tmp_path_factory.mktemp("installed")
    source = root / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(CHECKOUT / name, source / name)
    for name in ("patchkit", "recipes"):
        shutil.copytree(CHECKOUT / name, source / name, ignore=ignore)
    target = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(source)],
                   check=True, capture_output=True, timeout=300)
    return target


@pytest.fixture
def as_installed(installed_patchkit, monkeypatch) -> Path:
    """`python -m patchkit` in subprocesses (run_cli) runs the installed copy."""
    monkeypatch.setenv("PYTHONPATH", str(installed_patchkit))
    return installed_patchkit
