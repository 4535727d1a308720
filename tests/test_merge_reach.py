"""The 3-way merge's reach (issue 17, classes 3 and 5) and its one witness rule. Each fixture is
a patch made with `git format-patch --full-index` at upstream's first commit (so its index blob
is a base), applied after upstream moved on; where git am -3 places it right, patchkit gives the
same bytes, and where git am -3 places it wrong, patchkit refuses."""

from __future__ import annotations

import pytest

from git_am import git_am_3
from patchkit.apply import Verdict
from test_apply_edges import apply, commit, make_patches, replace, upstream_repo

# Two methods whose bodies are the same lines: a hunk in one of them matches the other too.
METHODS = """\
#import "GGMLQueue.h"

@implementation GGMLQueue

- (void)drainEncoder {
    [self lock];
    NSInteger count = self.pending;
    if (count > 0) {
        [self prepare];
    }
    [self.queue flush];
    [self unlock];
}

- (void)drainDecoder {
    [self lock];
    NSInteger count = self.pending;
    if (count > 0) {
        [self prepare];
    }
    [self.queue flush];
    [self unlock];
}

@end
"""
PREPARE = "        [self prepare];\n"
PREPARED = "        [self prepare:YES];\n"


@pytest.mark.parametrize("path", ["ggml/src/ggml-metal/ggml-queue.m", "docs/queue.txt"])
def test_a_hunk_the_line_steps_moved_is_refused_when_the_merge_conflicts(tmp_path, path):
    """Upstream edits the line next to the patch's change in the first method: the hunk's context
    is found only in the twin, which the line steps take (git am -3 too: its `git apply` step
    offsets the hunk there). The merge from the patch's base, the one witness of where the base's
    lines went, conflicts: the twin is not known to be the place, so the hunk is refused."""
    upstream = upstream_repo(tmp_path, {path: METHODS})
    (patch,) = make_patches(tmp_path, upstream, [("prepare-all", replace(path, PREPARE, PREPARED))])
    assert "index " in patch.read_text()
    edited = METHODS.replace("    if (count > 0) {\n", "    if (count > 0 && self.ready) {\n", 1)
    commit(upstream, {path: "// upstream: the queue drains both ways\n" + edited}, "queue : drain when ready")

    project, report = apply(tmp_path / "fork", upstream, [patch])
    (result,) = report.patches
    assert result.verdict is Verdict.CONFLICT and result.commit is None
    (hunk,) = result.hunks
    assert "3-way merge" in hunk.detail and "conflicts" in hunk.detail
    assert (project.output_dir / path).read_text() == "// upstream: the queue drains both ways\n" + edited
    # git am -3 puts the change into the twin: the method the patch never touched.
    am = git_am_3(upstream, patch, tmp_path / "am")
    assert am is not None
    assert (am / path).read_text() == "// upstream: the queue drains both ways\n" + \
        edited[::-1].replace(PREPARE[::-1], PREPARED[::-1], 1)[::-1]


CONTEXT_PATH = "src/llama-context.cpp"
CONTEXT = """\
#include "llama-context.h"
#include "llama-impl.h"
#include "llama-io.h"
#include "llama-model.h"

#include <cstring>
#include <stdexcept>

static int64_t n_outputs_max(const llama_context & ctx) {
    int64_t n = ctx.n_outputs;
    if (n > 512) {
        n = 512;
    }
    return n;
}

static int64_t n_batch_max(const llama_context & ctx) {
    int64_t n = ctx.n_batch;
    if (n > 2048) {
        n = 2048;
    }
    return n;
}

int64_t llama_context::n_seq_max() const {
    return cparams.n_seq_max;
}
"""
MMAP = ('#include "llama-io.h"\n', '#include "llama-io.h"\n#include "llama-mmap.h"\n')
UBATCH = """\
// n_ubatch_max: a ubatch never holds more than a batch
static int64_t n_ubatch_max(const llama_context & ctx) {
    return std::min(ctx.n_ubatch, n_batch_max(ctx));
}

"""
NEW_FUNCTION = ("static int64_t n_batch_max(", UBATCH + "static int64_t n_batch_max(")
SEQ = ("    return cparams.n_seq_max;\n", "    return std::max<int64_t>(cparams.n_seq_max, 1);\n")
# Upstream: an include two lines above the patch's, and the batch's first line edited two lines
# below the new function: both hunks' context broken, neither next to the patch's lines.
UPSTREAM = (('#include "llama-context.h"\n', '#include "llama-context.h"\n#include "llama-graph.h"\n'),
            ("    int64_t n = ctx.n_batch;\n", "    int64_t n = ctx.n_batch_eff;\n"))


