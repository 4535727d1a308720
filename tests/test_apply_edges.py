"""The apply on small upstreams written here: blockers per hunk, binary patches, paths through
symbolic links, and mail headers that are not UTF-8."""

from __future__ import annotations

import subprocess
import zlib
from pathlib import Path
from typing import Callable

from conftest import git_identity, write_project
from patchkit import git
from patchkit.apply import Verdict
from patchkit.binary import blob_id
from patchkit.project import Project
from patchkit.pipeline import ApplyOptions, run_apply

Files = dict[str, "str | bytes"]


def commit(repo: Path, files: Files, message: str, links: dict[str, str] | None = None) -> None:
    for path, content in files.items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
    for path, dest in (links or {}).items():
        (repo / path).symlink_to(dest)
    git.run(["add", "-A"], cwd=repo)
    git.run(["commit", "--quiet", "-m", message], cwd=repo, env=git_identity())


def upstream_repo(tmp_path: Path, files: Files, links: dict[str, str] | None = None) -> Path:
    repo = tmp_path / "upstream"
    git.run(["init", "--quiet", "--initial-branch=master", str(repo)])
    commit(repo, files, "base", links)
    return repo


def make_patches(tmp_path: Path, upstream: Path, edits: list[tuple[str, Callable[[Path], None]]]) -> list[Path]:
    """One format-patch (binary, full index) per edit, each on top of the ones before."""
    work = tmp_path / "work"
    git.run(["clone", "--quiet", str(upstream), str(work)])
    patches = []
    for name, edit in edits:
        edit(work)
        git.run(["add", "-A"], cwd=work)
        git.run(["commit", "--quiet", "-m", name], cwd=work, env=git_identity())
        out = tmp_path / f"{name}.patch"
        out.write_bytes(subprocess.run(["git", "format-patch", "-1", "--stdout", "--binary", "--full-index"],
                                       cwd=work, check=True, capture_output=True).stdout)
        patches.append(out)
    return patches


def apply(tmp_path: Path, upstream: Path, patches: list[Path]):
    project = Project.load(write_project(tmp_path / "fork", str(upstream), patches))
    return project, run_apply(project, ApplyOptions(spec="upstream@HEAD", check=False))


def lines(n: int, tag: str) -> str:
    return "".join(f"{tag} line {i}\n" for i in range(n))


def replace(path: str, old: str, new: str) -> Callable[[Path], None]:
    def edit(work: Path) -> None:
        target = work / path
        target.write_text(target.read_text().replace(old, new, 1))
    return edit


def test_blocked_is_decided_per_hunk_and_names_each_blocker(tmp_path):
    upstream = upstream_repo(tmp_path, {"x.c": lines(30, "x"), "y.c": lines(30, "y"), "z.c": lines(30, "z")})
    patches = make_patches(tmp_path, upstream, [
        ("patch-x", replace("x.c", "x line 5\n", "x line 5 patched\n")),
        ("patch-y", replace("y.c", "y line 20\n", "y line 20 patched\n")),
        ("needs-both", lambda w: (replace("x.c", "x line 5 patched\n", "x line 5 again\n")(w),
                                  replace("y.c", "y line 20 patched\n", "y line 20 again\n")(w),
                                  replace("z.c", "z line 9\n", "z line 9 changed\n")(w))),
    ])
    # Upstream breaks both earlier patches' sites, and the z.c site of the third.
    commit(upstream, {"x.c": lines(30, "x").replace("x line 5\n", "x line five\n"),
                      "y.c": lines(30, "y").replace("y line 20\n", "y line twenty\n"),
                      "z.c": lines(30, "z").replace("z line 9\n", "z line nine\n")}, "upstream moves on")
    _, report = apply(tmp_path, upstream, patches)
    x, y, third = report.patches
    assert (x.verdict, y.verdict, third.verdict) == (Verdict.CONFLICT, Verdict.CONFLICT, Verdict.BLOCKED)
    assert third.blocked_by == ("patch-x.patch", "patch-y.patch")
    by_file = {h.file: h for h in third.hunks}
    assert (by_file["x.c"].verdict, by_file["x.c"].blocked_by) == (Verdict.BLOCKED, "patch-x.patch")
    assert (by_file["y.c"].verdict, by_file["y.c"].blocked_by) == (Verdict.BLOCKED, "patch-y.patch")
    assert (by_file["z.c"].verdict, by_file["z.c"].blocked_by) == (Verdict.CONFLICT, None)


PNG = bytes(range(256)) * 40


def test_binary_patches_literal_and_delta_with_exact_bytes(tmp_path):
    changed = bytearray(PNG)
    changed[100:104] = b"\0\1\2\3"  # a small change: git writes a delta
    upstream = upstream_repo(tmp_path, {"logo.png": PNG, "README": "r\n"})
    patches = make_patches(tmp_path, upstream, [
        ("icon", lambda w: (w / "icon.bin").write_bytes(zlib.compress(PNG))),  # new file: literal
        ("logo", lambda w: (w / "logo.png").write_bytes(bytes(changed))),
    ])
    assert b"delta " in patches[1].read_bytes() and b"literal " in patches[0].read_bytes()
    project, report = apply(tmp_path, upstream, patches)
    assert [p.verdict for p in report.patches] == [Verdict.CLEAN, Verdict.CLEAN] and report.exit_code == 0
    assert (project.output_dir / "logo.png").read_bytes() == bytes(changed)
    assert (project.output_dir / "icon.bin").read_bytes() == zlib.compress(PNG)


