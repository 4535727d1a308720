"""At its own base a queue always applies (issue 25, item 4): at the commit a patch was made from
(its index blob is the file, or the user names the commit with `--base`) each hunk goes at its
recorded lines whatever its `@@` section says; a hand-written section (another tool's rule, or
invented) vetoes nothing there. Away from that commit, `--base` gives a queue without index lines
its 3-way base."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import git_identity, run_cli, write_project

from patchkit.apply import apply_file
from patchkit.git import git_env
from patchkit.queue import read_patch

FUNCTIONS = "".join(f"static int f{i}(int x) {{\n    int a = x;\n    a += {i};\n    return a;\n}}\n\n" for i in range(6))
# Hand-written, as a distribution's patch is: no index line, and a section no tool's rule gives
# there (another function of the file: a section no version of the file had would say nothing).
PATCH = """From: Packager <p@distro.invalid>
Date: Mon, 2 Nov 2026 10:00:00 +0000
Subject: [PATCH] f2 adds more

--- a/src/m.c
+++ b/src/m.c
@@ -13,3 +13,3 @@ static int f4(int x)
 static int f2(int x) {
     int a = x;
-    a += 2;
+    a += 22;
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True,
                          env=git_env(git_identity())).stdout.strip()


def upstream(root: Path) -> tuple[Path, str, str]:
    """An upstream with the file the patch was made from (tag made), then a commit adding lines
    above it (HEAD)."""
    repo = root / "upstream"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "--quiet", "-b", "master")
    (repo / "src" / "m.c").write_text(FUNCTIONS)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "base")
    git(repo, "tag", "made")
    (repo / "src" / "m.c").write_text("#include <stdio.h>\n\n" + FUNCTIONS)
    git(repo, "commit", "--quiet", "-am", "an include")
    return repo, git(repo, "rev-parse", "made"), git(repo, "rev-parse", "HEAD")


def fork(root: Path, repo: Path) -> Path:
    (root / "p").mkdir()
    (root / "p" / "0001-f2.patch").write_text(PATCH)
    return write_project(root / "fork", str(repo), [root / "p" / "0001-f2.patch"])


def verdicts(fork: Path, *args: str) -> tuple[int, list[dict]]:
    done = run_cli("-q", "apply", *args, "--no-check", "--json", str(fork / "r.json"), cwd=fork)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, [h for p in json.loads((fork / "r.json").read_text())["patches"] for h in p["hunks"]]


def test_a_hunk_at_its_own_base_goes_at_its_recorded_lines_whatever_its_section(tmp_path):
    (tmp_path / "p.patch").write_text(PATCH)
    (fc,) = read_patch(tmp_path / "p.patch").files
    (refused,), _ = apply_file(fc, FUNCTIONS.encode(), lambda f: None, 0)
    assert refused.verdict.value == "conflict"  # the section names no function there: no evidence of base
    (placed,), content = apply_file(fc, FUNCTIONS.encode(), lambda f: None, 0, own_base=True)
    assert placed.verdict.value == "clean" and content == FUNCTIONS.replace("a += 2;", "a += 22;").encode()


def test_an_index_blob_that_is_the_file_is_its_own_base(tmp_path):
    blob = subprocess.run(["git", "hash-object", "--stdin"], input=FUNCTIONS, capture_output=True, text=True,
                          check=True).stdout.strip()
    index = f"diff --git a/src/m.c b/src/m.c\nindex {blob[:12]}..1234567 100644\n--- a/src/m.c"
    (tmp_path / "p.patch").write_text(PATCH.replace("--- a/src/m.c", index))
    (fc,) = read_patch(tmp_path / "p.patch").files
    (placed,), _ = apply_file(fc, FUNCTIONS.encode(), lambda f: None, 0)
    assert placed.verdict.value == "clean"


def test_base_option_places_a_queue_at_its_own_commit_and_merges_it_later(tmp_path):
    repo, made, head = upstream(tmp_path)
    project = fork(tmp_path, repo)
    # (each refusal first: a good run keeps each patch's commit as a 3-way base for later runs)
    code, hunks = verdicts(project, f"upstream@{made}")
    assert code == 1 and [h["verdict"] for h in hunks] == ["conflict"]
    code, hunks = verdicts(project, "upstream@HEAD")
    assert code == 1 and [h["verdict"] for h in hunks] == ["conflict"]
    # later: the file at --base, with the patch applied there, is the 3-way base that places it
    code, hunks = verdicts(project, "upstream@HEAD", "--base", "upstream@made")
    assert code == 0 and [h["verdict"] for h in hunks] == ["offset"]
    assert (project / "llama.cpp" / "src" / "m.c").read_text() == \
        "#include <stdio.h>\n\n" + FUNCTIONS.replace("a += 2;", "a += 22;")
    code, hunks = verdicts(project, f"upstream@{made}", "--base", f"upstream@{made}", "--force")
    assert code == 0 and [h["verdict"] for h in hunks] == ["clean"]


def test_a_bad_base_is_refused_in_one_line(tmp_path):
    repo, _, _ = upstream(tmp_path)
    project = fork(tmp_path, repo)
    done = run_cli("-q", "apply", "--base", "upstream@no-such-tag", "--no-check", cwd=project)
    assert done.returncode == 2 and "no-such-tag" in done.stderr
    done = run_cli("-q", "apply", "--base", "upstream@a..b", "--no-check", cwd=project)
    assert done.returncode == 2
