"""A hunk that begins at its function's first line, after upstream moved that function whole (issue
17): the section after `@@` names the function above the hunk, which the move left behind, and a
3-way merge conflicts on every move. The base's whole function, found once and unchanged in
upstream's file, is the witness that the place is the patch's own; where it is not whole (a variant
whose body changed, a copy beside it), the place stays refused."""

from __future__ import annotations

import pytest

from git_am import git_am_3
from patchkit.apply import Verdict
from test_apply_edges import apply, commit, make_patches, replace, upstream_repo

HEAD = "#include \"ggml.h\"\n\n"
SCALE = """\
// scale_rows: the rows of one step
static int scale_rows(const struct ggml_tensor * t) {
    int n_rows = t->ne[1] + 3;
    int n_cols = t->ne[0] * 2;
    return n_rows + n_cols;
}
"""
COUNT = """\
// count_heads: the heads of one step
static int count_heads(const struct ggml_tensor * t) {
    int n_head = t->ne[2] - 1;
    int n_seq = t->ne[3] - 7;
    int n_ctx = t->ne[0] / 4;
    return n_head + n_seq + n_ctx;
}
"""
TAIL = """\
// tail_rows: the last rows
static int tail_rows(const struct ggml_tensor * t) {
    return t->ne[1] - 1;
}
"""
SEQ, SEQ_PATCHED = "    int n_seq = t->ne[3] - 7;\n", "    int n_seq = t->ne[3] - 7 + 1; // keep one for the bos\n"


def _file(*functions: str) -> str:
    return HEAD + "\n".join(functions)


@pytest.mark.parametrize("path", ["src/llama-heads.cpp", "ggml/src/ggml-metal/heads.metal"])
def test_a_function_moved_whole_takes_the_hunk_that_begins_at_its_first_line(tmp_path, path):
    """Upstream moves count_heads above scale_rows; the hunk's pre-image begins at count_heads'
    comment and its section names scale_rows, now below it. git am -3 offsets it there; so does
    patchkit, as an offset, with the same bytes."""
    upstream = upstream_repo(tmp_path, {path: _file(SCALE, COUNT, TAIL)})
    (patch,) = make_patches(tmp_path, upstream, [("seq", replace(path, SEQ, SEQ_PATCHED))])
    assert "@@ static int scale_rows(" in patch.read_text()
    commit(upstream, {path: _file(COUNT, SCALE, TAIL)}, "heads : count before scale")

    project, report = apply(tmp_path / "fork", upstream, [patch])
    (result,) = report.patches
    assert result.verdict is Verdict.OFFSET, result.hunks
    expected = _file(COUNT.replace(SEQ, SEQ_PATCHED), SCALE, TAIL)
    assert (project.output_dir / path).read_text() == expected
    am = git_am_3(upstream, patch, tmp_path / "am")
    assert am is not None and (am / path).read_text() == expected


@pytest.mark.parametrize("path", ["src/llama-heads.cpp", "ggml/src/ggml-metal/heads.metal"])
def test_a_same_named_variant_is_not_the_moved_function(tmp_path, path):
    """Two variants of count_heads under #if; the patch changes the first. Upstream reorders and
    changes the first variant's lines around the patch's: its pre-image is found only in the second
    variant, same name, same first line. The first is no longer whole, so the second is no witness:
    refused, where git am -3 puts the change into the variant the patch never touched."""
    other = COUNT.replace("    int n_ctx = t->ne[0] / 4;\n", "    int n_ctx = t->ne[0] / 8;\n")
    base = _file(SCALE, "#if defined(GGML_USE_WIDE)\n" + COUNT + "#else\n" + other + "#endif\n", TAIL)
    upstream = upstream_repo(tmp_path, {path: base})
    edit = replace(path, SEQ + "    int n_ctx = t->ne[0] / 4;\n", SEQ_PATCHED + "    int n_ctx = t->ne[0] / 4;\n")
    (patch,) = make_patches(tmp_path, upstream, [("seq", edit)])
    changed = COUNT.replace("    int n_head = t->ne[2] - 1;\n", "    int n_head = t->ne[2] - 2;\n")
    changed = changed.replace("    int n_ctx = t->ne[0] / 4;\n", "    int n_ctx = t->ne[0] / 8;\n")
    moved = _file("#if defined(GGML_USE_WIDE)\n" + changed + "#else\n" + other + "#endif\n", SCALE, TAIL)
    commit(upstream, {path: moved}, "heads : wide heads first")

    project, report = apply(tmp_path / "fork", upstream, [patch])
    (result,) = report.patches
    assert result.verdict is Verdict.CONFLICT and result.commit is None
    assert (project.output_dir / path).read_text() == moved
    am = git_am_3(upstream, patch, tmp_path / "am")
    assert am is None or (am / path).read_text() != moved  # git am -3 changes the other variant

