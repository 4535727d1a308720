"""DEP-3 headers from a patch's own fields: paragraphs as deb822 continuation lines, trailers
as fields, nothing invented; quilt applies the result with fuzz 0."""

from __future__ import annotations

from pathlib import Path

from conftest import git_identity, write_project
from export_helpers import checkout, run, tool, tree_id
from patchkit import git
from patchkit.export.formats import Format
from patchkit.export.run import ExportOptions, run_export
from patchkit.project import Project

MESSAGE = """docs : packaging notes

Why distributions build it this way.

  An indented example line,
and a second paragraph.
Note: a colon in prose, not a trailer.

Bug: https://github.com/ggml-org/llama.cpp/issues/1
Applied-Upstream: 1.2, https://github.com/ggml-org/llama.cpp/commit/0123abcd
Reviewed-by: Ann Reviewer <ann@example.invalid>
Reviewed-by: Bo Reviewer <bo@example.invalid>
"""


def notes_patch(tmp_path: Path, upstream: Path) -> Path:
    work = tmp_path / "notes-work"
    git.run(["clone", "--quiet", str(upstream), str(work)])
    (work / "docs").mkdir(exist_ok=True)
    (work / "docs" / "packaging.md").write_text("# Packaging\n\nUse the exported patches.\n")
    git.run(["add", "-A"], cwd=work)
    git.run(["commit", "--quiet", "-F", "-"], cwd=work, input=MESSAGE,
            env=git_identity("Zoë Packager", "zoe@example.invalid"))
    patch = tmp_path / "packaging-notes.patch"
    patch.write_text(git.run(["format-patch", "-1", "--stdout", "--full-index"], cwd=work) + "\n")
    return patch


def test_paragraphs_and_trailers_become_dep3_fields(tmp_path, upstream):
    project = Project.load(write_project(tmp_path / "fork", str(upstream.path), [notes_patch(tmp_path, upstream.path)]))
    out = tmp_path / "out"
    report = run_export(project, ExportOptions(Format.DEBIAN, out, "upstream@master"))
    header, _, diff = (out / "patches" / "packaging-notes.patch").read_text().partition("\n---\n")
    assert header == ("Description: docs : packaging notes\n"
                      " Why distributions build it this way.\n"
                      " .\n"
                      "   An indented example line,\n"
                      " and a second paragraph.\n"
                      " Note: a colon in prose, not a trailer.\n"
                      "Author: Zoë Packager <zoe@example.invalid>\n"
                      "Bug: https://github.com/ggml-org/llama.cpp/issues/1\n"
                      "Applied-Upstream: 1.2, https://github.com/ggml-org/llama.cpp/commit/0123abcd\n"
                      "Reviewed-by: Ann Reviewer <ann@example.invalid>\n"
                      "Reviewed-by: Bo Reviewer <bo@example.invalid>")  # every reviewer, not the last one
    assert "Origin" not in header and "Forwarded" not in header and "Last-Update" not in header
    assert diff.startswith("diff --git a/docs/packaging.md b/docs/packaging.md\nnew file mode 100644\n")
    work = checkout(upstream.path, report.upstream_commit, tmp_path / "src")
    run([tool("quilt"), "push", "-a", "--fuzz=0"], work, {"QUILT_PATCHES": str(out / "patches")})
    assert tree_id(work) == report.tree
