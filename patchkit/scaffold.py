"""`patchkit init`: the files a fork repository needs, written only if none is there yet."""

from __future__ import annotations

from pathlib import Path

import yaml

from patchkit.errors import PatchkitError
from patchkit.git import validate_ref
from patchkit.project import CONFIG_NAME, DEFAULT_OUTPUT, STATE_DIR
from patchkit.fileio import atomic_write

SERIES_HEADER = "# Patch queue, applied in this order (quilt-compatible): one file name per line.\n"
IGNORED = (f"{STATE_DIR}/", f"/{DEFAULT_OUTPUT}/")
# Not a copy of the shipped recipes: a copy would hide every later fix to them.
RECIPES_README = """\
# Build recipes

patchkit ships a recipe for each backend it knows; `patchkit recipes list` shows them, where
each comes from, and whether this machine can build it.

A `NAME.yaml` here overrides the shipped recipe of that name, or adds a backend. To start from a
shipped one, copy it: `patchkit recipes list --json -` gives each recipe's path.
"""


def init_project(root: Path, upstream: str, branch: str) -> list[Path]:
    """Create the scaffold in ROOT; return what was created. Refuses to touch an existing one."""
    if upstream.startswith("-"):
        raise PatchkitError(f"invalid --upstream {upstream!r}", "give a URL or a path")
    validate_ref(branch, "--branch")
    if (root / CONFIG_NAME).exists():
        raise PatchkitError(f"{root / CONFIG_NAME} already exists", "edit it instead of running init")
    if not root.is_dir():
        raise PatchkitError(f"{root} is not a folder", "create the fork repository first")
    config = yaml.safe_dump({"upstream": {"url": upstream, "branch": branch},
                             "patches": "patches", "recipes": "recipes"}, sort_keys=False)
    files = {root / CONFIG_NAME: config}
    if not (root / "patches" / "series").exists():
        files[root / "patches" / "series"] = SERIES_HEADER
    if not (root / "recipes").exists():
        files[root / "recipes" / "README.md"] = RECIPES_README
    gitignore = root / ".gitignore"
    present = gitignore.read_text().splitlines() if gitignore.exists() else []
    missing = [line for line in IGNORED if line not in present]
    if missing:
        text = gitignore.read_text() if gitignore.exists() else ""
        files[gitignore] = text + ("" if not text or text.endswith("\n") else "\n") + "\n".join(missing) + "\n"
    for path, text in files.items():
        atomic_write(path, text.encode())
    return list(files)
