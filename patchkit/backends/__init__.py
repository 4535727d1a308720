"""Per-backend builds of a patched tree from recipes, through CMake and Ninja subprocesses.

    recipe   recipes/*.yaml: the model and its schema
    probe    can this machine build a backend, and if not, why not
    cmake    the CMake/Ninja subprocesses, their logs, and the artifacts they make
    log      reading their output: progress, unused variables, the first error
    version  LLAMA_BUILD_NUMBER/COMMIT from the upstream commit the tree stands on
    runner   probe all, then configure and build each backend
    presets  the recipes as CMake presets
    result   BuildResult and BuildReport, what the renderers and exit codes use
"""

from patchkit.backends.recipe import Recipe, Requirement, load_recipes, select
from patchkit.backends.result import BuildReport, BuildResult, Status
from patchkit.backends.runner import BuildProgress, build_backends, run_builds

__all__ = ["BuildProgress", "BuildReport", "BuildResult", "Recipe", "Requirement", "Status",
           "build_backends", "load_recipes", "run_builds", "select"]
