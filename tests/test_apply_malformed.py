"""Issue 17, class 1: one unusual patch never stops the queue.

What git am or GNU patch read unambiguously is read (the author as git am reads it, no Date, every
line CRLF, a blank context line a mailer ate at a hunk's end, where upstream has it); a patch that
still cannot be read is that patch's verdict, `malformed`, and blocks every later hunk in the files
it names; the rest of the queue goes on. On the fixture upstream (llama.cpp-shaped), at master.
"""

from __future__ import annotations

import json
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import assert_matches_schema, git_identity, run_cli, write_project
from patchkit import git
from patchkit.apply import Verdict
from patchkit.pipeline import ApplyOptions, run_apply
from patchkit.project import Project

HEADER = "include/llama.h"


def include_stddef(work: Path) -> None:
    """Line 3 of include/llama.h: the hunk's last context line is line 6, a blank one."""
    path = work / HEADER
    path.write_text(path.read_text().replace("#include <stdint.h>\n", "#include <stdint.h>\n#include <stddef.h>\n"))


def comment_on_device(work: Path) -> None:
    """Line 10 of include/llama.h, away from the first patch's lines."""
    path = work / HEADER
    path.write_text(path.read_text().replace("// keep the copy in device memory", "// keep the copy on the device"))


def native_off(work: Path) -> None:
    path = work / "CMakeLists.txt"
    path.write_text(path.read_text().replace('host CPU" ON)', 'host CPU" OFF)'))


def rename_flags(work: Path) -> None:
    """Line 5 of include/llama.h: its hunk ends at line 8, `enum llama_state_seq_flag {`."""
    path = work / HEADER
    path.write_text(path.read_text().replace("llama_state_seq_flags;", "llama_state_flags;"))


EDITS = {"0001-include-stddef": include_stddef, "0002-comment-on-device": comment_on_device,
         "0003-native-off": native_off, "0001-rename-flags": rename_flags}


def make_queue(tmp_path: Path, upstream: Path, names: list[str]) -> list[Path]:
    """One git format-patch file per edit, each on top of the ones before, at master."""
    work = tmp_path / "work"
    git.run(["clone", "--quiet", str(upstream), str(work)])
    patches = []
    for name in names:
        EDITS[name](work)
        git.run(["commit", "--quiet", "-am", name.split("-", 1)[1].replace("-", " ")], cwd=work,
                env=git_identity("Ada Lovelace", "ada@example.org", "1790600000 +0200"))
        out = tmp_path / f"{name}.patch"
        out.write_bytes(subprocess.run(["git", "format-patch", "-1", "--stdout", "--full-index"], cwd=work,
                                       check=True, capture_output=True).stdout)
        patches.append(out)
    return patches


def cli_apply(tmp_path: Path, upstream: Path, patches: list[Path],
              *options: str) -> tuple[subprocess.CompletedProcess, dict]:
    root = write_project(tmp_path / "fork", str(upstream), patches)
    proc = run_cli("apply", *options, "--json", str(tmp_path / "report.json"), "--markdown", str(tmp_path / "report.md"),
                   "--junit", str(tmp_path / "junit.xml"), cwd=root)
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert_matches_schema(report)
    return proc, report


def no_from(text: str) -> str:
    return text.replace("From: Ada Lovelace <ada@example.org>\n", "")


def mixed_crlf(text: str) -> str:
    return text.replace("Subject:", "Subject:", 1).replace("\n", "\r\n", 3)


def truncated(text: str) -> str:
    """The hunk loses its last two lines: more than a mailer's blank line."""
    lines = text.splitlines(keepends=True)
    end = max(i for i, line in enumerate(lines) if line.startswith((" ", "+", "-")) and not line.startswith("-- "))
    return "".join(lines[:end - 1] + lines[end + 1:])


def binary_without_index(text: str) -> str:
    """A binary diff of include/llama.h whose `index` line is gone: nothing to check it against."""
    diff = text.index("diff --git")
    return (text[:diff] + f"diff --git a/{HEADER} b/{HEADER}\nGIT binary patch\nliteral 5\n"
            "McmZ?b0ssI20001\n\nliteral 0\nHcmV?d00001\n\n")


