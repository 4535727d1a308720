"""`patchkit apply` on the llama.cpp-shaped fixture upstream: every verdict, with exact bytes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import apply, assert_matches_schema, git_identity, run_cli, seed_patch_path, write_project
from patchkit import git
from patchkit.apply import Verdict, apply_queue
from patchkit.errors import PatchkitError
from patchkit.fixture import SERVER_CONTEXT, FixtureUpstream
from patchkit.project import Project
from patchkit.queue import Queue
from patchkit.upstream import Mirror


def patched_text(project: Project, path: str = SERVER_CONTEXT) -> str:
    return (project.output_dir / path).read_text()


def hunk_verdicts(report) -> list[str]:
    return [h.verdict.value for h in report.patches[0].hunks]


@pytest.mark.parametrize("scenario, ref, verdict, offsets", [
    ("base", "b1000", "clean", [None] * 6),
    ("master", "HEAD", "offset", [25, 25, 25, 35, 35, 35]),
    ("offset", "scenario/offset", "offset", [31, 31, 31, 43, 43, 63]),
])
def test_good_scenarios_give_the_exact_patched_file(project, upstream, scenario, ref, verdict, offsets):
    report = apply(project, ref)
    (patch,) = report.patches
    assert patch.verdict.value == verdict and report.exit_code == 0
    assert [h.offset for h in patch.hunks] == offsets
    assert patched_text(project) == upstream.expected_patched(scenario)
    out = project.output_dir
    assert git.run(["rev-parse", "--abbrev-ref", "HEAD"], cwd=out) == report.branch
    assert git.run(["rev-parse", "HEAD^"], cwd=out) == report.upstream_commit
    assert git.run(["log", "-1", "--format=%an <%ae> %ad|%cn <%ce>", "--date=raw"], cwd=out) == \
        "Mike Lothian <mike@fireburn.co.uk> 1790518000 +0100|patchkit <patchkit@invalid>"


def test_head_means_the_configured_branch(project):
    assert apply(project, "HEAD").branch == "patchkit/master"
    assert apply(project, "b1000").branch == "patchkit/b1000"


def test_ambiguous_refuses_to_guess(project, upstream):
    report = apply(project, "scenario/ambiguous")
    (patch,) = report.patches
    assert patch.verdict is Verdict.AMBIGUOUS and report.exit_code == 1
    assert hunk_verdicts(report)[5] == "ambiguous"
    assert "refusing to guess" in patch.hunks[5].detail
    assert patch.commit is None and report.tip == report.upstream_commit
    assert patched_text(project) == git.run(["show", f"scenario/ambiguous:{SERVER_CONTEXT}"],
                                             cwd=upstream.path) + "\n"


def method(text: str, name: str) -> str:
    """The body of the fixture's method NAME (its closing brace is the first at class indent)."""
    start = text.index(f"void {name}()")
    return text[start:text.index("\n    }\n", start)]


def test_with_a_base_neither_the_line_steps_nor_the_merge_take_a_twin(project, upstream):
    """scenario/ambiguous: hunk 6's own site (in rollback_rejected_drafts) changed; its pre-image
    is only in two other methods of the same class, which git names `private:` too. The parse of
    the base tells the methods apart, and the merge, which aligns lines, would take a twin."""
    apply(project, "b1000")
    report = apply(project, "scenario/ambiguous")
    assert hunk_verdicts(report) == ["clean"] * 5 + ["conflict"] and report.exit_code == 1
    detail = report.patches[0].hunks[5].detail
    assert "put a change at line 4007, in `server_context_impl::rollback_evicted_drafts`" in detail
    # both twins in one sentence (neither is called the only one)
    assert ("the pre-image is found only in other functions: at line 3972, in "
            "`server_context_impl::rollback_cancelled_drafts` (by a C++ parse), and at line 4002, in "
            "`server_context_impl::rollback_evicted_drafts` (by a C++ parse); the patch's own place is under "
            "`private:` (in `server_context_impl::rollback_rejected_drafts` by a C++ parse of its base)") in detail
    assert report.tip == report.upstream_commit


def test_merged_needs_a_base_and_uses_the_recorded_one(project, upstream):
    first = apply(project, "scenario/merged")
    assert first.patches[0].verdict is Verdict.CONFLICT
    assert hunk_verdicts(first)[3] == "conflict" and first.patches[0].hunks[3].nearest_line
    good = apply(project, "b1000")
    assert good.bases_recorded == 1
    report = apply(project, "scenario/merged")
    assert report.patches[0].verdict is Verdict.MERGED and report.exit_code == 0
    assert hunk_verdicts(report) == ["clean", "clean", "clean", "merged", "clean", "clean"]
    assert "last good run" in report.patches[0].hunks[3].detail
    assert patched_text(project) == upstream.expected_patched("merged")


