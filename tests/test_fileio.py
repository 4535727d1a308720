"""fileio.py: files written whole or not at all (the permissions of a plain write, a symlink's target
replaced with the link kept, a FIFO or device written through), the refusals of ensure_writable
before any work; folders built aside and renamed into place (export, the mirror's first fetch, the
output clone), or nothing changed; and the append the GitHub step summary goes through."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from patchkit.errors import PatchkitError
from patchkit.fileio import (append, atomic_file, atomic_folder, atomic_write, ensure_writable, remove_aside,
                             target_identity)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_new_file_gets_the_mode_a_plain_write_gives(tmp_path):
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "deep" / "er" / "report.json", b"{}\n")
    finally:
        os.umask(old)
    written = tmp_path / "deep" / "er" / "report.json"
    assert written.read_bytes() == b"{}\n"
    assert stat.S_IMODE(written.stat().st_mode) == 0o640  # not mkstemp's 0600
    assert listing(written.parent) == ["report.json"]


def test_a_replaced_file_keeps_its_mode(tmp_path, umask_022):
    path = tmp_path / "run.sh"
    path.write_bytes(b"old\n")
    path.chmod(0o750)
    atomic_write(path, b"new\n")
    assert path.read_bytes() == b"new\n" and stat.S_IMODE(path.stat().st_mode) == 0o750


@pytest.mark.parametrize("error", [RuntimeError("disk full"), KeyboardInterrupt()])
def test_a_failed_stream_keeps_the_old_file_and_leaves_no_temporary(tmp_path, error):
    path = tmp_path / "dist.tar.gz"
    path.write_bytes(b"the old tarball")
    with pytest.raises(type(error)):
        with atomic_file(path) as fh:
            fh.write(b"half of the new one")
            assert path.read_bytes() == b"the old tarball"  # nothing shows before the end
            raise error
    assert path.read_bytes() == b"the old tarball"
    assert listing(tmp_path) == ["dist.tar.gz"]


def test_a_stream_is_renamed_into_place_only_at_the_end(tmp_path):
    path = tmp_path / "out.bin"
    with atomic_file(path) as fh:
        fh.write(b"a")
        assert not path.exists()
        fh.write(b"b")
    assert path.read_bytes() == b"ab" and listing(tmp_path) == ["out.bin"]


def test_an_unwritable_place_is_one_error_and_nothing_is_made(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(PatchkitError, match="cannot write"):
        atomic_write(tmp_path / "file" / "report.json", b"{}")
    with pytest.raises(PatchkitError, match="is a folder"):
        atomic_write(tmp_path, b"{}")
    assert listing(tmp_path) == ["file"] and (tmp_path / "file").read_text() == "x"


def test_a_symlink_keeps_the_link_and_its_target_gets_the_bytes(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "report.md"
    target.write_text("old")
    target.chmod(0o604)
    link = tmp_path / "report.md"
    link.symlink_to("real/report.md")  # relative, as users make them
    atomic_write(link, b"new")
    assert link.is_symlink() and os.readlink(link) == "real/report.md"
    assert target.read_bytes() == b"new" and stat.S_IMODE(target.stat().st_mode) == 0o604
    assert listing(tmp_path / "real") == ["report.md"] and listing(tmp_path) == ["real", "report.md"]
    # a link to a link: the last target is the file
    (tmp_path / "again").symlink_to("report.md")
    atomic_write(tmp_path / "again", b"newer")
    assert target.read_bytes() == b"newer" and (tmp_path / "again").is_symlink()


def test_a_dangling_symlink_gets_its_target_written(tmp_path):
    (tmp_path / "out").mkdir()
    link = tmp_path / "latest.json"
    link.symlink_to(tmp_path / "out" / "night.json")
    atomic_write(link, b"{}")
    assert link.is_symlink() and (tmp_path / "out" / "night.json").read_bytes() == b"{}"
    # its folder missing: refused, and the folder is not made behind the link's back
    away = tmp_path / "away.json"
    away.symlink_to(tmp_path / "missing" / "x.json")
    with pytest.raises(PatchkitError, match="cannot write"):
        atomic_write(away, b"{}")
    assert not (tmp_path / "missing").exists()


def test_a_fifo_is_written_through_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    atomic_write(fifo, b"report for the reader\n")
    reader.join(timeout=10)
    assert got == [b"report for the reader\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode) and listing(tmp_path) == ["pipe"]


def test_a_character_device_is_written_through():
    atomic_write(Path("/dev/null"), b"nothing")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_ensure_writable_accepts_what_can_be_written(tmp_path):
    (tmp_path / "old.json").write_text("{}")
    os.mkfifo(tmp_path / "pipe")
    ensure_writable(None, "-", tmp_path / "old.json", tmp_path / "new" / "deeper" / "r.json",
                    tmp_path / "pipe", "/dev/null")
    assert listing(tmp_path) == ["old.json", "pipe"]  # checked, not made


def test_ensure_writable_refuses_before_any_work(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    loop = tmp_path / "loop"
    loop.symlink_to("loop")
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "missing" / "r.json")
    sock_path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        cases = [
            (tmp_path / "dir", "is a folder"),
            (tmp_path / "file" / "r.json", "cannot write .*/file/r.json: Not a directory"),
            (loop, "a symlink loop"),
            (dangling, "whose folder does not exist"),
            (sock_path, "not a file, a character device or a FIFO"),
        ]
        for target, words in cases:
            with pytest.raises(PatchkitError, match=words):
                ensure_writable(None, tmp_path / "fine.json", target)
    assert not (tmp_path / "fine.json").exists()


def test_target_identity_names_one_file_one_way(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("a").write_text("x")
    Path("link").symlink_to("a")
    os.link("a", "hard")
    Path("b").write_text("x")
    same = {target_identity(t) for t in ("a", "./a", tmp_path / "a", "link", "hard", "sub/../a")}
    assert len(same) == 1
    assert target_identity("b") not in same
    assert target_identity("later.json") == target_identity("./later.json") == str(tmp_path / "later.json")
    assert target_identity("-") == "-"


# -- folders -------------------------------------------------------------------------------------

def tree(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_new_folder_appears_whole_with_the_modes_a_plain_mkdir_gives(tmp_path):
    target = tmp_path / "new" / "deeper" / "out"
    with atomic_folder(target) as new:
        assert new.parent == target.parent and new.name.startswith(".out.patchkit-new-")
        assert not target.exists()
        (new / "a").write_text("a\n")
    assert tree(tmp_path) == ["new", "new/deeper", "new/deeper/out", "new/deeper/out/a"]
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
    assert tree(tmp_path) == ["out", "out/new"]


def test_a_failure_leaves_the_folder_as_it_was_and_no_folders_made_for_it(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "old").write_text("old\n")
    with pytest.raises(KeyboardInterrupt), atomic_folder(target) as new:
        (new / "half").write_text("ha")
        raise KeyboardInterrupt
    assert tree(tmp_path) == ["out", "out/old"]
    with pytest.raises(RuntimeError), atomic_folder(tmp_path / "made" / "for" / "it"):
        raise RuntimeError("failed")
    assert tree(tmp_path) == ["out", "out/old"]


def test_an_unwritable_place_is_one_line_of_bad_input(tmp_path):
    (tmp_path / "a-file").write_text("")
    with pytest.raises(PatchkitError, match=f"cannot write {tmp_path / 'a-file' / 'out'}: "):
        with atomic_folder(tmp_path / "a-file" / "out"):
            pytest.fail("the block must not run")
    assert tree(tmp_path) == ["a-file"]


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
