"""Each export format checked by the packagers' own tools: what they apply is patchkit's tree.

The queue is exported at `master` (every hunk an offset) and at `scenario/merged` (one hunk
placed by a 3-way merge from the base an earlier good run recorded); each round trip must give
exactly the tree `patchkit apply` gives there, with fuzz 0.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import apply, write_project
from export_helpers import checkout, commit_trees, git_am, run, tool, tree_id
from patchkit.apply import Verdict, apply_queue
from patchkit.export.formats import Format
from patchkit.export.run import ExportOptions, ExportReport, run_export
from patchkit.project import Project
from patchkit.queue import Queue
from patchkit.upstream import Mirror

SCENARIOS = {"offset": "master", "merged": "scenario/merged"}


@dataclass(frozen=True)
class Exports:
    done: dict[tuple[str, Format], tuple[ExportReport, Path]]  # (scenario, format): (report, OUT)
    commit_trees: dict[str, list[str]]  # scenario: the trees of the apply's commits, in series order

    def __getitem__(self, key: tuple[str, Format]) -> tuple[ExportReport, Path]:
        return self.done[key]


@pytest.fixture(scope="module")
def exports(tmp_path_factory, upstream):
    """Every format exported once at each scenario."""
    root = tmp_path_factory.mktemp("exports")
    project = Project.load(write_project(root / "fork", str(upstream.path)))
    assert [h.verdict for h in apply(project, "master").patches[0].hunks] == [Verdict.OFFSET] * 6
    assert apply(project, "b1000").bases_recorded == 1
    mirror = Mirror.open(project)
    done, trees = {}, {}
    for scenario, ref in SCENARIOS.items():
        for fmt in Format:
            out = root / scenario / fmt.value
            done[scenario, fmt] = run_export(project, ExportOptions(fmt, out, f"upstream@{ref}")), out
        report, _ = done[scenario, Format.MBOX]
        # The export left its commits nowhere: the same queue on the same commit gives the same ones.
        revision = mirror.resolve(f"upstream@{ref}", fetch=False)
        with apply_queue(mirror, revision, Queue.load(project).patches) as applied:
            assert [p.commit for p in applied.patches] == [p.commit for p in report.patches]
            trees[scenario] = commit_trees(applied.repo, [p.commit for p in applied.patches])
            if scenario == "merged":
                (merged,) = applied.patches
                assert merged.verdict is Verdict.MERGED and Verdict.MERGED in [h.verdict for h in merged.hunks]
    return Exports(done, trees)


@pytest.fixture(params=list(SCENARIOS))
def scenario(request):
    return request.param


def test_every_fragment_names_the_version_and_upstream_commit(exports):
    report, _ = exports["offset", Format.DEBIAN]
    assert re.fullmatch(r"b\d+\+pk1\.[0-9a-f]{8}", report.version)
    for (_, fmt), (report, out) in exports.done.items():
        for f in report.files:
            if not f.path.endswith((".patch", ".mbox")):
                text = (out / f.path).read_text()
                assert text.startswith(f"# patchkit export {fmt.value}: llama.cpp {report.version}\n"), f.path
                assert f"# upstream commit {report.upstream_commit} " in text
            assert hashlib.sha256((out / f.path).read_bytes()).hexdigest() == f.sha256


def test_debian_quilt_push_gives_the_apply_tree(exports, upstream, scenario, tmp_path):
    report, out = exports[scenario, Format.DEBIAN]
    work = checkout(upstream.path, report.upstream_commit, tmp_path / "src")
    run([tool("quilt"), "push", "-a", "--fuzz=0"], work, {"QUILT_PATCHES": str(out / "patches")})
    assert tree_id(work) == report.tree


def test_debian_patches_carry_dep3_headers_from_the_patch_only(exports):
    report, out = exports["offset", Format.DEBIAN]
    text = (out / "patches" / report.patches[0].name).read_text()
    header, _, diff = text.partition("\n---\n")
    assert header == (
        "Description: server : keep speculative checkpoints on device\n"
        " Keep the six speculative-decoding checkpoint save/load calls of a slot on the\n"
        " device (LLAMA_STATE_SEQ_FLAGS_ON_DEVICE); prompt-cache checkpoints stay on the host.\n"
        " Measured by the authors: 4.77 -> 25.83 tok/s (short context) and 4.33 -> 16.08\n"
        " (70k) on AMD gfx1151/Vulkan, +61 % on RTX 3090/CUDA, neutral on Metal.\n"
        " The 8-site variant is proposed upstream as ggml-org/llama.cpp#28118.\n"
        "Author: Mike Lothian <mike@fireburn.co.uk>\n"
        "Assisted-by: Claude Code (Claude Opus 5.5)\n"
        "Origin: other, https://github.com/FireBurn/Overlay/tree/master/sci-misc/llama-cpp/files\n"
        "Forwarded: not-needed\n"
        "Last-Update: 2026-11-29")
    assert "Applied-Upstream" not in header and "Bug" not in header  # the queue does not know them
    assert diff.startswith("diff --git a/tools/server/server-context.cpp b/tools/server/server-context.cpp\n")
    series = (out / "patches" / "series").read_text().splitlines()
    assert series[-1] == report.patches[0].name and all(line.startswith("#") for line in series[:-1])


def test_debian_make_fragment_gives_the_cmake_flags(exports, tmp_path):
    report, out = exports["offset", Format.DEBIAN]
    rules = tmp_path / "rules"
    rules.write_text(f"include {out}/patchkit.mk\nprint:\n\t@echo '$(PATCHKIT_VERSION) $(PATCHKIT_CMAKE_FLAGS)'\n")
    printed = run([tool("make"), "-s", "-f", str(rules), "print"], tmp_path)
    assert printed == (f"{report.version} -DLLAMA_BUILD_NUMBER={report.build_number} "
                       f"-DLLAMA_BUILD_COMMIT={report.build_commit}\n")


def test_quilt_series_pushes_the_unchanged_mails(exports, upstream, scenario, tmp_path):
    report, out = exports[scenario, Format.QUILT]
    debian, _ = exports[scenario, Format.DEBIAN]
    assert (out / report.patches[0].name).read_bytes().startswith(b"From 0000000000000000000000000000000000000000 ")
    work = checkout(upstream.path, report.upstream_commit, tmp_path / "src")
    run([tool("quilt"), "push", "-a", "--fuzz=0"], work, {"QUILT_PATCHES": str(out)})
    assert tree_id(work) == report.tree == debian.tree


def test_rpmspec_parses_the_fragments_and_patch_applies_them(exports, upstream, scenario, tmp_path):
    report, out = exports[scenario, Format.RPM]
    spec = tmp_path / "llama-cpp.spec"
    spec.write_text("Name: llama-cpp\nVersion: 1\nRelease: 1\nSummary: s\nLicense: MIT\n"
                    "Source0: llama.cpp.tar.gz\n%include %{_sourcedir}/patchkit-preamble.spec\n"
                    "%description\nd\n%prep\n%include %{_sourcedir}/patchkit-prep.spec\n"
                    "%build\n%include %{_sourcedir}/patchkit-build.spec\n")
    rpmspec = [tool("rpmspec"), "--define", f"_sourcedir {out}", "--define", f"_topdir {tmp_path / 'rpm'}"]
    parsed = run([*rpmspec, "--parse", str(spec)], tmp_path)
    assert f"Patch0001: {report.patches[0].name}\n" in parsed
    assert re.search(r"patch -p1 .*--fuzz=0", parsed)  # %autosetup -p1, expanded by rpm
    assert f"-DLLAMA_BUILD_NUMBER={report.build_number} -DLLAMA_BUILD_COMMIT={report.build_commit}\n" in parsed
    patches = run([*rpmspec, "-q", "--srpm", "--qf", "[%{PATCH}\n]", str(spec)], tmp_path).split()
    assert patches == [p.name for p in report.patches]
    work = checkout(upstream.path, report.upstream_commit, tmp_path / "src")
    for name in patches:
        run([tool("patch"), "-p1", "-F0", "--no-backup-if-mismatch", "-i", str(out / name)], work)
    assert tree_id(work) == report.tree


def test_nix_fragment_parses_and_lists_the_patch_files(exports, tmp_path):
    report, out = exports["offset", Format.NIX]
    env = {"HOME": str(tmp_path), "NIX_STATE_DIR": str(tmp_path / "state"), "NIX_STORE_DIR": str(tmp_path / "store"),
           "NIX_LOG_DIR": str(tmp_path / "log"), "NIX_CONF_DIR": str(tmp_path)}
    nix = tool("nix-instantiate")
    run([nix, "--parse", str(out / "patches.nix")], tmp_path, env)
    listed = run([nix, "--eval", "--strict", "--json", "-E", f"map toString (import {out}/patches.nix)"],
                 tmp_path, env)
    assert listed.strip() == "[" + ",".join(f'"{out / p.name}"' for p in report.patches) + "]"


def test_makepkg_reads_the_sources_and_sums_and_prepare_applies_them(exports, upstream, tmp_path):
    report, out = exports["offset", Format.ARCH]
    makepkg = tool("makepkg")
    # makepkg refuses to run as root; as root it runs as nobody, in a folder that user can use.
    as_user = [] if os.geteuid() else [tool("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups"]
    with tempfile.TemporaryDirectory(prefix="patchkit-makepkg-") as folder:
        pkg = Path(folder)
        pkg.chmod(0o777)
        for f in report.files:
            (pkg / f.path).write_bytes((out / f.path).read_bytes())
        (pkg / "PKGBUILD").write_text("pkgname=llama-cpp\npkgver=1\npkgrel=1\narch=(any)\nsource=()\nsha256sums=()\n"
                                      '. "$startdir/PKGBUILD.patchkit"\n'
                                      "prepare() {\n  cd llama.cpp\n  _patchkit_prepare\n}\n")
        env = {"HOME": folder, "PACMAN": "true"}  # no pacman on Debian: nothing here needs it
        srcinfo = run([*as_user, makepkg, "--printsrcinfo"], pkg, env)
        verified = run([*as_user, makepkg, "--verifysource"], pkg, env)
    names = [p.name for p in report.patches]
    sums = [hashlib.sha256((out / n).read_bytes()).hexdigest() for n in names]
    assert [line.split(" = ")[1] for line in srcinfo.splitlines() if line.startswith("\tsource = ")] == names
    assert [line.split(" = ")[1] for line in srcinfo.splitlines() if line.startswith("\tsha256sums = ")] == sums
    assert "Validating source files with sha256sums" in verified
    work = checkout(upstream.path, report.upstream_commit, tmp_path / "src")
    flags = run(["bash", "-euc", f'srcdir={shlex.quote(str(out))}; . "$srcdir/PKGBUILD.patchkit"; _patchkit_prepare; '
                 'echo "${_patchkit_cmake_flags[@]}"'], work)
    assert flags.splitlines()[-1] == f"-DLLAMA_BUILD_NUMBER={report.build_number} -DLLAMA_BUILD_COMMIT={report.build_commit}"
    assert tree_id(work) == report.tree


def test_gentoo_fragment_is_bash_an_ebuild_can_use(exports, upstream, tmp_path):
    report, out = exports["offset", Format.GENTOO]
    ebuild = tmp_path / "llama-cpp-9999.ebuild"
    fragment = (out / "ebuild.patchkit").read_text()
    ebuild.write_text('EAPI=8\ninherit cmake\n' + fragment +
                      'src_configure() {\n\tlocal mycmakeargs=( -DGGML_NATIVE=OFF )\n\tpatchkit_cmake_args\n'
                      '\techo "${mycmakeargs[@]}"\n}\n')
    run(["bash", "-n", str(ebuild)], tmp_path)
    printed = run(["bash", "-euc", f"inherit() {{ :; }}; FILESDIR={shlex.quote(str(out / 'files'))}; "
                   f'. {shlex.quote(str(ebuild))}; printf "%s\\n" "${{PATCHES[@]}}"; src_configure'], tmp_path)
    assert printed.splitlines() == [*(str(out / "files" / p.name) for p in report.patches),
                                    f"-DGGML_NATIVE=OFF -DLLAMA_BUILD_NUMBER={report.build_number} "
                                    f"-DLLAMA_BUILD_COMMIT={report.build_commit}"]
    work = checkout(upstream.path, report.upstream_commit, tmp_path / "src")
    for path in printed.splitlines()[:-1]:
        run([tool("patch"), "-p1", "-F0", "--no-backup-if-mismatch", "-i", path], work)
    assert tree_id(work) == report.tree


def test_git_am_of_the_mbox_recreates_every_commit_tree(exports, upstream, scenario, tmp_path):
    report, out = exports[scenario, Format.MBOX]
    assert [f.path for f in report.files] == ["patches.mbox"]
    work = checkout(upstream.path, report.upstream_commit, tmp_path / "src")
    trees = git_am(work, out / "patches.mbox")
    assert trees == exports.commit_trees[scenario] and trees[-1] == report.tree
