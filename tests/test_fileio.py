"""fileio's folders: built aside and renamed into place (export, the mirror's first fetch, the output
clone), or nothing changed; and the append the GitHub step summary goes through."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from patchkit.errors import PatchkitError
from patchkit.fileio import append, atomic_folder, remove_aside


def listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_new_folder_appears_whole_with_the_modes_a_plain_mkdir_gives(tmp_path):
    target = tmp_path / "new" / "deeper" / "out"
    with atomic_folder(target) as new:
        assert new.parent == target.parent and new.name.startswith(".out.patchkit-new-")
        assert not target.exists()
        (new / "a").write_text("a\n")
    assert listing(tmp_path) == ["new", "new/deeper", "new/deeper/out", "new/deeper/out/a"]
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o777 & ~mask


def test_a_folder_is_replaced_in_one_rename(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "old").write_text("old\n")
    with atomic_folder(target) as new:
        (new / "new").write_text("new\n")
        assert (target / "old").exists()  # the old one stays until the block ends well
    assert listing(tmp_path) == ["out", "out/new"]


def test_a_failure_leaves_the_folder_as_it_was_and_no_folders_made_for_it(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "old").write_text("old\n")
    with pytest.raises(KeyboardInterrupt), atomic_folder(target) as new:
        (new / "half").write_text("ha")
        raise KeyboardInterrupt
    assert listing(tmp_path) == ["out", "out/old"]
    with pytest.raises(RuntimeError), atomic_folder(tmp_path / "made" / "for" / "it"):
        raise RuntimeError("failed")
    assert listing(tmp_path) == ["out", "out/old"]


def test_an_unwritable_place_is_one_line_of_bad_input(tmp_path):
    (tmp_path / "a-file").write_text("")
    with pytest.raises(PatchkitError, match=f"cannot write {tmp_path / 'a-file' / 'out'}: "):
        with atomic_folder(tmp_path / "a-file" / "out"):
            pytest.fail("the block must not run")
    assert listing(tmp_path) == ["a-file"]


def test_what_a_killed_run_leaves_is_removed_by_remove_aside_and_nothing_else(tmp_path):
    target = tmp_path / "out[1]"  # glob characters in the name are the name's own
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from patchkit.fileio import atomic_folder
        with atomic_folder(Path({str(target)!r})) as new:
            (new / "half").write_text("ha")
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.returncode == -signal.SIGKILL
    (tmp_path / ".out[1].mine").mkdir()  # a name of its own: not ours to remove
    (tmp_path / "out[1]x").mkdir()
    left = [p.name for p in tmp_path.iterdir() if ".patchkit-new-" in p.name]
    assert len(left) == 1 and not target.exists()
    remove_aside(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out[1].mine", "out[1]x"]


def test_append_adds_to_what_is_there(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("# an earlier step\n")
    append(summary, "# patchkit\n")
    append(summary, "more\n")
    assert summary.read_text() == "# an earlier step\n# patchkit\nmore\n"
    with pytest.raises(PatchkitError, match=f"cannot write {tmp_path}"):
        append(tmp_path, "a folder\n")