@pytest.mark.parametrize("mangle, where", [
    (no_from, "0001-include-stddef.patch:1: missing or malformed author"),
    (mixed_crlf, "0001-include-stddef.patch:4: line 4 ends in LF, line 1 in CRLF: mixed line ends"),
    (truncated, "0001-include-stddef.patch:14: malformed or truncated patch (Hunk is shorter than expected)"),  # its header
    (binary_without_index, f"0001-include-stddef.patch:10: {HEADER}: binary patch without an index line"),
])
def test_an_unreadable_patch_is_malformed_blocks_its_files_and_the_queue_goes_on(tmp_path, upstream, mangle, where):
    patches = make_queue(tmp_path, upstream.path, ["0001-include-stddef", "0002-comment-on-device", "0003-native-off"])
    patches[0].write_bytes(mangle(patches[0].read_text()).encode())
    proc, report = cli_apply(tmp_path, upstream.path, patches)
    assert proc.returncode == 1, proc.stderr
    bad, later, other = report["patches"]
    assert (bad["verdict"], later["verdict"], other["verdict"]) == ("malformed", "blocked", "clean")
    assert bad["detail"].startswith(where) and f"later patches are blocked in {HEADER}" in bad["detail"]
    assert bad["commit"] is None and bad["hunks"] == []
    # Whole-file: the later hunk is nowhere near the malformed one's lines, and would apply clean.
    assert later["blocked_by"] == ["0001-include-stddef.patch"] and later["commit"] is None
    assert other["commit"] is not None
    assert "0001-include-stddef.patch: malformed" in proc.stdout and where in proc.stdout
    assert f"\n## 0001-include-stddef.patch: malformed\n\n{where}" in (tmp_path / "report.md").read_text()
    (case,) = [c for c in ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")
               if c.get("name") == "0001-include-stddef.patch"]
    assert case.find("failure").get("message").startswith(f"malformed: {where}")


def test_a_patch_naming_no_file_blocks_nothing(tmp_path, upstream):
    """Decided: when even the file names cannot be read, the malformed patch blocks nothing; every
    later patch is tried on its own (and still has to fit upstream, hunk by hunk)."""
    patches = make_queue(tmp_path, upstream.path, ["0001-include-stddef", "0002-comment-on-device", "0003-native-off"])
    text = patches[0].read_text()
    patches[0].write_text(text[:text.index("diff --git")] + "the diff was lost in transit\n")
    proc, report = cli_apply(tmp_path, upstream.path, patches)
    assert proc.returncode == 1
    # the second patch's line moved up: its hunk was made after the lost one's added line
    assert [p["verdict"] for p in report["patches"]] == ["malformed", "offset", "clean"]
    assert report["patches"][0]["detail"] == ("0001-include-stddef.patch:1: no diff found; later patches are "
                                              "blocked in no file (it names none)")


def without_signature(text: str) -> str:
    return re.sub(r"-- \n[^\n]*\n+\Z", "", text)


