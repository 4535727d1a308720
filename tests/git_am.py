"""What `git am -3` makes of a patch on an upstream: the reference the reach tests compare with."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import git_identity
from patchkit.git import git_env


def git_am_3(upstream: Path, patch: Path, work: Path) -> Path | None:
    """A clone of UPSTREAM's HEAD at WORK with PATCH applied by `git am -3`; None when git am
    refuses it."""
    subprocess.run(["git", "clone", "--quiet", str(upstream), str(work)], check=True, capture_output=True)
    done = subprocess.run(["git", "am", "-3", "--quiet", str(patch)], cwd=work, capture_output=True,
                          env=git_env(git_identity()))
    return work if done.returncode == 0 else None
