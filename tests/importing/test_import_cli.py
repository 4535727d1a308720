"""`patchkit import` end to end on the fixture upstream: every local source kind, the checks
before anything is written, and the queue left byte-identical on every refusal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import apply, assert_matches_schema, run_cli, seed_patch_path, write_project
from import_helpers import (AT, CHANGES, commit_change, format_patch, fork, git, patches_state, plain_diff,
                            series, three_commits, work_clone)

from patchkit.project import Project
from patchkit.queue import Queue

SEED = seed_patch_path().name


def imported(root: Path, *args: str, at: str = AT, tmp: Path | None = None):
    """Run `patchkit import ARGS --at AT --json`; return (process, report)."""
    report = (tmp or root) / "import.json"
    report.unlink(missing_ok=True)
    result = run_cli("import", *args, "--at", at, "--json", str(report), cwd=root)
    data = json.loads(report.read_text()) if report.exists() else None
    if data is not None:
        assert_matches_schema(data)
    return result, data


def test_a_format_patch_file(tmp_path, upstream):
    root = fork(tmp_path, upstream)
    result, data = imported(root, str(seed_patch_path()))
    assert result.returncode == 0, result.stderr
    assert series(root) == [SEED]  # the subject's slug is the queue's own name for it
    [entry] = data["entries"]
    assert entry | {"hunks": None} == entry | {
        "name": SEED, "position": 1, "source": str(seed_patch_path()), "kind": "format-patch", "format": "mail",
        "subject": "server : keep speculative checkpoints on device", "author": "Mike Lothian <mike@fireburn.co.uk>",
        "date": "Sun, 27 Sep 2026 15:06:40 +0100", "date_set": False, "verdict": "clean", "good": True,
        "repairs": [], "repair_notes": [], "hunks": None}
    assert [h["verdict"] for h in entry["hunks"]] == ["clean"] * 6
    assert data["written"] and data["passed"] and not data["refused"] and data["ref"] == "b1000"
    stored = (root / "patches" / SEED).read_text()
    original = seed_patch_path().read_text()
    assert stored.startswith("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
                             "From: Mike Lothian <mike@fireburn.co.uk>\nDate: Sun, 27 Sep 2026 15:06:40 +0100\n"
                             "Subject: [PATCH] server : keep speculative checkpoints on device\n\n")
    message = original.split("\n\n", 1)[1].split("\n---\n", 1)[0]
    assert f"\n\n{message}\n---\ndiff --git " in stored  # body and DEP-3 trailers kept
    assert stored.split("\n---\n", 1)[1] == original.split("\n---\n", 1)[1].split("\n\n", 1)[1].rsplit("-- \n", 1)[0]
    # The queue reads it back, and it applies where it was checked.
    project = Project.load(root)
    assert [p.name for p in Queue.load(project).patches] == [SEED]
    assert [p.verdict.value for p in apply(project, "b1000").patches] == ["clean"]
    assert "imported 1 patch(es) into patches/series at the end of the series" in result.stdout


def test_an_mbox_of_three_gives_three_entries_in_order(tmp_path, upstream):
    root = fork(tmp_path, upstream)
    repo = work_clone(tmp_path, upstream)
    three_commits(repo)
    mbox = tmp_path / "three.mbox"
    mbox.write_text(git("format-patch", "--stdout", "b1000..work", cwd=repo) + "\n")
    result, data = imported(root, str(mbox))
    assert result.returncode == 0, result.stderr
    names = ["docs-say-how-to-build-the-server.patch", "llama-say-what-the-flags-are-for.patch",
             "server-add-notes-on-imported-patches.patch"]
    assert series(root) == names
    assert [(e["name"], e["position"], e["kind"], e["verdict"]) for e in data["entries"]] == [
        (n, i, "mbox", "clean") for i, n in enumerate(names, 1)]
    assert [e["source"] for e in data["entries"]] == [f"{mbox} (message {i} of 3)" for i in (1, 2, 3)]
    assert [e["date"] for e in data["entries"]] == [f"Mon, 28 Sep 2026 14:5{m}:20 +0200" for m in (4, 5, 6)]
    patches = Queue.load(Project.load(root)).patches
    assert [p.body for p in patches] == ["Why: change 1.", "Why: change 2.", "Why: change 3."]


def test_a_dep3_patch_and_a_plain_diff(tmp_path, upstream):
    root = fork(tmp_path, upstream)
    repo = work_clone(tmp_path, upstream)
    first, second, _ = three_commits(repo)
    dep3 = tmp_path / "fix.patch"
    dep3.write_text("Description: say how to build the server\n The README did not say.\n"
                    "Author: Ada Lovelace <ada@example.org>\nOrigin: vendor, https://example.org/fix\n"
                    "Forwarded: no\n---\n" + plain_diff(repo, first))
    before = patches_state(root)
    result, data = imported(root, str(dep3))
    assert result.returncode == 0, result.stderr
    [entry] = data["entries"]
    assert (entry["kind"], entry["format"], entry["author"], entry["date_set"]) == (
        "dep3", "dep3", "Ada Lovelace <ada@example.org>", True)
    assert any("no date in the source, so the import time is its Date" in w for w in data["warnings"])
    assert "the import time" in result.stdout
    text = (root / "patches" / "say-how-to-build-the-server.patch").read_text()
    assert "\nFrom: Ada Lovelace <ada@example.org>\n" in text
    assert "\n\nThe README did not say.\n\nOrigin: vendor, https://example.org/fix\nForwarded: no\n---\n" in text
    assert "Author:" not in text and "Description:" not in text

    # A plain diff says nothing of its author or subject: both are asked for, nothing is written.
    diff = tmp_path / "flags.diff"
    diff.write_text(plain_diff(repo, second))
    before = patches_state(root)
    result = run_cli("import", str(diff), "--at", AT, cwd=root)
    assert result.returncode == 2 and "a plain diff has no author" in result.stderr and "--author" in result.stderr
    result = run_cli("import", str(diff), "--at", AT, "--author", "Ada Lovelace <ada@example.org>", cwd=root)
    assert result.returncode == 2 and "no subject" in result.stderr and "--subject" in result.stderr
    result = run_cli("import", str(diff), "--at", AT, "--author", "no email", "--subject", "x", cwd=root)
    assert result.returncode == 2 and "expected 'Name <email>'" in result.stderr
    assert patches_state(root) == before
    result, data = imported(root, str(diff), "--author", "Ada Lovelace <ada@example.org>",
                            "--subject", "llama : say what the flags are for")
    assert result.returncode == 0, result.stderr
    assert data["entries"][0]["name"] == "llama-say-what-the-flags-are-for.patch"
    assert data["entries"][0]["position"] == 2 and data["entries"][0]["kind"] == "diff"
    assert series(root) == ["say-how-to-build-the-server.patch", "llama-say-what-the-flags-are-for.patch"]


def test_a_quilt_series_folder_in_series_order(tmp_path, upstream):
    root = fork(tmp_path, upstream)
    repo = work_clone(tmp_path, upstream)
    first, second, third = three_commits(repo)
    folder = tmp_path / "debian" / "patches"
    folder.mkdir(parents=True)
    (folder / "series").write_text("# Debian's order\n0003-notes.patch -p1\n\n02_flags.diff # plain\n"
                                   "0001-docs.patch\n")
    (folder / "0003-notes.patch").write_text(format_patch(repo, third))
    # quilt's own prefixes (pkg.orig/ and pkg/), an Index: line, no author, no subject
    flags = plain_diff(repo, second).replace("a/include/", "llama.cpp.orig/include/").replace("b/include/", "llama.cpp/include/")
    flags = "Index: llama.cpp/include/llama.h\n" + "=" * 67 + "\n" + flags[flags.index("--- "):]
    (folder / "02_flags.diff").write_text(flags)
    (folder / "0001-docs.patch").write_text("Description: docs\nAuthor: Ada <ada@example.org>\n\n"
                                            + plain_diff(repo, first))
    result, data = imported(root, str(tmp_path / "debian"), "--author", "Quilt User <quilt@example.org>")
    assert result.returncode == 0, result.stderr
    assert series(root) == ["server-add-notes-on-imported-patches.patch", "flags.patch", "docs.patch"]
    assert [(e["kind"], e["format"], e["verdict"]) for e in data["entries"]] == [
        ("quilt", "mail", "clean"), ("quilt", "diff", "clean"), ("quilt", "dep3", "clean")]
    assert data["entries"][1]["author"] == "Quilt User <quilt@example.org>"
    assert any("file name's words are the subject ('flags')" in w for w in data["warnings"])
    assert any("a/ and b/ prefixes" in w for w in data["warnings"])
    stored = (root / "patches" / "flags.patch").read_text()
    assert "\n--- a/include/llama.h\n+++ b/include/llama.h\n" in stored and "Index:" not in stored

    # A series naming a file that is not there: exit 2, naming it; nothing written.
    (folder / "series").write_text("0001-docs.patch\ngone.patch\n")
    before = patches_state(root)
    result = run_cli("import", str(folder), "--at", AT, cwd=root)
    assert result.returncode == 2 and "gone.patch is listed but does not exist" in result.stderr
    assert patches_state(root) == before


def test_a_gentoo_files_folder_by_name_and_by_ebuild(tmp_path, upstream):
    repo = work_clone(tmp_path, upstream)
    first, second, third = three_commits(repo)
    pkg = tmp_path / "overlay" / "sci-misc" / "llama-cpp"
    files = pkg / "files"
    files.mkdir(parents=True)
    (files / "llama-cpp-9999-notes.patch").write_text(format_patch(repo, third))
    (files / "llama-cpp-docs.patch").write_text(format_patch(repo, first))
    (files / "flags.patch").write_text(format_patch(repo, second))
    (files / "llama-cpp.confd").write_text("LLAMA_ARGS=\"\"\n")
    (pkg / "llama-cpp-9999.ebuild").write_text(
        'EAPI=8\n\ninherit cmake\n\nPATCHES=(\n\t"${FILESDIR}"/${P}-notes.patch\n\t"${FILESDIR}/${PN}-docs.patch"\n'
        '\t"${FILESDIR}"/flags.patch\n)\n')
    by_name = fork(tmp_path, upstream, "by-name")
    result, data = imported(by_name, str(files))
    assert result.returncode == 0, result.stderr
    assert [e["source"].rsplit("/", 1)[1] for e in data["entries"]] == [
        "flags.patch", "llama-cpp-9999-notes.patch", "llama-cpp-docs.patch"]
    assert {e["kind"] for e in data["entries"]} == {"gentoo"}
    assert any("file-name order" in w and "--ebuild" in w for w in data["warnings"])
    assert "file-name order" in result.stdout
    by_ebuild = fork(tmp_path, upstream, "by-ebuild")
    result, data = imported(by_ebuild, str(files), "--ebuild", str(pkg / "llama-cpp-9999.ebuild"))
    assert result.returncode == 0, result.stderr
    assert series(by_ebuild) == ["server-add-notes-on-imported-patches.patch", "docs-say-how-to-build-the-server.patch",
                                 "llama-say-what-the-flags-are-for.patch"]
    assert not any("file-name order" in w for w in data["warnings"])


def test_from_repo_takes_first_parent_commits_and_refuses_merges(tmp_path, upstream):
    root = fork(tmp_path, upstream)
    repo = work_clone(tmp_path, upstream)
    three_commits(repo)
    result, data = imported(root, "--from-repo", str(repo), "b1000..work", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert [(e["kind"], e["position"]) for e in data["entries"]] == [("git", 1), ("git", 2), ("git", 3)]
    assert [e["subject"] for e in data["entries"]] == [c[0] for c in CHANGES]
    assert data["entries"][0]["source"].startswith(f"{repo}@")
    assert not data["written"] and series(root) == []
    # A merge in the range is refused, by its id.
    git("checkout", "--quiet", "-b", "side", "b1000", cwd=repo)
    commit_change(repo, "side : a change", "tools/server/SIDE.md", "create", "side\n")
    git("checkout", "--quiet", "work", cwd=repo)
    git("merge", "--quiet", "--no-ff", "-m", "Merge side", "side", cwd=repo)
    merge = git("rev-parse", "HEAD", cwd=repo)
    before = patches_state(root)
    result = run_cli("import", "--from-repo", str(repo), "b1000..work", "--at", AT, cwd=root)
    assert result.returncode == 2, result.stderr
    assert "merge" in result.stderr and merge[:12] in result.stderr
    assert result.stderr.count("\n") == 1
    result = run_cli("import", "--from-repo", str(repo), "--bad..work", "--at", AT, cwd=root)
    assert result.returncode == 2 and "invalid --from-repo ref" in result.stderr
    result = run_cli("import", "--from-repo", str(tmp_path), "a..b", "--at", AT, cwd=root)
    assert result.returncode == 2 and "not a git repository" in result.stderr
    assert patches_state(root) == before


def test_a_patch_that_does_not_apply_is_refused_and_the_queue_stays_byte_identical(tmp_path, upstream):
    root = write_project(tmp_path / "fork", str(upstream.path))  # the real queue
    repo = work_clone(tmp_path, upstream, ref="master")
    hip = commit_change(repo, "ggml : build with HIP by default", "CMakeLists.txt", "replace",
                        ('option(GGML_HIP "ggml: use HIP" OFF)', 'option(GGML_HIP "ggml: use HIP" ON)'))
    patch = tmp_path / "hip.patch"
    patch.write_text(format_patch(repo, hip))
    before = patches_state(root)
    result, data = imported(root, str(patch))  # made at master; b1000 has no HIP option
    assert result.returncode == 1, result.stderr
    assert patches_state(root) == before
    [entry] = data["entries"]
    assert (entry["name"], entry["position"], entry["verdict"], entry["good"]) == (
        "ggml-build-with-hip-by-default.patch", 2, "conflict", False)
    assert entry["hunks"][0]["verdict"] == "conflict" and entry["hunks"][0]["file"] == "CMakeLists.txt"
    assert data["refused"] and not data["written"]
    assert "hunk 1 conflict at CMakeLists.txt" in result.stdout
    assert "refused: 1 of 1 new patch(es) do not apply cleanly at" in result.stdout
    # Where it applies, it is taken; --allow-failing takes it anyway, saying so.
    result, data = imported(root, str(patch), "--dry-run", at="upstream@master")
    assert result.returncode == 0 and data["entries"][0]["verdict"] == "clean" and not data["written"]
    assert patches_state(root) == before
    result, data = imported(root, str(patch), "--allow-failing")
    assert result.returncode == 0, result.stderr
    assert data["written"] and not data["passed"] and not data["refused"]
    assert any("imported anyway (--allow-failing)" in w for w in data["warnings"])
    assert series(root) == [SEED, "ggml-build-with-hip-by-default.patch"]


def test_a_patch_that_breaks_one_of_the_queue_is_refused(tmp_path, upstream):
    repo = work_clone(tmp_path, upstream)
    docs = commit_change(repo, *CHANGES[0])
    docs_patch = tmp_path / "docs.patch"
    docs_patch.write_text(format_patch(repo, docs))
    root = fork(tmp_path, upstream)
    for source in (seed_patch_path(), docs_patch):
        assert imported(root, str(source))[0].returncode == 0
    git("checkout", "--quiet", "-b", "other", "b1000", cwd=repo)
    tiny = commit_change(repo, "docs : a tiny upstream", "README.md", "replace", ("A small upstream", "A tiny upstream"))
    tiny_patch = tmp_path / "tiny.patch"
    tiny_patch.write_text(format_patch(repo, tiny))
    before = patches_state(root)
    result, data = imported(root, str(tiny_patch), "--after", SEED)
    assert result.returncode == 1, result.stdout + result.stderr
    assert data["entries"][0]["verdict"] == "clean" and data["entries"][0]["position"] == 2
    assert [(b["name"], b["verdict"]) for b in data["broken"]] == [("docs-say-how-to-build-the-server.patch", "conflict")]
    assert "the import breaks docs-say-how-to-build-the-server.patch" in result.stdout
    assert patches_state(root) == before
    # At the end of the queue it breaks nothing, and applies.
    result, data = imported(root, str(tiny_patch))
    assert result.returncode == 0 and data["entries"][0]["verdict"] == "clean" and data["broken"] == []
    assert series(root) == [SEED, "docs-say-how-to-build-the-server.patch", "docs-a-tiny-upstream.patch"]


def test_duplicates_names_after_and_dry_run(tmp_path, upstream):
    root = write_project(tmp_path / "fork", str(upstream.path))  # the real queue
    repo = work_clone(tmp_path, upstream)
    first, second, third = three_commits(repo)
    before = patches_state(root)

    # The same change under another subject: exit 2, naming the patch it duplicates.
    copy = tmp_path / "copy.patch"
    copy.write_text(seed_patch_path().read_text().replace("Subject: [PATCH] server : keep",
                                                          "Subject: [PATCH] server: hold"))
    result = run_cli("import", str(copy), "--at", AT, cwd=root)
    assert result.returncode == 2 and f"the same change is already in the queue as {SEED}" in result.stderr
    # Another change under the queue's name: exit 2, naming it.
    same_name = tmp_path / "same-name.patch"
    same_name.write_text(format_patch(repo, first).replace("docs : say how to build the server",
                                                           "server : keep speculative checkpoints on device"))
    result = run_cli("import", str(same_name), "--at", AT, cwd=root)
    assert result.returncode == 2 and f"a patch named {SEED} is already in the queue" in result.stderr
    assert "--name" in result.stderr
    # --name only with one patch; --after must name a listed patch.
    mbox = tmp_path / "two.mbox"
    mbox.write_text(format_patch(repo, first) + "\n" + format_patch(repo, second))
    result = run_cli("import", str(mbox), "--name", "x.patch", "--at", AT, cwd=root)
    assert result.returncode == 2 and "--name names one patch" in result.stderr
    result = run_cli("import", str(same_name), "--after", "server-keep-speculative", "--at", AT, cwd=root)
    assert result.returncode == 2 and "--after server-keep-speculative: not in" in result.stderr
    assert f"did you mean {SEED}" in result.stderr
    # The same change twice among the sources.
    result = run_cli("import", str(same_name), str(same_name), "--at", AT, cwd=root)
    assert result.returncode == 2 and "the same change as" in result.stderr
    assert patches_state(root) == before

    # Two subjects with one slug: distinct names, deterministically. --dry-run writes nothing.
    twin = tmp_path / "twin.patch"
    twin.write_text(format_patch(repo, third).replace("server : add notes on imported patches",
                                                       "docs: say how to build the server!"))
    result, data = imported(root, str(mbox), str(twin), "--after", SEED, "--dry-run")
    assert result.returncode == 0, result.stderr
    assert [(e["name"], e["position"], e["verdict"]) for e in data["entries"]] == [
        ("docs-say-how-to-build-the-server.patch", 2, "clean"), ("llama-say-what-the-flags-are-for.patch", 3, "clean"),
        ("docs-say-how-to-build-the-server-2.patch", 4, "clean")]
    assert "dry run" in result.stdout and "docs-say-how-to-build-the-server-2.patch" in result.stdout
    assert not data["written"] and data["dry_run"]
    assert patches_state(root) == before

    # For real, after the seed patch, then one more after the first of them; --name for one.
    result, data = imported(root, str(mbox), "--after", SEED)
    assert result.returncode == 0, result.stderr
    result, data = imported(root, str(patch_of(repo, third, tmp_path)), "--name", "notes",
                            "--after", "docs-say-how-to-build-the-server.patch")
    assert result.returncode == 0, result.stderr
    assert data["entries"][0]["name"] == "notes.patch" and data["entries"][0]["position"] == 3
    assert series(root) == [SEED, "docs-say-how-to-build-the-server.patch", "notes.patch",
                            "llama-say-what-the-flags-are-for.patch"]
    assert (root / "patches" / "series").read_text().startswith(f"{SEED}\n")


def patch_of(repo: Path, commit: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{commit[:12]}.patch"
    path.write_text(format_patch(repo, commit))
    return path


def test_at_defaults_to_the_locked_commit(tmp_path, upstream):
    root = write_project(tmp_path / "fork", str(upstream.path))
    project = Project.load(root)
    apply(project, "b1000", update_lock=True)  # locked at b1000
    shutil.rmtree(project.output_dir)
    repo = work_clone(tmp_path, upstream, ref="master")
    hip = patch_of(repo, commit_change(repo, "ggml : build with HIP by default", "CMakeLists.txt", "replace",
                                       ('option(GGML_HIP "ggml: use HIP" OFF)', 'option(GGML_HIP "ggml: use HIP" ON)')),
                   tmp_path)
    report = tmp_path / "r.json"
    result = run_cli("import", str(hip), "--no-fetch", "--json", str(report), cwd=root)
    data = json.loads(report.read_text())
    assert result.returncode == 1 and data["ref"] == "locked" and data["entries"][0]["verdict"] == "conflict"
    result = run_cli("import", str(hip), "--at", "upstream@HEAD", "--dry-run", "--json", str(report), cwd=root)
    data = json.loads(report.read_text())
    assert result.returncode == 0 and data["ref"] == "HEAD" and data["entries"][0]["verdict"] == "clean"
    result = run_cli("import", str(hip), "--at", "upstream@no-such-tag", cwd=root)
    assert result.returncode == 2 and "unknown upstream ref" in result.stderr


def test_standard_input_and_nothing_to_import(tmp_path, upstream):
    import subprocess
    import sys

    root = fork(tmp_path, upstream)
    result = run_cli("import", "--at", AT, cwd=root)
    assert result.returncode == 2 and "nothing to import" in result.stderr
    proc = subprocess.run([sys.executable, "-m", "patchkit", "-q", "import", "-", "--at", AT], cwd=root, text=True,
                          input=seed_patch_path().read_text(), capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert series(root) == [SEED]
    assert proc.stdout.startswith("imported 1 patch(es)")


def test_an_import_killed_before_the_series_is_finished_by_the_next(tmp_path, upstream):
    """The patch files are written before the series: a run killed between the two leaves a file
    the series does not list. The same import again takes it as its own and lists it."""
    root = fork(tmp_path, upstream)
    series_before = (root / "patches" / "series").read_bytes()
    result, _ = imported(root, str(seed_patch_path()))
    assert result.returncode == 0, result.stderr
    (root / "patches" / "series").write_bytes(series_before)  # as if killed before the series
    result, data = imported(root, str(seed_patch_path()))
    assert result.returncode == 0, result.stderr
    assert series(root) == [SEED] and data["entries"][0]["name"] == SEED
    # Other bytes under that name are not taken over.
    (root / "patches" / "series").write_bytes(series_before)
    (root / "patches" / SEED).write_text("something else\n")
    result = run_cli("import", str(seed_patch_path()), "--at", AT, cwd=root)
    assert result.returncode == 2 and "already exists (not in the series)" in result.stderr