def test_a_hunk_one_line_short_where_upstream_has_no_blank_line_is_read_as_written_with_fuzz(tmp_path, upstream):
    """The twin of the blank line a mailer ate: upstream has `enum llama_state_seq_flag {` there,
    so reading a blank line would invent content. The other reading, the hunk as written, lacks
    the line its header promised: GNU patch places it so with fuzz 1 and refuses it with -F0, and
    so does patchkit: malformed without --fuzz, fuzzed (with a warning) with it, where GNU patch
    -F2 places it (issue 25: a hand-edited hunk one line short)."""
    patches = make_queue(tmp_path, upstream.path, ["0001-rename-flags", "0002-comment-on-device", "0003-native-off"])
    text = without_signature(patches[0].read_text())
    assert text.endswith(" enum llama_state_seq_flag {\n")
    patches[0].write_text(text.removesuffix(" enum llama_state_seq_flag {\n"))
    proc, report = cli_apply(tmp_path / "nofuzz", upstream.path, patches)
    assert proc.returncode == 1
    assert [p["verdict"] for p in report["patches"]] == ["malformed", "blocked", "clean"]
    assert report["patches"][0]["detail"].startswith(
        f"0001-rename-flags.patch:22: hunk 1 of {HEADER} is one line short of its header's count; read as a "
        "blank context line only where upstream has one there, and it was conflict")
    proc, report = cli_apply(tmp_path, upstream.path, patches, "--fuzz", "1")
    assert proc.returncode == 0, proc.stderr
    assert [p["verdict"] for p in report["patches"]] == ["fuzzed", "clean", "clean"]
    assert report["patches"][0]["hunks"][0]["fuzz"] == 1
    assert (f"0001-rename-flags.patch:22: hunk 1 of {HEADER} is one line short of its header's count, and upstream "
            "has no blank line there: read as written") in proc.stderr
    work = tmp_path / "gnu"
    git.run(["clone", "--quiet", str(upstream.path), str(work)])
    gnu = subprocess.run(["patch", "-p1", "-F0", "--dry-run", "-i", str(patches[0])], cwd=work, capture_output=True, text=True)
    assert gnu.returncode != 0
    gnu = subprocess.run(["patch", "-p1", "-F1", "-i", str(patches[0])], cwd=work, capture_output=True, text=True)
    assert gnu.returncode == 0 and "with fuzz 1" in gnu.stdout
    ours = tmp_path / "fork" / "llama.cpp"
    first = git.run(["rev-list", "--reverse", "HEAD"], cwd=ours).split()[-3]  # the first patch's commit
    assert git.run(["show", f"{first}:{HEADER}"], cwd=ours) + "\n" == (work / HEADER).read_text()


# -- the tolerant reads: exact commits ---------------------------------------------------------------

def apply_queue_of(tmp_path: Path, upstream: Path, patches: list[Path]):
    project = Project.load(write_project(tmp_path / "fork", str(upstream), patches))
    warnings: list[str] = []
    from patchkit.hooks import Hooks

    report = run_apply(project, ApplyOptions(spec="upstream@HEAD", check=False), Hooks(warn=warnings.append))
    return project, report, warnings


def commit_text(project: Project, commit: str) -> str:
    return git.run(["cat-file", "commit", commit], cwd=project.output_dir)


def git_am(tmp_path: Path, upstream: Path, patch: Path, committer_date: str) -> str:
    """The commit `git am` makes of PATCH at master, committed as patchkit commits."""
    work = tmp_path / "am"
    git.run(["clone", "--quiet", str(upstream), str(work)])
    env = {"GIT_COMMITTER_NAME": git.PATCHKIT_NAME, "GIT_COMMITTER_EMAIL": git.PATCHKIT_EMAIL,
           "GIT_COMMITTER_DATE": committer_date}
    git.run(["am", "--quiet", str(patch)], cwd=work, env=env)
    return git.run(["rev-parse", "HEAD"], cwd=work)


def master_date(upstream: Path) -> str:
    return git.run(["show", "-s", "--format=%ct +0000", "master"], cwd=upstream)


def test_an_empty_address_is_read_as_git_am_reads_it(tmp_path, upstream):
    (patch,) = make_queue(tmp_path, upstream.path, ["0003-native-off"])
    patch.write_text(patch.read_text().replace("From: Ada Lovelace <ada@example.org>", "From: nobody <>"))
    project, report, _ = apply_queue_of(tmp_path, upstream.path, [patch])
    (result,) = report.patches
    assert result.verdict is Verdict.CLEAN and report.exit_code == 0
    text = commit_text(project, result.commit)
    assert "\nauthor nobody <> 1790600000 +0200\n" in text
    # The very commit git am makes of it.
    assert result.commit == git_am(tmp_path, upstream.path, patch, master_date(upstream.path))


