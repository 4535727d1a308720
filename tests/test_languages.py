"""Which files the C++ parse may veto a place in (issue 17, class 4). Objective-C, Metal, CMake,
Python and shell files have only git's section rule and the 3-way cross-check: tree-sitter-cpp
misreads Objective-C, and its names there change when upstream adds a method, refusing the
patch's own place. CUDA keeps the parse, which alone tells apart device functions that share a
section. Each fixture is a patch made with `git format-patch` at upstream's first commit, applied
after upstream moved on; where git am -3 places it right, patchkit places it on the same bytes."""

from __future__ import annotations

import re

import pytest

from git_am import git_am_3
from patchkit.apply import Verdict
from patchkit.scopes import is_cpp
from test_apply_edges import apply, commit, make_patches, replace, upstream_repo

OBJC_PATH = "ggml/src/ggml-metal/ggml-metal-context.m"

OBJC_INIT = """\
ggml_metal_t ggml_metal_init(ggml_metal_device_t dev) {
    @autoreleasepool {
        NSArray * devices = MTLCopyAllDevices();
        for (id<MTLDevice> device in devices) {
            GGML_LOG_INFO("%s: found device: %s\\n", __func__, [[device name] UTF8String]);
        }
        [devices release];
    }
    return ctx;
}

static void ggml_metal_encode(ggml_metal_t ctx) {
    ctx->encode_async = Block_copy(^(size_t iter) {
        id<MTLCommandBuffer> cmd_buf = ctx->cmd_bufs[iter].obj;
        [cmd_buf enqueue];
    });
}

@implementation GGMLMetalEncoder

"""
ROWS = """\
- (void)dispatchRows:(int)n {
    @autoreleasepool {
        id<MTLBuffer> buf = [self.device newBufferWithLength:n
                                                     options:MTLResourceStorageModeShared];
        [self.encoder setBuffer:buf offset:0 atIndex:0];
        ggml_metal_log(2, "dispatched rows");
    }
}

"""
COLS = """\
- (void)dispatchCols:(int)n {
    [self.encoder setBuffer:nil offset:0 atIndex:1];
}

"""
RESET = """\
- (void)reset {
    [self.encoder endEncoding];
    self.encoder = nil;
}

"""
OBJC_END = """\
@end

void ggml_metal_free(ggml_metal_t ctx) {
    for (int i = 0; i < ctx->n_cb; ++i) {
        [ctx->cmd_bufs[i].obj release];
    }
    free(ctx);
}
"""
LOGGED = '        ggml_metal_log(2, "dispatched rows");\n'
LOGGED_MORE = '        ggml_metal_log(2, "dispatched rows on the encoder");\n'


def test_objective_c_files_are_not_parsed_as_cpp_and_cuda_files_are():
    assert not any(is_cpp(p) for p in ("ggml-metal.m", "x/y.M", "bridge.mm", "ggml-metal.metal",
                                       "CMakeLists.txt", "tools/convert.py", "scripts/build.sh"))
    assert all(is_cpp(p) for p in ("ggml-cuda/mean.cu", "ggml-cuda/common.cuh"))


def test_a_hunk_in_an_objective_c_method_follows_upstreams_move(tmp_path):
    """The C++ parse named the method's lines file scope in the patch's pre-image and
    `ggml_metal_init` once upstream added a method above: the right place was refused."""
    upstream = upstream_repo(tmp_path, {OBJC_PATH: OBJC_INIT + ROWS + COLS + OBJC_END})
    (patch,) = make_patches(tmp_path, upstream, [("log", replace(OBJC_PATH, LOGGED, LOGGED_MORE))])
    moved = OBJC_INIT + RESET + ROWS + COLS + OBJC_END
    commit(upstream, {OBJC_PATH: moved}, "metal : reset the encoder")
    project, report = apply(tmp_path, upstream, [patch])
    (hunk,) = report.patches[0].hunks
    assert (hunk.verdict, hunk.offset) == (Verdict.OFFSET, RESET.count("\n"))
    result = (project.output_dir / OBJC_PATH).read_bytes()
    assert result == moved.replace(LOGGED, LOGGED_MORE).encode()
    assert (git_am_3(upstream, patch, tmp_path / "am") / OBJC_PATH).read_bytes() == result


