"""Opt-in (PATCHKIT_LLAMA_CPP=<llama.cpp git checkout>): the real case on the real tree. A patch
builds `new mtmd_input_text{text, add_special, parse_special}`; upstream inserts `size_t text_len;`
as the struct's second member (#25548), behind an `extern "C" {` split over two
`#ifdef __cplusplus` blocks. The night names the struct, the member and the pull request; and
once a later upstream change makes the patch conflict, it still names them beside the conflict."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import apply, git_identity, run_cli, write_project

from patchkit.project import Project

TREE = os.environ.get("PATCHKIT_LLAMA_CPP")
pytestmark = pytest.mark.skipif(not TREE, reason="set PATCHKIT_LLAMA_CPP=/path/to/llama.cpp (a git checkout)")

MEMBER = "    size_t text_len;\n"
ADDED = ("\n// a C API wrapper of the fork\n"
         "mtmd_input_text * fork_input_text(const char * text, bool add_special, bool parse_special) {\n"
         "    return new mtmd_input_text{text, add_special, parse_special};\n"
         "}\n")


def _git(repo: Path, *args: str, date: str = "1790600000 +0000") -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "HOME": str(repo),
                               **git_identity("Up Stream", "up@stream.invalid", date)}).stdout.strip()


def _commit(repo: Path, path: str, old: str, new: str, subject: str, n: int) -> str:
    file = repo / path
    text = file.read_text()
    assert old in text, old
    file.write_text(text.replace(old, new, 1))
    _git(repo, "commit", "-q", "-am", subject, date=f"{1790600000 + n * 3600} +0000")
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """Upstream: the tree without `text_len` (the lock), then #25548 putting it back; the patch."""
    root = tmp_path_factory.mktemp("real")
    repo = root / "upstream"
    _git(root, "clone", "-q", "--no-hardlinks", TREE, str(repo))
    _git(repo, "checkout", "-q", "-B", "master")
    header = "tools/mtmd/mtmd.h"
    anchor = "struct mtmd_input_text {\n    const char * text;\n"
    lock = _commit(repo, header, anchor + MEMBER, anchor, "mtmd : the lock, before text_len", 1)
    _git(repo, "checkout", "-q", "-b", "fork")
    source = repo / "tools/mtmd/mtmd.cpp"
    source.write_text(source.read_text() + ADDED)
    _git(repo, "commit", "-q", "-am", "mtmd : a C wrapper for the input text")
    (root / "patches").mkdir()
    patch = Path(_git(repo, "format-patch", "-1", "-o", str(root / "patches"), "--no-signature", "HEAD"))
    _git(repo, "checkout", "-q", "master")
    fix = _commit(repo, header, anchor, anchor + MEMBER, "mtmd : fix prompt truncation, pass text_len (#25548)", 2)
    project = Project.load(write_project(root / "fork", str(repo), [patch]))
    apply(project, lock, update_lock=True)
    return repo, project, fix


def _night(project: Project, out: Path) -> dict:
    proc = run_cli("nightly", "upstream@HEAD", "--report-dir", str(out), "--json", "-", cwd=project.root)
    assert proc.returncode == 1, proc.stderr
    return json.loads(proc.stdout)


def _named(report: dict, fix: str) -> None:
    (drift,) = [d for d in report["apply"]["drift"] if d["entity"] == "mtmd_input_text"]
    assert "text_len" in drift["after"] and "text_len" not in drift["before"]
    assert drift["culprit"]["commit"] == fix and drift["culprit"]["pull"] == 25548
    (finding,) = [f for f in report["findings"] if f["kind"] == "drift"]
    assert "mtmd_input_text" in finding["detail"] and "#25548" in finding["culprit"]["subject"]


def test_the_night_names_the_real_struct_its_new_member_and_the_pull_request(real, tmp_path):
    repo, project, fix = real
    _named(_night(project, tmp_path / "r"), fix)


def test_the_night_still_names_it_beside_the_conflict(real, tmp_path):
    repo, project, fix = real
    tail = "        return {};\n    }\n}\n"
    _commit(repo, "tools/mtmd/mtmd.cpp", tail, tail.replace("return {};", "return {}; // nothing decoded"),
            "mtmd : say what an error returns (#25601)", 3)
    report = _night(project, tmp_path / "r")
    (result,) = report["apply"]["patches"]
    assert result["verdict"] == "conflict"
    assert {f["kind"] for f in report["findings"]} - {"drift"}  # the conflict's own finding
    _named(report, fix)
    assert report["apply"]["drift"][0]["patched_at"] is not None
