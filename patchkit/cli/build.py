"""`patchkit build` and `patchkit recipes list|presets`: parse, call patchkit.backends, render."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from patchkit.cli.app import JsonOpt, JunitOpt, MarkdownOpt, app, console, cwd_path, emit, is_quiet
from patchkit.cli.progress import build_progress
from patchkit.errors import PatchkitError

if TYPE_CHECKING:
    from patchkit.project import Project

recipes_app = typer.Typer(name="recipes", no_args_is_help=True,
                          help="The build recipes (shipped, and the project's recipes/): what each backend needs, as presets.")
app.add_typer(recipes_app)

_DEFINE_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.+-]*)=(.*)$", re.S)

TreeArg = typer.Argument(None, metavar="[DIR]", show_default=False,
                         help="The tree to build: default the project's output tree, else here.")
RecipesOpt = typer.Option(None, "--recipes", metavar="DIR", show_default=False,
                          help="Recipes on top of the shipped ones: default the project's, else ./recipes.")


@app.command("build")
def build(
    tree: Optional[Path] = TreeArg,
    backend: List[str] = typer.Option([], "--backend", "-b", metavar="NAME",
                                      help="Build this backend (repeat for more)."),
    all_: bool = typer.Option(False, "--all", help="Build every backend; skipped ones are fine."),
    build_dir: Optional[Path] = typer.Option(None, "--build-dir", metavar="DIR", show_default=False,
                                             help="Build folders go to DIR/<backend> (default DIR/build)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, metavar="N",
                                       help="Parallel jobs (default: Ninja's choice)."),
    target: List[str] = typer.Option([], "--target", "-t", metavar="T",
                                     help="Build T instead of the recipe's targets (repeat for more)."),
    define: List[str] = typer.Option([], "--define", "-D", metavar="KEY=VALUE",
                                     help="An extra CMake cache variable (repeat for more)."),
    allow_skip: bool = typer.Option(False, "--allow-skip",
                                    help="A backend asked for by name but unavailable is not an error."),
    recipes_dir: Optional[Path] = RecipesOpt,
    json_out: Optional[str] = JsonOpt,
    markdown_out: Optional[str] = MarkdownOpt,
    junit_out: Optional[str] = JunitOpt,
) -> None:
    """Build the patched tree once per backend, from the shipped recipes and the project's recipes/.

    Each backend is probed first; one whose toolchain is missing is skipped with the reason. Logs go to BUILD_DIR/<backend>/build.log. Exit 1 when a build fails, or when a backend asked for by name is skipped (unless --allow-skip); under --all skips are fine.

    Examples:

      patchkit build --backend cpu

      patchkit build llama.cpp -b cpu -b vulkan -j 8 --json build.json

      patchkit build --all --target llama-server -D GGML_CUDA_FA_ALL_QUANTS=ON
    """
    from patchkit.backends import build_backends
    from patchkit.report import build as render, to_json

    if bool(backend) == all_:
        raise PatchkitError("say which backends to build", "use --backend NAME (repeatable) or --all")
    defines, project = _defines(define), _project()
    with build_progress() as progress:
        report = build_backends(project, _tree(tree, project), None if all_ else backend,
                                recipes_dir=_recipes_dir(recipes_dir, project),
                                build_dir=cwd_path(build_dir) if build_dir else None, jobs=jobs,
                                targets=target, defines=defines, progress=progress)
    report = replace(report, allow_skip=allow_skip)

    emit({json_out: lambda: to_json("build", report),
          markdown_out: lambda: render.to_markdown(report),
          junit_out: lambda: render.to_junit(report)},
         lambda: render.render_terminal(report, console(), quiet=is_quiet()))
    raise typer.Exit(report.exit_code)


@recipes_app.command("list")
def recipes_list(
    tree: Optional[Path] = typer.Argument(None, metavar="[DIR]", show_default=False,
                                          help="Also probe what this tree's CMake requires "
                                               "(default the tree build would use, if there is one)."),
    recipes_dir: Optional[Path] = RecipesOpt,
    json_out: Optional[str] = JsonOpt,
) -> None:
    """Each backend: where its recipe comes from, what it needs, and whether this machine can build it (and why not).

    Recipes are patchkit's shipped ones; a project's recipes/NAME.yaml overrides the shipped one of that name or adds a backend.

    Example: patchkit recipes list llama.cpp --json recipes.json
    """
    from patchkit.backends import load_recipes
    from patchkit.backends.probe import probe
    from patchkit.report import build as render

    project = _project()
    folder = _tree(tree, project)
    if not (folder / "CMakeLists.txt").is_file():
        if tree:
            raise PatchkitError(f"no CMakeLists.txt in {folder}", "name a llama.cpp tree, or leave DIR out")
        folder = None
    recipes = list(load_recipes(_recipes_dir(recipes_dir, project)).values())
    available = {r.name: probe(r, folder) for r in recipes}
    emit({json_out: lambda: render.render_recipes_json(recipes, available, folder)},
         lambda: render.draw_recipes(recipes, available, console()))


@recipes_app.command("presets")
def recipes_presets(
    tree: Optional[Path] = typer.Argument(None, metavar="[DIR]", show_default=False,
                                          help="The tree the presets are for (default as for build)."),
    output: Optional[str] = typer.Option(None, "--output", "-o", metavar="FILE", show_default=False,
                                         help="Write here ('-' for stdout; default DIR/CMakeUserPresets.json)."),
    recipes_dir: Optional[Path] = RecipesOpt,
) -> None:
    """Write the recipes as CMake presets (schema 6), for building without patchkit.

    Per backend a configure, a build and a workflow preset named patchkit-<backend>. CMakeUserPresets.json is the default because llama.cpp ships its own CMakePresets.json.

    Example: patchkit recipes presets llama.cpp && cmake --workflow --preset patchkit-cpu
    """
    from patchkit.backends import load_recipes
    from patchkit.backends.presets import USER_PRESETS, presets_json
    from patchkit.report import write_output

    project = _project()
    recipes = list(load_recipes(_recipes_dir(recipes_dir, project)).values())
    target = output or str(_tree(tree, project) / USER_PRESETS)
    write_output(target, presets_json(recipes))
    if target != "-" and not is_quiet():
        console().print(f"wrote {len(recipes)} presets to {target}", markup=False)


def _project() -> Project | None:
    from patchkit.project import Project

    return Project.find_optional()


def _tree(tree: Optional[Path], project: Project | None) -> Path:
    return cwd_path(tree) if tree else project.output_dir if project else Path.cwd()


def _recipes_dir(recipes_dir: Optional[Path], project: Project | None) -> Path:
    from patchkit.backends.recipe import default_recipes_dir

    if recipes_dir is None:
        return default_recipes_dir(project)  # may not exist: then the shipped recipes alone
    folder = cwd_path(recipes_dir)
    if not folder.is_dir():
        raise PatchkitError(f"--recipes {recipes_dir}: no such folder", "name a folder of BACKEND.yaml files")
    return folder


def _defines(pairs: List[str]) -> dict[str, str]:
    defines = {}
    for pair in pairs:
        m = _DEFINE_RE.match(pair)
        if m is None:
            raise PatchkitError(f"-D {pair!r}: expected KEY=VALUE", "for example -D GGML_NATIVE=OFF")
        defines[m.group(1)] = m.group(2)
    return defines
