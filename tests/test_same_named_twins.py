"""Same-named twins a review found taking a hunk (issue 17): a method of another class, a variant under
#if/#else, a copy added right above the patch's function. Each has the patch's old lines, whole,
where the patch's own function changed: refused (git am -3 writes each into the twin)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import write_project
from patchkit.apply import Verdict
from patchkit.pipeline import ApplyOptions, run_apply
from patchkit.project import Project
from test_apply_edges import commit, upstream_repo


def patch_then_upstream(tmp_path: Path, path: str, base: str, patched: str, upstream: str | list[str], *,
                        plain: bool = False, attributes: str = "", good_run: bool = False) -> tuple[Verdict, str]:
    """The patch BASE -> PATCHED (git format-patch --full-index, or with PLAIN a `diff -u` without
    a section; ATTRIBUTES: the patch writer's diff drivers), upstream then committing UPSTREAM (one
    file content per commit); the patch's verdict there and the file patchkit leaves. GOOD_RUN: a
    good run at BASE first (the base a plain diff gets)."""
    repo = upstream_repo(tmp_path, {path: base})
    if plain:
        for side, text in (("a", base), ("b", patched)):
            (tmp_path / side / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / side / path).write_text(text)
        diff = subprocess.run(["diff", "-u", f"a/{path}", f"b/{path}"], cwd=tmp_path, capture_output=True,
                              text=True).stdout
        patch_text = f"From: Fork Dev <dev@fork.invalid>\nSubject: [PATCH] the change\n\n---\n{diff}"
    else:
        work = tmp_path / "work"
        subprocess.run(["git", "clone", "--quiet", str(repo), str(work)], check=True)
        (work / ".git" / "info" / "attributes").write_text(attributes)
        (work / path).write_text(patched)
        subprocess.run(["git", "-c", "user.name=Fork Dev", "-c", "user.email=dev@fork.invalid", "commit",
                        "--quiet", "-am", "the change"], cwd=work, check=True)
        patch_text = subprocess.run(["git", "format-patch", "-1", "--stdout", "--full-index"], cwd=work,
                                    check=True, capture_output=True, text=True).stdout
    patch = tmp_path / "the-change.patch"
    patch.write_text(patch_text)
    project = Project.load(write_project(tmp_path / "fork", str(repo), [patch]))
    options = ApplyOptions(spec="upstream@HEAD", check=False)
    if good_run:
        assert run_apply(project, options).patches[0].verdict is Verdict.CLEAN
    for i, text in enumerate([upstream] if isinstance(upstream, str) else upstream):
        commit(repo, {path: text}, f"upstream moves on ({i + 1})")
    (result,) = run_apply(project, options).patches
    return result.verdict, (project.output_dir / path).read_text()


METHOD = '''    def set_vocab(self):
        self._set_vocab_sentencepiece()
        self.gguf_writer.add_add_bos_token(True)
        self.gguf_writer.add_add_eos_token(False)
        special_vocab = gguf.SpecialVocab(self.dir_model, load_merges=False)
        special_vocab.add_to_gguf(self.gguf_writer)
        self.gguf_writer.add_add_space_prefix(False)
'''
GPT2 = "    def set_vocab(self):\n        self._set_vocab_gpt2()\n"


def _model(name: str, method: str) -> str:
    return f"class {name}(TextModel):\n    model_arch = gguf.MODEL_ARCH.{name[-1]}\n\n{method}\n\n"


@pytest.mark.parametrize("attributes", ["", "*.py diff=python\n"], ids=["git's default section", "python driver"])
@pytest.mark.parametrize("signature", ["    def set_vocab(self):\n", "    def set_vocab(self) -> None:\n"],
                         ids=["same signature", "new signature"])
def test_a_method_whose_copy_went_to_another_class_stays_refused(tmp_path, attributes, signature):
    """ModelA's set_vocab changes upstream next to the patch's line (its signature too, in one
    case); ModelB's takes ModelA's old body, whole. Under git's python driver the section,
    `def set_vocab(self):`, names both; a name defined twice is no move."""
    path = "convert_hf_to_gguf.py"
    base = "import gguf\n\n\n" + _model("ModelA", METHOD) + _model("ModelB", GPT2)
    patched = base.replace("add_to_gguf(self.gguf_writer)", "add_to_gguf(self.gguf_writer, quiet=True)", 1)
    changed = METHOD.replace("load_merges=False", "load_merges=True").replace("    def set_vocab(self):\n", signature)
    upstream = "import gguf\n\n\n" + _model("ModelA", changed) + _model("ModelB", METHOD)
    verdict, text = patch_then_upstream(tmp_path, path, base, patched, upstream, attributes=attributes)
    assert not verdict.good and text == upstream


def test_a_cmake_else_branch_is_not_a_function_that_moved(tmp_path):
    """`else()` at column 0 is a line git's default rule names, and opens no definition: the
    CUDA block's else-branch, copied under a new `if (GGML_MUSA)`, is not where the patch goes."""
    other = ("else()\n    set(GGML_BACKEND_DEFAULT cpu)\n    set(GGML_USE_OPENMP ON)\n    set(GGML_SCHED_MAX_COPIES 4)\n"
             "    set(GGML_CPU_REPACK ON)\n    set(GGML_CPU_HBM OFF)\n    message(STATUS \"no GPU backend\")\nendif()\n")
    head, tail = "cmake_minimum_required(VERSION 3.14)\nproject(ggml C CXX)\n\n", "install(TARGETS ggml LIBRARY)\n"
    base = head + "if (GGML_CUDA)\n    set(GGML_BACKEND_DEFAULT cuda)\n    set(GGML_CUDA_F16 ON)\n" + other + "\n" + tail
    patched = base.replace("GGML_SCHED_MAX_COPIES 4", "GGML_SCHED_MAX_COPIES 2")
    upstream = head + "include(cuda.cmake)\n\nif (GGML_MUSA)\n    set(GGML_BACKEND_DEFAULT musa)\n" + other + "\n" + tail
    verdict, text = patch_then_upstream(tmp_path, "ggml/src/CMakeLists.txt", base, patched, upstream)
    assert not verdict.good and text == upstream


