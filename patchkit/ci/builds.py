"""`patchkit.builds.json`, beside the lock: for each backend, the upstream commit it last built
(with the queue, in CI) and the environment it built in.

A build that fails with and without the queue is upstream's fault only where this record shows
the same recipe built in the same environment before: otherwise the recipe or the runner is just
as likely (a missing flag, a new image), and the summary says so instead of blaming upstream.
The environment is a hash of what the recipe says about the build (options, environment, its
`ci:` section: runner, image, packages, setup).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields
from pathlib import Path
from typing import Mapping

from patchkit.backends.recipe import Recipe

FILE = "patchkit.builds.json"


def environment_id(recipe: Recipe) -> str:
    """What the build depends on besides upstream and the queue, as 16 hex digits."""
    ci = {f.name: getattr(recipe.ci, f.name) for f in fields(recipe.ci)} if recipe.ci else None
    facts = {"options": recipe.options, "environment": recipe.environment, "generator": recipe.generator,
             "build-type": recipe.build_type, "targets": recipe.targets, "ci": ci}
    text = json.dumps(facts, sort_keys=True, default=lambda o: dict(o) if isinstance(o, Mapping) else list(o))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read(root: Path) -> dict[str, dict[str, str]]:
    """ROOT's record: backend -> {"environment": id, "commit": id}; empty without one (or an unreadable one,
    which only means no build counts as known-good)."""
    try:
        data = json.loads((root / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    backends = data.get("backends") if isinstance(data, dict) else None
    if not isinstance(backends, dict):
        return {}
    return {name: entry for name, entry in backends.items()
            if isinstance(entry, dict) and isinstance(entry.get("environment"), str) and isinstance(entry.get("commit"), str)}


def built_before(record: Mapping[str, Mapping[str, str]], backend: str, environment: str) -> bool:
    entry = record.get(backend)
    return entry is not None and entry.get("environment") == environment


def updated(record: Mapping[str, Mapping[str, str]], built: Mapping[str, str], commit: str) -> bytes:
    """The record with BUILT (backend -> environment id, tonight's good builds) at COMMIT."""
    backends = {**record, **{name: {"environment": env, "commit": commit} for name, env in built.items()}}
    return (json.dumps({"schema": 1, "backends": dict(sorted(backends.items()))}, indent=2) + "\n").encode()