def test_the_same_context_in_two_objective_c_methods_is_ambiguous(tmp_path):
    """git's section is one line above both methods (they start with '-'), and without a base
    nothing tells them apart: refused, whichever the patch meant."""
    twin = ROWS.replace("dispatchRows", "dispatchCols")
    upstream = upstream_repo(tmp_path, {OBJC_PATH: OBJC_INIT + ROWS + twin + OBJC_END})
    (patch,) = make_patches(tmp_path, upstream, [("log", replace(OBJC_PATH, LOGGED, LOGGED_MORE))])
    quilt = tmp_path / "log-quilt.patch"  # no index line: the patch's base is unknown
    quilt.write_text(re.sub(r"(?m)^index .*\n", "", patch.read_text()))
    commit(upstream, {OBJC_PATH: OBJC_INIT + RESET + ROWS + twin + OBJC_END}, "metal : reset the encoder")
    project, report = apply(tmp_path, upstream, [quilt])
    (hunk,) = report.patches[0].hunks
    assert hunk.verdict is Verdict.AMBIGUOUS and report.patches[0].commit is None
    assert re.search(r"\b28\b.*\b37\b", hunk.detail)  # both methods' places are named


CMAKE = """\
cmake_minimum_required(VERSION 3.14)
project("llama.cpp" C CXX)

option(LLAMA_BUILD_TESTS "llama: build tests" ON)
option(LLAMA_BUILD_TOOLS "llama: build tools" ON)

if (LLAMA_BUILD_TESTS)
    include(CTest)
    add_subdirectory(tests)
endif()

if (LLAMA_BUILD_TOOLS)
    add_subdirectory(tools)
endif()
"""
PYTHON = """\
import sys


class GGUFWriter:
    def __init__(self, path):
        self.path = path
        self.tensors = []

    def add_tensor(self, name, data):
        self.tensors.append((name, data))
        return len(self.tensors)


def main():
    writer = GGUFWriter(sys.argv[1])
    writer.add_tensor("token_embd.weight", b"")
"""
SHELL = """\
#!/usr/bin/env bash
set -euo pipefail

build() {
    cmake -B build -DGGML_METAL=ON
    cmake --build build -j 4
}

run_tests() {
    ctest --test-dir build --output-on-failure
}

build
run_tests
"""
METAL = """\
#include <metal_stdlib>

using namespace metal;

kernel void kernel_add(
        device const float * src0,
        device const float * src1,
        device       float * dst,
        uint tpig[[thread_position_in_grid]]) {
    dst[tpig] = src0[tpig] + src1[tpig];
}

kernel void kernel_mul(
        device const float * src0,
        device const float * src1,
        device       float * dst,
        uint tpig[[thread_position_in_grid]]) {
    dst[tpig] = src0[tpig] * src1[tpig];
}
"""


@pytest.mark.parametrize("path, before, old, new, anchor, added", [
    ("CMakeLists.txt", CMAKE, "    add_subdirectory(tools)\n", "    add_subdirectory(tools/server)\n",
     "if (LLAMA_BUILD_TESTS)", 'option(LLAMA_CURL "llama: use libcurl" ON)\n\n'),
    ("gguf-py/gguf/gguf_writer.py", PYTHON, "        return len(self.tensors)\n",
     "        return len(self.tensors) - 1\n", "    def add_tensor",
     "    def close(self):\n        self.tensors.clear()\n\n"),
    ("scripts/ci.sh", SHELL, "    ctest --test-dir build --output-on-failure\n",
     "    ctest --test-dir build --output-on-failure -j 4\n", "build() {",
     "export GGML_NATIVE=OFF\n\n"),
    ("ggml/src/ggml-metal/ggml-metal.metal", METAL, "    dst[tpig] = src0[tpig] * src1[tpig];\n",
     "    dst[tpig] = src0[tpig] * src1[tpig] * 2.0f;\n", "kernel void kernel_mul(",
     "kernel void kernel_sub(\n        device const float * src0,\n        device       float * dst,\n"
     "        uint tpig[[thread_position_in_grid]]) {\n    dst[tpig] = -src0[tpig];\n}\n\n"),
])
def test_hunks_in_cmake_python_shell_and_metal_files_follow_upstreams_move(tmp_path, path, before, old, new,
                                                                         anchor, added):
    upstream = upstream_repo(tmp_path, {path: before})
    (patch,) = make_patches(tmp_path, upstream, [("edit", replace(path, old, new))])
    moved = before.replace(anchor, added + anchor, 1)
    commit(upstream, {path: moved}, "upstream adds code above the patch's place")
    project, report = apply(tmp_path, upstream, [patch])
    (hunk,) = report.patches[0].hunks
    assert (hunk.verdict, hunk.offset) == (Verdict.OFFSET, added.count("\n"))
    result = (project.output_dir / path).read_bytes()
    assert result == moved.replace(old, new).encode()
    assert (git_am_3(upstream, patch, tmp_path / "am") / path).read_bytes() == result