GENERIC = """static void scale_rows(float * y, int n, float v) {
    const int np = n & ~3;
    for (int i = 0; i < np; ++i) {
        y[i] *= v;
    }
    for (int i = np; i < n; ++i) {
        y[i] *= v;
    }
}
"""
ACCELERATE = "static void scale_rows(float * y, int n, float v) {\n    vDSP_vsmul(y, 1, &v, y, 1, n);\n}\n"
LOOP, LOOP_PATCHED = "    for (int i = 0; i < np; ++i) {\n        y[i] *= v;\n", \
    "    for (int i = 0; i < np; ++i) {\n        y[i] = y[i] * v; // no fma\n"


def _variants(accelerate: str, generic: str) -> str:
    return ('#include "vec.h"\n\n#if defined(GGML_USE_ACCELERATE)\n' + accelerate + "#else\n" + generic
            + "#endif\n\nvoid use(float * y) {\n    scale_rows(y, 4, 2.0f);\n}\n")


@pytest.mark.parametrize("path", ["ggml/src/ggml-cpu/vec.c", "ggml/src/ggml-metal/vec.metal", "ggml/src/ggml-cuda/scale.cu"])
def test_a_same_named_variant_that_took_the_old_body_stays_refused(tmp_path, path):
    """The patch changes the generic scale_rows (#else); upstream edits that very line there, and
    the ACCELERATE variant becomes the old generic one, whole: no move, the patch's own changed."""
    base = _variants(ACCELERATE, GENERIC)
    upstream = _variants(GENERIC, GENERIC.replace(LOOP, LOOP.replace("y[i] *= v;", "y[i] = ggml_mul_f32(y[i], v);")))
    verdict, text = patch_then_upstream(tmp_path, path, base, base.replace(LOOP, LOOP_PATCHED, 1), upstream)
    assert not verdict.good and text == upstream


F32 = """void ggml_vec_scale_f32(const int n, float * y, const float v) {
    const int np = (n & ~(GGML_F32_STEP - 1));
    GGML_F32_VEC vx = GGML_F32_VEC_SET1(v);
    for (int i = 0; i < np; i += GGML_F32_STEP) {
        ay = GGML_F32_VEC_MUL(ay, vx);
    }
    for (int i = np; i < n; ++i) {
        y[i] *= v;
    }
}
"""
F16 = F32.replace("ggml_vec_scale_f32(const int n, float * y", "ggml_vec_scale_f16(const int n, ggml_fp16_t * y")


