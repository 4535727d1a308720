"""A clean 3-way merge from an exact base is taken where it is the one candidate (issue 25, shape 2):
upstream added template instantiations at column 0 between two Metal kernels, so the section line
above the merged change is another one now, while the patch's section still stands and nothing in
base or upstream could be a twin: git am -3 places it there, and so does patchkit. A twin of the
changed kernel upstream keeps it refused."""

from __future__ import annotations

import difflib
import re

from patchkit.apply import Base, apply_file
from patchkit.queue import read_patch

ARGSORT = ("kernel void kernel_argsort_f32_i32(\n    device const float * x,\n    device int32_t * dst) {\n"
           "    const float v = x[0];\n    dst[0] = v > 0.0f;\n}\n\n")
RELU = ("kernel void kernel_leaky_relu_f32(\n    device const float * src0,\n    device float * dst) {\n"
        "    dst[0] = src0[0] > 0.0f ? src0[0] : 0.0f;\n}\n\n")
BASE = "#include <metal_stdlib>\nusing namespace metal;\n\n" + ARGSORT + RELU
CHANGED = BASE.replace("kernel void kernel_leaky_relu_f32(\n",
                       "kernel void kernel_leaky_relu_f32(\n    constant ggml_metal_kargs_leaky_relu & args,\n")
INSTANCES = ('template [[host_name("kernel_argsort_f32_i32_asc")]]  kernel argsort_t kernel_argsort_f32_i32<0>;\n'
             'template [[host_name("kernel_argsort_f32_i32_desc")]] kernel argsort_t kernel_argsort_f32_i32<1>;\n\n')


def run(tmp_path, upstream: str):
    diff = "".join(difflib.unified_diff(BASE.splitlines(True), CHANGED.splitlines(True), "a/ops.metal", "b/ops.metal"))
    text = re.sub(r"^(@@ [^@]+ @@)$", r"\1 kernel void kernel_argsort_f32_i32(", diff, flags=re.M)
    (tmp_path / "p.patch").write_text("From: A <a@b.invalid>\nSubject: [PATCH] args\n\n---\n" + text)
    (fc,) = read_patch(tmp_path / "p.patch").files
    assert fc.hunks[0].section == "kernel void kernel_argsort_f32_i32("
    return apply_file(fc, upstream.encode(), lambda f: Base("the index blob", BASE.encode(), CHANGED.encode()), 0)


def test_a_clean_merge_under_instantiations_added_at_column_0_is_the_one_candidate(tmp_path):
    upstream = BASE.replace("}\n\nkernel void kernel_leaky", "}\n\n" + INSTANCES + "kernel void kernel_leaky")
    (verdict,), content = run(tmp_path, upstream)
    assert verdict.verdict.value == "merged" and "the one candidate" in verdict.detail
    assert content == CHANGED.replace("}\n\nkernel void kernel_leaky", "}\n\n" + INSTANCES + "kernel void kernel_leaky").encode()


def test_a_twin_of_the_kernel_upstream_keeps_it_refused(tmp_path):
    twin = RELU.replace("kernel_leaky_relu_f32", "kernel_leaky_relu_f16")
    upstream = BASE.replace("}\n\nkernel void kernel_leaky", "}\n\n" + INSTANCES + "kernel void kernel_leaky") + \
        ARGSORT.replace("f32_i32", "f16_i32") + twin
    (verdict,), content = run(tmp_path, upstream)
    assert verdict.verdict.value in ("conflict", "ambiguous") and content is None