def test_a_patch_without_a_date_is_dated_at_the_upstream_commit(tmp_path, upstream):
    (patch,) = make_queue(tmp_path, upstream.path, ["0003-native-off"])
    patch.write_text(patch.read_text().replace("Date: Mon, 28 Sep 2026 14:53:20 +0200\n", ""))
    assert "Date:" not in patch.read_text()
    project, report, warnings = apply_queue_of(tmp_path, upstream.path, [patch])
    (result,) = report.patches
    assert result.verdict is Verdict.CLEAN
    upstream_date = master_date(upstream.path)
    master = git.run(["rev-parse", "master"], cwd=upstream.path)
    tree = git.run(["rev-parse", f"{result.commit}^{{tree}}"], cwd=project.output_dir)
    assert commit_text(project, result.commit) == (
        f"tree {tree}\nparent {master}\nauthor Ada Lovelace <ada@example.org> {upstream_date}\n"
        f"committer patchkit <patchkit@invalid> {upstream_date}\n\nnative off")  # (git.run strips the newline)
    assert warnings == [f"0003-native-off.patch has no Date: its commit is dated at upstream's {master[:12]}, so its "
                        "id is the same on every run; add a Date: line"]
    # Reproducible: the same id on a second run.
    again = run_apply(project, ApplyOptions(spec="upstream@HEAD", check=False))
    assert again.patches[0].commit == result.commit


def test_a_patch_whose_every_line_ends_in_crlf_is_read_as_lf(tmp_path, upstream):
    patches = make_queue(tmp_path, upstream.path, ["0001-include-stddef", "0003-native-off"])
    lf = patches[0].read_bytes()
    patches[0].write_bytes(lf.replace(b"\n", b"\r\n"))
    project, report, warnings = apply_queue_of(tmp_path, upstream.path, patches)
    assert [p.verdict for p in report.patches] == [Verdict.CLEAN, Verdict.CLEAN]
    assert warnings == ["0001-include-stddef.patch: every line ends in CRLF (a mailer's or an editor's); read as LF"]
    assert b"\r" not in (project.output_dir / HEADER).read_bytes()
    # git am strips the CRs as well (mailsplit without --keep-cr): the same commit.
    assert report.patches[0].commit == git_am(tmp_path, upstream.path, patches[0], master_date(upstream.path))


