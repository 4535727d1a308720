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


def patch_then_upstream(tmp_path: Path, path: str, base: str, patched: str, upstream: str, *,
                        plain: bool = False, attributes: str = "", good_run: bool = False) -> tuple[Verdict, str]:
    """The patch BASE -> PATCHED (git format-patch --full-index, or with PLAIN a `diff -u` without
    a section; ATTRIBUTES: the patch writer's diff drivers), upstream then committing UPSTREAM; the
    patch's verdict there and the file patchkit leaves. GOOD_RUN: a good run at BASE first (the base
    a plain diff gets)."""
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
    commit(repo, {path: upstream}, "upstream moves on")
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
def test_a_method_whose_copy_went_to_another_class_stays_refused(tmp_path, attributes):
    """ModelA's set_vocab changes upstream next to the patch's line; ModelB's takes ModelA's old
    body, whole. Under git's python driver the section, `def set_vocab(self):`, names both."""
    path = "convert_hf_to_gguf.py"
    base = "import gguf\n\n\n" + _model("ModelA", METHOD) + _model("ModelB", GPT2)
    patched = base.replace("add_to_gguf(self.gguf_writer)", "add_to_gguf(self.gguf_writer, quiet=True)", 1)
    upstream = "import gguf\n\n\n" + _model("ModelA", METHOD.replace("load_merges=False", "load_merges=True")) + \
        _model("ModelB", METHOD)
    verdict, text = patch_then_upstream(tmp_path, path, base, patched, upstream, attributes=attributes)
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
