"""A `SHA256SUMS` file as `sha256sum -c` reads it, updated for some names and keeping the rest.

A release folder often holds other files' sums already; only the lines of the names given are
replaced, the others kept as they are, all sorted by name.
"""

from __future__ import annotations

import re
from pathlib import Path

from patchkit.errors import PatchkitError

_TAGGED = re.compile(r"SHA256 \((.*)\) = [0-9a-fA-F]{64}")


def check_name(name: str) -> str:
    """NAME as a SHA256SUMS line can hold it: sha256sum escapes a newline or backslash, so refuse them."""
    if "\n" in name or "\\" in name or "\r" in name:
        raise PatchkitError(f"{name!r}: a file name with a newline or backslash cannot be listed in SHA256SUMS",
                            "choose a plain file name")
    return name


def updated(existing: bytes | None, sums: dict[str, str]) -> bytes:
    """EXISTING's lines with those of the names in SUMS (name -> sha256) replaced, sorted by name."""
    lines = {check_name(name): f"{sha256}  {name}\n".encode() for name, sha256 in sums.items()}
    for line in (existing or b"").splitlines(keepends=True):
        name = _name(line)
        if name not in sums and line.strip():
            lines.setdefault(name, line if line.endswith(b"\n") else line + b"\n")
    return b"".join(lines[name] for name in sorted(lines, key=lambda n: n.encode("utf-8", "surrogateescape")))


def _name(line: bytes) -> str:
    """The file a `HASH  NAME`, `HASH *NAME` or `SHA256 (NAME) = HASH` (`sha256sum --tag`) line is
    about (a line of another form: itself)."""
    text = line.rstrip(b"\r\n").decode("utf-8", "surrogateescape")
    tagged = _TAGGED.fullmatch(text)
    if tagged:
        return tagged.group(1)
    _digest, sep, rest = text.partition(" ")
    if sep and rest[:1] in (" ", "*"):
        return rest[1:]
    return text


def read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PatchkitError(f"cannot read {path}: {exc.strerror}", "fix its permissions or move it") from None