CUDA_PATH = "ggml/src/ggml-cuda/scale-rows.cu"
KERNEL = """\
template <int block_size>
__launch_bounds__(block_size, 1)
static __global__ void k_{name}_rows(const float * x, float * dst, const int ncols, const float v) {{
    const int row = blockIdx.x;
    for (int col = threadIdx.x; col < ncols; col += block_size) {{
        dst[row*ncols + col] = {op};
    }}
}}

"""
HOST = """\
void ggml_cuda_op_scale_rows(ggml_backend_cuda_context & ctx, ggml_tensor * dst) {
    const float * src0_d = (const float *) dst->src[0]->data;
    float * dst_d = (float *) dst->data;
    cudaStream_t stream = ctx.stream();
    const int64_t ncols = dst->ne[0];
    const int64_t nrows = ggml_nrows(dst);
#ifdef GGML_CUDA_USE_GRAPHS
    if (ctx.cuda_graph_active()) {
        k_scale_rows<256><<<nrows, 256, 0, stream>>>(src0_d, dst_d, ncols, 0.5f);
        return;
    }
#endif // GGML_CUDA_USE_GRAPHS
    const dim3 block_dims(WARP_SIZE, 1, 1);
    k_scale_rows<WARP_SIZE><<<nrows, block_dims, 0, stream>>>(src0_d, dst_d, ncols, 2.0f);
}
"""


def kernel(name: str, op: str) -> str:
    return KERNEL.format(name=name, op=op)


def test_a_cuda_kernel_launch_follows_upstreams_move(tmp_path):
    launch = "    k_scale_rows<WARP_SIZE><<<nrows, block_dims, 0, stream>>>(src0_d, dst_d, ncols, 2.0f);\n"
    upstream = upstream_repo(tmp_path, {CUDA_PATH: '#include "scale-rows.cuh"\n\n'
                                        + kernel("scale", "v*x[row*ncols + col]") + HOST})
    (patch,) = make_patches(tmp_path, upstream, [("launch", replace(CUDA_PATH, launch,
                                                                      launch.replace("2.0f", "scale")))])
    added = kernel("shift", "v + x[row*ncols + col]")
    moved = '#include "scale-rows.cuh"\n\n' + added + kernel("scale", "v*x[row*ncols + col]") + HOST
    commit(upstream, {CUDA_PATH: moved}, "cuda : shift rows")
    project, report = apply(tmp_path, upstream, [patch])
    (hunk,) = report.patches[0].hunks
    assert (hunk.verdict, hunk.offset) == (Verdict.OFFSET, added.count("\n"))
    result = (project.output_dir / CUDA_PATH).read_bytes()
    assert result == moved.replace(launch, launch.replace("2.0f", "scale")).encode()
    assert (git_am_3(upstream, patch, tmp_path / "am") / CUDA_PATH).read_bytes() == result


TILE_PATH = "ggml/src/ggml-cuda/tile.cuh"


def tile(get_i: str, get_j: str) -> str:
    """Device methods indented in a namespace: git names every one `namespace ggml_cuda_tile {`."""
    def method(name: str, body: str) -> str:
        return f"        static __device__ __forceinline__ int {name}(const int l) {{\n{body}        }}\n"
    return ("#pragma once\n\nnamespace ggml_cuda_tile {\n    template <int I, int J>\n    struct tile {\n"
            + method("get_i", get_i) + "\n" + method("get_j", get_j) + "    };\n}\n")


BODY = ("            const int lane = threadIdx.x % WARP_SIZE;\n"
        "            const int row = lane / J;\n"
        "            const int col = lane % J;\n"
        "            const int base = l * WARP_SIZE;\n"
        "            const int wrapped = (base + row) % I;\n"
        "            const int stride = I * J;\n"
        "            return (wrapped + col * stride) % (I * J);\n")
PATCHED = BODY.replace("base = l * WARP_SIZE;", "base = (l + 1) * WARP_SIZE;")
MOVED = BODY.replace("col = lane % J;", "col = (lane % J) / 2;")


def test_a_cuda_twin_in_another_device_method_is_refused_where_git_am_takes_it(tmp_path):
    """The patch's method changed the line beside the patch's own; its twin kept the pre-image.
    The section cannot tell the methods apart, the parse of the patch's base can: refused, where
    git am -3 writes the change into the twin."""
    upstream = upstream_repo(tmp_path, {TILE_PATH: tile(BODY, BODY)})
    (patch,) = make_patches(tmp_path, upstream, [("get-j", lambda w: (w / TILE_PATH).write_text(tile(BODY, PATCHED)))])
    commit(upstream, {TILE_PATH: tile(BODY, MOVED)}, "cuda : half columns")
    project, report = apply(tmp_path, upstream, [patch])
    (hunk,) = report.patches[0].hunks
    assert hunk.verdict is Verdict.CONFLICT and report.patches[0].commit is None
    assert "ggml_cuda_tile::tile::get_i" in hunk.detail
    assert "the patch's own place is under `namespace ggml_cuda_tile {` (in `ggml_cuda_tile::tile::get_j` " \
           "by a C++ parse of its base)" in hunk.detail
    am = git_am_3(upstream, patch, tmp_path / "am")
    assert am is not None and (am / TILE_PATH).read_text() == tile(PATCHED, MOVED)
