"""export/folder.py through write_folder: the folder is written whole or not at all; a failure or
Ctrl-C part way leaves OUT, and its parents, as they were. Where OUT may be: tests/test_targets.py."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

from patchkit.errors import PatchkitError
from patchkit.export.folder import write_folder
from patchkit.export.formats import OutFile

FILES = [OutFile("series", b"a.patch\nb.patch\n"), OutFile("a.patch", b"A\n", "a.patch"),
         OutFile("deep/er/b.patch", b"B\n", "b.patch")]


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def breaking(after: int, error: BaseException) -> Iterator[OutFile]:
    """FILES, then ERROR once AFTER of them are written (a format that fails part way)."""
    for i, f in enumerate(FILES):
        if i == after:
            raise error
        yield f


def test_a_new_folder_and_its_parents_are_written(tmp_path):
    old = os.umask(0o022)
    try:
        write_folder(tmp_path / "new" / "out", FILES, force=False)
    finally:
        os.umask(old)
    out = tmp_path / "new" / "out"
    assert tree(out) == {"series": b"a.patch\nb.patch\n", "a.patch": b"A\n", "deep/er/b.patch": b"B\n"}
    assert stat.S_IMODE(out.stat().st_mode) == 0o755 and stat.S_IMODE((out / "a.patch").stat().st_mode) == 0o644
    assert os.listdir(tmp_path / "new") == ["out"]  # no sibling left behind


def test_an_empty_folder_is_filled_and_a_full_one_replaced_only_with_force(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    write_folder(out, FILES[:1], force=False)
    assert tree(out) == {"series": b"a.patch\nb.patch\n"}
    with pytest.raises(PatchkitError, match="is not empty"):
        write_folder(out, FILES, force=False)
    assert tree(out) == {"series": b"a.patch\nb.patch\n"}
    (out / "stale.patch").write_text("from the last export\n")
    write_folder(out, FILES[1:2], force=True)
    assert tree(out) == {"a.patch": b"A\n"}  # replaced whole: nothing of the old folder stays
    assert os.listdir(tmp_path) == ["out"]


def test_a_symlink_to_a_folder_keeps_the_link(tmp_path):
    (tmp_path / "exports").mkdir()
    (tmp_path / "exports" / "old").write_text("x")
    (tmp_path / "latest").symlink_to("exports")
    write_folder(tmp_path / "latest", FILES[:1], force=True)
    assert (tmp_path / "latest").is_symlink() and tree(tmp_path / "exports") == {"series": FILES[0].data}


@pytest.mark.parametrize("error", [RuntimeError("a format failed"), KeyboardInterrupt()])
@pytest.mark.parametrize("existing", [True, False])
def test_a_failure_part_way_leaves_everything_as_it_was(tmp_path, error, existing):
    out = tmp_path / "parent" / "out"
    if existing:
        out.mkdir(parents=True)
        (out / "kept.patch").write_text("the last export\n")
    with pytest.raises(type(error)):
        write_folder(out, breaking(2, error), force=True)
    if existing:
        assert tree(tmp_path) == {"parent/out/kept.patch": b"the last export\n"}
        assert os.listdir(tmp_path / "parent") == ["out"]
    else:
        assert os.listdir(tmp_path) == []  # not even the parent it made


def test_ctrl_c_in_a_real_process_leaves_nothing(tmp_path):
    """SIGINT delivered while the files are written, as a user's Ctrl-C is."""
    out = tmp_path / "made" / "out"
    script = textwrap.dedent(f"""
        import os, signal, sys
        from pathlib import Path
        from patchkit.export.folder import write_folder
        from patchkit.export.formats import OutFile

        def files():
            yield OutFile("one", b"1")
            os.kill(os.getpid(), signal.SIGINT)
            yield OutFile("two", b"2")
            yield OutFile("three", b"3")

        try:
            write_folder(Path({str(out)!r}), files(), force=False)
        except KeyboardInterrupt:
            sys.exit(130)
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 130, done.stderr
    assert os.listdir(tmp_path) == []