def test_merged_from_the_patchs_full_index_blob(tmp_path, upstream):
    """A patch with full index lines whose pre-image blob upstream has merges without a run."""
    patch = tmp_path / "full-index.patch"
    work = tmp_path / "work"
    git.run(["clone", "--quiet", "--branch", "b1000", str(upstream.path), str(work)])
    (work / SERVER_CONTEXT).write_text(upstream.expected_patched("base"))
    git.run(["commit", "--quiet", "-am", "on device"], cwd=work, env=git_identity())
    patch.write_text(git.run(["format-patch", "-1", "--stdout", "--full-index", "--zero-commit"], cwd=work) + "\n")
    project = Project.load(write_project(tmp_path / "fork", str(upstream.path), [patch]))
    report = apply(project, "scenario/merged")
    assert report.patches[0].verdict is Verdict.MERGED
    assert "index blob" in report.patches[0].hunks[3].detail
    assert patched_text(project) == upstream.expected_patched("merged")


def test_conflict_even_with_a_base(project):
    apply(project, "b1000")
    report = apply(project, "scenario/conflict")
    patch = report.patches[0]
    assert patch.verdict is Verdict.CONFLICT and report.exit_code == 1
    hunk = patch.hunks[3]
    assert hunk.verdict is Verdict.CONFLICT and "conflicts" in hunk.detail
    assert any("LLAMA_STATE_SEQ_FLAGS_NO_SYNC" in line for line in hunk.nearest)
    assert report.tip == report.upstream_commit


def test_already_applied_is_reported_not_committed(project, upstream):
    report = apply(project, "scenario/already-applied")
    assert report.patches[0].verdict is Verdict.ALREADY_APPLIED and report.exit_code == 1
    assert set(hunk_verdicts(report)) == {"already-applied"}
    assert report.patches[0].commit is None
    assert patched_text(project) == upstream.expected_patched("already-applied")


def test_partially_applied_applies_the_rest(project, upstream):
    report = apply(project, "scenario/partially-applied")
    assert report.patches[0].verdict is Verdict.PARTIALLY_APPLIED and report.exit_code == 1
    assert hunk_verdicts(report) == ["already-applied"] * 3 + ["offset"] * 3
    assert patched_text(project) == upstream.expected_patched("partially-applied")


def test_missing_file_names_the_rename_target(project):
    report = apply(project, "scenario/renamed")
    patch = report.patches[0]
    assert patch.verdict is Verdict.MISSING_FILE
    assert all(h.detail.startswith("upstream moved it to tools/server/server-context-impl.cpp; the patch's base is "
                                   "unknown") for h in patch.hunks)  # the seed patch's index blobs are not in the fixture


def test_members_added_conflict_then_fuzz_then_merge_from_recorded_base(project, upstream):
    assert apply(project, "scenario/members-added").patches[0].verdict is Verdict.CONFLICT
    fuzzed = apply(project, "scenario/members-added", fuzz=2)
    assert fuzzed.patches[0].verdict is Verdict.FUZZED and fuzzed.exit_code == 0
    assert fuzzed.patches[0].hunks[0].fuzz == 2 and fuzzed.bases_recorded == 0
    assert any("fuzz" in w for w in fuzzed.warnings)
    assert patched_text(project) == upstream.expected_patched("members-added")
    apply(project, "b1000")
    merged = apply(project, "scenario/members-added")
    assert merged.patches[0].verdict is Verdict.MERGED
    assert hunk_verdicts(merged)[0] == "merged"
    assert patched_text(project) == upstream.expected_patched("members-added")


def test_same_upstream_and_queue_give_the_same_commit_ids(tmp_path, upstream):
    tips = []
    for name in ("one", "two"):
        project = Project.load(write_project(tmp_path / name, str(upstream.path)))
        tips.append(apply(project, "HEAD").tip)
    assert tips[0] == tips[1]


def test_a_dirty_output_tree_is_never_overwritten(project):
    apply(project, "b1000")
    target = project.output_dir / SERVER_CONTEXT
    target.write_text("local work\n")
    with pytest.raises(PatchkitError, match="uncommitted changes.*--force"):
        apply(project, "HEAD")
    assert target.read_text() == "local work\n"
    apply(project, "HEAD", force=True)
    assert target.read_text() != "local work\n"


