"""binary.py on what git itself writes: `git diff --binary` of real blobs, literal and delta,
decoded and applied back to the exact bytes; damaged data refused, never applied."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest
from conftest import git_identity

from patchkit import binary
from patchkit.errors import PatchkitError
from patchkit.git import git_env


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env=git_env(git_identity())).stdout


def diff_of(tmp_path: Path, old: bytes | None, new: bytes | None) -> tuple[list[str], str, str]:
    """What follows `GIT binary patch` in git's diff from OLD to NEW (None: no file), and the
    `index` line's two blob ids."""
    repo = tmp_path / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "--quiet")
    (repo / ".gitattributes").write_text("*.bin binary\n")  # short data could pass for text
    git(repo, "add", ".gitattributes")
    blob = repo / "model.bin"
    if old is not None:
        blob.write_bytes(old)
        git(repo, "add", "model.bin")
    git(repo, "commit", "--quiet", "--allow-empty", "-m", "old")
    if new is None:
        blob.unlink()
    else:
        blob.write_bytes(new)
    git(repo, "add", "-A")
    text = git(repo, "diff", "--cached", "--binary", "--full-index")
    index = next(line for line in text.splitlines() if line.startswith("index "))
    old_id, new_id = index.split()[1].split("..")
    lines = text.splitlines(keepends=True)
    start = lines.index("GIT binary patch\n") + 1
    return lines[start:], old_id, new_id


def noise(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


def test_a_new_file_is_a_literal_that_gives_its_blob(tmp_path):
    new = noise(3000, 1) + b"\0"
    lines, old_id, new_id = diff_of(tmp_path, None, new)
    patch = binary.parse(lines, "model.patch")
    assert patch.forward.kind == "literal" and patch.forward.data == new
    assert binary.apply(patch, b"") == new and binary.blob_id(new) == new_id
    assert old_id == "0" * 40


def test_a_small_change_is_a_delta_and_both_directions_apply(tmp_path):
    # 200 KB: git's copy opcodes then include 64 KiB runs, whose size bytes are all left out
    old = noise(200_000, 2)
    new = old[:70_000] + b"checkpoint on device" + old[70_010:150_000] + old[150_500:]
    lines, old_id, new_id = diff_of(tmp_path, old, new)
    patch = binary.parse(lines, "model.patch")
    assert patch.forward.kind == "delta" and len(patch.forward.data) < 200
    assert binary.blob_id(old) == old_id and binary.blob_id(new) == new_id
    assert binary.apply(patch, old) == new
    # git also writes the reverse change; applied to the new file it gives the old one
    assert patch.reverse is not None
    assert binary.apply(binary.BinaryPatch(patch.reverse, None), new) == old


def test_each_line_length_character_is_read(tmp_path):
    """A literal of 1..60 bytes: lines of every length from 'A' (1) to 'z' (52) and a last short one."""
    for n in (1, 26, 27, 52, 53, 60):
        data = noise(n, n)
        lines, _, _ = diff_of(tmp_path / str(n), None, data)
        assert binary.apply(binary.parse(lines, "x"), b"") == data


def test_a_delta_against_another_file_is_refused(tmp_path):
    old = noise(50_000, 3)
    new = old[:1000] + b"x" + old[1001:]
    patch = binary.parse(diff_of(tmp_path, old, new)[0], "model.patch")
    with pytest.raises(binary.BadBinaryPatch, match="another size"):
        binary.apply(patch, old + b"more")
    # same size, other bytes: the delta's copies still fit, so the caller's blob-id check is what
    # refuses; the result here is simply not NEW
    other = noise(50_000, 4)
    assert binary.apply(patch, other) != new


@pytest.mark.parametrize("damage, message", [
    (lambda ls: ls[:1] + [ls[1][:-6] + ("0" if ls[1][-6] != "0" else "1") + ls[1][-5:]] + ls[2:],
     "damaged binary patch data"),                        # one base85 character changed
    (lambda ls: ls[:1] + [ls[1][:-3] + "\n"] + ls[2:], "damaged binary patch data"),  # cut short
    (lambda ls: [ls[0].replace("literal ", "literal 9")] + ls[1:], "its header says 9"),
    (lambda ls: ["literal x\n"] + ls[1:], "unreadable binary patch line"),
    (lambda ls: ["patch 12\n"] + ls[1:], "unreadable binary patch line"),
    (lambda ls: [ls[0], "?" + ls[1][1:]] + ls[2:], "damaged binary patch data"),  # a bad length character
    (lambda ls: [], "without data"),
])
def test_damaged_data_is_refused_with_the_patch_named(tmp_path, damage, message):
    lines, _, _ = diff_of(tmp_path, None, noise(300, 5))
    with pytest.raises(PatchkitError, match=message) as caught:
        binary.parse(damage(lines), "model.patch (model.bin)")
    assert caught.value.message.startswith("model.patch (model.bin): ")
    assert "git format-patch --binary" in caught.value.hint


def test_a_truncated_delta_is_refused_not_applied(tmp_path):
    old = noise(20_000, 6)
    new = old[:5000] + b"changed" + old[5000:]
    patch = binary.parse(diff_of(tmp_path, old, new)[0], "x")
    for cut in (1, len(patch.forward.data) // 2, len(patch.forward.data) - 1):
        short = binary.BinaryPatch(binary.BinaryData("delta", patch.forward.data[:cut]), None)
        with pytest.raises(binary.BadBinaryPatch):
            binary.apply(short, old)


def test_a_delta_that_copies_past_the_old_file_is_refused():
    # source size 4, target size 8: copy offset 2, length 6 (past the end of the 4 bytes)
    delta = bytes([4, 8, 0x80 | 0x01 | 0x10, 2, 6])
    with pytest.raises(binary.BadBinaryPatch, match="past the end"):
        binary.apply(binary.BinaryPatch(binary.BinaryData("delta", delta), None), b"abcd")
    with pytest.raises(binary.BadBinaryPatch, match="opcode 0"):
        binary.apply(binary.BinaryPatch(binary.BinaryData("delta", bytes([4, 4, 0])), None), b"abcd")
    with pytest.raises(binary.BadBinaryPatch, match="wrong size"):  # inserts 2 bytes, promises 3
        binary.apply(binary.BinaryPatch(binary.BinaryData("delta", bytes([4, 3, 2]) + b"xy"), None), b"abcd")


def test_blob_id_is_gits(tmp_path):
    for data in (b"", b"hello\n", noise(10_000, 7)):
        path = tmp_path / "blob"
        path.write_bytes(data)
        assert binary.blob_id(data) == subprocess.run(["git", "hash-object", str(path)], check=True,
                                                      capture_output=True, text=True).stdout.strip()