def edited(text: str, *changes: tuple[str, str]) -> str:
    for old, new in changes:
        assert old in text
        text = text.replace(old, new, 1)
    return text


def test_a_merge_adding_an_include_and_a_function_is_the_patchs_own_change(tmp_path):
    """The patch adds an include at the top, a new function between two others, and changes a
    line of a third function. The merge places the include and the new function where one side
    of each hunk's context is found and nowhere else, in the scope they have in the patch's
    post-image (file scope, the new function itself): the patch's own change, as git am -3 has it."""
    upstream = upstream_repo(tmp_path, {CONTEXT_PATH: CONTEXT})
    (patch,) = make_patches(tmp_path, upstream, [("ubatch", lambda w: (w / CONTEXT_PATH).write_text(
        edited(CONTEXT, MMAP, NEW_FUNCTION, SEQ)))])
    commit(upstream, {CONTEXT_PATH: edited(CONTEXT, *UPSTREAM)}, "context : the effective batch")

    project, report = apply(tmp_path / "fork", upstream, [patch])
    (result,) = report.patches
    assert [(h.verdict, h.detail.split(" from ")[0]) for h in result.hunks] == [
        (Verdict.MERGED, "3-way merge"), (Verdict.MERGED, "3-way merge"), (Verdict.OFFSET, "")]
    want = edited(CONTEXT, *UPSTREAM, MMAP, NEW_FUNCTION, SEQ)
    assert (project.output_dir / CONTEXT_PATH).read_text() == want
    am = git_am_3(upstream, patch, tmp_path / "am")
    assert am is not None and (am / CONTEXT_PATH).read_text() == want


KERNEL_PATH = "ggml/src/ggml-cpu/ops.c"
HELPER = "static int ggml_conv_2d_packed_tile(void) {\n    return 32;\n}\n\n"


def kernel(name: str, extra: str = "") -> str:
    return f"""\
// conv_2d_packed: the batch of one rows step
static void ggml_compute_forward_conv_2d_packed{name}(struct ggml_tensor * dst) {{
    const int64_t n_cols = dst->ne[1] / 3;
    const int64_t n_chunks = dst->ne[3] / 4;
    if (n_chunks > 128) {{
        n_chunks = 128;
    }}
    const int64_t n_embd = dst->ne[1] - 1;
{extra}    dst->op_params[0] = (int32_t) n_chunks;
}}

"""


def ops(*kernels: str) -> str:
    return '#include "ops.h"\n\n' + kernel("_q4") + "".join(kernels) + kernel("_q8")


LOGGED = '    GGML_LOG_DEBUG("%s: packed\\n", __func__);\n'


def test_a_function_split_into_twins_is_no_rename_the_merge_may_follow(tmp_path):
    """Upstream renames the patch's function in place to `_bf16`, adds an `_f16` copy after it
    and a helper after that. The function's line is the one line replaced there, as in a rename,
    and the merge puts the change into `_bf16`; but a twin holds the hunk's lines too, so the
    rename does not confirm the merge's place. There is no right place: refused (git am -3
    writes the change into the first twin)."""
    upstream = upstream_repo(tmp_path, {KERNEL_PATH: ops(kernel(""))})
    (patch,) = make_patches(tmp_path, upstream, [("log-packed", lambda w: (w / KERNEL_PATH).write_text(
        ops(kernel("", LOGGED))))])
    split = ops(kernel("_bf16"), kernel("_f16"), HELPER)
    commit(upstream, {KERNEL_PATH: split}, "ggml-cpu : packed conv per type")

    project, report = apply(tmp_path / "fork", upstream, [patch])
    (result,) = report.patches
    (hunk,) = result.hunks
    assert result.verdict is Verdict.CONFLICT and result.commit is None
    assert "in `ggml_compute_forward_conv_2d_packed_bf16` (by a C++ parse), where the patch changes " \
           "nothing; its hunks are in `ggml_compute_forward_conv_2d_packed`" in hunk.detail
    assert (project.output_dir / KERNEL_PATH).read_text() == split
    am = git_am_3(upstream, patch, tmp_path / "am")
    assert am is not None and (am / KERNEL_PATH).read_text() == ops(kernel("_bf16", LOGGED), kernel("_f16"), HELPER)