def test_lock_round_trip_and_locked_ref(project):
    good = apply(project, "b1000", update_lock=True)
    lock = project.lock()
    assert good.lock_updated and lock.upstream_commit == good.upstream_commit
    assert lock.tree == good.tree and lock.patches == {good.patches[0].name: good.patches[0].sha256}
    failed = apply(project, "scenario/conflict", update_lock=True)
    assert not failed.lock_updated and project.lock() == lock
    assert any("lock not updated" in w for w in failed.warnings)
    again = apply(project, "locked")
    assert again.upstream_commit == lock.upstream_commit and again.tree == lock.tree
    assert again.branch == "patchkit/locked"


def make_patch(tmp_path: Path, upstream: FixtureUpstream, name: str, ref: str, edit) -> Path:
    """A git format-patch of EDIT(work tree) on top of REF (with the queue patch applied first)."""
    work = tmp_path / f"work-{name}"
    git.run(["clone", "--quiet", "--branch", ref, str(upstream.path), str(work)])
    env = git_identity()
    (work / SERVER_CONTEXT).write_text(upstream.expected_patched("base"))
    git.run(["commit", "--quiet", "-am", "queue patch"], cwd=work, env=env)
    edit(work)
    git.run(["add", "-A"], cwd=work)
    git.run(["commit", "--quiet", "-m", name], cwd=work, env=env)
    out = tmp_path / f"{name}.patch"
    out.write_text(git.run(["format-patch", "-1", "--stdout", "--zero-commit"], cwd=work) + "\n")
    return out


def test_a_failing_patch_blocks_its_dependents_and_hides_nothing_else(tmp_path, upstream):
    def tweak_constant(work: Path) -> None:
        path = work / SERVER_CONTEXT
        path.write_text(path.read_text().replace("| LLAMA_STATE_SEQ_FLAGS_ON_DEVICE;",
                                                 "| LLAMA_STATE_SEQ_FLAGS_ON_DEVICE; // per slot"))

    def readme(work: Path) -> None:
        path = work / "README.md"
        path.write_text(path.read_text() + "\nCarried by the fork.\n")

    dependent = make_patch(tmp_path, upstream, "dependent", "b1000", tweak_constant)
    unrelated = make_patch(tmp_path, upstream, "unrelated", "b1000", readme)
    project = Project.load(write_project(tmp_path / "fork", str(upstream.path),
                                         [seed_patch_path(), dependent, unrelated]))
    report = apply(project, "scenario/conflict")
    verdicts = [p.verdict for p in report.patches]
    assert verdicts == [Verdict.CONFLICT, Verdict.BLOCKED, Verdict.CLEAN]
    assert report.patches[1].blocked_by == (seed_patch_path().name,)
    assert report.patches[2].commit == report.tip
    assert (project.output_dir / "README.md").read_text().endswith("Carried by the fork.\n")
    good = apply(project, "b1000")
    assert [p.verdict for p in good.patches] == [Verdict.CLEAN] * 3


def test_unknown_ref_names_close_matches(project):
    with pytest.raises(PatchkitError, match=r"unknown upstream ref 'b100' \(did you mean b100[0-3]"):
        apply(project, "b100")


def test_no_fetch_uses_the_mirror_as_it_is(project):
    with pytest.raises(PatchkitError, match="no mirror"):
        apply(project, "HEAD", fetch=False)
    apply(project, "HEAD")
    assert apply(project, "b1002", fetch=False).exit_code == 0


@pytest.mark.parametrize("form", ["path", "file-url"])
def test_cli_against_a_plain_path_and_a_file_url(tmp_path, upstream, form):
    url = str(upstream.path) if form == "path" else upstream.path.as_uri()
    root = write_project(tmp_path / "fork", "https://example.invalid/llama.cpp.git")
    proc = run_cli("apply", "upstream@b1000", "--upstream", url, "--no-check", "--json", "-",
                   "--junit", "junit.xml", "--markdown", "report.md", cwd=root)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema"] == 1 and data["kind"] == "apply"
    assert_matches_schema(data)
    assert data["patches"][0]["verdict"] == "clean" and len(data["patches"][0]["hunks"]) == 6
    assert 'failures="0"' in (root / "junit.xml").read_text()
    assert "| 1 | `server-keep-speculative" in (root / "report.md").read_text()
    assert (root / "llama.cpp" / SERVER_CONTEXT).read_text() == upstream.expected_patched("base")


