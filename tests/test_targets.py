"""Every target a command writes is checked before any state changes (patchkit.targets): report
files, the nightly's report folder and step summary, export's OUT, dist's tarball and SHA256SUMS.
A refused target is exit 2 on one line, and the queue, the lock, the checkout, the fork's .git and
the mirror are byte for byte as they were: nothing fetched, refreshed, moved or written."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from conftest import apply, git_identity, run_cli
from patchkit.errors import PatchkitError
from patchkit.targets import Places, Target, check

BAD = "/proc/nope"  # refuses every write, even root's, though os.access says yes


@pytest.fixture
def locked(project):
    """A fork that is a git repository, locked at b1000 with its checkout: a good night would
    refresh the patches and move the lock."""
    subprocess.run(["git", "init", "-q", str(project.root)], check=True)
    subprocess.run(["git", "add", "-A"], cwd=project.root, check=True)
    subprocess.run(["git", "commit", "-qm", "fork"], cwd=project.root, check=True,
                   env={**os.environ, **git_identity()})
    apply(project, "b1000", update_lock=True)
    return project


def snapshot(root: Path) -> dict[str, str]:
    """Every file under the fork (queue, lock, checkout, .git, cache with its mirror) by its hash."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


CASES = [
    # the night: a report folder, report file or step summary it cannot write
    (["nightly", "--report-dir", BAD], {}, "cannot write /proc/nope"),
    (["nightly", "--report-dir", "{tmp}/r", "--json", f"{BAD}/x.json"], {}, "cannot write /proc/nope/x.json"),
    (["nightly", "--report-dir", "{tmp}/r"], {"GITHUB_STEP_SUMMARY": f"{BAD}/summary.md"},
     "cannot write /proc/nope/summary.md"),
    # ... or one inside, or holding, the project's own places
    (["nightly", "--report-dir", "patches"], {}, "patches is the patch queue"),
    (["nightly", "--report-dir", "llama.cpp/reports"], {}, "is inside the patched checkout"),
    (["nightly", "--report-dir", "."], {}, ". holds the patch queue"),
    (["nightly", "-o", "{tmp}/out", "--report-dir", "{tmp}/out/r"], {}, "is inside the patched checkout"),
    (["nightly", "--junit", "cache/j.xml"], {}, "is inside patchkit's cache"),
    (["nightly", "--json", "patchkit.lock"], {}, "patchkit.lock is the lock"),
    (["nightly", "--report-dir", "{tmp}/r"], {"GITHUB_STEP_SUMMARY": "patches/series"}, "is inside the patch queue"),
    # export: OUT is not written when a report cannot be; never the fork's .git, even with --force
    (["export", "quilt", "{tmp}/OUT", "--json", f"{BAD}/x.json"], {}, "cannot write /proc/nope/x.json"),
    (["export", "quilt", ".git", "--force"], {}, ".git is a repository's .git folder"),
    (["export", "quilt", "{tmp}/OUT", "--json", "patches/x.json"], {}, "inside the patch queue"),
    # dist: no tarball when a report cannot be written; never into the queue, the checkout, the cache
    (["dist", "-o", "{tmp}/OUT.tar", "--json", f"{BAD}/x.json"], {}, "cannot write /proc/nope/x.json"),
    (["dist", "-o", "patches/x.tar"], {}, "is inside the patch queue"),
    (["dist", "-o", "llama.cpp/x.tar"], {}, "is inside the patched checkout"),
    (["dist", "-o", "cache/x.tar.gz"], {}, "is inside patchkit's cache"),
    (["dist", "-o", "{tmp}/OUT.tar", "--json", "{tmp}/SHA256SUMS"], {}, "is where the tarball or its SHA256SUMS goes"),
    # every other command's report files, and the workflow `ci github` writes
    (["ci", "github", "-o", "patches/nightly.yml"], {}, "is inside the patch queue"),
    (["apply", "upstream@b1000", "--json", "patches/apply.json"], {}, "inside the patch queue"),
    (["apply", "upstream@b1000", "-o", "{tmp}/out", "--markdown", "{tmp}/out/r.md"], {},
     "is inside the patched checkout"),
    (["verify", "--junit", ".git/verify.xml"], {}, "inside a .git folder"),
    (["verify", "--output-dir", "patches"], {}, "is the patch queue"),
    (["verify", "--output-dir", "llama.cpp/refreshed"], {}, "is inside the patched checkout"),
    (["check", "--markdown", "llama.cpp/check.md"], {}, "is inside the patched checkout"),
    (["status", "--json", "patchkit.yaml"], {}, "is the project's configuration"),
    (["import", "{tmp}/new.patch", "--json", "patches/import.json"], {}, "inside the patch queue"),
]


@pytest.mark.parametrize("args, env, words", CASES, ids=[" ".join(c[0]) + " " + " ".join(c[1]) for c in CASES])
def test_a_refused_target_changes_nothing(locked, tmp_path, args, env, words):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "new.patch").write_text("not even read\n")
    before = snapshot(locked.root)
    proc = run_cli(*(a.format(tmp=outside) for a in args), cwd=locked.root,
                   env={"GITHUB_STEP_SUMMARY": "", **env})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr
    assert proc.stdout == ""
    assert snapshot(locked.root) == before
    assert sorted(os.listdir(outside)) == ["new.patch"]  # no OUT, no tarball, no report folder


def test_one_rule_for_every_kind_of_target(tmp_path, project, monkeypatch):
    """The rule itself: FILE, FOLDER (written into) and REPLACED (export's OUT)."""
    monkeypatch.chdir(tmp_path)
    places = Places.of(project)
    (tmp_path / "file").write_text("x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "kept").write_text("x")
    (tmp_path / "link").symlink_to(project.patches_dir)
    refused = [
        (project.root / "patches" / "r.json", Target.FILE, "is inside the patch queue"),
        (tmp_path / "link" / "r.json", Target.FILE, "is inside the patch queue"),  # a link is its target
        (project.root, Target.FOLDER, "holds the patch queue"),
        (tmp_path, Target.REPLACED, "holds the patch queue"),
        (tmp_path / "elsewhere" / ".git" / "x", Target.FILE, "inside a .git folder"),
        (tmp_path / "file", Target.REPLACED, "exists and is not a folder"),
        (tmp_path / "full", Target.REPLACED, "is not empty"),
        (tmp_path / "file" / "out", Target.REPLACED, "not a writable folder"),
        (Path(BAD) / "out", Target.REPLACED, "cannot write"),
        (Path(BAD) / "r", Target.FOLDER, "cannot write"),
    ]
    for target, kind, words in refused:
        with pytest.raises(PatchkitError, match=words):
            check(target, kind, places)
    with pytest.raises(PatchkitError, match="which an export would replace"):  # the current folder
        check(tmp_path / "sub" / "..", Target.REPLACED, Places.of(None), force=True)
    assert check(tmp_path / "full", Target.REPLACED, places, force=True) == tmp_path / "full"
    assert check(tmp_path / "new" / "r", Target.FOLDER, places) == tmp_path / "new" / "r"
    assert check("-", Target.FILE, places) is None and check(None, Target.FILE, places) is None
    assert sorted(os.listdir(tmp_path)) == ["file", "fork", "full", "link"]  # checked, nothing made