# Twins inside one function (C++: the parse names the same function for both), and twins in a
# text file with no section and no parse: in both, only the twins' order tells them apart.
STEP = """\
    if (ubatch.n_tokens > 0) {
        const int64_t n = ubatch.n_tokens;
        ggml_backend_sched_reset(sched);
        ggml_backend_sched_alloc(sched, n);
        ggml_backend_sched_compute(sched);
        ggml_backend_sched_sync(sched);
    }
"""
LOOP = "static void decode_all(llama_context & ctx, llama_ubatch & ubatch) {\n" + \
    "    prepare(ctx);\n" + STEP + "    encode(ctx);\n" + STEP + "    finish(ctx);\n}\n"
CPP_TWINS = ("src/llama-decode.cpp", '#include "llama-decode.h"\n\n' + LOOP)
NOTE = """\
  Build the backends:
    cmake -B build
    cmake -S . -B build -DGGML_NATIVE=OFF
    cmake --build build -j
    ctest --test-dir build
    cmake --install build
  Then run the tests.
"""
TXT_TWINS = ("docs/build-notes.txt", "- CPU:\n" + NOTE + "\n- CUDA:\n" + NOTE + "\n-- done\n")
TWINS = {"cpp, one function": (CPP_TWINS, "        ggml_backend_sched_alloc(sched, n);\n",
                               "        ggml_backend_sched_alloc(sched, n + 1);\n"),
         "txt, no section": (TXT_TWINS, "    cmake --build build -j\n", "    cmake --build build -j 8\n")}


def second_twin_patched(text: str, old: str, new: str) -> str:
    first = text.index(old)
    second = text.index(old, first + 1)
    return text[:second] + new + text[second + len(old):]


@pytest.mark.parametrize("kind", TWINS)
def test_an_ambiguous_hunk_takes_the_merges_place_where_the_twins_kept_their_order(tmp_path, kind):
    """The patch changes the second twin; upstream adds lines above both, so the recorded line
    holds neither and both match. The merge changes the second, and the base has the same two
    places with the patch's own the second: the merge's place is taken, as git am -3 has it."""
    (path, text), old, new = TWINS[kind]
    upstream = upstream_repo(tmp_path, {path: text})
    (patch,) = make_patches(tmp_path, upstream, [("second", lambda w: (w / path).write_text(
        second_twin_patched(text, old, new)))])
    grown = "// upstream: a header line\n// and another\n" + text
    commit(upstream, {path: grown}, "upstream : two lines on top")

    project, report = apply(tmp_path / "fork", upstream, [patch])
    (result,) = report.patches
    (hunk,) = result.hunks
    assert hunk.verdict is Verdict.MERGED and result.verdict is Verdict.MERGED, hunk.detail
    assert hunk.detail.endswith("the 2nd, as in its base")
    want = second_twin_patched(grown, old, new)
    assert (project.output_dir / path).read_text() == want
    am = git_am_3(upstream, patch, tmp_path / "am")
    assert am is not None and (am / path).read_text() == want


@pytest.mark.parametrize("kind", TWINS)
def test_an_ambiguous_hunk_stays_refused_where_upstream_added_a_twin(tmp_path, kind):
    """Upstream adds a line on top and a third copy of the twins' lines after the second. The
    merge changes the middle one of the three (the patch's own, here), but where a copy was
    added a merge aligning lines may take either of two identical ones, and nothing but the
    merge says which is the patch's: the base has two places, upstream three. Refused as
    ambiguous (git am -3's `git apply` step takes the one nearest the recorded line)."""
    (path, text), old, new = TWINS[kind]
    upstream = upstream_repo(tmp_path, {path: text})
    (patch,) = make_patches(tmp_path, upstream, [("second", lambda w: (w / path).write_text(
        second_twin_patched(text, old, new)))])
    twin = STEP if path.endswith(".cpp") else NOTE
    grown = "// upstream: a header line\n" + text[::-1].replace(twin[::-1], (twin + twin)[::-1], 1)[::-1]
    commit(upstream, {path: grown}, "upstream : once more")

    project, report = apply(tmp_path / "fork", upstream, [patch])
    (result,) = report.patches
    (hunk,) = result.hunks
    assert hunk.verdict is Verdict.AMBIGUOUS and result.commit is None, hunk.detail
    assert "the base does not confirm it" in hunk.detail and "(its base has 2)" in hunk.detail
    assert (project.output_dir / path).read_text() == grown