def test_a_section_less_hunk_is_not_taken_by_a_copy_at_its_recorded_line(tmp_path):
    """A plain `diff -u` hunk (no section) in C++, its base the last good run: upstream adds
    ggml_vec_scale_f16, a copy, right above ggml_vec_scale_f32, so the copy's lines sit at the
    recorded line. The parse of the base puts the hunk in f32: it goes there."""
    head, tail = '#include "vec.h"\n\n', "\nvoid use(float * y) {\n    ggml_vec_scale_f32(4, y, 2.0f);\n}\n"
    base = head + F32 + tail
    fixed = F32.replace("        y[i] *= v;\n", "        y[i] = y[i] * v; // no fma\n")
    upstream = head + F16 + "\n" + F32 + tail
    verdict, text = patch_then_upstream(tmp_path, "ggml/src/ggml-cpu/vec.cpp", base, head + fixed + tail, upstream,
                                        plain=True, good_run=True)
    assert verdict.good and text == head + F16 + "\n" + fixed + tail


def _function(name: str, body: list[str]) -> str:
    return (f"// {name}: one step\nstatic void {name}(struct ggml_tensor * dst) {{\n"
            + "".join(f"    {line}\n" for line in body) + "}\n\n")


FA = _function("fa", ["const int64_t n_a = dst->ne[2] + 1471;", "dst->op_params[0] = (int32_t) n_a;"])
FB = _function("fb", ["const int64_t n_layers = dst->ne[1] / 2712;", "const int64_t n_ctx = dst->ne[3] + 3623;",
                      "dst->op_params[0] = (int32_t) n_ctx;"])
FC = _function("fc", ["const int64_t n_kv = dst->ne[0] - 7;", "dst->op_params[0] = (int32_t) n_kv;"])
FD = _function("fd", ["const int64_t n_pos = dst->ne[1] - 4018;", "if (n_pos > 623) {", "    n_pos = 623;", "}",
                      "dst->op_params[0] = (int32_t) n_pos;"])
ADDED = _function("added", ["dst->op_params[2] = 7;"])


@pytest.mark.parametrize("plain", [False, True], ids=["format-patch", "diff -u"])
def test_a_function_added_between_two_that_upstream_moved_apart_is_refused(tmp_path, plain):
    """The patch adds a function after fb, before fc; upstream moves fb to the top, then adds fd
    where fb was. The merge reads fd as fb's lines replaced and would put the new function after
    fd: one side of the hunk's context is unchanged elsewhere, so that is no place of the patch's."""
    head = '#include "ggml.h"\n\n'
    verdict, text = patch_then_upstream(tmp_path, "ggml/src/ggml-cpu/arch/x86/conv.c", head + FA + FB + FC,
                                        head + FA + FB + ADDED + FC,
                                        [head + FB + FA + FC, head + FB + FA + FD + FC], plain=plain, good_run=plain)
    assert not verdict.good and text == head + FB + FA + FD + FC


@pytest.mark.parametrize("path", ["ggml/src/ops.c", "ggml/src/ops.metal"])
def test_a_function_added_before_one_that_moved_does_not_follow_it(tmp_path, path):
    """The patch adds a function right before fb (its first change is at fb's first line, which it
    does not change); upstream moves fb below fc. The added function was the patch's place between
    fa and fb, not fb's: refused (git am -3 follows fb)."""
    head = '#include "ggml.h"\n\n'
    verdict, text = patch_then_upstream(tmp_path, path, head + FA + FB + FC, head + FA + ADDED + FB + FC,
                                        head + FA + FC + FB)
    assert not verdict.good and text == head + FA + FC + FB


SOFT_MAX = """    const int nc = src0->ne[0];
    const int nr = ggml_nrows(src0);
    float * wp = (float *) params->wdata;
    for (int i1 = 0; i1 < nr; i1++) {
        ggml_float sum = ggml_vec_soft_max_f32(nc, dp, wp, max);
        sum = 1.0/sum;
        ggml_vec_scale_f32(nc, dp, sum);
    }
}
"""


