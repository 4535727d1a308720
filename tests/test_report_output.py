"""Where reports and the terminal view go: devices, FIFOs, symlinks, one file per report, CI logs."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import shutil
import socket
import stat
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest

from conftest import REPO, run_cli, seed_patch_path, write_project
from patchkit import __version__


@pytest.fixture
def fork(tmp_path, upstream) -> Path:
    return write_project(tmp_path / "fork", str(upstream.path))


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("patchkit: error: ")
    return line


def test_json_to_dev_null_writes_through_it(fork):
    before = set(os.listdir("/dev"))
    proc = run_cli("apply", "upstream@b1000", "--no-check", "--json", "/dev/null", cwd=fork)
    assert proc.returncode == 0, proc.stderr
    assert "1/1 patches applied" in proc.stdout  # the report went to /dev/null, the view to the log
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert set(os.listdir("/dev")) == before  # no temporary file was made beside it


def test_a_fifo_receives_the_report(fork):
    fifo = fork / "report.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    proc = run_cli("status", "--json", str(fifo), cwd=fork)
    try:  # should the CLI never have opened the FIFO, release the reader instead of hanging
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass  # ENXIO: the reader has already finished
    reader.join()
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert json.loads(received[0])["kind"] == "status"


def test_a_symlink_is_kept_and_its_target_replaced(fork):
    (fork / "reports").mkdir()
    target = fork / "reports" / "status.json"
    target.write_text("old\n")
    target.chmod(0o640)
    link = fork / "status.json"
    link.symlink_to("reports/status.json")
    proc = run_cli("status", "--json", "status.json", cwd=fork)
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == "reports/status.json"
    assert json.loads(target.read_text())["kind"] == "status"
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(os.listdir(fork / "reports")) == ["status.json"]


def test_a_dangling_symlink_writes_its_target_where_the_folder_exists(fork):
    (fork / "reports").mkdir()
    (fork / "status.json").symlink_to("reports/status.json")
    proc = run_cli("status", "--json", "status.json", cwd=fork)
    assert proc.returncode == 0, proc.stderr
    assert (fork / "status.json").is_symlink()
    assert json.loads((fork / "reports" / "status.json").read_text())["kind"] == "status"

    (fork / "elsewhere.json").symlink_to("no-such-folder/status.json")
    line = one_line_error(run_cli("status", "--json", "elsewhere.json", cwd=fork))
    assert "elsewhere.json is a symlink to" in line and "whose folder does not exist" in line
    assert not (fork / "no-such-folder").exists()


def test_a_symlink_loop_is_refused(fork):
    (fork / "a.json").symlink_to("b.json")
    (fork / "b.json").symlink_to("a.json")
    assert "symlink loop" in one_line_error(run_cli("status", "--json", "a.json", cwd=fork))


@pytest.mark.parametrize("make, message", [
    (lambda fork: (fork / "r.json").symlink_to("a-folder"), "r.json is a folder"),
    (lambda fork: (fork / "r.json").symlink_to("a-file/r.json"), "cannot write r.json: Not a directory"),
    (lambda fork: socket.socket(socket.AF_UNIX).bind(str(fork / "r.json")),
     "not a file, a character device or a FIFO"),
])
def test_targets_no_report_can_go_to_fail_before_any_work(fork, make, message):
    (fork / "a-folder").mkdir()
    (fork / "a-file").write_text("keep\n")
    make(fork)
    assert message in one_line_error(run_cli("apply", "--no-check", "--json", "r.json", cwd=fork))
    assert not (fork / "llama.cpp").exists() and not (fork / "cache").exists()
    assert (fork / "a-file").read_text() == "keep\n" and not os.listdir(fork / "a-folder")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anything")
def test_an_unwritable_fifo_fails_before_any_work(fork):
    fifo = fork / "report.fifo"
    os.mkfifo(fifo, 0o444)
    line = one_line_error(run_cli("apply", "--no-check", "--json", str(fifo), cwd=fork))
    assert "permission denied" in line
    assert not (fork / "llama.cpp").exists() and not (fork / "cache").exists()


@pytest.mark.parametrize("args, names", [
    (["apply", "--no-check", "--json", "a.json", "--markdown", "./a.json"], ["--json a.json", "--markdown ./a.json"]),
    (["apply", "--no-check", "--junit", "link.xml", "--json", "real/a.json"], ["--junit link.xml", "--json real/a.json"]),
    (["apply", "--no-check", "--json", "hard.json", "--markdown", "real/a.json"], ["--json", "--markdown"]),
    (["check", "--json", "-", "--sarif", "-"], ["--json", "--sarif", "standard output"]),
    (["check", "--sarif", "a.sarif", "--junit", "real/../a.sarif"], ["--sarif a.sarif", "--junit real/../a.sarif"]),
    (["build", "--backend", "cpu", "--json", "b.json", "--junit", "b.json"], ["--json b.json", "--junit b.json"]),
])
def test_two_reports_on_one_target_fail_before_any_work(fork, args, names):
    (fork / "real").mkdir()
    (fork / "real" / "a.json").write_text("keep\n")
    (fork / "link.xml").symlink_to("real/a.json")
    os.link(fork / "real" / "a.json", fork / "hard.json")
    line = one_line_error(run_cli(*args, cwd=fork))
    assert all(name in line for name in names), line
    assert not (fork / "llama.cpp").exists() and not (fork / "cache").exists()
    assert (fork / "real" / "a.json").read_text() == "keep\n"
    assert not {"a.json", "a.sarif", "b.json"} & set(os.listdir(fork))


def test_version():
    proc = run_cli("--version", cwd=REPO)
    assert proc.returncode == 0 and proc.stdout == f"patchkit {__version__}\n"


@pytest.fixture
def long_named_conflict(tmp_path, upstream) -> tuple[Path, str]:
    """A fork whose one patch has a 190-character name and conflicts on scenario/conflict."""
    name = "keep-" + "very-long-" * 18 + "name.patch"
    patch = tmp_path / name
    shutil.copy(seed_patch_path(), patch)
    return write_project(tmp_path / "fork", str(upstream.path), [patch]), name


def test_off_a_terminal_nothing_is_wrapped_or_cut(long_named_conflict, monkeypatch):
    root, name = long_named_conflict
    monkeypatch.delenv("COLUMNS", raising=False)
    proc = run_cli("apply", "upstream@scenario/conflict", "--no-check", cwd=root)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(f"│ {name} │ conflict │" in line for line in lines)  # the table row, whole
    assert f"{name}: conflict — tools/server/server-context.cpp hunk 4" in lines
    quoted = "ckpt.update_tgt(ctx_tgt, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY | LLAMA_STATE_SEQ_FLAGS_NO_SYNC);"
    # whole, and marked as the line that differs from the hunk
    assert any(line.strip().startswith("!") and line.strip()[1:].strip() == quoted for line in lines)
    assert "…" not in proc.stdout
    assert max(map(len, lines)) < 2 * len(name)  # sized to the content, not padded to the width


def test_columns_still_sets_the_width_off_a_terminal(long_named_conflict):
    root, name = long_named_conflict
    proc = run_cli("apply", "upstream@scenario/conflict", "--no-check", cwd=root, env={"COLUMNS": "100"})
    assert proc.returncode == 1, proc.stderr
    assert max(map(len, proc.stdout.splitlines())) <= 100 and name not in proc.stdout


def test_on_a_terminal_the_terminal_width_is_kept(long_named_conflict, monkeypatch):
    root, name = long_named_conflict
    monkeypatch.delenv("COLUMNS", raising=False)
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 100, 0, 0))
    chunks: list[bytes] = []

    def read_all() -> None:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal was closed on the other side
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=read_all)
    reader.start()
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "patchkit", "apply", "upstream@scenario/conflict", "--no-check"],
                          cwd=root, stdout=follower, stderr=subprocess.PIPE, env=env)
    os.close(follower)
    reader.join()
    os.close(leader)
    assert proc.returncode == 1, proc.stderr
    lines = re.sub(r"\x1b\[[0-9;]*m", "", b"".join(chunks).decode()).splitlines()  # styles stay on a tty
    assert max(map(len, lines)) <= 100 and name not in "\n".join(lines)
    assert any("0/1 patches applied" in line for line in lines)
