"""The version string of a patched source: upstream's build number plus a patch level of the queue.

`b<N>+pk<count>.<hash>`: N is what llama.cpp's build calls LLAMA_BUILD_NUMBER (the number of
commits reachable from the upstream commit, `git rev-list --count`), count the number of patches,
hash the first 8 hex digits of the sha256 of the queue's manifest: one line
`<sha256 of the patch file>  <name>` per patch, in series order, so that a patch added, removed,
reordered or changed by one byte gives another version. `+` sorts after the plain upstream version
in Debian, RPM and pacman version comparisons alike.
"""

from __future__ import annotations

import hashlib
from typing import Iterable

from patchkit.backends import version
from patchkit.errors import PatchkitError
from patchkit.upstream import Mirror


def build_number(mirror: Mirror, commit: str) -> int:
    """LLAMA_BUILD_NUMBER for COMMIT, counted in the mirror, which must have it (it has all history)."""
    number = version.build_number(mirror.path, commit)
    if number is None:
        raise PatchkitError(f"upstream commit {commit} is not in the mirror", "run once without --no-fetch")
    return number


def queue_version(build: int, patches: Iterable[tuple[str, str]]) -> str:
    """The version for build number BUILD and PATCHES, (name, sha256 of the file) in series order."""
    patches = list(patches)
    manifest = "".join(f"{sha256}  {name}\n" for name, sha256 in patches)
    level = hashlib.sha256(manifest.encode()).hexdigest()[:8]
    return f"b{build}+pk{len(patches)}.{level}"