def test_paths_git_quotes_are_applied_where_they_name(tmp_path):
    """git writes `"a/caf\\303\\251.md"` for a path with bytes outside printable ASCII."""
    upstream = upstream_repo(tmp_path, {"docs/café.md": lines(3, "c"), 'tab\tand"quote.txt': "t\n"})
    patches = make_patches(tmp_path, upstream, [
        ("accents", replace("docs/café.md", "c line 1\n", "c line one\n")),
        ("escapes", replace('tab\tand"quote.txt', "t\n", "u\n")),
    ])
    assert b'"a/docs/caf\\303\\251.md"' in patches[0].read_bytes()
    project, report = apply(tmp_path, upstream, patches)
    assert [p.verdict for p in report.patches] == [Verdict.CLEAN, Verdict.CLEAN]
    assert [h.file for p in report.patches for h in p.hunks] == ["docs/café.md", 'tab\tand"quote.txt']
    assert (project.output_dir / "docs/café.md").read_text() == "c line 0\nc line one\nc line 2\n"
    assert (project.output_dir / 'tab\tand"quote.txt').read_text() == "u\n"


def test_binary_pre_image_must_match_and_a_present_post_image_is_already_applied(tmp_path):
    changed = PNG[:-1] + b"!"
    upstream = upstream_repo(tmp_path, {"logo.png": PNG})
    (patch,) = make_patches(tmp_path, upstream, [("logo", lambda w: (w / "logo.png").write_bytes(changed))])
    commit(upstream, {"logo.png": PNG + b"more"}, "upstream redraws the logo")
    _, report = apply(tmp_path / "a", upstream, [patch])
    (hunk,) = report.patches[0].hunks
    assert hunk.verdict is Verdict.CONFLICT and blob_id(PNG + b"more")[:12] in hunk.detail
    commit(upstream, {"logo.png": changed}, "upstream takes the new logo")
    _, report = apply(tmp_path / "b", upstream, [patch])
    assert report.patches[0].verdict is Verdict.ALREADY_APPLIED


def test_a_patch_never_writes_through_a_symbolic_link(tmp_path):
    upstream = upstream_repo(tmp_path, {"real/a.c": "a\n"}, links={"docs": "real"})
    work_patches = make_patches(tmp_path, upstream, [
        ("link", lambda w: (w / "assets").symlink_to("real")),
    ])
    # Patches written by hand: git itself never writes a path below a symbolic link.
    below_docs = tmp_path / "below-docs.patch"
    below_docs.write_text(NEW_FILE.format(path="docs/new.c"))
    below_assets = tmp_path / "below-assets.patch"
    below_assets.write_text(NEW_FILE.format(path="assets/new.c"))
    _, report = apply(tmp_path, upstream, [below_docs, *work_patches, below_assets])
    first, link, last = report.patches
    assert first.verdict is Verdict.CONFLICT and last.verdict is Verdict.CONFLICT
    assert link.verdict is Verdict.CLEAN
    assert first.hunks[0].detail.startswith("docs is a symbolic link in the tree the patch applies to")
    assert last.hunks[0].detail.startswith("assets is a symbolic link")


NEW_FILE = """From: A U Thor <author@example.org>
Date: Mon, 2 Nov 2026 10:00:00 +0100
Subject: [PATCH] add a file

---
diff --git a/{path} b/{path}
new file mode 100644
index 0000000..78981922
--- /dev/null
+++ b/{path}
@@ -0,0 +1 @@
+a
"""


def test_headers_that_are_not_utf8_are_decoded_as_mail_is(tmp_path):
    upstream = upstream_repo(tmp_path, {"x.c": lines(10, "x")})
    (patch,) = make_patches(tmp_path, upstream, [("p", replace("x.c", "x line 3\n", "x line 3 patched\n"))])
    text = patch.read_bytes()
    text = text.replace(b"From: Fork Dev <dev@fork.invalid>", "From: Jos\u00e9 M\u00fcller <dev@fork.invalid>".encode("latin-1"))
    text = text.replace(b"Subject: [PATCH] p", "Subject: [PATCH] r\u00e9sum\u00e9 fix".encode("latin-1"))
    patch.write_bytes(text)
    project, report = apply(tmp_path, upstream, [patch])
    assert report.exit_code == 0
    log = git.run(["log", "-1", "--format=%an|%s"], cwd=project.output_dir)
    assert log == "Jos\u00e9 M\u00fcller|r\u00e9sum\u00e9 fix"


def git_base85(data: bytes) -> str:
    """git's binary patch lines: a length character, then base85 in groups of 5."""
    import base64

    lines = []
    for at in range(0, len(data), 52):
        chunk = data[at:at + 52]
        size = chr(ord("A") + len(chunk) - 1) if len(chunk) <= 26 else chr(ord("a") + len(chunk) - 27)
        lines.append(size + base64.b85encode(chunk + b"\0" * (-len(chunk) % 4)).decode())
    return "\n".join(lines)


def test_a_binary_creation_that_is_a_delta_is_a_conflict_not_a_crash(tmp_path):
    upstream = upstream_repo(tmp_path, {"README": "r\n"})
    delta = zlib.compress(b"\x05\x03\x03abc")  # a delta against a 5-byte file: no file is made from it
    patch = tmp_path / "icon.patch"
    patch.write_text("From: A <a@b.c>\nDate: Mon, 2 Nov 2026 10:00:00 +0100\nSubject: icon\n---\n"
                     "diff --git a/icon.bin b/icon.bin\nnew file mode 100644\n"
                     "index 0000000000000000000000000000000000000000..d5d0b8b4c4c9e936890870f6799cfbb5ba984470\n"
                     f"GIT binary patch\ndelta 6\n{git_base85(delta)}\n\n")
    _, report = apply(tmp_path, upstream, [patch])
    (hunk,) = report.patches[0].hunks
    assert hunk.verdict is Verdict.CONFLICT and "does not make a file" in hunk.detail
