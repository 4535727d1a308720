"""`patchkit demo`: the whole flow offline, on a llama.cpp-shaped upstream written on the spot.

It runs the same code as `patchkit apply`: a fork project is set up beside the generated upstream
with a copy of this repository's queue, and the queue is applied to upstream@HEAD. It is then
applied, with its site checks, to each scenario branch of the fixture (read only: nothing is
checked out or recorded), so a newcomer sees every verdict once.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from patchkit.errors import PatchkitError
from patchkit.fixture import SCENARIOS, SERVER_CONTEXT, Scenario, build_upstream
from patchkit.hooks import Hooks
from patchkit.pipeline import ApplyOptions, ApplyReport, applied_at, run_apply
from patchkit.project import CONFIG_NAME, Project
from patchkit.queue import Queue
from patchkit.upstream import Mirror


@dataclass(frozen=True)
class DemoResult:
    folder: Path
    fork: Path
    head: ApplyReport  # the queue on upstream@HEAD, checked
    tour: tuple[tuple[Scenario, ApplyReport], ...]  # each scenario branch, nothing checked out


def run_demo(project: Project, folder: Path, hooks: Hooks = Hooks()) -> DemoResult:
    if folder.exists() and any(folder.iterdir()):
        raise PatchkitError(f"{folder} is not empty", "give a new or empty folder")
    queue = Queue.load(project)
    seed = next((p for p in queue.patches if SERVER_CONTEXT in p.touched_paths), None)
    if seed is None:
        raise PatchkitError(f"the queue has no patch of {SERVER_CONTEXT}",
                            "the demo upstream is shaped around the on-device checkpoint patch")
    upstream = build_upstream(folder / "upstream", seed.path)
    fork = folder / "fork"
    shutil.copytree(project.patches_dir, fork / "patches")
    (fork / CONFIG_NAME).write_text(
        f"upstream:\n  url: {upstream.path}\n  branch: master\ncache: {folder / 'cache'}\n")
    demo_project = Project.load(fork)
    demo_queue = Queue.load(demo_project)
    head = run_apply(demo_project, ApplyOptions(spec="upstream@HEAD"), hooks, queue=demo_queue)
    mirror = Mirror.open(demo_project)  # fetched by the run on HEAD, with every scenario branch
    tour = []
    for scenario in SCENARIOS:
        if scenario.name != "master":
            revision = mirror.resolve(f"upstream@{scenario.ref}", fetch=False)
            with applied_at(demo_project, mirror, revision, demo_queue.patches) as (_, report):
                tour.append((scenario, report))
    return DemoResult(folder, fork, head, tuple(tour))
