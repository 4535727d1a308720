"""`patchkit rebase` end to end with real git: a stop with labelled markers and a scripted fix, a
rebase that stops twice, skip, drop, abort byte for byte, and interruption at each step."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, apply, assert_matches_schema, git_identity, run_cli, write_project
from patchkit import git
from patchkit.project import Project

A = "".join(f"int a{i}(void) {{ return {i}; }}\n" for i in range(1, 31))
B = "".join(f"int b{i}(void) {{ return {i}; }}\n" for i in range(1, 31))


def commit(repo: Path, files: dict[str, str], message: str, tag: str | None = None) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    git.run(["add", "--all"], cwd=repo)
    git.run(["commit", "--quiet", "-m", message], cwd=repo, env=git_identity())
    if tag:
        git.run(["tag", tag], cwd=repo)
    return git.run(["rev-parse", "HEAD"], cwd=repo)


def edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def make_patch(upstream: Path, out: Path, name: str, files: dict[str, str], subject: str) -> Path:
    """A patch of FILES on upstream's v1, as git format-patch writes it."""
    work = out / f"work-{name}"
    git.run(["clone", "--quiet", str(upstream), str(work)])
    git.run(["checkout", "--quiet", "v1"], cwd=work)
    commit(work, files, subject)
    patch = out / name
    patch.write_text(git.run(["format-patch", "-1", "--stdout", "HEAD"], cwd=work) + "\n")
    return patch


@pytest.fixture
def queue_project(tmp_path):
    """Upstream v0, v1 and v2 (v2 changes the lines p1 and p2 change; p3 still applies), and a fork
    carrying p1, p2, p3 locked at v1."""
    up = tmp_path / "upstream"
    up.mkdir()
    git.run(["init", "--quiet", "--initial-branch=master"], cwd=up)
    commit(up, {"README": "llama\n"}, "start", tag="v0")
    commit(up, {"a.c": A, "b.c": B}, "import", tag="v1")
    patches = tmp_path / "made"
    patches.mkdir()
    p1 = make_patch(up, patches, "p1.patch", {"a.c": edit(A, "return 5;", "return 50;")}, "a : five is fifty")
    p2 = make_patch(up, patches, "p2.patch", {"b.c": edit(B, "return 7;", "return 70;")}, "b : seven is seventy")
    p3 = make_patch(up, patches, "p3.patch", {"a.c": edit(A, "return 25;", "return 250;")}, "a : twenty-five")
    commit(up, {"a.c": edit(A, "return 5;", "return 5 + 0;"), "b.c": edit(B, "return 7;", "return 7 + 0;")},
           "upstream : spell five and seven", tag="v2")
    project = Project.load(write_project(tmp_path / "fork", str(up), [p1, p2, p3]))
    assert apply(project, "v1", update_lock=True).lock_updated
    return project


def rebase(project, *args: str):
    return run_cli("rebase", *args, cwd=project.root)


def take_post_image(path: Path) -> None:
    """The scripted fix: each patchkit conflict block replaced by its post-image."""
    out, keep = [], True
    for line in path.read_text().splitlines(keepends=True):
        if line.startswith(("<<<<<<< upstream (patchkit:", "||||||| pre-image (patchkit:")):
            keep = False
        elif line.startswith("======= (patchkit:"):
            keep = True
        elif not line.startswith(">>>>>>> post-image (patchkit:") and keep:
            out.append(line)
    path.write_text("".join(out))


