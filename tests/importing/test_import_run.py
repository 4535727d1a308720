"""importing/run.py through run_import: a dry run writes nothing; a duplicate, by name or by
content, is refused before any work; --after places the entries and keeps the series' other
lines; a new patch that breaks a patch of the queue that was good at --at is refused."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import seed_patch_path, write_project
from import_helpers import AT, CHANGES, commit_change, format_patch, git, patches_state, series, work_clone

from patchkit.apply import Verdict
from patchkit.errors import PatchkitError
from patchkit.fixture import SERVER_CONTEXT
from patchkit.importing.run import ImportOptions, run_import
from patchkit.project import Project

SEED = seed_patch_path().name
DOCS = "docs-say-how-to-build-the-server.patch"
FLAGS = "llama-say-what-the-flags-are-for.patch"


def patch_file(tmp_path: Path, repo: Path, commit: str, name: str) -> Path:
    path = tmp_path / name
    path.write_text(format_patch(repo, commit))
    return path


def imported(project: Project, *sources: Path, **options):
    options.setdefault("at", AT)
    return run_import(project, ImportOptions(sources=tuple(map(str, sources)), **options))


def mirror_state(project: Project) -> tuple[str, str]:
    """Every ref of the project's mirror, and its object count."""
    mirror = next(p.parent for p in project.cache_dir.rglob("objects") if p.is_dir())
    refs = subprocess.run(["git", "for-each-ref"], cwd=mirror, capture_output=True, text=True, check=True).stdout
    count = subprocess.run(["git", "count-objects"], cwd=mirror, capture_output=True, text=True, check=True).stdout
    return refs, count


@pytest.fixture
def work(tmp_path, upstream):
    """A clone of the fixture upstream at b1000 with the three changes committed, and the fork."""
    repo = work_clone(tmp_path, upstream)
    commits = [commit_change(repo, *change) for change in CHANGES]
    root = write_project(tmp_path / "fork", str(upstream.path))  # the real queue: SEED
    return repo, commits, Project.load(root)


def test_a_dry_run_reports_what_it_would_do_and_writes_nothing(tmp_path, work):
    repo, (docs, flags, _), project = work
    mbox = tmp_path / "two.mbox"
    mbox.write_text(format_patch(repo, docs) + "\n" + format_patch(repo, flags))
    before = patches_state(project.root)
    report = imported(project, mbox, after=SEED, dry_run=True)
    assert report.dry_run and not report.written and report.passed and report.exit_code == 0
    assert [(e.name, e.position, e.verdict, e.kind) for e in report.entries] == [
        (DOCS, 2, Verdict.CLEAN, "mbox"), (FLAGS, 3, Verdict.CLEAN, "mbox")]
    assert report.entries[0].subject == CHANGES[0][0] and report.entries[0].author == "Fork Dev <dev@fork.invalid>"
    assert patches_state(project.root) == before
    assert not (project.root / "patchkit.lock").exists() and not project.output_dir.exists()
    # the same import for real writes exactly what the dry run said
    done = imported(project, mbox, after=SEED)
    assert done.written and [(e.name, e.position) for e in done.entries] == [(DOCS, 2), (FLAGS, 3)]
    assert series(project.root) == [SEED, DOCS, FLAGS]


def test_a_dry_run_leaves_the_mirrors_refs_and_objects_unchanged(tmp_path, work):
    repo, (docs, flags, _), project = work
    imported(project, patch_file(tmp_path, repo, docs, "docs.patch"), dry_run=True)  # fetches
    before = mirror_state(project)
    imported(project, patch_file(tmp_path, repo, flags, "flags.patch"), dry_run=True)
    assert mirror_state(project) == before


def test_the_same_change_is_refused_whatever_its_headers_context_and_line_numbers(tmp_path, work):
    repo, _, project = work
    # the seed's change as git writes it with more context: other hunk headers, no mail header
    git("apply", str(seed_patch_path()), cwd=repo)
    rediff = tmp_path / "rediff.diff"
    rediff.write_text(git("diff", "-U5", cwd=repo) + "\n")
    # one change more (a line at the end of the file) is another change
    server = repo / SERVER_CONTEXT
    server.write_text(server.read_text() + "// one more line\n")
    other = tmp_path / "other.diff"
    other.write_text(git("diff", "-U5", cwd=repo) + "\n")
    git("checkout", "--quiet", "--", ".", cwd=repo)
    before = patches_state(project.root)
    with pytest.raises(PatchkitError, match=f"the same change is already in the queue as {SEED}"):
        imported(project, rediff, author="Someone <someone@example.invalid>", subject="server : keep them")
    # not a duplicate: it goes on to the trial apply, where it fails after the seed
    report = imported(project, other, author="Someone <someone@example.invalid>", subject="server : more")
    assert report.refused and not report.written and report.entries[0].verdict != Verdict.CLEAN
    assert patches_state(project.root) == before


