"""Helpers of the record and absorb tests: a small upstream, a three-patch queue made with git,
a fork with that queue applied, and a snapshot of everything record may write."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from conftest import git_identity, write_project

FILES = {"src/a.c": [f"int a{i} = {i};\n" for i in range(1, 41)],
         "src/b.c": [f"int b{i} = {i};\n" for i in range(1, 41)]}
# (file name, subject, path, {line number: new text}) made as commits on upstream, oldest first
PATCHES = (
    ("one.patch", "a : set a5", "src/a.c", {5: "int a5 = 500;\n"}),
    ("two.patch", "b : set b10", "src/b.c", {10: "int b10 = 1000;\n"}),
    ("three.patch", "a : set a30", "src/a.c", {30: "int a30 = 3000;\n"}),
)


def git(*args: str, cwd: Path, env: dict[str, str] | None = None, check: bool = True) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(["git", *args], cwd=cwd, text=True, capture_output=True,
                          env={**clean, **git_identity(), "GIT_EDITOR": "true", **(env or {})})
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {proc.stderr}")
    return proc.stdout.strip()


def make_upstream(root: Path, extra: dict[str, bytes] | None = None) -> Path:
    up = root / "upstream"
    up.mkdir(parents=True)
    git("init", "-q", "-b", "master", cwd=up)
    for path, lines in FILES.items():
        (up / path).parent.mkdir(parents=True, exist_ok=True)
        (up / path).write_text("".join(lines))
    for path, data in (extra or {}).items():  # bytes as they are (CRLF, a lone CR)
        (up / path).parent.mkdir(parents=True, exist_ok=True)
        (up / path).write_bytes(data)
    git("add", "-A", cwd=up)
    git("commit", "-q", "-m", "upstream", cwd=up)
    return up


# upstream commit -> the text of each of its patches: the same commit, identities and dates give
# the same bytes, so each worker makes them once for each upstream (the forks build one each).
_PATCH_TEXTS: dict[str, list[str]] = {}


def make_patches(root: Path, upstream: Path) -> list[Path]:
    """The queue's patches, each a commit on upstream written by git format-patch."""
    head = git("rev-parse", "HEAD", cwd=upstream)
    if head not in _PATCH_TEXTS:
        _PATCH_TEXTS[head] = format_patches(root / "patch-work", upstream)
    out = root / "made"
    out.mkdir()
    for (name, *_), text in zip(PATCHES, _PATCH_TEXTS[head]):
        (out / name).write_text(text)
    return [out / name for name, *_ in PATCHES]


def format_patches(work: Path, upstream: Path) -> list[str]:
    git("clone", "-q", str(upstream), str(work), cwd=work.parent)
    texts = []
    for _, subject, path, edits in PATCHES:
        lines = (work / path).read_text().splitlines(keepends=True)
        for number, text in edits.items():
            lines[number - 1] = text
        (work / path).write_text("".join(lines))
        git("commit", "-q", "-am", subject, cwd=work, env=git_identity("Ada Lovelace", "ada@example.org"))
        texts.append(git("format-patch", "-1", "--stdout", "HEAD", cwd=work) + "\n")
    return texts


def fork(tmp_path: Path, url: str | None = None, extra: dict[str, bytes] | None = None):
    """A fork carrying the three patches, applied at upstream@HEAD with --update-lock; with URL,
    the fork's configured upstream is URL and the apply takes the real one with --upstream; EXTRA:
    more upstream files."""
    from patchkit.pipeline import ApplyOptions, run_apply
    from patchkit.project import Project

    upstream = make_upstream(tmp_path, extra)
    project = Project.load(write_project(tmp_path / "fork", url or str(upstream), make_patches(tmp_path, upstream)))
    report = run_apply(project, ApplyOptions(spec="upstream@HEAD", check=False, update_lock=True,
                                             upstream=str(upstream) if url else None))
    assert report.passed and report.lock_updated
    return project


def edit(checkout: Path, path: str, number: int, text: str) -> None:
    """Line NUMBER of PATH in the checkout replaced by TEXT (a line, or "" to delete it)."""
    lines = (checkout / path).read_text().splitlines(keepends=True)
    lines[number - 1:number] = [text] if text else []
    (checkout / path).write_text("".join(lines))


def series(project) -> list[str]:
    return project.series_path.read_text().split()


def snapshot(project) -> dict[str, str]:
    """What record and absorb may write: patches/, the lock, the checkout's refs, notes, index and
    tracked files, as hashes."""
    out = project.output_dir
    state = {f"patches/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(project.patches_dir.iterdir())}
    state["lock"] = project.lock_path.read_text()
    state["refs"] = git("for-each-ref", "--format=%(refname) %(objectname)", cwd=out)
    state["HEAD"] = git("symbolic-ref", "HEAD", cwd=out)
    state["index"] = git("ls-files", "-s", cwd=out)
    state["status"] = git("status", "--porcelain", "--untracked-files=all", cwd=out)
    state["worktree"] = git("diff", "HEAD", cwd=out)
    return state


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "patchkit", *args], cwd=cwd, text=True, capture_output=True,
                          env={**os.environ, "NO_COLOR": "1"})


def run(project, *args: str, code: int = 0) -> subprocess.CompletedProcess:
    """`patchkit ARGS` in the project, which must exit CODE."""
    proc = cli(*args, cwd=project.root)
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc


def reapplied_tree(project) -> str:
    """The tree `patchkit apply upstream@locked` gives now (in the mirror, nothing checked out)."""
    from patchkit.apply import apply_queue
    from patchkit.queue import Queue
    from patchkit.upstream import Mirror

    mirror = Mirror.open(project)
    revision = mirror.resolve("upstream@locked", fetch=False)
    with apply_queue(mirror, revision, Queue.load(project).patches) as applied:
        assert all(p.verdict.value == "clean" for p in applied.patches), [p.verdict for p in applied.patches]
        return applied.tree


def rebase_todo(checkout: Path, script: str, *then: tuple[str, ...]) -> None:
    """`git rebase -i` of the whole branch, its todo list edited by the sed SCRIPT; where it stops
    (`edit`), each of THEN runs: a git command (a tuple) or a callable."""
    git("rebase", "-q", "-i", "refs/patchkit/upstream", cwd=checkout,
        env={"GIT_SEQUENCE_EDITOR": f"sed -i -e '{script}'"})
    for step in then:
        step() if callable(step) else git(*step, cwd=checkout)


def amend_commit(checkout: Path, k: int, change) -> None:
    """The K-th commit of the branch (1: the oldest) amended with CHANGE(), as a user does it."""
    rebase_todo(checkout, f"{k}s/^pick/edit/", change, ("commit", "-q", "-a", "--amend", "--no-edit"),
                ("rebase", "--continue"))