def test_a_crlf_patch_of_a_crlf_file_stays_malformed(tmp_path):
    """The twin: when upstream's file has CRLF line ends, which \\r were the file's cannot be told
    from a patch whose every line ends in CRLF. (The fixture upstream has no CRLF file: a small one.)"""
    upstream = tmp_path / "upstream"
    git.run(["init", "--quiet", "--initial-branch=master", str(upstream)])
    (upstream / "win.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    (upstream / "unix.txt").write_bytes(b"x\ny\nz\n")
    git.run(["add", "-A"], cwd=upstream)
    git.run(["commit", "--quiet", "-m", "base"], cwd=upstream, env=git_identity())
    work = tmp_path / "work"
    git.run(["clone", "--quiet", str(upstream), str(work)])
    patches = []
    for name, path, data in (("0001-win", "win.txt", b"a\r\nB\r\nc\r\n"), ("0002-win-again", "win.txt", b"a\r\nB\r\nC\r\n"),
                             ("0003-unix", "unix.txt", b"x\nY\nz\n")):
        (work / path).write_bytes(data)
        git.run(["commit", "--quiet", "-am", name], cwd=work, env=git_identity())
        out = tmp_path / f"{name}.patch"
        out.write_bytes(subprocess.run(["git", "format-patch", "-1", "--stdout"], cwd=work, check=True,
                                       capture_output=True).stdout.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
                        if name == "0001-win" else
                        subprocess.run(["git", "format-patch", "-1", "--stdout"], cwd=work, check=True,
                                       capture_output=True).stdout)
        patches.append(out)
    _, report, _ = apply_queue_of(tmp_path, upstream, patches)
    assert [p.verdict for p in report.patches] == [Verdict.MALFORMED, Verdict.BLOCKED, Verdict.CLEAN]
    assert report.patches[0].detail.startswith("0001-win.patch:1: every line ends in CRLF, and win.txt has CRLF "
                                               "line ends upstream")
    # git format-patch of a CRLF file (LF framing, CRs only on the file's own lines) is read as it is,
    # as git reads it (tests/record/test_line_ends.py applies one); here the malformed 0001 holds win.txt.
    assert "0001-win.patch" in report.patches[1].detail


def test_a_blank_context_line_a_mailer_ate_is_read_where_upstream_has_it(tmp_path, upstream):
    """GNU patch applies it, git am refuses it: patchkit applies it where GNU patch does, with
    the very bytes of the patch before the mailer."""
    patches = make_queue(tmp_path, upstream.path, ["0001-include-stddef", "0002-comment-on-device"])
    text = without_signature(patches[0].read_text())  # GNU patch would read `-- ` as a removed line
    assert text.endswith(" typedef uint32_t llama_state_seq_flags;\n \n")
    patches[0].write_text(text.removesuffix(" \n"))
    project, report, warnings = apply_queue_of(tmp_path, upstream.path, patches)
    assert [p.verdict for p in report.patches] == [Verdict.CLEAN, Verdict.CLEAN]
    assert warnings == ["0001-include-stddef.patch:21: hunk 1 of include/llama.h is one line short of its header's "
                        "count; read as the blank context line upstream has there"]
    # The commit is the one git am makes of the patch as it was written.
    intact = tmp_path / "intact.patch"
    intact.write_text(text)
    assert report.patches[0].commit == git_am(tmp_path, upstream.path, intact, master_date(upstream.path))
    gnu = tmp_path / "gnu"
    git.run(["clone", "--quiet", str(upstream.path), str(gnu)])
    subprocess.run(["patch", "-p1", "-F0", "--quiet", "-i", str(patches[0])], cwd=gnu, check=True)
    assert git.run(["show", f"{report.patches[0].commit}:{HEADER}"], cwd=project.output_dir) + "\n" == \
        (gnu / HEADER).read_text()


# -- every command that applies the queue ----------------------------------------------------------

def test_nightly_verify_export_and_dist_name_the_malformed_patch(tmp_path, upstream):
    """Each command keeps its rule for a patch that is not good: nightly and verify exit 1 (the
    nightly does not bisect it: no upstream commit made it unreadable), export and dist refuse
    the queue (exit 2, as for a conflict). No traceback anywhere."""
    patches = make_queue(tmp_path, upstream.path, ["0001-include-stddef", "0002-comment-on-device", "0003-native-off"])
    project = Project.load(write_project(tmp_path / "fork", str(upstream.path), patches))
    assert run_apply(project, ApplyOptions(spec="upstream@HEAD", check=False, update_lock=True)).lock_updated
    bad = project.patches_dir / "0001-include-stddef.patch"
    bad.write_text(no_from(bad.read_text()))
    why = "0001-include-stddef.patch:1: missing or malformed author"

    verify = run_cli("verify", "--no-fetch", cwd=project.root)
    assert verify.returncode == 1 and "Traceback" not in verify.stderr, verify.stderr
    assert "0001-include-stddef.patch: malformed" in verify.stdout and why in verify.stdout

    for args in (["export", "quilt", str(tmp_path / "out"), "--no-fetch"],
                 ["dist", "-o", str(tmp_path / "out" / "src.tar"), "--no-fetch"]):
        proc = run_cli(*args, cwd=project.root)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert f"0001-include-stddef.patch is malformed: {why}" in proc.stderr
        assert not (tmp_path / "out").exists()

    reports = tmp_path / "reports"
    night = run_cli("nightly", "--no-fetch", "--report-dir", str(reports), cwd=project.root)
    assert night.returncode == 1 and "Traceback" not in night.stderr, night.stderr
    report = json.loads((reports / "report.json").read_text())
    assert_matches_schema(report)
    assert [p["verdict"] for p in report["apply"]["patches"]] == ["malformed", "blocked", "clean"]
    malformed, blocked = report["findings"]
    assert (malformed["kind"], malformed["culprit"], malformed["probes"]) == ("malformed", None, 0)
    assert malformed["detail"].startswith(f"not bisected: {why}")
    assert (blocked["kind"], blocked["blocked_by"]) == ("blocked", "0001-include-stddef.patch")
    assert not report["lock_moved"]
