"""The recipes as CMake presets (schema version 6), for building without patchkit.

Written to CMakeUserPresets.json by default: llama.cpp ships a CMakePresets.json of its own,
which the user file includes implicitly, so our names carry a prefix that cannot collide.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from patchkit.backends.recipe import Recipe
from patchkit.backends.runner import recipe_defines

PRESETS_VERSION = 6  # CMake 3.25: the first with workflow presets
PREFIX = "patchkit-"
USER_PRESETS = "CMakeUserPresets.json"
_HOST_SYSTEM = {"darwin": "Darwin", "linux": "Linux", "win32": "Windows"}


def presets(recipes: Sequence[Recipe]) -> dict[str, Any]:
    """Per backend: a configure, a build and a workflow preset, all named `patchkit-<backend>`."""
    configure, build, workflow = [], [], []
    for recipe in recipes:
        name = PREFIX + recipe.name
        preset: dict[str, Any] = {
            "name": name,
            "displayName": f"{recipe.name} (patchkit recipe)",
            "description": recipe.description,
            "generator": recipe.generator,
            # The same folder `patchkit build` uses, so the two share a build.
            "binaryDir": "${sourceDir}/build/" + recipe.name,
            "cacheVariables": recipe_defines(recipe),
        }
        if recipe.environment:
            preset["environment"] = dict(recipe.environment)
        conditions = [{"type": "equals", "lhs": "${hostSystemName}", "rhs": _HOST_SYSTEM[r.value]}
                      for r in recipe.requires if r.kind == "platform"]
        build_preset: dict[str, Any] = {"name": name, "configurePreset": name,
                                        "targets": list(recipe.targets)}
        if conditions:  # a backend for another platform is hidden there, not broken
            condition = (conditions[0] if len(conditions) == 1 else
                         {"type": "allOf", "conditions": conditions})
            preset["condition"] = build_preset["condition"] = condition
        configure.append(preset)
        build.append(build_preset)
        workflow.append({"name": name, "steps": [{"type": "configure", "name": name},
                                                 {"type": "build", "name": name}]})
    return {"version": PRESETS_VERSION,
            "cmakeMinimumRequired": {"major": 3, "minor": 25, "patch": 0},
            "configurePresets": configure, "buildPresets": build, "workflowPresets": workflow}


def presets_json(recipes: Sequence[Recipe]) -> str:
    return json.dumps(presets(recipes), indent=2) + "\n"