@pytest.mark.parametrize("how", ["renamed in one commit", "copied, then the original deleted"])
def test_a_rename_the_merge_follows_shows_in_one_upstream_commit(tmp_path, how):
    """Upstream's file ends the same both ways: the patch's function under a new name. Renamed
    in one commit, the merge's place in it is taken (as git am -3 takes it). A copy added in one
    commit and the original deleted in another is the twin that slid into a deleted function's
    place: no rename, refused (git am -3 writes the change into the copy)."""
    upstream = upstream_repo(tmp_path, {KERNEL_PATH: ops(kernel(""))})
    (patch,) = make_patches(tmp_path, upstream, [("log-packed", lambda w: (w / KERNEL_PATH).write_text(
        ops(kernel("", LOGGED))))])
    if how == "renamed in one commit":
        commit(upstream, {KERNEL_PATH: ops(kernel("_f16"))}, "ggml-cpu : packed conv is f16")
    else:
        commit(upstream, {KERNEL_PATH: ops(kernel(""), kernel("_f16"))}, "ggml-cpu : packed conv for f16")
        commit(upstream, {KERNEL_PATH: ops(kernel("_f16"))}, "ggml-cpu : drop the generic packed conv")
    want = ops(kernel("_f16", LOGGED))

    project, report = apply(tmp_path / "fork", upstream, [patch])
    (result,) = report.patches
    (hunk,) = result.hunks
    am = git_am_3(upstream, patch, tmp_path / "am")
    assert am is not None and (am / KERNEL_PATH).read_text() == want
    if how == "renamed in one commit":
        assert result.verdict is Verdict.MERGED, hunk.detail
        assert (project.output_dir / KERNEL_PATH).read_text() == want
    else:
        assert result.verdict is Verdict.CONFLICT and result.commit is None
        assert "in `ggml_compute_forward_conv_2d_packed_f16` (by a C++ parse), where the patch changes nothing" \
            in hunk.detail
        assert (project.output_dir / KERNEL_PATH).read_text() == ops(kernel("_f16"))


# One function reading two caches with the same loop: a fix to both copies is two hunks of one pre-image.
LOOP = """\
    for (uint32_t il = 0; il < n_layer; ++il) {
        ggml_tensor * t = layers[il].k;
        io.read_to(t->data, nbytes);
        offs += nbytes;
    }
    ggml_backend_synchronize(backend);
    io.check(offs);
    n_read++;
"""
STEPS = "".join(f"    state_step_{i}(io, cell_count);\n" for i in range(7))
CACHES = ('#include "llama-kv-cache.h"\n\nbool llama_kv_cache::state_read_data(llama_io_read_i & io, uint32_t cell_count) {\n'
          f"    // the keys\n{LOOP}{STEPS}    // the values\n{LOOP}    return true;\n}}\n")
OFFS, PADDED = "        offs += nbytes;\n", "        offs += GGML_PAD(nbytes, 32);\n"


def test_twins_a_patch_fixes_alike_are_told_apart_by_the_merge_and_the_base_order(tmp_path):
    """Both hunks match both copies; the merge from the patch's base changes both copies (it is
    the patch's whole change), and the base's twin order says which hunk is which: each is
    placed, as git am -3 places them (issue 25, shape 4: "the 3-way merge changed several")."""
    path = "src/llama-kv-cache-io.cpp"
    upstream = upstream_repo(tmp_path, {path: CACHES})
    (patch,) = make_patches(tmp_path, upstream, [("pad-offsets", lambda w: (w / path).write_text(
        CACHES.replace(OFFS, PADDED)))])
    grown = CACHES.replace('#include "llama-kv-cache.h"\n', '#include "llama-kv-cache.h"\n#include "llama-io.h"\n\n')
    commit(upstream, {path: grown}, "kv-cache : include the io header")
    project, report = apply(tmp_path / "fork", upstream, [patch])
    (result,) = report.patches
    assert [h.verdict for h in result.hunks] == [Verdict.MERGED, Verdict.MERGED], [h.detail for h in result.hunks]
    assert "the 2nd, as in its base" in result.hunks[1].detail
    want = grown.replace(OFFS, PADDED)
    assert (project.output_dir / path).read_text() == want
    am = git_am_3(upstream, patch, tmp_path / "am")
    assert am is not None and (am / path).read_text() == want
