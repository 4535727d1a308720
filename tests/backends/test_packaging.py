"""The wheel carries the shipped recipes (one copy: the top-level recipes/) and every package, and
nothing that only the tests and benchmarks use (testing/ stays in the repository)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built by pip from a copy of the sources (the work tree stays clean)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src)
    for name in ("patchkit", "recipes", "testing"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "-w", str(out), "--no-deps",
                           "-q", "--disable-pip-version-check"], capture_output=True, text=True)
    if proc.returncode != 0 and "from versions: none" in proc.stderr:
        pytest.skip("pip found no setuptools to build with (no package index here)")
    assert proc.returncode == 0, proc.stderr
    (built,) = out.glob("patchkit_queue-*.whl")
    return built


def test_wheel_ships_the_recipes_and_every_package(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    recipes = {f"patchkit/recipes/{p.name}" for p in (REPO / "recipes").glob("*.yaml")}
    assert "patchkit/recipes/cpu.yaml" in recipes and recipes <= names
    # The package list in pyproject.toml is explicit: a package folder left out of it fails here.
    modules = {p.relative_to(REPO).as_posix() for p in (REPO / "patchkit").rglob("*.py")}
    assert modules - names == set()
    assert {f"patchkit/schemas/{p.name}" for p in (REPO / "patchkit/schemas").glob("*.json")} <= names
    # The tests' scaffolding sits beside the package in the sources, and stays out of the wheel.
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {"patchkit"}


def test_installed_wheel_lists_its_shipped_recipes(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--disable-pip-version-check", "--target", str(site), str(wheel)], check=True)
    empty = tmp_path / "elsewhere"  # no project, no recipes/ folder
    empty.mkdir()
    proc = subprocess.run([sys.executable, "-m", "patchkit", "recipes", "list", "--json", "-"],
                          cwd=empty, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(site)})
    assert proc.returncode == 0, proc.stderr
    cpu = next(r for r in json.loads(proc.stdout)["recipes"] if r["name"] == "cpu")
    assert cpu["source"] == "shipped"
    assert Path(cpu["path"]) == site / "patchkit/recipes/cpu.yaml"


def test_installed_wheel_builds_the_demo_upstream(wheel: Path, tmp_path: Path) -> None:
    """`patchkit demo` stands on patchkit.fixture alone: no module of testing/ is needed."""
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--disable-pip-version-check", "--target", str(site), str(wheel)], check=True)
    script = ("import sys; from pathlib import Path; from patchkit.fixture import build_upstream; "
              "print(build_upstream(Path(sys.argv[1]), Path(sys.argv[2])).base_commit)")
    patch = REPO / "patches" / "server-keep-speculative-checkpoints-on-device.patch"
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / "upstream"), str(patch)],
                          cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(site)})
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.strip()) == 40 and (tmp_path / "upstream" / "tools/server").is_dir()