def test_the_same_change_twice_among_the_sources_is_refused(tmp_path, work):
    repo, (docs, *_), project = work
    a = patch_file(tmp_path, repo, docs, "a.patch")
    b = tmp_path / "b.patch"
    b.write_text(a.read_text().replace("Subject: [PATCH] docs : say", "Subject: [PATCH] docs: tell"))
    with pytest.raises(PatchkitError, match=f"{b}: the same change as {a}"):
        imported(project, a, b)


def test_names_an_unlisted_file_twins_and_a_killed_import(tmp_path, work):
    repo, (docs, flags, notes), project = work
    docs_patch = patch_file(tmp_path, repo, docs, "docs.patch")
    # a file of that name, not in the series, with other bytes: refused, and left alone
    stray = project.patches_dir / DOCS
    stray.write_text("someone's notes\n")
    with pytest.raises(PatchkitError, match=f"{DOCS} already exists \\(not in the series\\)"):
        imported(project, docs_patch)
    assert stray.read_text() == "someone's notes\n"
    stray.unlink()
    # the queue lists X-2 but not X: two sources with X's subject become X and X-3
    twin_2 = DOCS.replace(".patch", "-2.patch")
    assert imported(project, patch_file(tmp_path, repo, flags, "flags.patch"), name=twin_2).written
    other = tmp_path / "other.patch"
    other.write_text(format_patch(repo, notes).replace(CHANGES[2][0], CHANGES[0][0]))
    report = imported(project, docs_patch, other, dry_run=True)
    assert [(e.name, e.position) for e in report.entries] == [(DOCS, 3), (DOCS.replace(".patch", "-3.patch"), 4)]
    # an import killed after its file, before the series: the same bytes are taken as its own
    done = imported(project, docs_patch)
    written = (project.patches_dir / DOCS).read_bytes()
    project.series_path.write_text(f"{SEED}\n{twin_2}\n")
    again = imported(project, docs_patch)
    assert again.written and again.entries[0].name == DOCS and done.entries[0].sha256 == again.entries[0].sha256
    assert (project.patches_dir / DOCS).read_bytes() == written and series(project.root) == [SEED, twin_2, DOCS]


def test_after_places_entries_and_keeps_the_series_other_lines(tmp_path, work):
    repo, (docs, flags, notes), project = work
    for commit, name in ((docs, "docs.patch"), (flags, "flags.patch")):
        assert imported(project, patch_file(tmp_path, repo, commit, name)).written
    text = f"# carried on top of llama.cpp\n{SEED} -p1  # the seed\n\n{DOCS}\n# last\n{FLAGS}\n"
    project.series_path.write_text(text)
    report = imported(project, patch_file(tmp_path, repo, notes, "notes.patch"),
                      after=SEED.removesuffix(".patch"))  # the name without .patch will do
    assert report.after == SEED and report.entries[0].position == 2
    notes_name = report.entries[0].name
    assert project.series_path.read_text() == text.replace(
        f"{SEED} -p1  # the seed\n", f"{SEED} -p1  # the seed\n{notes_name}\n")
    with pytest.raises(PatchkitError, match=f"--after docs-say-how-to-build-the-servr: not in .*did you mean {DOCS}"):
        imported(project, patch_file(tmp_path, repo, notes, "again.patch"), after="docs-say-how-to-build-the-servr")


def test_a_new_patch_that_breaks_a_good_one_is_refused_and_a_failing_one_is_not_counted(tmp_path, work):
    repo, (docs, _, _), project = work
    assert imported(project, patch_file(tmp_path, repo, docs, "docs.patch")).written
    # a patch of the queue that does not apply at b1000 anyway: made at master
    git("checkout", "--quiet", "-b", "hip", "master", cwd=repo)
    hip = commit_change(repo, "ggml : build with HIP by default", "CMakeLists.txt", "replace",
                        ('option(GGML_HIP "ggml: use HIP" OFF)', 'option(GGML_HIP "ggml: use HIP" ON)'))
    assert imported(project, patch_file(tmp_path, repo, hip, "hip.patch"), allow_failing=True).written
    git("checkout", "--quiet", "-b", "tiny", "b1000", cwd=repo)
    tiny = commit_change(repo, "docs : a tiny upstream", "README.md", "replace",
                         ("A small upstream", "A tiny upstream"))
    tiny_patch = patch_file(tmp_path, repo, tiny, "tiny.patch")
    before = patches_state(project.root)
    report = imported(project, tiny_patch, after=SEED)
    assert report.entries[0].good and report.entries[0].position == 2
    assert [(b.name, b.verdict) for b in report.broken] == [(DOCS, Verdict.CONFLICT)]  # not the HIP one
    assert report.refused and report.exit_code == 1 and not report.written
    assert patches_state(project.root) == before
    # --allow-failing takes it, and says what it breaks
    report = imported(project, tiny_patch, after=SEED, allow_failing=True)
    assert report.written and report.exit_code == 0 and not report.passed
    assert any(w.startswith(f"{DOCS} is conflict at ") and w.endswith("after the import (--allow-failing)")
               for w in report.warnings)
    assert series(project.root)[:3] == [SEED, "docs-a-tiny-upstream.patch", DOCS]
