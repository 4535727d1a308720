"""`patchkit apply --build`: the patched tree is built right after a good apply, in one report."""

from __future__ import annotations

from pathlib import Path

from build_helpers import REPO_RECIPES, copy_project, git_tree, needs_cmake
from conftest import git_identity, write_project
from patchkit import git
from patchkit.project import Project
from patchkit.pipeline import ApplyOptions, run_apply

pytestmark = needs_cmake

EDIT = ("int main() {", 'int main() {\n    std::puts("carried by the fork");')


def fork_patch(tmp_path: Path, upstream: Path, old: str, new: str) -> Path:
    work = tmp_path / "work"
    git.run(["clone", "--quiet", str(upstream), str(work)])
    server = work / "tools/server/server.cpp"
    server.write_text(server.read_text().replace(old, new))
    git.run(["commit", "--quiet", "-am", "server: say hello"], cwd=work, env=git_identity())
    patch = tmp_path / "hello.patch"
    patch.write_text(git.run(["format-patch", "-1", "--stdout"], cwd=work) + "\n")
    return patch


def test_apply_then_build_in_one_report(tmp_path):
    upstream = copy_project(tmp_path)
    commit = git_tree(upstream)
    patch = fork_patch(tmp_path, upstream, *EDIT)
    project = Project.load(write_project(tmp_path / "fork", str(upstream), [patch],
                                         extra=f"recipes: {REPO_RECIPES}\n"))
    report = run_apply(project, ApplyOptions(build=("cpu",)))
    assert report.exit_code == 0 and report.patches[0].verdict.value == "clean"
    (result,) = report.builds.results
    assert result.status.value == "ok"
    assert report.builds.defines["LLAMA_BUILD_COMMIT"].startswith(commit[:7])
    server = next(a for a in result.artifacts if a.target == "llama-server")
    assert Path(server.path).is_file()


def test_no_build_after_a_failed_apply(tmp_path):
    upstream = copy_project(tmp_path)
    git_tree(upstream)
    patch = fork_patch(tmp_path, upstream, *EDIT)
    text = patch.read_text().replace(" int main() {", " int main(void) {")
    patch.write_text(text)
    project = Project.load(write_project(tmp_path / "fork", str(upstream), [patch],
                                         extra=f"recipes: {REPO_RECIPES}\n"))
    report = run_apply(project, ApplyOptions(build=("cpu",)))
    assert report.builds is None and report.exit_code == 1
    assert "builds not run: the apply needs attention first" in report.warnings


def test_a_nightly_build_failure_says_whose_fault_it_is(tmp_path):
    """The queue breaks the build: the unpatched target, built with the same recipe, is fine."""
    from patchkit.nightly.night import NightlyOptions, run_nightly

    upstream = copy_project(tmp_path)
    git_tree(upstream)
    patch = fork_patch(tmp_path, upstream, "int main() {", "int main() {\n    this_does_not_compile();")
    project = Project.load(write_project(tmp_path / "fork", str(upstream), [patch],
                                         extra=f"recipes: {REPO_RECIPES}\n"))
    report = run_nightly(project, NightlyOptions(build=("cpu",)))
    assert report.exit_code == 1 and report.apply.patches[0].verdict.value == "clean"
    assert report.apply.builds.results[0].status.value == "failed"
    (blame,) = report.build_blame
    assert (blame.backend, blame.fault) == ("cpu", "queue")
    assert report.refreshed == () and project.lock() is None


def test_a_nightly_build_failure_upstream_has_too_is_upstreams_fault(tmp_path):
    from patchkit.nightly.night import NightlyOptions, run_nightly

    upstream = copy_project(tmp_path)
    git_tree(upstream)
    patch = fork_patch(tmp_path, upstream, *EDIT)
    bench = upstream / "tools/bench/bench.cpp"
    bench.write_text(bench.read_text() + "\nstatic_assert(false, \"upstream broke the bench\");\n")
    git.run(["commit", "--quiet", "-am", "bench: break it"], cwd=upstream, env=git_identity())
    project = Project.load(write_project(tmp_path / "fork", str(upstream), [patch],
                                         extra=f"recipes: {REPO_RECIPES}\n"))
    report = run_nightly(project, NightlyOptions(build=("cpu",)))
    (blame,) = report.build_blame
    assert (blame.backend, blame.fault) == ("cpu", "upstream") and report.exit_code == 1


def test_apply_smoke_builds_then_smokes_in_one_report(tmp_path):
    """--smoke after a good build: the stand-in's server cannot run the scenario, so the apply
    needs attention and its report says why, with the server's log."""
    upstream = copy_project(tmp_path)
    git_tree(upstream)
    patch = fork_patch(tmp_path, upstream, *EDIT)
    rule = ("checks:\n  - id: build-info\n    file: tools/server/server.cpp\n"
            "    calls: [llama_build_info]\n    expect-count: 1\n")
    project = Project.load(write_project(tmp_path / "fork", str(upstream), [patch],
                                         extra=f"recipes: {REPO_RECIPES}\n{rule}"))
    report = run_apply(project, ApplyOptions(build=("cpu",), smoke=True))
    assert report.builds.results[0].status.value == "ok" and report.checks.passed
    assert report.smoke is not None and not report.smoke.passed and report.exit_code == 1
    assert "before /health" in report.smoke.runs[0].detail
    assert (project.output_dir / "build" / "cpu-smoke" / "bin" / "libllama.so").is_file()
