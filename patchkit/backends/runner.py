"""Build a tree once per backend: probe all, then configure and build each in turn."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence, TextIO

from patchkit.backends import cmake
from patchkit.backends.log import NINJA_STATUS, first_error, ninja_progress, unused_variables
from patchkit.backends.probe import probe
from patchkit.backends.recipe import Recipe, default_recipes_dir, load_recipes, select
from patchkit.backends.result import Artifact, BuildReport, BuildResult, Status, UnusedVariable
from patchkit.backends.version import build_info
from patchkit.errors import PatchkitError
from patchkit.project import Project
from patchkit.untrusted import environment

CLI_SOURCE = "-D on the command line"
PATCHKIT_SOURCE = "patchkit"


class BuildProgress(Protocol):
    """Told what happens while builds run (the live progress display is one)."""

    def phase(self, backend: str, phase: str) -> None: ...  # "configure" or "build"

    def step(self, backend: str, done: int, total: int) -> None: ...  # Ninja's [done/total]

    def finished(self, result: BuildResult) -> None: ...


class _Quiet:
    def phase(self, backend: str, phase: str) -> None:
        pass

    def step(self, backend: str, done: int, total: int) -> None:
        pass

    def finished(self, result: BuildResult) -> None:
        pass


@dataclass(frozen=True)
class Define:
    value: str
    source: str  # who set it, named when CMake reports it unused


def build_backends(
    project: Project | None,
    tree: Path,
    backends: Sequence[str] | None,
    *,
    recipes_dir: Path | None = None,
    build_dir: Path | None = None,
    jobs: int | None = None,
    targets: Sequence[str] = (),
    defines: Mapping[str, str] | None = None,
    progress: BuildProgress | None = None,
) -> BuildReport:
    """`patchkit build` and `apply --build`: the named BACKENDS (None: all) of TREE.

    Recipes are the shipped ones with RECIPES_DIR's (else the project's, else ./recipes) on top;
    builds go to BUILD_DIR, else TREE/build; the lock's upstream commit is the fallback for the
    build number.
    """
    recipes = load_recipes(recipes_dir or default_recipes_dir(project))
    lock = project.lock() if project else None
    return run_builds(tree, list(recipes.values()) if backends is None else select(recipes, backends),
                      build_dir=build_dir or tree / "build", jobs=jobs, targets=targets,
                      defines=defines, requested_by_name=backends is not None,
                      upstream_commit=lock.upstream_commit if lock else None, progress=progress)


def run_builds(
    tree: Path,
    recipes: Sequence[Recipe],
    *,
    build_dir: Path,
    jobs: int | None = None,
    targets: Sequence[str] = (),
    defines: Mapping[str, str] | None = None,
    requested_by_name: bool = True,
    upstream_commit: str | None = None,
    progress: BuildProgress | None = None,
) -> BuildReport:
    """Build TREE with each recipe into BUILD_DIR/<backend>, in order.

    TARGETS and DEFINES (`-D`) apply to every backend, on top of each recipe's own.
    UPSTREAM_COMMIT (the lock's) is the fallback for LLAMA_BUILD_NUMBER/COMMIT when the tree has
    no `refs/patchkit/upstream`. Ctrl-C stops the running build, marks it failed and the rest
    not-run, and returns the report with `interrupted` set.
    """
    tree = tree.resolve()
    if not (tree / "CMakeLists.txt").is_file():
        raise PatchkitError(f"no CMakeLists.txt in {tree}",
                            "run `patchkit apply` first, or name the llama.cpp tree to build")
    build_dir = build_dir.resolve()
    cli = dict(defines or {})
    tools = cmake.find_tools()
    extra = {**build_info(tree, upstream_commit), **cmake.launcher_defines(tools.ccache)}
    available = {r.name: probe(r, tree) for r in recipes}  # all up front: no late surprises
    progress = progress or _Quiet()

    def report(results: list[BuildResult], interrupted: bool = False) -> BuildReport:
        return BuildReport(tree=tree, build_dir=build_dir, requested_by_name=requested_by_name,
                           results=tuple(results), defines={**extra, **cli},
                           interrupted=interrupted)

    results: list[BuildResult] = []
    for i, recipe in enumerate(recipes):
        availability = available[recipe.name]
        if not availability.ok:
            result = BuildResult(recipe.name, Status.SKIPPED, availability.reason)
        else:
            try:
                result = _Build(tools, tree, recipe, build_dir / recipe.name,
                                _defines(recipe, {**extra, **cmake.architecture_defines({**os.environ, **recipe.environment})},
                                         cli), progress
                                ).run(tuple(targets) or recipe.targets, jobs)
            except _Interrupted as stop:
                results.append(stop.result)
                progress.finished(stop.result)
                for rest in recipes[i + 1:]:
                    results.append(
                        BuildResult(rest.name, Status.NOT_RUN, "interrupted before it started")
                        if available[rest.name].ok else
                        BuildResult(rest.name, Status.SKIPPED, available[rest.name].reason))
                return report(results, interrupted=True)
        progress.finished(result)
        results.append(result)
    return report(results)


def recipe_defines(recipe: Recipe) -> dict[str, str]:
    """The cache variables a recipe sets, build type included (what presets carry too)."""
    return {**recipe.options, "CMAKE_BUILD_TYPE": recipe.build_type}


def _defines(recipe: Recipe, extra: Mapping[str, str], cli: Mapping[str, str]) -> dict[str, Define]:
    # Later sources override earlier ones, and the source of the value used is the one named.
    layers = ((recipe_defines(recipe), f"recipe {recipe.name} ({recipe.path})"),
              (extra, PATCHKIT_SOURCE), (cli, CLI_SOURCE))
    return {k: Define(v, source) for values, source in layers for k, v in values.items()}


class _Interrupted(Exception):
    def __init__(self, result: BuildResult) -> None:
        super().__init__(result.reason)
        self.result = result


class _Build:
    """One backend's configure and build, logged to <build>/build.log."""

    def __init__(self, tools: cmake.Tools, tree: Path, recipe: Recipe, build: Path,
                 defines: dict[str, Define], progress: BuildProgress) -> None:
        self.tools, self.tree, self.recipe, self.build = tools, tree, recipe, build
        self.defines, self.progress = defines, progress
        self.log_path = build / "build.log"
        # Upstream's CMake files and the compilers run here: without the runner's command files and tokens.
        self.env = {**environment(os.environ), **recipe.environment, "NINJA_STATUS": NINJA_STATUS}
        self.seconds = {"configure": 0.0, "build": 0.0}
        self.current = "configure"

    def run(self, targets: tuple[str, ...], jobs: int | None) -> BuildResult:
        """The result; Ctrl-C becomes _Interrupted carrying the result so far."""
        try:
            return self._run(targets, jobs)
        except KeyboardInterrupt:
            raise _Interrupted(self._result(Status.FAILED, f"interrupted during {self.current}")) from None

    def _run(self, targets: tuple[str, ...], jobs: int | None) -> BuildResult:
        self.build.mkdir(parents=True, exist_ok=True)
        cmake.request_codemodel(self.build)
        with self.log_path.open("w", encoding="utf-8", buffering=1) as log:  # tail -f works
            log.write(f"# patchkit build {self.recipe.name}: recipe {self.recipe.path}\n")
            for key, value in self.recipe.environment.items():
                log.write(f"# environment {key}={value}\n")
            configure = cmake.configure_command(self.tools, self.tree, self.build,
                                                self.recipe.generator,
                                                {k: d.value for k, d in self.defines.items()})
            code, lines = self._phase("configure", configure, log)
            if code != 0:
                return self._result(Status.FAILED, f"configure failed (exit {code})",
                                    first_error=first_error(lines, self.tree))
            stale = tuple(UnusedVariable(n, self.defines[n].source) for n in unused_variables(lines)
                          if n in self.defines and self.defines[n].source != PATCHKIT_SOURCE)
            if stale:
                named = "; ".join(f"{u.name} (set by {u.source})" for u in stale)
                return self._result(Status.FAILED, f"stale recipe: CMake did not use {named}",
                                    unused_variables=stale)
            built = cmake.target_artifacts(self.build)
            missing = [t for t in targets if built and t not in built]
            if missing:
                return self._result(Status.FAILED, f"the tree defines no target {', '.join(missing)}")
            code, lines = self._phase("build", cmake.build_command(self.tools, self.build, targets,
                                                                   jobs), log)
            if code != 0:
                return self._result(Status.FAILED, f"build failed (exit {code})",
                                    first_error=first_error(lines, self.tree))
        artifacts = tuple(Artifact(t, p, p.stat().st_size)
                          for t in targets for p in built.get(t, []) if p.is_file())
        return self._result(Status.OK, artifacts=artifacts)

    def _phase(self, phase: str, args: list[str], log: TextIO) -> tuple[int, list[str]]:
        name = self.recipe.name
        self.current = phase
        self.progress.phase(name, phase)
        lines: list[str] = []

        def on_line(line: str) -> None:
            lines.append(line)
            progress = ninja_progress(line)
            if progress:
                self.progress.step(name, *progress)

        start = time.monotonic()
        try:
            return cmake.run_logged(args, env=self.env, log=log, on_line=on_line), lines
        finally:
            self.seconds[phase] = time.monotonic() - start

    def _result(self, status: Status, reason: str = "", **fields: Any) -> BuildResult:
        return BuildResult(self.recipe.name, status, reason,
                           configure_seconds=round(self.seconds["configure"], 2),
                           build_seconds=round(self.seconds["build"], 2), log=self.log_path,
                           **fields)
