"""`GIT binary patch` data: decoding it, and applying it to a blob as `git apply` does.

A binary hunk is a zlib stream in git's base85, either the whole new file (`literal`) or a delta
against the old one (`delta`). Which old file it was made against is known only from the blob
ids of the `index` line, so every application is checked against them.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zlib
from dataclasses import dataclass

from patchkit.errors import PatchkitError


@dataclass(frozen=True)
class BinaryData:
    kind: str  # "literal" (the whole file) or "delta" (against the pre-image)
    data: bytes  # inflated


@dataclass(frozen=True)
class BinaryPatch:
    forward: BinaryData
    reverse: BinaryData | None  # git writes one, to undo the change; patchkit never needs it


class BadBinaryPatch(ValueError):
    """The base85/zlib data or a delta is damaged."""


def blob_id(data: bytes) -> str:
    """The id git gives DATA as a blob."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def parse(lines: list[str], where: str) -> BinaryPatch:
    """LINES: what follows `GIT binary patch` (WHERE names the patch and file for errors)."""
    blocks: list[BinaryData] = []
    i = 0
    while i < len(lines):
        header = lines[i].split()
        i += 1
        if not header:
            continue
        if len(header) != 2 or header[0] not in ("literal", "delta") or not re.fullmatch(r"[0-9]+", header[1]):
            raise PatchkitError(f"{where}: unreadable binary patch line {lines[i - 1]!r}",
                                "re-export the patch with `git format-patch --binary`")
        encoded = []
        while i < len(lines) and lines[i].strip():
            encoded.append(lines[i].rstrip("\n"))
            i += 1
        try:
            data = zlib.decompress(b"".join(_decode_line(line) for line in encoded))
        except (BadBinaryPatch, zlib.error) as exc:
            raise PatchkitError(f"{where}: damaged binary patch data ({exc})",
                                "re-export the patch with `git format-patch --binary`") from None
        if len(data) != int(header[1]):
            raise PatchkitError(f"{where}: binary patch data is {len(data)} bytes, its header says {header[1]}",
                                "re-export the patch with `git format-patch --binary`")
        blocks.append(BinaryData(header[0], data))
    if not blocks:
        raise PatchkitError(f"{where}: 'GIT binary patch' without data",
                            "re-export the patch with `git format-patch --binary`")
    return BinaryPatch(blocks[0], blocks[1] if len(blocks) > 1 else None)


def _decode_line(line: str) -> bytes:
    """One line: a length character (A-Z: 1-26, a-z: 27-52 bytes), then base85 in groups of 5."""
    if not line or not line[0].isalpha():
        raise BadBinaryPatch(f"bad line {line[:20]!r}")
    size = ord(line[0]) - (ord("A") - 1 if line[0].isupper() else ord("a") - 27)
    body = line[1:]
    if len(body) % 5 or len(body) // 5 * 4 < size:
        raise BadBinaryPatch(f"bad line length {line[:20]!r}")
    try:
        return base64.b85decode(body)[:size]  # Python's b85 alphabet is git's
    except ValueError as exc:
        raise BadBinaryPatch(str(exc)) from None


def apply(patch: BinaryPatch, old: bytes) -> bytes:
    """The new file from OLD; BadBinaryPatch if a delta does not fit OLD."""
    if patch.forward.kind == "literal":
        return patch.forward.data
    try:
        return _apply_delta(old, patch.forward.data)
    except IndexError:
        raise BadBinaryPatch("truncated delta") from None


def _apply_delta(old: bytes, delta: bytes) -> bytes:
    """git's delta format: source and target sizes, then copy (from OLD) and insert opcodes."""
    pos = 0

    def varint() -> int:
        nonlocal pos
        value = shift = 0
        while True:
            if pos >= len(delta):
                raise BadBinaryPatch("truncated delta header")
            byte = delta[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    if varint() != len(old):
        raise BadBinaryPatch("the delta was made against a file of another size")
    size = varint()
    out = bytearray()
    while pos < len(delta):
        op = delta[pos]
        pos += 1
        if op & 0x80:  # copy: which of 4 offset and 3 size bytes follow is in the low bits
            offset = length = 0
            for bit in range(4):
                if op & (1 << bit):
                    offset |= delta[pos] << (8 * bit)
                    pos += 1
            for bit in range(3):
                if op & (1 << (4 + bit)):
                    length |= delta[pos] << (8 * bit)
                    pos += 1
            length = length or 0x10000
            if offset + length > len(old):
                raise BadBinaryPatch("delta copies past the end of the old file")
            out += old[offset:offset + length]
        elif op:  # insert the next OP bytes
            out += delta[pos:pos + op]
            pos += op
        else:
            raise BadBinaryPatch("delta opcode 0")
    if len(out) != size:
        raise BadBinaryPatch("delta result has the wrong size")
    return bytes(out)