def snapshot(project) -> dict:
    """Everything --abort promises to restore, as bytes and ids."""
    checkout = project.output_dir
    files = {p.relative_to(project.root): p.read_bytes() for p in sorted(project.patches_dir.rglob("*"))}
    lock = project.lock_path.read_bytes() if project.lock_path.exists() else None
    if not checkout.exists():
        return {"files": files, "lock": lock, "checkout": None}
    tree = {p.relative_to(checkout): p.read_bytes() for p in sorted(checkout.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(checkout).parts}
    refs = git.run(["for-each-ref", "--format=%(objectname) %(refname)"], cwd=checkout)
    head = git.run(["symbolic-ref", "HEAD"], cwd=checkout)
    status = git.run(["status", "--porcelain", "--untracked-files=all"], cwd=checkout)
    return {"files": files, "lock": lock, "checkout": (tree, refs, head, status)}


def test_a_conflict_stops_with_markers_and_a_scripted_fix_ends_in_a_locked_queue(project, upstream):
    apply(project, "b1000", update_lock=True)
    before = (project.patches_dir / "server-keep-speculative-checkpoints-on-device.patch").read_bytes()
    proc = rebase(project, "upstream@scenario/conflict", "--json", "-")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert_matches_schema(report)
    stop = report["stopped"]
    assert stop["kind"] == "conflict" and stop["finding"]["culprit"]["commit"] == git.run(
        ["rev-parse", "scenario/conflict"], cwd=upstream.path)
    (marker,) = stop["markers"]
    source = project.output_dir / marker["file"]
    lines = source.read_text().splitlines()
    label = "(patchkit: server-keep-speculative-checkpoints-on-device.patch hunk 4 of tools/server/server-context.cpp)"
    assert lines[marker["line"] - 1] == f"<<<<<<< upstream {label}"
    assert f"||||||| pre-image {label}" in lines and f"======= {label}" in lines
    assert f">>>>>>> post-image {label}" in lines
    # The earlier hunks are applied in the work tree, the branch holds upstream only.
    assert git.run(["rev-parse", "HEAD"], cwd=project.output_dir) == git.run(
        ["rev-parse", "scenario/conflict"], cwd=upstream.path)
    assert "spec_ckpt_flags" in "\n".join(lines[:marker["line"]])

    refused = rebase(project, "--continue")  # the markers are still there
    assert refused.returncode == 2 and f"{marker['file']}:{marker['line']}" in refused.stderr

    take_post_image(source)
    done = rebase(project, "--continue")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "rebase: done; nightly: 1 patch good" in done.stdout
    after = (project.patches_dir / "server-keep-speculative-checkpoints-on-device.patch").read_bytes()
    assert after != before and b"LLAMA_STATE_SEQ_FLAGS_NO_SYNC);\n+" in after
    lock = project.lock()
    assert lock.upstream_commit == git.run(["rev-parse", "scenario/conflict"], cwd=upstream.path)
    assert not (project.state_dir / "rebase").exists()
    # The queue is good at the locked commit: apply is clean, its checks pass.
    again = apply(project, "locked", check=True)
    assert again.passed and again.patches[0].verdict.value == "clean"
    verified = run_cli("verify", cwd=project.root)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    tip = git.run(["rev-parse", "HEAD"], cwd=project.output_dir)
    note = git.run(["notes", "--ref=refs/notes/patchkit", "show", tip], cwd=project.output_dir)
    assert note == "Patchkit-Patch: server-keep-speculative-checkpoints-on-device.patch"


def test_a_rebase_that_stops_twice_says_what_the_rest_would_do(queue_project):
    project = queue_project
    first = rebase(project, "upstream@v2", "--json", "-")
    assert first.returncode == 1, first.stderr
    report = json.loads(first.stdout)
    assert report["stopped"]["patch"] == "p1.patch"
    assert [(p["name"], p["verdict"]) for p in report["rest"]] == [("p2.patch", "conflict"), ("p3.patch", "clean")]
    take_post_image(project.output_dir / "a.c")
    second = rebase(project, "--continue", "--json", "-")
    assert second.returncode == 1, second.stderr
    report = json.loads(second.stdout)
    assert [r["name"] for r in report["fixed"]] == ["p1.patch"] and report["stopped"]["patch"] == "p2.patch"
    log = git.run(["log", "--format=%s", "v2..HEAD"], cwd=project.output_dir).splitlines()
    assert log == ["a : five is fifty"]  # p1 committed, p2 waiting in the work tree
    take_post_image(project.output_dir / "b.c")
    third = rebase(project, "--continue", "--json", "-")
    assert third.returncode == 0, third.stderr + third.stdout
    finished = json.loads(third.stdout)
    assert_matches_schema(finished)
    assert finished["passed"] and finished["finished"]["lock_moved"] and finished["stopped"] is None
    assert git.run(["log", "--format=%s", "v2..HEAD"], cwd=project.output_dir).splitlines() == [
        "a : twenty-five", "b : seven is seventy", "a : five is fifty"]
    assert "return 5 + 0;" in (project.patches_dir / "p1.patch").read_text()
    assert project.lock().patches.keys() == {"p1.patch", "p2.patch", "p3.patch"}


def test_a_change_outside_the_patch_needs_include(queue_project):
    project = queue_project
    assert rebase(project, "upstream@v2").returncode == 1
    take_post_image(project.output_dir / "a.c")
    b = project.output_dir / "b.c"
    b.write_text(b.read_text() + "int extra(void);\n")
    refused = rebase(project, "--continue")
    assert refused.returncode == 2 and "b.c changed" in refused.stderr and "--include" in refused.stderr
    taken = rebase(project, "--continue", "--include", "b.c", "--json", "-")
    assert taken.returncode == 1, taken.stderr
    assert "+int extra(void);" in (project.patches_dir / "p1.patch").read_text()


def test_skip_disables_and_drop_removes(queue_project):
    project = queue_project
    assert rebase(project, "upstream@v2").returncode == 1
    skipped = rebase(project, "--skip", "--json", "-")
    assert skipped.returncode == 1, skipped.stderr
    assert_matches_schema(json.loads(skipped.stdout))
    assert json.loads(skipped.stdout)["skipped"] == ["p1.patch"]
    assert json.loads(skipped.stdout)["stopped"]["patch"] == "p2.patch"
    series = (project.patches_dir / "series").read_text()
    assert series.startswith("# disabled: p1.patch (on ") and "conflict at upstream" in series
    assert (project.patches_dir / "p1.patch").exists()
    dropped = rebase(project, "--drop")
    # done, the rest locked, but a disabled patch needs a person: not "the queue is good", exit 1
    assert dropped.returncode == 1, dropped.stderr + dropped.stdout
    assert "rebase: done" in dropped.stdout and "NEEDS ATTENTION: disabled in the series: p1.patch" in dropped.stdout
    assert not (project.state_dir / "rebase").exists()
    assert not (project.patches_dir / "p2.patch").exists()
    assert [line for line in (project.patches_dir / "series").read_text().splitlines()
            if not line.startswith("#")] == ["p3.patch"]
    assert project.lock().patches.keys() == {"p3.patch"}
    status = json.loads(run_cli("status", "--json", "-", cwd=project.root).stdout)
    assert_matches_schema(status)
    (entry,) = status["disabled"]
    assert entry["name"] == "p1.patch" and "conflict at upstream" in entry["why"] and status["rebase"] is None


def test_abort_restores_everything_byte_for_byte_after_continues(queue_project):
    project = queue_project
    before = snapshot(project)
    assert rebase(project, "upstream@v2").returncode == 1
    take_post_image(project.output_dir / "a.c")
    assert rebase(project, "--continue").returncode == 1
    made = project.output_dir / "new-untracked.txt"
    made.write_text("made while the rebase stood\n")
    assert (project.patches_dir / "p1.patch").read_bytes() != before["files"][Path("patches/p1.patch")]
    aborted = rebase(project, "--abort", "--json", "-")
    assert aborted.returncode == 0, aborted.stderr
    assert_matches_schema(json.loads(aborted.stdout))
    # A file the user made meanwhile is theirs: kept, and said so.
    assert made.read_text() == "made while the rebase stood\n" and "kept new-untracked.txt" in aborted.stderr
    made.unlink()
    assert snapshot(project) == before
    assert not (project.state_dir / "rebase").exists()


def test_abort_removes_a_checkout_the_rebase_made(queue_project):
    project = queue_project
    import shutil

    shutil.rmtree(project.output_dir)
    before = snapshot(project)
    assert rebase(project, "upstream@v2").returncode == 1
    assert rebase(project, "--abort").returncode == 0
    assert snapshot(project) == before and not project.output_dir.exists()


def test_while_rebasing_the_commands_that_write_the_queue_refuse(queue_project):
    project = queue_project
    assert rebase(project, "upstream@v2").returncode == 1
    for args in (["apply"], ["nightly"], ["verify"], ["export", "quilt", "out"], ["dist", "-o", "x.tar"],
                 ["import", "p1.patch"], ["rebase", "upstream@v2"], ["record"], ["absorb"]):
        proc = run_cli(*args, cwd=project.root)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "rebase" in proc.stderr and "--continue" in proc.stderr and "--abort" in proc.stderr, args
    status = run_cli("status", cwd=project.root)
    assert status.returncode == 0 and "rebase in progress" in status.stdout and "p1.patch" in status.stdout


def test_refusals_write_nothing(queue_project):
    project = queue_project
    before = snapshot(project)
    for args in (["--continue"], ["--abort"], ["--skip"], ["upstream@no-such-ref"], ["--continue", "--abort"]):
        proc = rebase(project, *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert snapshot(project) == before and not (project.state_dir / "rebase").exists()


def test_the_pin_guard_refuses_a_target_without_the_locked_commit(queue_project):
    project = queue_project
    before = snapshot(project)
    proc = rebase(project, "upstream@v0")
    assert proc.returncode == 2 and "does not contain the locked commit" in proc.stderr
    # what it proposes works: rebase has no --allow-rewind, apply has
    assert "a rebase moves the lock forward only" in proc.stderr and "`patchkit apply upstream@REF --update-lock " \
        "--allow-rewind`" in proc.stderr
    assert snapshot(project) == before and not (project.state_dir / "rebase").exists()


def add_notes_upstream(tmp_path) -> None:
    """Upstream v3: v2 and a new file NOTES."""
    up = tmp_path / "upstream"
    git.run(["checkout", "--quiet", "master"], cwd=up)
    commit(up, {"NOTES": "upstream notes\n"}, "notes", tag="v3")


def test_a_start_refuses_to_overwrite_an_untracked_file_and_writes_nothing(queue_project, tmp_path):
    project = queue_project
    add_notes_upstream(tmp_path)
    mine = project.output_dir / "NOTES"
    mine.write_text("MY PRECIOUS NOTES\n")
    before = snapshot(project)
    proc = rebase(project, "upstream@v3")
    assert proc.returncode == 2 and "NOTES" in proc.stderr and "rerun `patchkit rebase upstream@v3`" in proc.stderr
    assert snapshot(project) == before and not (project.state_dir / "rebase").exists()
    assert rebase(project, "--abort").returncode == 2  # nothing to abort: the refusal began nothing


def test_abort_gives_back_an_untracked_file_a_checkout_took_over(queue_project, tmp_path):
    project = queue_project
    add_notes_upstream(tmp_path)
    (project.output_dir / "NOTES").write_text("upstream notes\n")  # the same bytes: nothing is overwritten
    before = snapshot(project)
    assert rebase(project, "upstream@v3").returncode == 1
    assert "NOTES" in git.run(["ls-files"], cwd=project.output_dir)  # tracked on the rebase's branch
    assert rebase(project, "--abort").returncode == 0
    assert snapshot(project) == before


def test_a_start_refuses_an_ignored_file_the_target_takes_over_even_with_its_bytes(queue_project, tmp_path):
    """git checkout takes an ignored file over without a word, and the abort's reset would then
    delete it: an ignored file is no part of the snapshot, so the start refuses it."""
    project = queue_project
    add_notes_upstream(tmp_path)
    checkout = project.output_dir
    (checkout / ".git" / "info" / "exclude").write_text("NOTES\n")
    (checkout / "NOTES").write_text("upstream notes\n")  # the very bytes v3 has
    before = snapshot(project)
    proc = rebase(project, "upstream@v3")
    assert proc.returncode == 2 and "NOTES" in proc.stderr and "ignored" in proc.stderr
    assert snapshot(project) == before and (checkout / "NOTES").read_text() == "upstream notes\n"


def test_a_dangling_symlink_in_the_checkout_is_no_obstacle(queue_project):
    """Untracked symlinks (dangling, or to a folder) are not hashed into the snapshot: hash-object
    follows links, and a checkout never writes over them unasked."""
    project = queue_project
    checkout = project.output_dir
    (checkout / "model.gguf").symlink_to("/nonexistent/model.gguf")
    assert rebase(project, "upstream@v2").returncode == 1
    assert rebase(project, "--abort").returncode == 0
    assert os.readlink(checkout / "model.gguf") == "/nonexistent/model.gguf"


def test_abort_keeps_the_users_stash_branches_and_commits(queue_project):
    project = queue_project
    checkout = project.output_dir
    assert rebase(project, "upstream@v2").returncode == 1
    take_post_image(checkout / "a.c")
    (checkout / "a.c").write_text((checkout / "a.c").read_text() + "// my careful work\n")
    git.run(["stash", "--quiet"], cwd=checkout, env=git_identity())
    git.run(["branch", "my-backup"], cwd=checkout)
    commit(checkout, {"b.c": "mine\n"}, "my commit on the rebase's branch")
    mine = git.run(["rev-parse", "HEAD"], cwd=checkout)
    stash = git.run(["rev-parse", "refs/stash"], cwd=checkout)
    aborted = rebase(project, "--abort")
    assert aborted.returncode == 0, aborted.stderr
    assert git.run(["rev-parse", "refs/stash"], cwd=checkout) == stash
    assert git.run(["rev-parse", "--verify", "--quiet", "refs/heads/my-backup"], cwd=checkout, check=False)
    assert git.run(["rev-parse", f"refs/patchkit/saved/patchkit/v2/{mine}"], cwd=checkout) == mine
    assert f"refs/patchkit/saved/patchkit/v2/{mine}" in aborted.stderr
    assert git.run(["symbolic-ref", "HEAD"], cwd=checkout) == "refs/heads/patchkit/v1"


@pytest.fixture
def global_check_project(queue_project, tmp_path):
    """queue_project locked at v1s (v1 and s.cpp with one call of f), a project-level rule in
    patchkit.yaml (checks:, no patch's) that wants one call; v5 adds a second: every patch
    applies there, the rule fails."""
    up = tmp_path / "upstream"
    git.run(["checkout", "--quiet", "-b", "b5", "v1"], cwd=up)
    commit(up, {"s.cpp": "void f(int flags);\nvoid g() { f(0); }\n"}, "s", tag="v1s")
    commit(up, {"s.cpp": "void f(int flags);\nvoid g() { f(0); }\nvoid h() { f(0); }\n"}, "s: second call", tag="v5")
    yaml = queue_project.root / "patchkit.yaml"
    yaml.write_text(yaml.read_text() + "checks:\n  - id: one-call\n    class: calls\n    file: s.cpp\n"
                    "    calls: [f]\n    flags-arg: -1\n    forbid-flag: X\n    expect-count: 1\n")
    project = Project.load(queue_project.root)
    assert apply(project, "v1s", update_lock=True, check=True).lock_updated
    return project


def test_abort_restores_the_last_apply_report(global_check_project):
    project = global_check_project
    last = project.state_dir / "last-apply.json"
    before = last.read_bytes()
    failed = rebase(project, "upstream@v5")
    assert failed.returncode == 1 and "every patch applied" in failed.stdout
    assert last.read_bytes() != before  # the night's apply wrote its own
    assert rebase(project, "--abort").returncode == 0
    assert last.read_bytes() == before


def test_continue_refuses_checkout_edits_the_finishing_step_cannot_take(global_check_project):
    project = global_check_project
    assert rebase(project, "upstream@v5").returncode == 1
    source = project.output_dir / "s.cpp"
    source.write_text(source.read_text() + "// my attempt\n")
    refused = rebase(project, "--continue")
    assert refused.returncode == 2 and "s.cpp" in refused.stderr and "patchkit.yaml" in refused.stderr
    assert source.read_text().endswith("// my attempt\n")  # not discarded
    git.run(["checkout", "--", "s.cpp"], cwd=project.output_dir)
    yaml = project.root / "patchkit.yaml"  # the fix where it belongs: the rule
    yaml.write_text(yaml.read_text().replace("expect-count: 1", "expect-count: 2"))
    done = rebase(project, "--continue")
    assert done.returncode == 0, done.stderr + done.stdout


def test_a_rebase_onto_head_finishes_on_its_commit_when_the_mirror_moved_meanwhile(queue_project, tmp_path):
    from patchkit.upstream import Mirror

    project = queue_project
    up = tmp_path / "upstream"
    v2 = git.run(["rev-parse", "v2"], cwd=up)
    assert rebase(project).returncode == 1  # upstream@HEAD: master, at v2
    commit(up, {"README": "llama, later\n"}, "later")
    mirror = Mirror.open(project, None)
    with mirror.locked():
        mirror.fetch()  # another command, or another fork sharing the cache
    take_post_image(project.output_dir / "a.c")
    assert rebase(project, "--continue").returncode == 1
    take_post_image(project.output_dir / "b.c")
    done = rebase(project, "--continue")
    assert done.returncode == 0, done.stderr + done.stdout
    assert project.lock().upstream_commit == v2
    assert git.run(["symbolic-ref", "--short", "HEAD"], cwd=project.output_dir) == "patchkit/master"
    assert git.run(["rev-parse", "refs/patchkit/upstream"], cwd=project.output_dir) == v2


# --- interruption ------------------------------------------------------------------------------

def start(project, *args: str, pause: str) -> subprocess.Popen:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO), "PATCHKIT_TEST_PAUSE": pause}
    return subprocess.Popen([sys.executable, "-m", "patchkit", "rebase", *args], cwd=project.root, env=env,
                            text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def kill_at(proc: subprocess.Popen, point: str) -> None:
    assert proc.stderr
    for line in proc.stderr:
        if f"paused at {point}" in line:
            break
    else:
        raise AssertionError(f"ended (exit {proc.wait()}) before pausing at {point}")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.parametrize("point", ["checkout", "rebase-stop"])
def test_a_start_killed_anywhere_is_finished_by_continue_or_undone_by_abort(queue_project, point):
    project = queue_project
    before = snapshot(project)
    kill_at(start(project, "upstream@v2", pause=point), point)
    resumed = rebase(project, "--continue", "--json", "-")
    assert resumed.returncode == 1, resumed.stderr
    assert json.loads(resumed.stdout)["stopped"]["patch"] == "p1.patch"
    assert "<<<<<<< upstream (patchkit: p1.patch hunk 1 of a.c)" in (project.output_dir / "a.c").read_text()
    assert rebase(project, "--abort").returncode == 0
    assert snapshot(project) == before


@pytest.mark.parametrize("point", ["rebase-fixed", "checkout", "record"])
def test_a_continue_killed_anywhere_is_finished_by_the_next(queue_project, point):
    project = queue_project
    assert rebase(project, "upstream@v2").returncode == 1
    assert rebase(project, "--drop").returncode == 1  # now at p2: the last one that needs a person
    take_post_image(project.output_dir / "b.c")
    kill_at(start(project, "--continue", pause=point), point)
    resumed = rebase(project, "--continue")
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout
    assert project.lock().patches.keys() == {"p2.patch", "p3.patch"}
    assert "return 7 + 0;" in (project.patches_dir / "p2.patch").read_text()


def test_an_abort_killed_half_way_is_finished_by_the_next(queue_project):
    project = queue_project
    before = snapshot(project)
    assert rebase(project, "upstream@v2").returncode == 1
    assert rebase(project, "--skip").returncode == 1
    kill_at(start(project, "--abort", pause="rebase-abort"), "rebase-abort")
    refused = rebase(project, "--continue")
    assert refused.returncode == 2 and "--abort" in refused.stderr
    assert rebase(project, "--abort").returncode == 0
    assert snapshot(project) == before


# --- the other reasons to stop ------------------------------------------------------------------

def test_a_fuzzed_patch_stops_for_a_look_and_continue_records_it_without_fuzz(project):
    proc = rebase(project, "upstream@scenario/merged", "--fuzz", "1", "--json", "-")
    assert proc.returncode == 1, proc.stderr
    stop = json.loads(proc.stdout)["stopped"]
    assert stop["kind"] == "fuzzed" and "git -C" in stop["next"]
    assert git.run(["status", "--porcelain"], cwd=project.output_dir)  # the fuzzed change, to look at
    done = rebase(project, "--continue")
    assert done.returncode == 0, done.stderr + done.stdout
    again = apply(project, "locked")
    assert again.patches[0].verdict.value == "clean"


def test_an_already_applied_patch_proposes_drop(project, upstream):
    apply(project, "b1000", update_lock=True)
    proc = rebase(project, "upstream@scenario/already-applied", "--json", "-")
    assert proc.returncode == 1, proc.stderr
    stop = json.loads(proc.stdout)["stopped"]
    culprit = git.run(["rev-parse", "scenario/already-applied"], cwd=upstream.path)
    assert stop["kind"] == "already-applied" and "--drop" in stop["next"]
    assert f"Applied-Upstream: commit:{culprit}" in stop["next"]
    nothing = rebase(project, "--continue")
    assert nothing.returncode == 2 and "changes nothing" in nothing.stderr and "--drop" in nothing.stderr
    dropped = rebase(project, "--drop")
    assert dropped.returncode == 0, dropped.stderr + dropped.stdout
    assert project.lock().patches == {} and project.lock().upstream_commit == culprit


def test_a_patch_that_cannot_be_read_is_fixed_in_its_file(queue_project):
    project = queue_project
    p1 = project.patches_dir / "p1.patch"
    good = p1.read_bytes()
    p1.write_bytes(good.replace(b"@@ -2,7 +2,7 @@", b"@@ -2,7 +2,9 @@"))
    proc = rebase(project, "upstream@v1", "--json", "-")
    assert proc.returncode == 1, proc.stderr
    stop = json.loads(proc.stdout)["stopped"]
    assert stop["kind"] == "malformed" and f"fix {p1}" in stop["next"]
    p1.write_bytes(good)
    done = rebase(project, "--continue")
    assert done.returncode == 0, done.stderr + done.stdout
    assert p1.read_bytes().startswith(b"From 0000000000000000000000000000000000000000 ")  # refreshed
    assert run_cli("verify", cwd=project.root).returncode == 0


def test_a_patch_whose_site_checks_fail_stops_applied_and_continue_checks_again(project):
    apply(project, "b1000", update_lock=True)
    proc = rebase(project, "upstream@scenario/new-site", "--json", "-")
    assert proc.returncode == 1, proc.stderr
    stop = json.loads(proc.stdout)["stopped"]
    assert stop["kind"] == "checks-failed"
    assert [r["id"] for r in stop["checks"]["rules"] if not r["passed"]] == ["speculative-checkpoints-on-device"]
    source = project.output_dir / "tools/server/server-context.cpp"
    assert "slot.spec_ckpt_flags" in source.read_text()  # the patch, applied in the work tree
    again = rebase(project, "--continue", "--json", "-")  # nothing fixed: the same stop
    assert again.returncode == 1 and json.loads(again.stdout)["stopped"]["kind"] == "checks-failed"
    # The fix: the new site gets the flag, and the rule counts seven sites now.
    text = source.read_text()
    old = "ckpt.load_dft(slot.ctx_dft, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);"
    assert text.count(old) == 1
    source.write_text(text.replace(old, "ckpt.load_dft(slot.ctx_dft, slot.id, slot.spec_ckpt_flags);"))
    rules = project.patches_dir / "server-keep-speculative-checkpoints-on-device.checks.yaml"
    rules.write_text(rules.read_text().replace("expect-count: 6", "expect-count: 7"))
    done = rebase(project, "--continue")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "+            ckpt.load_dft(slot.ctx_dft, slot.id, slot.spec_ckpt_flags);" in \
        (project.patches_dir / "server-keep-speculative-checkpoints-on-device.patch").read_text()


def test_a_hunk_with_no_place_goes_to_a_reject_file(queue_project):
    project = queue_project
    up = Path(project.lock().upstream_url)
    git.run(["checkout", "--quiet", "-b", "gone", "v1"], cwd=up)
    (up / "b.c").unlink()
    commit(up, {}, "upstream : remove b.c")
    git.run(["checkout", "--quiet", "master"], cwd=up)
    proc = rebase(project, "upstream@gone", "--json", "-")
    assert proc.returncode == 1, proc.stderr
    stop = json.loads(proc.stdout)["stopped"]
    assert stop["patch"] == "p2.patch" and stop["kind"] == "missing-file" and stop["markers"] == []
    reject = project.state_dir / "rebase" / "p2.patch.rej"
    assert stop["reject_file"] == str(reject) and stop["rejected"] == ["b.c hunk 1: b.c is not in the checkout"]
    text = reject.read_text()
    assert "-int b7(void) { return 7; }\n+int b7(void) { return 70; }\n" in text
    terminal = rebase(project, "--abort")
    assert terminal.returncode == 0 and not reject.exists()


def test_a_drop_killed_half_way_is_finished_by_continue(queue_project):
    project = queue_project
    assert rebase(project, "upstream@v2").returncode == 1
    kill_at(start(project, "--drop", pause="checkout"), "checkout")
    resumed = rebase(project, "--continue", "--json", "-")
    assert resumed.returncode == 1, resumed.stderr
    assert json.loads(resumed.stdout)["stopped"]["patch"] == "p2.patch"
    assert "p1.patch" not in (project.patches_dir / "series").read_text()
    assert not (project.patches_dir / "p1.patch").exists()
