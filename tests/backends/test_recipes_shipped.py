"""Shipped recipes: what `patchkit init` gives, and a project's recipes on top of them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema

from build_helpers import PROJECT, SCHEMA, needs_cmake, patchkit

NEW_RECIPE = "description: a backend only this project has\noptions: {GGML_NATIVE: OFF}\n"


def fresh_project(tmp_path: Path) -> Path:
    root = tmp_path / "fork"
    root.mkdir()
    run = patchkit("init", cwd=root)
    assert run.code == 0, run.stderr
    return root


def shipped_recipes_dir(cwd: Path) -> Path:
    """The shipped recipes of the patchkit that `patchkit(..., cwd=CWD)` runs: the repository's
    recipes/ from a checkout or an editable install, the package's copy after a plain `pip install`
    (while this process, run from the repository, imports the checkout's)."""
    code = "from patchkit.backends.recipe import shipped_recipes_dir as d; print(d())"
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=True)
    return Path(done.stdout.strip())


def recipes(root: Path) -> dict[str, dict]:
    run = patchkit("recipes", "list", "--json", "-", cwd=root)
    assert run.code == 0, run.stderr
    data = json.loads(run.stdout)
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    return {r["name"]: r for r in data["recipes"]}


def test_init_gives_no_copies_and_the_shipped_recipes_are_seen(tmp_path: Path) -> None:
    root = fresh_project(tmp_path)
    assert [p.name for p in (root / "recipes").iterdir()] == ["README.md"]
    listed = recipes(root)
    shipped = shipped_recipes_dir(root)
    assert set(listed) == {p.stem for p in shipped.glob("*.yaml")} >= {"cpu", "vulkan"}
    cpu = listed["cpu"]
    assert (cpu["source"], cpu["overrides"], cpu["available"]) == ("shipped", False, True)
    assert Path(cpu["path"]) == shipped / "cpu.yaml"


def test_project_recipe_overrides_a_shipped_one_or_adds_a_backend(tmp_path: Path) -> None:
    root = fresh_project(tmp_path)
    cpu = (shipped_recipes_dir(root) / "cpu.yaml").read_text()
    (root / "recipes/cpu.yaml").write_text(cpu.replace("description: ", "description: ours, "))
    (root / "recipes/mine.yaml").write_text(NEW_RECIPE)
    listed = recipes(root)
    assert (listed["cpu"]["source"], listed["cpu"]["overrides"]) == ("project", True)
    assert listed["cpu"]["description"].startswith("ours, ")
    assert Path(listed["cpu"]["path"]) == root / "recipes/cpu.yaml"
    assert (listed["mine"]["source"], listed["mine"]["overrides"]) == ("project", False)
    assert listed["vulkan"]["source"] == "shipped"
    table = patchkit("recipes", "list", cwd=root).stdout
    rows = {line.split()[1]: line for line in table.splitlines() if line.count("\u2502") > 3
            and line.split()[1] in ("cpu", "mine", "blas")}
    assert "project (overrides shipped)" in rows["cpu"]
    assert "project " in rows["mine"] and "overrides" not in rows["mine"]
    assert "shipped" in rows["blas"]


def test_recipes_folder_on_the_command_line_must_exist(tmp_path: Path) -> None:
    run = patchkit("recipes", "list", "--recipes", tmp_path / "nope")
    assert run.code == 2
    assert run.stderr.strip() == (f"patchkit: error: --recipes {tmp_path / 'nope'}: no such folder; "
                                  "name a folder of BACKEND.yaml files")


@needs_cmake
def test_fresh_project_builds_cpu_with_the_shipped_recipe(tmp_path: Path) -> None:
    root = fresh_project(tmp_path)
    shutil.copytree(PROJECT, root / "llama.cpp")  # where `patchkit apply` would put the tree
    run = patchkit("build", "--backend", "cpu", "--json", "-", cwd=root)
    assert run.code == 0, run.stdout + run.stderr
    (result,) = json.loads(run.stdout)["results"]
    assert result["status"] == "ok"
    assert {a["target"] for a in result["artifacts"]} >= {"llama-server"}
    assert all(Path(a["path"]).is_file() for a in result["artifacts"])
