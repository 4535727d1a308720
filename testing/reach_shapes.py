"""Issue 25's shapes for the reach benchmark: one small file each, written here (never copied from
llama.cpp), with the right result known by construction.

Each shape is a file at the queue's base, its later versions upstream, the patch's version of the
base, and the right result at the head: the same change made on the head's text (None: the patch
has no right place there, so a safe tool refuses; the head's own text: upstream adopted the patch,
so the right result changes nothing). Some are refused today where `git am -3` or GNU `patch -F2`
is right (a section renamed, invented or written by another tool's rule; a clean merge under
another section line; twins the exact base tells apart; a fuzz candidate its neighbours
corroborate; a hunk one line short; twins a patch fixes alike); the traps beside them have no
right place (the section still stands and the only match is in another function; the section's function deleted; the
change's site rewritten while fuzz finds twins far away) and must stay refused.

`build_shapes(dest)` writes the upstream (tag b1000: every shape's base; b1001, b1002: its later
versions) and the queue beside it (one patch per shape, in SHAPES' order).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from patchkit.fixture import EPOCH, Commit, fast_import, init_repo
from patchkit.git import run

BASE, HEAD = "b1000", "b1002"
_AUTHOR = "Ada Downstream <ada@downstream.invalid>"


@dataclass(frozen=True)
class Shape:
    name: str
    shows: str                  # the shape, in issue 25's words
    path: str
    base: str                   # the file at the queue's base
    upstream: tuple[str, str]   # the file at b1001 and at the head (b1002)
    patched: str                # the base with the patch
    at_head: str | None         # the right file at the head; None: no right place
    hand: bool = False          # a hand-written `diff -u` without index lines (a distribution's)
    trap: bool = False          # no right place at the head: any placement there is wrong
    # turns the written patch into the queue's (another tool's section, a hand edit)
    edit: Callable[[str], str] | None = field(default=None, compare=False)

    def expected(self, point: str) -> dict[str, str] | None:
        """{path: text} the patch changes at POINT, or None (no right place); {} when upstream adopted it."""
        if point == BASE:
            return {self.path: self.patched}
        if self.at_head is None:
            return None
        return {} if self.at_head == self.upstream[-1] else {self.path: self.at_head}


def _text(*parts: list[str] | str) -> str:
    lines: list[str] = []
    for p in parts:
        lines += [p] if isinstance(p, str) else p
    return "".join(ln + "\n" for ln in lines)


def _fn(sig: str, body: list[str]) -> list[str]:
    return [f"{sig} {{", *(f"    {b}" if b else "" for b in body), "}", ""]


def _filler(tag: str, n: int, size: int = 6) -> list[str]:
    """N C functions of our own, every line unique to TAG."""
    out: list[str] = []
    for i in range(n):
        body = [f"const int64_t n_{tag}_{i}_{k} = ctx->n_{tag}[{k}] + {i * 31 + k + 7};" for k in range(size)]
        out += _fn(f"static int64_t {tag}_helper_{i}(const struct {tag}_context * ctx)",
                   [*body, f"return n_{tag}_{i}_{size - 1};"])
    return out


def _sub(text: str, old: str, new: str, count: int = 1) -> str:
    """TEXT with OLD replaced by NEW, where OLD occurs exactly COUNT times (a fixture's own check)."""
    assert text.count(old) == count, f"{old!r} occurs {text.count(old)} times, not {count}"
    return text.replace(old, new)


def _sub_first(text: str, old: str, new: str) -> str:
    """TEXT with the first of several OLD replaced by NEW."""
    assert text.count(old) > 1, f"{old!r} has no twin"
    return text.replace(old, new, 1)


# --- the shapes ----------------------------------------------------------------------------------

def _renamed_section(merge: bool = False) -> Shape:
    """MERGE: upstream also edits a line of the hunk's context (not next to the change)."""
    path = f"ggml/src/ggml-metal/ggml-metal-device{'-merge' if merge else ''}.cpp"
    head = [f"// {path}: the reach shapes' Metal device (written for the benchmark)",
            '#include "ggml-metal-device.h"', ""]
    body = ["const char * src = ggml_metal_embedded_source();", "NSError * error = nil;",
            "dev->library = ggml_metal_compile(dev->mtl, src, &error);", "if (dev->library == nil) {",
            '    GGML_LOG_ERROR("%s: compile failed: %s\\n", __func__, ggml_metal_error_text(error));',
            "    return;", "}", "dev->has_bfloat = ggml_metal_supports_bfloat(dev->mtl);",
            "dev->has_simdgroup_mm = ggml_metal_supports_simdgroup_mm(dev->mtl);",
            "dev->use_residency_sets = true;", "dev->use_shared_buffers = dev->has_unified_memory;",
            'GGML_LOG_INFO("%s: loaded the library\\n", __func__);']
    base = _text(head, _filler("mdev", 3), _fn("static void ggml_metal_device_load_library(ggml_metal_device_t dev)",
                                                body), _filler("mlib", 3))
    # upstream renames it (a new signature, a value to return) and later adds helpers above it
    renamed = _sub(_sub(base, "static void ggml_metal_device_load_library(ggml_metal_device_t dev) {",
                        "ggml_metal_library_t ggml_metal_library_init(ggml_metal_device_t dev) {"),
                   "        return;\n", "        return NULL;\n")
    if merge:
        renamed = _sub(renamed, '__func__);\n}\n', '__func__);\n    return dev->library;\n}\n')
    moved = _sub(renamed, head[1] + "\n", head[1] + "\n" + _text(_filler("mdevnew", 2)))
    change = ("    dev->use_residency_sets = true;\n",
              '    dev->use_residency_sets = getenv("GGML_METAL_NO_RESIDENCY") == NULL;\n')
    if merge:
        return Shape("renamed-section-merge", "a clean 3-way merge under a function renamed upstream",
                     path, base, (renamed, moved), _sub(base, *change), _sub(moved, *change))
    return Shape("renamed-section", "a unique match under a function renamed upstream", path, base, (renamed, moved),
                 _sub(base, *change), _sub(moved, *change))


def _changed_signature() -> Shape:
    path = "ggml/src/ggml-metal/ggml-metal-context.cpp"
    head = [f"// {path}: the reach shapes' Metal context (written for the benchmark)",
            '#include "ggml-metal-context.h"', ""]
    body = ["ggml_metal_device_t dev = calloc(1, sizeof(struct ggml_metal_device));",
            "dev->mtl = ggml_metal_default_device();", "dev->n_cb = GGML_METAL_DEFAULT_N_CB;",
            "dev->max_buffer_size = ggml_metal_max_buffer(dev->mtl);",
            "dev->max_working_set = ggml_metal_recommended_working_set(dev->mtl);",
            "dev->has_unified_memory = ggml_metal_unified(dev->mtl);", "dev->debug_fusion = 0;",
            "dev->debug_graph = 0;", "return dev;"]
    base = _text(head, _filler("mctx", 2), _fn("ggml_metal_device_t ggml_metal_device_init(void)", body),
                 _filler("mctxb", 2))
    sig = _sub(base, "ggml_metal_device_init(void) {", "ggml_metal_device_init(int device) {")
    sig = _sub(sig, "dev->mtl = ggml_metal_default_device();", "dev->mtl = ggml_metal_device_at(device);")
    moved = _sub(sig, head[1] + "\n", head[1] + "\n" + _text(_filler("mctxnew", 1)))
    change = ("    dev->debug_fusion = 0;\n", '    dev->debug_fusion = ggml_metal_env_int("GGML_METAL_FUSION_DEBUG");\n')
    return Shape("changed-signature", "a unique match under a changed signature, f(void) -> f(int device)",
                 path, base, (sig, moved), _sub(base, *change), _sub(moved, *change))


def _invented_section() -> Shape:
    path = "ggml/src/ggml-vulkan/vk-queues.cpp"
    head = [f"// {path}: the reach shapes' Vulkan queues (written for the benchmark)", '#include "vk-queues.h"', ""]
    body = ["const uint32_t n = (uint32_t) props.size();", "for (uint32_t i = 0; i < n; i++) {",
            "    const vk::QueueFlags flags = props[i].queueFlags;",
            "    if ((flags & required) == required && !(flags & avoid)) {", "        return i;", "    }", "}",
            "for (uint32_t i = 0; i < n; i++) {", "    if ((props[i].queueFlags & required) == required) {",
            "        return i;", "    }", "}", "GGML_ABORT(\"no queue family with the required flags\");"]
    sig = ("static uint32_t ggml_vk_find_queue_family_index(std::vector<vk::QueueFamilyProperties> & props, "
           "const vk::QueueFlags & required, const vk::QueueFlags & avoid)")
    base = _text(head, _filler("vkq", 3), _fn(sig, body), _filler("vkqb", 2))
    moved = _sub(base, head[1] + "\n", head[1] + "\n" + _text(_filler("vkqnew", 1)))
    change = ("        if ((flags & required) == required && !(flags & avoid)) {\n",
              "        if ((flags & required) == required && !(flags & avoid) && props[i].queueCount > 0) {\n")

    def invent(patch: str) -> str:  # the packager wrote the section by hand: no such function ever existed
        start = patch.index("\n@@ ") + 1
        end = patch.index("\n", start)
        return patch[:start] + patch[start:end].split(" @@")[0] + " @@ static void vk_fix_queue_family(void)" + patch[end:]

    return Shape("invented-section", "a unique match under an invented section (hand-written, never in the history)",
                 path, base, (base, moved), _sub(base, *change), _sub(moved, *change), hand=True, edit=invent)


def _section_still_stands() -> Shape:
    path = "ggml/src/ggml-cpu/cpu-tables.c"
    head = [f"// {path}: the reach shapes' CPU tables (written for the benchmark)", '#include "cpu-tables.h"', ""]
    body = ["for (int i = 0; i < (1 << 16); ++i) {", "    union { uint16_t u16; ggml_fp16_t fp16; } u = { i };",
            "    table_f32_f16[i] = GGML_COMPUTE_FP16_TO_FP32(u.fp16);", "    table_gelu_f16[i] = gelu_f32(table_f32_f16[i]);",
            "    table_gelu_quick_f16[i] = gelu_quick_f32(table_f32_f16[i]);", "}", "tables_ready = true;"]
    base = _text(head, _filler("ctab", 2), _fn("static void ggml_cpu_init_tables(void)", body), _filler("ctabb", 2))
    # upstream copies the loop into a new function, then rewrites the patched line in the old one
    copy = _sub(base, "static int64_t ctabb_helper_0", _text(_fn("static void ggml_cpu_init_tables_bf16(void)", body))
                + "static int64_t ctabb_helper_0")
    rewritten = _sub_first(copy, "        table_gelu_f16[i] = gelu_f32(table_f32_f16[i]);\n",
                           "        table_gelu_f16[i] = gelu_f32_fast(table_f32_f16[i]);\n")
    change = ("        table_gelu_f16[i] = gelu_f32(table_f32_f16[i]);\n",
              "        table_gelu_f16[i] = GGML_FP32_TO_FP16(gelu_f32(table_f32_f16[i]));\n")
    return Shape("trap-section-stands", "trap: the section's function still stands (its site rewritten); "
                 "the only match is in another function", path, base, (copy, rewritten), _sub(base, *change),
                 None, trap=True)


def _section_deleted() -> Shape:
    path = "ggml/src/ggml-cpu/cpu-repack.c"
    head = [f"// {path}: the reach shapes' CPU repacking (written for the benchmark)", '#include "cpu-repack.h"', ""]
    body = ["const int64_t nb = ggml_nrows(t);", "for (int64_t b = 0; b < nb; b++) {",
            "    block_q4_0x4 * dst = (block_q4_0x4 *) t->data + b;", "    dst->d[0] = src[4 * b].d;",
            "    dst->d[1] = src[4 * b + 1].d;", "}", "return 0;"]
    base = _text(head, _filler("rep", 2), _fn("static int repack_q4_0_to_q4_0_4_bl(struct ggml_tensor * t)", body),
                 _filler("repb", 1), _fn("static int repack_q4_0_to_q4_0_8_bl(struct ggml_tensor * t)", body),
                 _filler("repc", 1))
    # upstream deletes the first function; its twin under another name stays
    gone = _sub(base, _text(_fn("static int repack_q4_0_to_q4_0_4_bl(struct ggml_tensor * t)", body)), "")
    change = ("        dst->d[1] = src[4 * b + 1].d;\n",
              "        dst->d[1] = src[4 * b + 1].d;\n        dst->d[2] = src[4 * b + 2].d;\n")
    return Shape("trap-section-deleted", "trap: the section's function deleted upstream; its twin under "
                 "another name stays", path, base, (gone, gone), _sub_first(base, *change), None, trap=True)


def _metal_instantiations() -> Shape:
    path = "ggml/src/ggml-metal/ggml-metal-ops.metal"
    argsort = _fn("kernel void kernel_argsort_f32_i32(\n        device const float * x,\n        device int32_t * dst,\n"
                  "        constant int64_t & ncols,\n        uint tid [[thread_position_in_grid]])",
                  ["const float v = x[tid];", "int32_t rank = 0;", "for (int64_t j = 0; j < ncols; ++j) {",
                   "    rank += x[j] < v;", "}", "dst[tid] = rank;"])
    relu = ["kernel void kernel_leaky_relu_f32(", "        device const float * src0,", "        device float * dst,",
            "        constant float & slope,", "        uint tpig [[thread_position_in_grid]]) {",
            "    const float x = src0[tpig];", "    dst[tpig] = x > 0.0f ? x : x * slope;", "}", ""]
    base = _text("#include <metal_stdlib>", "using namespace metal;", "",
                 f"// {path}: the reach shapes' kernels (written for the benchmark)", "",
                 argsort, relu, _fn("kernel void kernel_sqr_f32(device const float * src0, device float * dst, "
                                    "uint tpig [[thread_position_in_grid]])", ["dst[tpig] = src0[tpig] * src0[tpig];"]))
    inst = _text('template [[host_name("kernel_argsort_f32_i32_asc")]]  kernel argsort_t kernel_argsort_f32_i32<SORT_ASC>;',
                 'template [[host_name("kernel_argsort_f32_i32_desc")]] kernel argsort_t kernel_argsort_f32_i32<SORT_DESC>;', "")
    added = _sub(base, "}\n\nkernel void kernel_leaky_relu_f32(", "}\n\n" + inst + "kernel void kernel_leaky_relu_f32(")
    change = ("kernel void kernel_leaky_relu_f32(\n",
              "kernel void kernel_leaky_relu_f32(\n        constant ggml_metal_kargs_leaky_relu & args,\n")
    return Shape("metal-instantiations", "a clean merge under template instantiations added at column 0 between kernels",
                 path, base, (added, added), _sub(base, *change), _sub(added, *change))


def _header_declarations() -> Shape:
    path = "ggml/include/ggml-backend-reg.h"
    decls = ["GGML_API size_t ggml_backend_reg_count(void);",
             "GGML_API ggml_backend_reg_t ggml_backend_reg_get(size_t index);",
             "GGML_API ggml_backend_reg_t ggml_backend_reg_by_name(const char * name);", "",
             "GGML_API size_t ggml_backend_dev_count(void);",
             "GGML_API ggml_backend_dev_t ggml_backend_dev_get(size_t index);",
             "GGML_API ggml_backend_dev_t ggml_backend_dev_by_name(const char * name);",
             "GGML_API ggml_backend_dev_t ggml_backend_dev_by_type(enum ggml_backend_dev_type type);", "",
             "GGML_API void ggml_backend_load_all(void);", "GGML_API void ggml_backend_unload(ggml_backend_reg_t reg);",
             "GGML_API void ggml_backend_device_register(ggml_backend_dev_t device);", ""]
    base = _text("#pragma once", "", '#include "ggml.h"', "", "// the device registry (written for the reach benchmark)",
                 "typedef struct ggml_backend_reg * ggml_backend_reg_t;",
                 "typedef struct ggml_backend_dev * ggml_backend_dev_t;", "", decls)
    # upstream adds a group of declarations under a typedef, and edits the hunk's first context line
    grown = _sub(base, "GGML_API ggml_backend_dev_t ggml_backend_dev_by_type(enum ggml_backend_dev_type type);\n",
                 _text("", "// devices by their properties", "typedef bool (*ggml_backend_dev_filter_t)(ggml_backend_dev_t dev);",
                       "GGML_API size_t ggml_backend_dev_count_matching(ggml_backend_dev_filter_t filter);",
                       "GGML_API ggml_backend_dev_t ggml_backend_dev_by_type(enum ggml_backend_dev_type type, size_t index);"))
    change = ("GGML_API void ggml_backend_load_all(void);\n",
              "GGML_API void ggml_backend_load_all(void);\nGGML_API void ggml_backend_load_all_from_path(const char * dir_path);\n")
    return Shape("header-declarations", "a clean merge among a header's file-scope declarations",
                 path, base, (grown, grown), _sub(base, *change), _sub(grown, *change))


def _python_def_over_if() -> Shape:
    path = "convert/convert-vocab.py"
    base = _text("# convert/convert-vocab.py: the reach shapes' script (written for the benchmark)", "import sys",
                 "import logging", "", "logger = logging.getLogger(__name__)", "", "",
                 "def write_vocab(writer, vocab):", "    for tok in vocab:", "        writer.add_token(tok)",
                 "    writer.flush()", "", "",
                 "args = parse_args()", "writer = open_writer(args.outfile)", "vocab = load_vocab(args.model)", "",
                 "if args.vocab_only:", "    write_vocab(writer, vocab)", '    logger.info("vocab written")',
                 "    writer.close()", "    sys.exit(0)", "", "write_model(writer, args.model)")
    # upstream adds a def between the two and edits a line after the patched one
    grown = _sub(base, "    writer.flush()\n\n\n", _text("    writer.flush()", "", "",
                                                          "def write_tensors(writer, tensors):", "    for t in tensors:",
                                                          "        writer.add_tensor(t.name, t.data)", "", ""))
    grown = _sub(grown, "    writer.close()\n    sys.exit(0)", "    writer.close()\n    sys.exit(EXIT_OK)")
    change = ("    write_vocab(writer, vocab)\n", "    write_vocab(writer, vocab)\n    writer.add_vocab_hash(vocab)\n")
    return Shape("python-def-over-if", "a clean merge in a module-level `if` block, a `def` above it as the section",
                 path, base, (grown, grown), _sub(base, *change), _sub(grown, *change))


def _class_private() -> Shape:
    path = "src/llama-kv-cache.h"
    base = _text(
        "#pragma once", "", '#include "llama-memory.h"', "", "// the KV cache (written for the reach benchmark)",
        "class llama_kv_cache : public llama_memory_i {", "public:",
        "    llama_kv_cache(const llama_model & model, uint32_t kv_size);", "    ~llama_kv_cache() override;", "",
        "    void clear(bool data) override;", "    bool seq_rm(llama_seq_id seq_id, llama_pos p0, llama_pos p1) override;",
        "    uint32_t get_size() const;", "", "private:", "    const llama_model & model;",
        "    const llama_hparams & hparams;", "", "    uint32_t n_seq_max = 1;", "    uint32_t n_stream  = 1;",
        "    bool v_trans = true;", "    bool unified = false;", "", "    std::vector<ggml_context_ptr> ctxs;",
        "    std::vector<ggml_backend_buffer_ptr> bufs;", "};", "",
        "class llama_kv_cache_context : public llama_memory_context_i {", "public:",
        "    llama_kv_cache_context(llama_memory_status status);", "", "    bool next() override;",
        "    bool apply() override;", "", "private:", "    llama_memory_status status;", "    llama_kv_cache * kv;",
        "    uint32_t n_kv = 0;", "    bool is_full = false;", "};")
    grown = _sub(base, "    uint32_t get_size() const;\n", "    uint32_t get_size() const;\n    uint32_t get_used() const;\n")
    grown = _sub(grown, "    std::vector<ggml_backend_buffer_ptr> bufs;\n",
                 "    std::vector<ggml_backend_buffer_ptr> bufs; // one per device\n")
    change = ("    bool unified = false;\n", "    bool unified = false;\n    bool swa_full = false;\n")
    return Shape("class-private", "a clean merge in a C++ class whose section is `private:`",
                 path, base, (grown, grown), _sub(base, *change), _sub(grown, *change))


def _op(name: str, note: str) -> list[str]:
    """One of a file's unary ops: every line but the name and NOTE is the same in all of them."""
    return _fn(f"static void ggml_compute_forward_{name}_f32(const struct ggml_compute_params * params, "
               "struct ggml_tensor * dst)",
               ["const struct ggml_tensor * src0 = dst->src[0];", "GGML_ASSERT(ggml_is_contiguous_1(src0));",
                f"// {name}: {note}", "GGML_ASSERT(ggml_are_same_shape(src0, dst));", "const int ith = params->ith;",
                "const int nth = params->nth;", "const int nc  = src0->ne[0];", "const int nr  = ggml_nrows(src0);",
                "const int dr  = (nr + nth - 1) / nth;", "const int ir0 = dr * ith;", "const int ir1 = MIN(ir0 + dr, nr);",
                "for (int i1 = ir0; i1 < ir1; i1++) {",
                f"    ggml_vec_{name}_f32(nc, (float *) ((char *) dst->data + i1 * dst->nb[1]), "
                "(float *) ((char *) src0->data + i1 * src0->nb[1]));", "}"])


def _ops_file(path: str, tag: str) -> tuple[str, str, str]:
    """A file of unary ops 60+ lines apart; the text, the patched op's note line, its nth line."""
    ops = ("abs", "sgn", "neg", "step", "tanh", "elu", "relu", "gelu", "silu", "hardswish")
    parts: list[list[str] | str] = [f"// {path}: the reach shapes' unary ops (written for the benchmark)",
                                    '#include "ops.h"', ""]
    for i, op in enumerate(ops):
        parts += [_filler(f"{tag}{i}", 4, 9), _op(op, "one row per thread")]
    return _text(*parts), "    // gelu: one row per thread\n", "    const int nth = params->nth;\n"


def _nth_change(text: str, note: str, nth: str, tag: str, below: bool = True) -> str:
    """The gelu op's nth line (the first after NOTE) changed, and a line in the helpers above it
    (and one below it)."""
    at = text.index(note)
    at += text[at:].index(nth)
    text = text[:at] + "    const int nth = MIN(params->nth, 4);\n" + text[at + len(nth):]
    for old in (f"n_{tag}7_2_3 = ctx->n_{tag}7[3]", f"n_{tag}8_1_4 = ctx->n_{tag}8[4]")[:2 if below else 1]:
        text = _sub(text, old, f"{old} * 2")
    return text


def _fuzz_neighbours() -> Shape:
    path = "ggml/src/ggml-cpu/ops-unary.c"
    base, note, nth = _ops_file(path, "un")
    # upstream: one line above everything, and the patched op's note line reworded
    reworded = "    // gelu: one row per thread, tanh approximation\n"
    moved = _sub(_sub(base, '#include "ops.h"\n', '#include "ops.h"\n#include "vec.h"\n'), note, reworded)
    return Shape("fuzz-neighbours", "a fuzz candidate one line from the recorded one, the patch's other hunks at "
                 "the same offset, its twins 60+ lines away (hand-written: --fuzz 2)", path, base, (moved, moved),
                 _nth_change(base, note, nth, "un"), _nth_change(moved, reworded, nth, "un"), hand=True)


def _fuzz_far() -> Shape:
    path = "ggml/src/ggml-cpu/ops-binary.c"
    base, note, nth = _ops_file(path, "bi")
    # upstream rewrites the patched op's note and nth lines: only its twins 60+ lines away match with fuzz
    at = base.index(note)
    at += base[at:].index(nth)
    head = base[:at] + "    const int nth = ggml_cpu_n_threads(params, dst);\n" + base[at + len(nth):]
    head = _sub(_sub(head, note, "    // gelu: split by rows of the whole tensor\n"),
                '#include "ops.h"\n', '#include "ops.h"\n#include "vec.h"\n')
    return Shape("trap-fuzz-far", "trap: the patched op rewritten upstream; with fuzz only its twins 60+ lines away "
                 "match, the patch's other hunk (above) at +1", path, base, (head, head),
                 _nth_change(base, note, nth, "bi", below=False),
                 None, hand=True, trap=True)


def _short_hunk() -> Shape:
    path = "common/arg-parse.cpp"
    head = [f"// {path}: the reach shapes' options (written for the benchmark)", '#include "arg.h"', ""]
    opts = [f'add_opt(common_arg({{"--{o}"}}, "N", "{o.replace("-", " ")} (default: %d)", params.{o.replace("-", "_")}));'
            for o in ("ctx-size", "batch-size", "ubatch-size", "keep", "draft", "chunks", "threads", "parallel")]
    base = _text(head, _filler("arg", 2), _fn("static void common_params_add_sizes(common_params & params)", opts),
                 _filler("argb", 1), _fn("static void common_params_add_sampling(common_params & params)",
                                         ["params.sampling.temp = 0.8f;", "params.sampling.top_k = 40;",
                                          "params.sampling.top_p = 0.95f;", "params.sampling.min_p = 0.05f;",
                                          "params.sampling.typ_p = 1.0f;", "params.sampling.penalty_last_n = 64;"]),
                 _filler("argc", 1))
    moved = _sub(base, head[1] + "\n", head[1] + "\n" + _text(_filler("argnew", 1)))
    changes = (('"keep (default: %d)", params.keep));\n', '"keep (default: %d, -1 = all)", params.keep));\n'),
               ("    params.sampling.top_p = 0.95f;\n", "    params.sampling.top_p = 0.9f;\n"))

    def both(text: str) -> str:
        for old, new in changes:
            text = _sub(text, old, new)
        return text

    def one_short(patch: str) -> str:  # the packager deleted the last hunk's first context line by hand
        at = patch.rindex("\n@@ ")
        line_end = patch.index("\n", at + 1)
        next_end = patch.index("\n", line_end + 1)
        assert patch[line_end + 1] == " ", "the last hunk starts with a context line"
        return patch[:line_end] + patch[next_end:]

    return Shape("short-hunk", "the last hunk one line short of its header's count (a context line deleted by hand), "
                 "one reading fits", path, base, (moved, moved), both(base), both(moved), hand=True, edit=one_short)


def _twins_merge() -> Shape:
    path = "src/llama-graph-attn.cpp"
    head = [f"// {path}: the reach shapes' attention (written for the benchmark)", '#include "llama-graph.h"', ""]
    body = ["ggml_tensor * q = ggml_permute(ctx0, q_cur, 0, 2, 1, 3);", "ggml_tensor * k = ggml_permute(ctx0, k_cur, 0, 2, 1, 3);",
            "ggml_tensor * kq = ggml_mul_mat(ctx0, k, q);", "ggml_mul_mat_set_prec(kq, GGML_PREC_F32);",
            "kq = ggml_soft_max_ext(ctx0, kq, kq_mask, kq_scale, hparams.f_max_alibi_bias);",
            "ggml_tensor * v = ggml_cont(ctx0, ggml_transpose(ctx0, v_cur));", "ggml_tensor * kqv = ggml_mul_mat(ctx0, v, kq);",
            "return ggml_cont(ctx0, ggml_permute(ctx0, kqv, 0, 2, 1, 3));"]
    sig = "ggml_tensor * llm_graph_context::build_attn_mha(ggml_tensor * q_cur, ggml_tensor * k_cur, ggml_tensor * v_cur) const"
    base = _text(head, _filler("attn", 2), _fn(sig, body), _filler("attnb", 3))
    # upstream adds helpers above and, far below, a copy of the function under another name
    twin = _sub(base, head[1] + "\n", head[1] + "\n" + _text(_filler("attnnew", 1))) + _text(
        _filler("attnc", 3), _fn(sig.replace("build_attn_mha(", "build_attn_mha_swa("), body))
    change = ("    ggml_mul_mat_set_prec(kq, GGML_PREC_F32);\n",
              "    ggml_mul_mat_set_prec(kq, GGML_PREC_F32);\n    cb(kq, \"kq\", il);\n")
    return Shape("twins-merge", "twins in the target (a copy of the function added far below) that the exact "
                 "base's merge tells apart", path, base, (twin, twin), _sub(base, *change), _sub_first(twin, *change))


def _twins_same_function() -> Shape:
    path = "src/llama-graph-ffn.cpp"
    head = [f"// {path}: the reach shapes' feed-forward (written for the benchmark)", '#include "llama-graph.h"', ""]
    block = ["cur = ggml_mul_mat(ctx0, up, cur);", 'cb(cur, "ffn_up", il);', "cur = ggml_silu(ctx0, cur);",
             'cb(cur, "ffn_silu", il);', "cur = ggml_mul_mat(ctx0, down, cur);", 'cb(cur, "ffn_down", il);']
    sig = "ggml_tensor * llm_graph_context::build_ffn(ggml_tensor * cur, ggml_tensor * up, ggml_tensor * down, int il) const"
    base = _text(head, _filler("ffn", 2), _fn(sig, ["GGML_ASSERT(up && down);", *block, "return cur;"]), _filler("ffnb", 2))
    # upstream adds a branch below the block with a copy of it, in the same function
    copy = ["if (hparams.use_par_ffn) {", *(f"    {b}" for b in block), "}"]
    twin = _sub(base, '    cb(cur, "ffn_down", il);\n    return cur;\n',
                _text(f'    cb(cur, "ffn_down", il);', *(f"    {c}" for c in copy), "    return cur;"))
    twin = _sub(twin, head[1] + "\n", head[1] + "\n" + _text(_filler("ffnnew", 1)))
    change = ("    cur = ggml_silu(ctx0, cur);\n", "    cur = ggml_gelu(ctx0, cur);\n")
    return Shape("twins-same-function", "twins in one function (upstream copied the block into a branch below "
                 "it, and added a helper above) that the exact base's merge tells apart", path, base, (twin, twin), _sub(base, *change),
                 _sub_first(twin, *change))


def _twins_fixed_twice() -> Shape:
    path = "src/llama-kv-cache-io.cpp"
    head = [f"// {path}: the reach shapes' cache reader (written for the benchmark)", '#include "llama-kv-cache.h"', ""]
    loop = ["for (uint32_t il = 0; il < n_layer; ++il) {", "    ggml_tensor * t = layers[il].k;",
            "    const size_t nbytes = ggml_row_size(t->type, n_embd) * cell_count;",
            "    io.read_to(t->data, nbytes);", "    offs += nbytes;", "}", "ggml_backend_synchronize(backend);",
            "io.check(offs);", "n_read++;"]
    steps = [f"state_step_{i}(io, cell_count);" for i in range(8)]
    base = _text(head, _filler("kvio", 2), _fn("bool llama_kv_cache::state_read_data(llama_io_read_i & io, uint32_t cell_count)",
                                               ["// the keys", *loop, *steps, "// the values", *loop, "return true;"]),
                 _filler("kvioc", 2))
    # upstream adds a helper above the function: both copies move down alike
    moved = _sub(base, head[1] + "\n", head[1] + "\n" + _text(_filler("kvionew", 1)))
    change = ("        offs += nbytes;\n", "        offs += GGML_PAD(nbytes, 32);\n")
    return Shape("twins-fixed-twice", "twins in one function that the patch fixes alike (its two hunks have one "
                 "pre-image): the exact base's merge changes both, the base's order tells which is which",
                 path, base, (moved, moved), _sub(base, *change, count=2), _sub(moved, *change, count=2))


def _objc_section() -> Shape:
    path = "ggml/src/ggml-metal/ggml-metal-queue.m"
    base = _text(f"// {path}: the reach shapes' command queue (written for the benchmark)", '#import "ggml-metal-queue.h"', "",
                 "#import <Foundation/Foundation.h>", "", "static void ggml_metal_queue_log(const char * msg) {",
                 '    NSLog(@"ggml-metal-queue: %s", msg);', "}", "", "@implementation GGMLMetalQueue", "",
                 "- (instancetype)initWithDevice:(id<MTLDevice>)device {", "    self = [super init];", "    if (self) {",
                 "        _device = device;", "        _queue = [device newCommandQueue];", "        _capture = false;",
                 "        _n_cb = 1;", "        _abort = nil;", "        _label = @\"ggml\";", "    }", "    return self;", "}", "",
                 "- (void)setCommandBuffers:(int)n {", "    _n_cb = MIN(n, GGML_METAL_MAX_COMMAND_BUFFERS);", "}", "", "@end")
    moved = _sub(base, '#import "ggml-metal-queue.h"\n', '#import "ggml-metal-queue.h"\n#import "ggml-metal-impl.h"\n')
    change = ("        _n_cb = 1;\n", "        _n_cb = 2;\n")
    return Shape("objc-section", "at its own base, a .m hunk whose section git's objc driver wrote",
                 path, base, (moved, moved), _sub(base, *change), _sub(moved, *change))


def _adopted() -> Shape:
    path = "tests/test-ops-adopted.cpp"
    cases = [f"test_cases.emplace_back(new test_unary(GGML_UNARY_OP_{op}));"
             for op in ("ABS", "SGN", "NEG", "STEP", "TANH", "ELU", "RELU", "SIGMOID", "GELU")]
    tail = ["test_cases.emplace_back(new test_sum());", "test_cases.emplace_back(new test_sum_rows());",
            "test_cases.emplace_back(new test_mean());", "test_cases.emplace_back(new test_argmax());",
            "test_cases.emplace_back(new test_count_equal());", "test_cases.emplace_back(new test_pad());", "",
            "return test_cases;"]
    block = ["    for (int64_t ne0 : {1, 7, 512}) {",
             "        test_cases.emplace_back(new test_argsort_top_k(GGML_TYPE_F32, {ne0, 4, 1, 1}));", "    }"]
    impl = [_fn("static void ggml_compute_forward_argsort_top_k(struct ggml_tensor * dst)",
                ["const int64_t k = ggml_get_op_params_i32(dst, 0);", "GGML_ASSERT(k > 0);",
                 "ggml_argsort_rows(dst->src[0], dst, k);"])]
    base = _text(f"// {path}: the reach shapes' adopted patch (written for the benchmark)", '#include "test-ops.h"', "",
                 "enum ggml_op_kind {", "    OP_SUM,", "    OP_ARGSORT,", "    OP_COUNT,", "};", "", _filler("adp", 2),
                 "static const char * op_names[] = {", '    "sum",', '    "argsort",', "};", "", _filler("adpb", 2),
                 _fn("static std::vector<std::unique_ptr<test_case>> make_test_cases_eval()",
                     ["std::vector<std::unique_ptr<test_case>> test_cases;", "", *cases, "", *tail]))
    hunks = (("    OP_ARGSORT,\n", "    OP_ARGSORT,\n    OP_ARGSORT_TOP_K,\n"),
             ('    "argsort",\n', '    "argsort",\n    "argsort_top_k",\n'),
             ("static int64_t adpb_helper_1", _text(*impl) + "static int64_t adpb_helper_1"))
    upstream = base
    for old, new in hunks:
        upstream = _sub(upstream, old, new)
    # upstream took hunks 1-3 as they are and the test case three lines above the patch's place
    patched = _sub(upstream, "    test_cases.emplace_back(new test_count_equal());\n",
                   "    test_cases.emplace_back(new test_count_equal());\n" + _text(block))
    adopted = _sub(upstream, "    test_cases.emplace_back(new test_mean());\n", _text(block) + "    test_cases.emplace_back(new test_mean());\n")
    return Shape("adopted", "upstream adopted the patch, its test case three lines above the patch's: already-applied",
                 path, base, (adopted, adopted), patched, adopted)


SHAPES: tuple[Callable[[], Shape], ...] = (
    _renamed_section, lambda: _renamed_section(merge=True), _changed_signature, _invented_section, _section_still_stands, _section_deleted,
    _metal_instantiations, _header_declarations, _python_def_over_if, _class_private, _fuzz_neighbours, _fuzz_far,
    _short_hunk, _twins_merge, _twins_same_function, _twins_fixed_twice, _objc_section, _adopted)


# --- the upstream and the queue --------------------------------------------------------------------

@dataclass(frozen=True)
class ShapesUpstream:
    repo: Path
    folder: Path                 # the queue: one patch per shape, and its series
    shapes: tuple[Shape, ...]
    patches: tuple[str, ...]     # each shape's patch file name, in the same order


def build_shapes(dest: Path) -> ShapesUpstream:
    """Write the upstream into DEST and the queue into DEST.parent/queue-shapes."""
    shapes = tuple(make() for make in SHAPES)
    readme = {"README.md": "The reach shapes' upstream (issue 25), written for the benchmark.\n"}
    base = {**readme, **{s.path: s.base for s in shapes}}
    commits = [Commit("refs/heads/master", None, base, "import the shapes\n", EPOCH, tag=BASE)]
    for k in (0, 1):
        files = {**readme, **{s.path: s.upstream[k] for s in shapes}}
        commits.append(Commit("refs/heads/master", k, files, f"upstream change {k + 1}\n", EPOCH + 3600 * (k + 1),
                              tag=f"b{1001 + k}"))
    mailed = [s for s in shapes if not s.hand]
    for i, s in enumerate(mailed):  # the downstream's commits, one per patch, for format-patch
        commits.append(Commit("refs/heads/queue", 0 if not i else len(commits) - 1,
                              {**commits[-1 if i else 0].files, s.path: s.patched},
                              f"{s.path.rsplit('/', 1)[-1]} : {s.name}\n\nCarry this downstream.\n",
                              EPOCH + 600 + 60 * i, author=_AUTHOR))
    init_repo(dest)
    fast_import(dest, commits)
    run(["reset", "--quiet", "--hard", "master"], cwd=dest)
    folder = dest.parent / "queue-shapes"
    folder.mkdir()
    with tempfile.TemporaryDirectory(prefix="reach-shapes-") as tmp:
        attributes = Path(tmp, "attributes")
        attributes.write_text("*.m diff=objc\n")  # the section line git's objc driver writes
        out = run(["-c", f"core.attributesFile={attributes}", "format-patch", "-o", str(folder.resolve()),
                   f"{BASE}..queue"], cwd=dest)
    written = iter(Path(x) for x in out.splitlines())
    names = []
    for i, s in enumerate(shapes, 1):
        name = f"{i:04d}-{s.name}.patch"
        if s.hand:
            (folder / name).write_text(_hand_patch(s))
        else:
            next(written).rename(folder / name)
        if s.edit:
            (folder / name).write_text(s.edit((folder / name).read_text()))
        names.append(name)
    run(["update-ref", "-d", "refs/heads/queue"], cwd=dest)
    (folder / "series").write_text("".join(f"{n}\n" for n in names))
    return ShapesUpstream(dest, folder, shapes, tuple(names))


def _hand_patch(s: Shape) -> str:
    """A packager's patch: a mail header over GNU `diff -u`, no index lines."""
    with tempfile.TemporaryDirectory(prefix="reach-shapes-diff-") as tmp:
        for side, text in (("a", s.base), ("b", s.patched)):
            Path(tmp, side).write_text(text)
        diff = subprocess.run(["diff", "-u", "--label", f"a/{s.path}", "--label", f"b/{s.path}", "a", "b"], cwd=tmp,
                              env={**os.environ, "LC_ALL": "C"}, capture_output=True, text=True, check=False).stdout
    return f"From: {_AUTHOR}\nSubject: [PATCH] {s.name}\n\nCarried by the distribution.\n---\n{diff}"