@pytest.mark.parametrize("path", ["ggml/src/ggml-cpu/ops.cpp", "ggml/src/ggml-cpu/ops.c"])
def test_a_section_less_hunk_is_not_taken_by_the_one_twin_left_at_its_recorded_line(tmp_path, path):
    """A plain `diff -u` hunk in soft_max_f32, its base the last good run; upstream deletes
    soft_max_f32, and its twin soft_max_f16 slides into the recorded lines, the only copy left.
    The function git's rule names there is not the base's: refused."""
    head, tail = '#include "ops.h"\n\n', "\nvoid use(void) {\n}\n"
    f32 = "static void ggml_compute_forward_soft_max_f32(const struct ggml_compute_params * params) {\n" + SOFT_MAX
    f16 = "static void ggml_compute_forward_soft_max_f16(const struct ggml_compute_params * params) {\n" + SOFT_MAX
    base = head + f32 + "\n" + f16 + tail
    patched = base.replace("        sum = 1.0/sum;\n", "        sum = sum > 0.0 ? 1.0/sum : 0.0;\n", 1)
    verdict, text = patch_then_upstream(tmp_path, path, base, patched, head + f16 + tail, plain=True, good_run=True)
    assert not verdict.good and text == head + f16 + tail


def _op(name: str, body: list[str]) -> str:
    return f"static void {name}(struct ggml_tensor * dst) {{\n" + "".join(f"    {line}\n" for line in body) + "}\n\n"


PREV = _op("prev", ["const int n = dst->ne[0];", "dst->op_params[0] = n;"])
OTHER = _op("other", ["const int m = dst->ne[1];", "dst->op_params[0] = 2 * m;"])
BAR = _op("bar", ["const int k = dst->ne[2];", "dst->op_params[0] = k;", "dst->op_params[1] = k + 1;"])
K, K_PATCHED = "    const int k = dst->ne[2];\n", "    const int k = dst->ne[2] + 1;\n"


@pytest.mark.parametrize("declared", ["", "static void bar(struct ggml_tensor * dst);\n\n"],
                         ids=["no prototype", "a prototype above"])
def test_a_function_moved_whole_is_followed_with_its_prototype_in_the_file(tmp_path, declared):
    """bar moves whole below other; a prototype of it (a declaration, no definition) stays on top.
    The hunk begins in prev's tail and names prev: bar's whole lines are the witness."""
    head = '#include "ggml.h"\n\n' + declared
    upstream = head + PREV + OTHER + BAR
    verdict, text = patch_then_upstream(tmp_path, "ggml/src/ops.c", head + PREV + BAR + OTHER,
                                        (head + PREV + BAR + OTHER).replace(K, K_PATCHED), upstream)
    assert verdict.good and text == upstream.replace(K, K_PATCHED)


def test_a_method_moved_whole_is_told_from_another_class_s_method_of_the_same_name(tmp_path):
    """`A::bar` moves whole below `other`; `B::bar` has the same plain name, not the same one."""
    a_bar, b_bar = BAR.replace("static void bar(", "void A::bar("), BAR.replace("static void bar(", "void B::bar(")
    b_bar = b_bar.replace("k + 1", "k + 2")
    head = '#include "ops.h"\n\n'
    upstream = head + PREV + OTHER + a_bar + b_bar
    verdict, text = patch_then_upstream(tmp_path, "src/ops.cpp", head + PREV + a_bar + OTHER + b_bar,
                                        (head + PREV + a_bar + OTHER + b_bar).replace(K, K_PATCHED, 1), upstream)
    assert verdict.good and text == upstream.replace(K, K_PATCHED, 1)


def _summed(name: str, result: str = "s") -> str:
    return (f"static int {name}(const int * x) {{\n    int s = 0;\n    for (int i = 0; i < 4; ++i) {{\n"
            f"        s += x[i];\n    }}\n    return {result};\n}}\n\n")


@pytest.mark.parametrize("plain", [False, True], ids=["format-patch", "diff -u"])
def test_an_insertion_whose_neighbour_upstream_edited_is_not_moved_apart(tmp_path, plain):
    """The patch adds a function after f; upstream edits f's last statement, which h, a twin
    elsewhere, still has: the side's twin is no move (the base had it twice), the merge places it."""
    added = "static int added(const int * x) {\n    return x[0];\n}\n\n"
    head, tail = '#include "a.h"\n\n' + _summed("h") + "static int k = 3;\n\n", "int z;\nvoid use(void) {\n}\n"
    upstream = head + _summed("f", "s + 0") + tail
    verdict, text = patch_then_upstream(tmp_path, "ggml/src/a.c", head + _summed("f") + tail,
                                        head + _summed("f") + added + tail, upstream, plain=plain, good_run=plain)
    assert verdict.good and text == head + _summed("f", "s + 0") + added + tail
