"""An apply stopped at any point (Ctrl-C, SIGTERM, SIGKILL) damages nothing, and the next plain
apply finishes the job by itself, or names the one command that does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_cli, write_project
from patchkit import git
from patchkit.fixture import SERVER_CONTEXT, FixtureUpstream
from patchkit.project import Project
from patchkit.pipeline import ApplyOptions, run_apply


def start(*args: str, cwd: Path, pause: str | None = None) -> subprocess.Popen:
    """`patchkit ARGS` in a session of its own (so a test can stop what it leaves running)."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO)}
    if pause:
        env["PATCHKIT_TEST_PAUSE"] = pause
    return subprocess.Popen([sys.executable, "-m", "patchkit", *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def wait_for(proc: subprocess.Popen, text: str) -> None:
    assert proc.stderr
    for line in proc.stderr:
        if text in line:
            return
    raise AssertionError(f"the process ended (exit {proc.wait()}) before saying {text!r}")


def stop(proc: subprocess.Popen, sig: signal.Signals) -> tuple[int, str]:
    """Send SIG to patchkit alone, as CI or a user does; then end whatever it left in its session."""
    proc.send_signal(sig)
    code = proc.wait()
    assert proc.stderr
    rest = proc.stderr.read()
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return code, rest


def apply(root: Path, ref: str, **options):
    """An uninterrupted apply, in this process (the interrupted ones run the CLI)."""
    return run_apply(Project.load(root), ApplyOptions(spec=f"upstream@{ref}", check=False, **options))


def mirrors(root: Path) -> list[Path]:
    # not the hidden folder a first fetch builds aside: upstream.py renames it into place when whole
    return [head.parent for head in (root / "cache" / "mirrors").glob("[!.]*/HEAD")]


def snapshot(root: Path) -> dict[str, object]:
    """What an interruption must never damage: the queue's bytes, the lock's, the 3-way bases."""
    files = {str(p.relative_to(root)): p.read_bytes()
             for p in sorted([*(root / "patches").iterdir(), root / "patchkit.lock"]) if p.exists()}
    bases = [git.run(["for-each-ref", "refs/patchkit/bases"], cwd=m) for m in mirrors(root)]
    return {"files": files, "bases": bases or [""]}


def assert_mirror_sound(root: Path, upstream: FixtureUpstream) -> None:
    """A mirror, if there is one, is whole: every upstream ref, every object they need."""
    def refs(repo: Path) -> str:
        return git.run(["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags"], cwd=repo)

    for mirror in mirrors(root):
        assert refs(mirror) == refs(upstream.path)
        git.run(["fsck", "--connectivity-only", "--no-progress"], cwd=mirror)


EXIT = {signal.SIGINT: (130, "patchkit: interrupted"), signal.SIGTERM: (143, "patchkit: terminated"),
        signal.SIGKILL: (-signal.SIGKILL, "")}


@pytest.mark.parametrize("point, sig, before", [
    ("fetch", signal.SIGINT, None),
    ("fetch", signal.SIGKILL, None),
    ("fast-import", signal.SIGTERM, "b1000"),
    ("clone", signal.SIGKILL, None),
    ("checkout", signal.SIGINT, "b1000"),
    ("checkout", signal.SIGKILL, None),
    ("record", signal.SIGTERM, "b1000"),
], ids=lambda v: v.name if isinstance(v, signal.Signals) else str(v))
def test_interrupted_anywhere_then_the_next_plain_apply_finishes(tmp_path, upstream: FixtureUpstream,
                                                                  point, sig, before):
    root = write_project(tmp_path / "fork", str(upstream.path))
    if before:  # an earlier good run: a mirror, an output tree and a lock to keep whole
        assert apply(root, before, update_lock=True).exit_code == 0
    kept = snapshot(root)

    proc = start("apply", "upstream@HEAD", "--update-lock", "--no-check", cwd=root, pause=point)
    wait_for(proc, f"paused at {point}")
    code, rest = stop(proc, sig)
    expected_code, expected_line = EXIT[sig]
    assert code == expected_code
    assert rest.strip().splitlines()[-1:] == ([expected_line] if expected_line else [])
    assert snapshot(root) == kept
    assert_mirror_sound(root, upstream)

    assert apply(root, "HEAD", update_lock=True).exit_code == 0
    out = root / "llama.cpp"
    assert (out / SERVER_CONTEXT).read_text() == upstream.expected_patched("master")
    assert git.run(["rev-parse", "--abbrev-ref", "HEAD"], cwd=out) == "patchkit/master"
    assert git.run(["status", "--porcelain"], cwd=out) == ""
    assert not list(root.glob(".llama.cpp.patchkit-*")) and not list((out / ".git").glob("*.lock"))
    assert Project.load(root).lock().upstream_commit == git.run(["rev-parse", "master"], cwd=upstream.path)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_new_outputs_clone_made_while_the_queue_applies_is_removed_when_the_run_is_stopped(tmp_path, upstream, sig):
    """A new output is cloned and checked out aside while the queue is applied (`output.NewClone`):
    a run stopped after the apply began leaves no output folder and nothing beside it."""
    root = write_project(tmp_path / "fork", str(upstream.path))
    proc = start("apply", "upstream@HEAD", "--no-check", cwd=root, pause="fast-import")
    wait_for(proc, "paused at fast-import")
    code, _ = stop(proc, sig)
    assert code == EXIT[sig][0]
    assert not (root / "llama.cpp").exists() and not list(root.glob(".llama.cpp.patchkit-*"))
    assert apply(root, "HEAD").exit_code == 0
    assert (root / "llama.cpp" / SERVER_CONTEXT).read_text() == upstream.expected_patched("master")


def half_checked_out(root: Path, upstream: FixtureUpstream, sig: signal.Signals) -> Path:
    """An output tree whose `git checkout` was stopped half way: patchkit is stopped by SIG just
    before its checkout, then the test leaves what a killed checkout leaves, the index still
    locked and only some of the new tip's files written. (git runs isolated, so no filter or hook
    can hold a real checkout half way.)"""
    assert apply(root, "b1000").exit_code == 0
    out = root / "llama.cpp"
    proc = start("apply", "upstream@HEAD", "--no-check", cwd=root, pause="checkout")
    wait_for(proc, "paused at checkout")
    stop(proc, sig)
    (out / ".git" / "index.lock").write_bytes((out / ".git" / "index").read_bytes())
    (out / "CMakeLists.txt").write_text(git.run(["show", "master:CMakeLists.txt"], cwd=upstream.path) + "\n")
    assert not (out / SERVER_CONTEXT).exists() or \
        (out / SERVER_CONTEXT).read_text() != upstream.expected_patched("master")
    assert (out / "CMakeLists.txt").read_text() == git.run(["show", "master:CMakeLists.txt"], cwd=upstream.path) + "\n"
    return out


def test_a_checkout_killed_half_way_is_finished_by_the_next_run(tmp_path, upstream):
    root = write_project(tmp_path / "fork", str(upstream.path))
    out = half_checked_out(root, upstream, signal.SIGINT)
    assert apply(root, "HEAD").exit_code == 0
    assert (out / SERVER_CONTEXT).read_text() == upstream.expected_patched("master")
    assert git.run(["status", "--porcelain"], cwd=out) == ""


def test_a_half_checkout_with_the_users_edits_names_the_command_that_finishes_it(tmp_path, upstream):
    root = write_project(tmp_path / "fork", str(upstream.path))
    out = half_checked_out(root, upstream, signal.SIGTERM)
    (out / "README.md").write_text("my notes\n")
    refused = run_cli("apply", "upstream@HEAD", cwd=root)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "interrupted apply" in refused.stderr and "README.md" in refused.stderr
    assert "rerun the same apply with --force" in refused.stderr
    assert (out / "README.md").read_text() == "my notes\n"
    forced = run_cli("apply", "upstream@HEAD", "--force", cwd=root)
    assert forced.returncode == 0, forced.stderr
    assert (out / SERVER_CONTEXT).read_text() == upstream.expected_patched("master")
    assert git.run(["status", "--porcelain"], cwd=out) == ""