def test_cli_exit_1_and_terminal_report_on_conflict(tmp_path, upstream):
    root = write_project(tmp_path / "fork", str(upstream.path))
    proc = run_cli("apply", "upstream@scenario/conflict", "--no-check", cwd=root)
    assert proc.returncode == 1
    assert "conflict" in proc.stdout and "nearest upstream lines at tools/server/server-context.cpp:" in proc.stdout
    assert "0/1 patches applied" in proc.stdout


def test_init_scaffolds_once(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    proc = run_cli("init", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "patches" / "series").exists() and (tmp_path / "recipes").is_dir()
    assert {".patchkit/", "/llama.cpp/"} <= set((tmp_path / ".gitignore").read_text().splitlines())
    project = Project.find(tmp_path)
    assert project.upstream_url == "https://github.com/ggml-org/llama.cpp.git"
    again = run_cli("init", cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr


def test_status_shows_queue_lock_and_last_result(project):
    apply(project, "b1000", update_lock=True)
    proc = run_cli("status", "--json", "-", cwd=project.root)
    data = json.loads(proc.stdout)
    assert_matches_schema(data)
    (patch,) = data["patches"]
    assert patch["files"] == [SERVER_CONTEXT] and patch["hunks"] == 6
    assert patch["forwarded"] == "not-needed" and patch["locked"] and patch["last_verdict"] == "clean"
    assert data["last_run"]["ref"] == "b1000"


def test_checks_run_on_the_result_and_pass_six_and_four(project):
    report = apply(project, "HEAD", check=True)
    assert report.checks.passed and report.exit_code == 0
    assert {r.id: (r.expected, r.found) for r in report.checks.rules} == {
        "speculative-checkpoints-on-device": (6, 6), "prompt-cache-checkpoints-on-host": (4, 4)}


def test_a_clean_apply_with_a_new_unpatched_site_fails_its_check(project):
    """The failure no line-based tool sees: upstream added a call the patch knows nothing of."""
    report = apply(project, "scenario/new-site", check=True, update_lock=True)
    assert report.patches[0].verdict is Verdict.CLEAN and report.exit_code == 1
    rule = next(r for r in report.checks.rules if r.id == "speculative-checkpoints-on-device")
    assert (rule.expected, rule.found, rule.passed) == (6, 7, False)
    (new,) = [s for s in rule.sites if s.status.value == "missing-flag"]
    assert new.function.endswith("replay_speculative_round") and new.call == "ckpt.load_dft(...)"
    assert not report.lock_updated and report.bases_recorded == 0 and project.lock() is None


def test_rerun_after_upstream_moves_and_after_the_queue_changes(tmp_path, upstream):
    source = tmp_path / "upstream"
    git.run(["clone", "--quiet", "--bare", str(upstream.path), str(source)])
    project = Project.load(write_project(tmp_path / "fork", str(source)))
    first = apply(project, "HEAD")
    work = tmp_path / "work"
    git.run(["clone", "--quiet", str(source), str(work)])
    (work / "NEWS").write_text("upstream moved on\n")
    git.run(["add", "NEWS"], cwd=work)
    git.run(["commit", "--quiet", "-m", "news"], cwd=work, env=git_identity("U", "u@x"))
    git.run(["push", "--quiet", "origin", "master"], cwd=work)
    moved = apply(project, "HEAD")
    assert moved.exit_code == 0 and moved.upstream_commit != first.upstream_commit
    assert (project.output_dir / "NEWS").exists() and git.run(["rev-parse", "HEAD"], cwd=project.output_dir) == moved.tip
    (project.patches_dir / "series").write_text("")
    emptied = apply(project, "HEAD")
    assert emptied.patches == () and emptied.tip == emptied.upstream_commit


def test_mime_encoded_author_and_subject_are_decoded(tmp_path, upstream):
    text = seed_patch_path().read_text()
    text = text.replace("From: Mike Lothian <mike@fireburn.co.uk>", "From: =?UTF-8?q?J=C3=B6rg=20=C3=9Cmlaut?= <j@example.org>")
    text = text.replace("Subject: [PATCH] server : keep", "Subject: [PATCH] =?UTF-8?q?server=20:=20caf=C3=A9?= keep")
    patch = tmp_path / "mime.patch"
    patch.write_text(text)
    project = Project.load(write_project(tmp_path / "fork", str(upstream.path), [patch]))
    report = apply(project, "b1000")
    assert git.run(["log", "-1", "--format=%an|%s"], cwd=project.output_dir) == \
        "Jörg Ümlaut|server : café keep speculative checkpoints on device"
    assert report.exit_code == 0


@pytest.mark.parametrize("target, message", [
    (".", "would replace the fork repository itself"),
    ("..", "would replace the fork repository itself"),
    ("a-file", "is not a folder"),
    ("foreign", "a git repository patchkit did not create"),
])
def test_output_folders_patchkit_must_not_take(project, target, message):
    (project.root / "a-file").write_text("keep\n")
    foreign = project.root / "foreign"
    git.run(["init", "--quiet", str(foreign)])
    (foreign / "mine.txt").write_text("mine\n")
    git.run(["add", "mine.txt"], cwd=foreign)
    git.run(["commit", "--quiet", "-m", "mine"], cwd=foreign, env=git_identity("U", "u@x"))
    with pytest.raises(PatchkitError, match=message):
        apply(project, "HEAD", output=(project.root / target))
    assert (project.root / "a-file").read_text() == "keep\n"
    assert git.run(["rev-parse", "--abbrev-ref", "HEAD"], cwd=foreign) == "master"


@pytest.mark.parametrize("option", ["--json", "--junit", "--markdown"])
def test_unwritable_report_targets_fail_before_any_work(tmp_path, upstream, option):
    root = write_project(tmp_path / "fork", str(upstream.path))
    (root / "a-folder").mkdir()
    (root / "a-file").write_text("x\n")
    for target in ("a-folder", "a-file/report.json"):
        proc = run_cli("apply", "--no-check", option, target, cwd=root)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (root / "llama.cpp").exists() and not (root / "cache").exists()


def test_written_files_get_ordinary_permissions(project):
    apply(project, "b1000", update_lock=True)
    assert project.lock_path.stat().st_mode & 0o777 == 0o666 & ~current_umask()


def current_umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_relative_upstream_path_in_patchkit_yaml(tmp_path, upstream):
    import os

    root = write_project(tmp_path / "fork", os.path.relpath(upstream.path, tmp_path / "fork"))
    report = apply(Project.load(root), "b1000")
    assert report.exit_code == 0 and report.upstream_url == str(upstream.path)


def test_a_lock_with_a_symbolic_commit_is_refused(project):
    project.lock_path.write_text(json.dumps({"upstream": {"url": "x", "commit": "master~2"},
                                             "patches": {}, "tree": "0" * 40}))
    with pytest.raises(PatchkitError, match="not a valid lock file"):
        apply(project, "locked")


def test_the_lock_never_moves_backwards_unless_asked(project, upstream):
    head = apply(project, "HEAD", update_lock=True)
    locked = project.lock()
    assert head.lock_updated
    with pytest.raises(PatchkitError) as exc:
        apply(project, "b1000", update_lock=True)  # an ancestor of master: backwards
    b1000 = git.run(["rev-parse", "b1000"], cwd=upstream.path)
    assert f"upstream {b1000[:12]} does not contain the locked commit {locked.upstream_commit[:12]}" in str(exc.value)
    assert project.lock() == locked
    assert apply(project, "b1000").exit_code == 0  # without --update-lock nothing is guarded
    assert apply(project, "b1000", update_lock=True, allow_rewind=True).lock_updated
    assert project.lock().upstream_commit == b1000


def test_apply_keeps_its_parse_answers_beside_the_mirror_and_reads_them_in_the_next_run(project, tmp_path):
    """The C++ parse's answers are kept by file content (`scopes.ScopeMemo`) and read by the next
    run instead of a parse: answers changed in the file change the next run's verdict. (The queue
    is applied without recording, so that both runs have b1000's result as their 3-way base.)"""
    assert apply(project, "b1000", output=tmp_path / "base").exit_code == 0  # the base whose parse is asked
    mirror = Mirror.open(project)
    revision = mirror.resolve("upstream@scenario/offset", fetch=False)
    patches = Queue.load(project).patches

    def verdicts() -> list[tuple[str, str]]:
        with apply_queue(mirror, revision, patches) as applied:
            return [(h.verdict.value, h.detail) for h in applied.patches[0].hunks]

    assert {v for v, _ in verdicts()} == {"offset"}
    (memo,) = (project.cache_dir / "mirrors").glob("*.scopes.json")
    written = json.loads(memo.read_text())
    assert len(written["files"]) == 2  # the base's version of the file and upstream's
    for n, kept in enumerate(written["files"].values()):  # each version's lines now in another scope
        kept["answers"] = {line: f"elsewhere_{n}" for line in kept["answers"]}
    memo.write_text(json.dumps(written))
    # read, not parsed: the line steps' places are now in another scope than the base's, so
    # the parse refuses them and the 3-way merge places the hunks instead
    assert {v for v, _ in verdicts()} == {"merged"}
