"""What a check reads: a tree on disk, or upstream's commit straight from the mirror's objects."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from patchkit.checks.results import CheckReport
from patchkit.checks.rules import Rule
from patchkit.checks.run import run_checks
from patchkit.errors import PatchkitError
from patchkit.project import Project
from patchkit.upstream import Mirror, Progress, parse_spec


def check_directory(rules: list[Rule], root: Path) -> CheckReport:
    if not root.is_dir():
        raise PatchkitError(f"{root}: no such directory", "run `patchkit apply` first, or name the tree to check")

    def read(path: str) -> bytes | None:
        file = root / path
        return file.read_bytes() if file.is_file() else None

    return run_checks(rules, read, target=str(root))


def check_upstream(project: Project, rules: list[Rule], spec: str, url: str | None, fetch: bool,
                   progress: Progress | None = None, warn: Callable[[str], None] | None = None) -> CheckReport:
    """The rules on upstream's own tree, read as git objects from the mirror (no checkout)."""
    parse_spec(spec)  # a bad ref fails before any fetch
    mirror = Mirror.open(project, url)
    with mirror.locked(progress):
        revision = mirror.resolve(spec, fetch=fetch, progress=progress, warn=warn)
        with mirror.reader() as reader:
            return run_checks(rules, lambda path: reader.read(revision.commit, path),
                              target=f"{revision.spec} ({revision.commit[:12]})")
