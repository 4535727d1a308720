"""`patchkit smoke`: does the flag reach every speculative save/load in a running llama-server?

In order: the site checks on the tree (the static sites), a build of llama-server with libllama as
a shared library and line tables (the recipe's optimisation, so the tested code is the shipped
code), the interposer compiled for this machine, two tiny models written on the spot, the server
runs of the scenario with the interposer preloaded, and the recorded calls attributed to the
static sites.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.errors import EnvironmentProblem, PatchkitError
from patchkit.untrusted import environment

if TYPE_CHECKING:
    from patchkit.backends import BuildResult
    from patchkit.checks import CheckReport
    from patchkit.smoke.attribution import Attribution
    from patchkit.smoke.driver import RunResult

SMOKE_SUFFIX = "-smoke"
# Line tables only: addresses map to file:line while the code stays what the recipe ships.
_LINE_TABLES = {"CMAKE_C_FLAGS": "-g1", "CMAKE_CXX_FLAGS": "-g1"}
SERVER = "llama-server"


@dataclass(frozen=True)
class SmokeReport:
    tree: Path
    backend: str
    build: BuildResult  # of the smoke build
    runs: tuple[RunResult, ...] = ()  # one per server run
    attribution: Attribution | None = None  # when the server ran
    static: CheckReport | None = None  # the sites the calls are joined to
    seconds: float = 0.0  # the scenario, not the build
    detail: str = ""  # why the smoke could not judge, when it could not
    passed: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "passed", not self.detail and self.attribution is not None
                           and self.attribution.passed and all(r.ok for r in self.runs))

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def require_platform() -> None:
    """LD_PRELOAD interposition is a Linux/glibc mechanism."""
    libc, _ = platform.libc_ver()
    if not sys.platform.startswith("linux") or libc != "glibc":
        raise EnvironmentProblem(f"patchkit smoke needs Linux with glibc (LD_PRELOAD); this is "
                                 f"{sys.platform} {libc or 'without glibc'}", "run it on a Linux machine")


def smoke_recipe(recipe):
    """The backend's recipe as the smoke builds it: shared libllama, line tables, the server only,
    in its own build directory (build/<backend>-smoke)."""
    return replace(recipe, name=recipe.name + SMOKE_SUFFIX, targets=(SERVER,),
                   options={**recipe.options, "BUILD_SHARED_LIBS": "ON"})


def run_smoke(tree: Path, rules: list, recipe, *, upstream_commit: str | None = None,
              progress=None, build_progress=None, deadline: float = 120.0) -> SmokeReport:
    from patchkit.backends import Status, run_builds
    from patchkit.checks.targets import check_directory
    from patchkit.smoke import attribution, driver, interpose, model
    from patchkit.smoke.scenario import scenario as driver_scenario

    require_platform()
    if not rules:
        raise PatchkitError("no site rules to smoke-test", "the queue's patches/NAME.checks.yaml name the sites")
    say = progress or (lambda line: None)
    static = check_directory(rules, tree)
    build = run_builds(tree, [smoke_recipe(recipe)], build_dir=tree / "build",
                       defines=_LINE_TABLES,
                       upstream_commit=upstream_commit, progress=build_progress).results[0]
    report = SmokeReport(tree, recipe.name, build, static=static)
    if build.status is not Status.OK:
        happened = "failed" if build.status is Status.FAILED else f"was {build.status.value.replace('-', ' ')}"
        return replace(report, detail=f"the smoke build {happened}: {build.reason or build.first_error}")
    server = next((Path(a.path) for a in build.artifacts if a.target == SERVER), None)
    if server is None:
        return replace(report, detail=f"the smoke build made no {SERVER}")
    work = tree / "build" / (recipe.name + SMOKE_SUFFIX) / "patchkit-smoke"
    work.mkdir(parents=True, exist_ok=True)
    log = work / "calls.log"
    log.unlink(missing_ok=True)
    so = interpose.build_interposer(work)
    target = model.write_model(work / "target.gguf", seed=1).path
    draft = model.write_model(work / "draft.gguf", seed=2).path
    env = {**environment(os.environ), **interpose.preload_env(so, log)}  # upstream's server runs with it
    say(f"smoke: running {server.name} under the interposer")
    start = time.monotonic()
    runs = driver.run_scenario(server, target, driver_scenario(draft), env=env, workdir=work, deadline=deadline)
    seconds = time.monotonic() - start
    required = {r.id: r.require_reached for r in rules if r.require_reached}
    attributed = attribution.attribute(rules, static, attribution.symbolize(interpose.read_log(log)),
                                       required, root=str(tree))
    return replace(report, runs=tuple(runs), attribution=attributed, seconds=seconds)
