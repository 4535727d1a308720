"""The reach benchmark's upstream: a llama.cpp-shaped history, three patch queues against it, and
every patch's right result at every point (issue 17).

Every line of the upstream has an identity that survives the history's edits: a moved function
keeps its lines, an edited line gets a new identity, a twin is a copy with new identities. A patch
is a list of edits on identities at its queue's base, so its right result at a later commit is the
same edits on that commit's lines. It exists when the lines an edit replaces are still there,
unedited and in a row, and the lines an insertion goes between are still neighbours; otherwise
the patch has no right place there and a safe tool refuses it. The truth comes from this model,
never from a tool's output.

`build_reach_upstream(dest, files=..., commits=...)` writes the repository (tags b1000, b1001,
... on master; tag `speed-refused` on a side branch) and the queue folders beside it.
"""

from __future__ import annotations

import os
import random
import subprocess
import tempfile
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path

from patchkit.fixture import EPOCH, Commit, fast_import, init_repo
from patchkit.git import run

Line = tuple[int, str]  # (identity, text without its newline)
FIRST_TAG = 1000

_DIRS = {
    "c": ("ggml/src", "ggml/src/ggml-cpu", "ggml/src/ggml-cpu/arch/x86", "ggml/src/ggml-cpu/arch/arm"),
    "cpp": ("src", "common", "tools/server", "tools/mtmd", "examples/simple", "tests", "ggml/src/ggml-cpu",
            "ggml/src/ggml-vulkan", "ggml/src/ggml-sycl"),
    "h": ("ggml/include", "include", "src", "common", "ggml/src", "tools/mtmd"),
    "py": ("gguf-py/gguf", "convert", "scripts", "tools/server/tests"),
    "cmake": ("cmake", "ggml/cmake", "ggml/src/ggml-cpu/cmake"),
    "m": ("ggml/src/ggml-metal",),
    "metal": ("ggml/src/ggml-metal",),
    "cu": ("ggml/src/ggml-cuda", "ggml/src/ggml-cuda/template-instances"),
}
# the share of each language among the files (per 40)
_MIX = ("cpp",) * 12 + ("c",) * 8 + ("h",) * 10 + ("py",) * 4 + ("cmake",) * 2 + ("m", "metal", "cu", "cu")
_STEMS = ("model", "graph", "sampling", "kv-cache", "batch", "vocab", "arch", "quant", "ops", "context",
          "adapter", "chat", "mmap", "impl", "backend", "sched", "tensor", "rope", "norm", "conv")
_NOUNS = ("rows", "cols", "heads", "embd", "ctx", "batch", "ubatch", "seq", "pos", "tokens", "experts",
          "layers", "threads", "chunks", "blocks", "tiles", "splits", "nodes", "kv", "vocab")
_VERBS = ("compute", "count", "clamp", "reserve", "resize", "split", "merge", "reduce", "scale", "pack")
_LONG = ("flash_attn_ext_f16_one_chunk", "mul_mat_id_one_chunk_from_float", "soft_max_f32_with_alibi",
         "rope_multi_sections_cache_init", "ssm_scan_f32_per_sequence", "get_rows_back_f32_to_f16",
         "conv_transpose_2d_kernel_packed", "rms_norm_back_f32_one_row")
_AUTHORS = ("Ada Downstream <ada@downstream.invalid>", "Bo Packager <bo@distro.invalid>",
            "Cy Porter <cy@porting.invalid>", "Di Vendor <di@vendor.invalid>")
_C_LIKE = ("c", "cpp", "h", "m", "cu", "metal")


# --- the code of one file ----------------------------------------------------------------------

@dataclass
class _Block:
    kind: str  # head, func, enum, tail
    name: str
    lines: list[Line]


@dataclass
class _File:
    path: str
    lang: str
    blocks: list[_Block]

    def lines(self) -> list[Line]:
        return [ln for b in self.blocks for ln in b.lines]

    def funcs(self) -> list[int]:
        return [i for i, b in enumerate(self.blocks) if b.kind == "func"]


def render(lines: list[Line] | tuple[Line, ...]) -> str:
    return "".join(t + "\n" for _, t in lines)


@dataclass(frozen=True)
class Edit:
    """One change of a patch: replace the run `old` by `new`, or (old empty) insert `new` between
    the neighbours `between`."""

    fid: int
    old: tuple[int, ...]
    new: tuple[str, ...]
    between: tuple[int, int] | None = None


def apply_edits(lines: tuple[Line, ...], edits: list[Edit]) -> str | None:
    """The text of `lines` with the edits made, or None when one of them has no place there."""
    where = {ident: i for i, (ident, _) in enumerate(lines)}
    spans: list[tuple[int, int, tuple[str, ...]]] = []
    for e in edits:
        if e.old:
            i = where.get(e.old[0])
            if i is None or tuple(ident for ident, _ in lines[i:i + len(e.old)]) != e.old:
                return None
            spans.append((i, i + len(e.old), e.new))
        else:
            assert e.between is not None
            i = where.get(e.between[0])
            if i is None or i + 1 >= len(lines) or lines[i + 1][0] != e.between[1]:
                return None
            spans.append((i + 1, i + 1, e.new))
    texts = [t for _, t in lines]
    for start, end, new in sorted(spans, reverse=True):
        texts[start:end] = new
    return "".join(t + "\n" for t in texts)


class _Code:
    """Seeded generator of one language's code; every name and most lines are new."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.serial = 0
        self.assigns: set[int] = set()  # identities of simple assignment lines (patch sites)
        self.next_id = 1

    def ids(self, texts: list[str], assigns: frozenset[int] | set[int] = frozenset()) -> list[Line]:
        """The texts as lines with new identities; the `assigns` indexes are patch sites."""
        out = []
        for i, t in enumerate(texts):
            out.append((self.next_id, t))
            if i in assigns:
                self.assigns.add(self.next_id)
            self.next_id += 1
        return out

    def name(self, lang: str, long: bool) -> str:
        self.serial += 1
        r = self.rng
        if long:
            return f"ggml_compute_forward_{r.choice(_LONG)}_{self.serial}"
        if lang == "metal":
            return f"kernel_{r.choice(_VERBS)}_{r.choice(_NOUNS)}_{self.serial}"
        return f"{r.choice(_VERBS)}_{r.choice(_NOUNS)}_{self.serial}"

    def statement(self, lang: str, pad: str, names: list[str]) -> tuple[list[str], bool]:
        """A few lines of a function body; True when it is one simple assignment."""
        r, c = self.rng, self.rng.randint(2, 4093)
        self.serial += 1
        var = f"n_{r.choice(_NOUNS)}_{self.serial}"
        if names and r.random() < 0.3:
            v = names[-1]
            return {
                "py": [f"{pad}if {v} > {c}:", f"{pad}    {v} = {c}"],
                "cmake": [f"{pad}if({v} GREATER {c})", f"{pad}    set({v} {c})", f"{pad}endif()"],
            }.get(lang, [f"{pad}if ({v} > {c}) {{", f"{pad}    {v} = {c};", f"{pad}}}"]), False
        if names and r.random() < 0.2:
            v = names[-1]
            return {
                "py": [f'{pad}logger.debug("{v} = %d", {v})'],
                "cmake": [f'{pad}message(STATUS "{v}: ${{{v}}}")'],
                "metal": [f"{pad}// {v} stays inside the threadgroup"],
                "cu": [f"{pad}// {v} is counted per warp"],
            }.get(lang, [f'{pad}GGML_LOG_DEBUG("%s: {v} = %lld\\n", __func__, (long long) {v});']), False
        names.append(var)
        op, k = r.choice("+-*/"), r.randint(0, 3)
        return [{
            "py": f"{pad}{var} = tensor.shape[{k}] {op} {c}",
            "cmake": f"{pad}set({var} {c})",
            "metal": f"{pad}float {var} = src0[tid + {k}] {op} {c}.0f;",
            "cu": f"{pad}const int {var} = k {op} {c};",
            "c": f"{pad}const int64_t {var} = dst->ne[{k}] {op} {c};",
        }.get(lang, f"{pad}int64_t {var} = ctx.n_{r.choice(_NOUNS)} {op} {c};")], True

    def function(self, lang: str, long: bool = False, name: str | None = None,
                 body: list[str] | None = None) -> _Block:
        name = name or self.name(lang, long)
        sig = self.signature(lang, name, long)
        if body is None:
            lines, assigns, names, simple = [], set(), [], False
            for _ in range(self.rng.randint(4, 9)):
                # a clamp or a log only after an assignment: no line repeats its neighbour
                part, simple = self.statement(lang, "    ", names if simple else [])
                if simple:
                    assigns.add(len(lines) + 2)  # after the comment and the signature
                lines += part
            last = names[-1] if names else "0"
            end = {"py": [f"    return {last}", "", ""], "cmake": [f"    set(${{target}}_RESULT ${{{last}}} PARENT_SCOPE)",
                                                                  "endfunction()", ""],
                   "metal": [f"    dst[tid] = {last};", "}", ""], "cu": [f"    dst[0] = (float) {last};", "}", ""],
                   "c": [f"    dst->op_params[0] = (int32_t) {last};", "}", ""]}.get(lang, [f"    return {last};", "}", ""])
            comment = {"py": "#", "cmake": "#"}.get(lang, "//")
            noun = self.rng.choice(_NOUNS)
            texts = [f"{comment} {name}: the {noun} of one {self.rng.choice(_NOUNS)} step", sig, *lines, *end]
            return _Block("func", name, self.ids(texts, assigns))
        # a copy of a body: the same lines under a new name, with new identities
        return _Block("func", name, self.ids([body[0], sig, *body[2:]]))

    @staticmethod
    def signature(lang: str, name: str, long: bool) -> str:
        return {
            "py": f"def {name}(tensor, n_ctx):",
            "cmake": f"function({name} target)",
            "metal": f"kernel void {name}(device const float * src0, device float * dst, "
                     "uint tid [[thread_position_in_grid]]) {",
            "cu": f"static __global__ void {name}(const float * __restrict__ x, float * __restrict__ dst, const int k) {{",
            "m": f"- (int64_t){name}:(const struct llama_context &)ctx {{",
            "h": f"static inline int64_t {name}(const struct llama_context & ctx) {{",
            "c": f"static void {name}(const struct ggml_compute_params * params, struct ggml_tensor * dst) {{",
        }.get(lang, f"static int64_t {name}(const llama_context & ctx) {{")

    def include(self, lang: str, stem: str) -> str:
        return {"py": f"import {stem.replace('-', '_')}", "cmake": f"include({stem.title().replace('-', '')})",
                "m": f'#import "{stem}.h"'}.get(lang, f'#include "{stem}.h"')

    def define(self, lang: str, tag: str, value: int) -> str:
        return {"py": f"GGML_{tag} = {value}", "cmake": f"set(GGML_{tag} {value})"}.get(
            lang, f"#define GGML_{tag} {value}")

    def head(self, lang: str, path: str) -> list[_Block]:
        r = self.rng
        stems = r.sample(_STEMS, r.randint(4, 6))
        incs = [self.include(lang, s) for s in stems]
        defs = [self.define(lang, f"{r.choice(_NOUNS).upper()}_{self.serial + i}", r.randint(1, 512))
                for i in range(r.randint(2, 4))]
        self.serial += 8
        first = {"py": [f"# {path}: part of the reach benchmark's upstream", "from __future__ import annotations", ""],
                 "cmake": ["cmake_minimum_required(VERSION 3.14)", ""],
                 "h": ["#pragma once", ""],
                 "metal": ["#include <metal_stdlib>", "using namespace metal;", ""]}.get(
                     lang, [f"// {path}: part of the reach benchmark's upstream", ""])
        after = {"py": ["", "logger = logging.getLogger(__name__)", "", ""], "m": ["", "@implementation GGMLMetalContext", ""]
                 }.get(lang, [""])
        if lang == "py":
            incs = ["import logging", *incs]
        blocks = [_Block("head", "", self.ids([*first, *incs, "", *defs, *after]))]
        if lang == "h":
            stem = r.choice(_NOUNS)
            values = [f"    GGML_{stem.upper()}_TYPE_{v.upper()}_{self.serial + i}," for i, v in
                      enumerate(r.sample(_NOUNS, r.randint(3, 6)))]
            blocks.append(_Block("enum", f"enum ggml_{stem}_type {{", self.ids(
                [f"enum ggml_{stem}_type_{self.serial} {{", *values, f"    GGML_{stem.upper()}_TYPE_COUNT,", "};", ""])))
        return blocks

    def file(self, lang: str, path: str, n_funcs: int) -> _File:
        long = lang == "c"
        blocks = [*self.head(lang, path), *(self.function(lang, long) for _ in range(n_funcs))]
        if lang == "m":
            blocks.append(_Block("tail", "", self.ids(["@end"])))
        return _File(path, lang, blocks)


# --- the patches -------------------------------------------------------------------------------

@dataclass(frozen=True)
class QueuePatch:
    name: str       # the file name in the queue folder
    subject: str
    author: str
    edits: tuple[Edit, ...]
    fate: str       # what the history does to the place of its first edit
    form: str = ""  # a hard form of the file itself: nobody, crlf, short-hunk


@dataclass(frozen=True)
class ReachQueue:
    name: str
    style: str      # format-patch, diff-p, quilt
    folder: Path
    base: str       # tag of the queue's base commit
    points: tuple[str, ...]  # the base and three later tags
    patches: tuple[QueuePatch, ...]


@dataclass(frozen=True)
class ReachUpstream:
    repo: Path
    queues: tuple[ReachQueue, ...]
    # (queue, patch name, tag) -> {path: text} of every file the patch changes there, or None (no right place)
    expected: dict[tuple[str, str, str], dict[str, str] | None]
    speed_folder: Path        # the format-patch queue's plain patches, for the speed part
    speed_refused: str = "speed-refused"  # tag where a third of them lost their place


# Which fates fit which edit (each is a class of issue 17's hard cases).
_FATES = {
    "stmt": ("none", "offset", "reordered", "renamed-file", "renamed-func", "context-edited", "gone",
             "split-twins", "twin-slide", "twin-copy", "offset", "none"),
    "include": ("none", "includes-moved", "renamed-file", "gone"),
    "define": ("none", "includes-moved", "gone"),
    "enum": ("none", "enum-grown", "gone"),
    "newfunc": ("none", "offset", "reordered", "renamed-file"),
}
_QUEUES = (  # name, style, languages of its files, number of patches, base (share of the history)
    ("fp", "format-patch", ("cpp", "h", "c", "py", "cmake", "m", "metal", "cu"), 34, 0.0),
    ("diffp", "diff-p", ("c", "c", "c", "cpp"), 20, 0.15),
    ("quilt", "quilt", ("cpp", "h", "c", "py"), 16, 0.3),
)


@dataclass
class _Builder:
    rng: random.Random
    code: _Code
    files: dict[int, _File]
    frozen: dict[int, tuple[Line, ...]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    dirty: set[int] = field(default_factory=set)
    used: set[int] = field(default_factory=set)  # files a patch touches
    schedule: dict[int, list] = field(default_factory=dict)  # commit -> events
    path_of: dict[int, str] = field(default_factory=dict)

    # -- finding things
    def locate(self, fid: int, ident: int) -> tuple[int, int] | None:
        for b, block in enumerate(self.files[fid].blocks):
            for i, (j, _) in enumerate(block.lines):
                if j == ident:
                    return b, i
        return None

    def freeze(self) -> None:
        """Bring the frozen lines and the texts up to date with the files' edits."""
        for fid in sorted(self.dirty):
            f = self.files[fid]
            self.texts.pop(self.path_of.get(fid, ""), None)
            self.frozen[fid] = tuple(f.lines())
            self.texts[f.path] = render(self.frozen[fid])
            self.path_of[fid] = f.path
        self.dirty.clear()

    # -- the history's edits (each keeps identities where code only moves)
    def insert_function(self, fid: int, before: int | None = None) -> None:
        f = self.files[fid]
        funcs = f.funcs()
        at = before if before is not None else (self.rng.choice(funcs) if funcs else len(f.blocks))
        f.blocks.insert(at, self.code.function(f.lang, f.lang == "c"))
        self.dirty.add(fid)

    def insert_statements(self, fid: int) -> None:
        f = self.files[fid]
        if not f.funcs():
            return
        block = f.blocks[self.rng.choice(f.funcs())]
        body_end = len(block.lines) - (4 if f.lang == "py" else 3)
        at = self.rng.randint(2, max(2, body_end))
        part, _ = self.code.statement(f.lang, "    ", [])
        block.lines[at:at] = self.code.ids(part)
        self.dirty.add(fid)

    def reorder(self, fid: int, block: int | None = None) -> None:
        funcs = self.files[fid].funcs()
        if len(funcs) < 2:
            return
        k = funcs.index(block) if block is not None else self.rng.randrange(1, len(funcs))
        a, b = funcs[k - 1] if k else funcs[1], funcs[k]
        blocks = self.files[fid].blocks
        blocks[a], blocks[b] = blocks[b], blocks[a]
        self.dirty.add(fid)

    def rename_file(self, fid: int) -> None:
        f = self.files[fid]
        stem, dot, ext = f.path.rpartition(".")
        f.path = f"{stem}-impl.{ext}" if dot else f"{f.path}-impl"
        self.dirty.add(fid)

    def rename_function(self, fid: int, b: int) -> None:
        block = self.files[fid].blocks[b]
        new = f"{block.name}_ext"
        sig = self.code.signature(self.files[fid].lang, new, self.files[fid].lang == "c")
        block.lines[1] = self.code.ids([sig])[0]
        block.name = new
        self.dirty.add(fid)

    def rewrite(self, fid: int, ident: int) -> None:
        where = self.locate(fid, ident)
        if where is None:
            return
        block = self.files[fid].blocks[where[0]]
        text = block.lines[where[1]][1]
        block.lines[where[1]] = self.code.ids([text.replace(" = ", " = 2 * ", 1) if " = " in text
                                               else text + " // upstream"])[0]
        self.dirty.add(fid)

    def twin(self, fid: int, b: int, keep: bool) -> None:
        """A near-duplicate of function b after it (its body's lines, a new name); without keep the
        original goes and a second copy takes its place: the split that leaves no right place."""
        f = self.files[fid]
        block = f.blocks[b]
        texts = [t for _, t in block.lines]
        copies = [self.code.function(f.lang, name=f"{block.name}_{s}", body=texts) for s in ("f16", "bf16")]
        f.blocks[b + 1:b + 1] = copies[:1]
        if not keep:
            f.blocks[b] = copies[1]
        self.dirty.add(fid)

    def delete_function(self, fid: int, name: str) -> None:
        f = self.files[fid]
        f.blocks = [b for b in f.blocks if not (b.kind == "func" and b.name == name)]
        self.dirty.add(fid)

    def add_enum_value(self, fid: int, first: bool = False) -> None:
        for block in self.files[fid].blocks:
            if block.kind == "enum":
                at = 1 if first else len(block.lines) - 3
                prefix = block.lines[-3][1].rsplit("_COUNT", 1)[0]
                self.code.serial += 1
                block.lines.insert(at, self.code.ids([f"{prefix}_UPSTREAM_{self.code.serial},"])[0])
                self.dirty.add(fid)

    def move_includes(self, fid: int, keep: tuple[int, ...] = ()) -> None:
        """A new include on top, and one include (not one in `keep`) moved to the end of the run."""
        f = self.files[fid]
        head = f.blocks[0].lines
        incs = [i for i, (ident, t) in enumerate(head) if t.startswith(("#include", "#import", "import", "include("))]
        if not incs:
            return
        movable = [i for i in incs[:-1] if head[i][0] not in keep and (i + 1 >= len(head) or head[i + 1][0] not in keep)
                   and head[i - 1][0] not in keep]
        if movable:
            line = head.pop(self.rng.choice(movable))
            head.insert(incs[-1], line)
        self.code.serial += 1
        head.insert(incs[0], self.code.ids([self.code.include(f.lang, f"upstream-{self.code.serial}")])[0])
        self.dirty.add(fid)

    def background(self) -> None:
        """One ordinary upstream change: on a patched file now and then, else anywhere."""
        r = self.rng
        fid = r.choice(sorted(self.used)) if self.used and r.random() < 0.25 else r.randrange(len(self.files))
        if fid not in self.files:
            return
        roll = r.random()
        if roll < 0.35:
            self.insert_function(fid)
        elif roll < 0.7:
            self.insert_statements(fid)
        elif roll < 0.8:
            self.reorder(fid)
        elif roll < 0.88:
            self.add_enum_value(fid) if self.files[fid].lang == "h" else self.move_includes(fid)
        elif roll < 0.94:
            funcs = self.files[fid].funcs()
            if funcs:
                self.twin(fid, r.choice(funcs), keep=True)
        else:
            funcs = self.files[fid].funcs()
            if funcs:
                self.rename_function(fid, r.choice(funcs))

    # -- the patches
    def site(self, fid: int, kind: str, short: bool = False, deep: bool = False
             ) -> tuple[Edit, int | None] | None:
        """An edit of `kind` in file fid and the block it sits in (None: a top-of-file edit);
        `deep`: three lines below the signature at least, so that a twin's body matches the hunk."""
        f, r, tag = self.files[fid], self.rng, f"patch_{self.code.serial}"
        self.code.serial += 1
        if kind in ("include", "define"):
            head = f.blocks[0].lines
            want = ("#include", "#import", "import", "include(") if kind == "include" else ("#define", "GGML_", "set(GGML")
            rows = [i for i, (_, t) in enumerate(head[:-1]) if t.startswith(want)]
            if not rows:
                return None
            i = r.choice(rows)
            new = (self.code.include(f.lang, f"downstream-{tag}") if kind == "include"
                   else self.code.define(f.lang, tag.upper(), 1))
            return Edit(fid, (), (new,), (head[i][0], head[i + 1][0])), None
        if kind == "enum":
            for block in f.blocks:
                if block.kind == "enum":
                    name = block.lines[-3][1].rsplit("_COUNT", 1)[0]
                    return Edit(fid, (), (f"{name}_{tag.upper()},",), (block.lines[-4][0], block.lines[-3][0])), None
            return None
        funcs = f.funcs()
        if not funcs:
            return None
        if kind == "newfunc":
            b = r.choice(funcs[:-1] or funcs)
            block = f.blocks[b]
            nxt = f.blocks[b + 1].lines[0][0] if b + 1 < len(f.blocks) else None
            if nxt is None:
                return None
            new = self.code.function(f.lang, f.lang == "c")
            return Edit(fid, (), tuple(t for _, t in new.lines), (block.lines[-1][0], nxt)), b
        for b in r.sample(funcs, len(funcs)):
            lines = f.blocks[b].lines
            ends = len(lines) - (4 if f.lang == "py" else 3)
            rows = [i for i in range(2, ends) if lines[i][0] in self.code.assigns]
            if short:  # the line before the last statement: its third line after is the blank one
                rows = [i for i in rows if i == ends - 1 and f.lang != "py"]
            if deep:
                rows = [i for i in rows if i >= 5]
            if rows:
                i = r.choice(rows)
                pad = lines[i][1][: len(lines[i][1]) - len(lines[i][1].lstrip())]
                text = lines[i][1]
                bumped = {"py": text + " + 1", "cmake": text[:-1] + " 1)"}.get(f.lang, text[:-1] + " + 1;")
                note = {"py": f'{pad}logger.debug("{tag}")', "cmake": f'{pad}message(STATUS "{tag}")',
                        "metal": f"{pad}// {tag}: clamp before the store", "cu": f"{pad}// {tag}: clamp per warp"
                        }.get(f.lang, f'{pad}GGML_LOG_DEBUG("%s: {tag}\\n", __func__);')
                return Edit(fid, (lines[i][0],), (bumped, note)), b
        return None

    def fate_events(self, fate: str, edit: Edit, block: int | None) -> list:
        """The history's events that give the edit its fate, as (callable, args) in order."""
        fid, f = edit.fid, self.files[edit.fid]
        name = f.blocks[block].name if block is not None else ""

        def block_now() -> int | None:  # the block holds the edit's lines wherever it moved
            for b, blk in enumerate(self.files[fid].blocks):
                if blk.kind == "func" and blk.name in (name, f"{name}_ext"):
                    return b
            return None

        first = edit.old[0] if edit.old else edit.between[1]  # type: ignore[index]
        return {
            "offset": [lambda: self.insert_function(fid, self.files[fid].funcs()[0])],
            "reordered": [lambda: block_now() is not None and self.reorder(fid, block_now())],
            "renamed-file": [lambda: self.rename_file(fid)],
            "renamed-func": [lambda: block_now() is not None and self.rename_function(fid, block_now())],
            "context-edited": [lambda: self._edit_near(fid, first)],
            "gone": [lambda: self.rewrite(fid, first) if edit.old else self._insert_between(fid, edit.between)],
            "split-twins": [lambda: block_now() is not None and self.twin(fid, block_now(), keep=False)],
            "twin-slide": [lambda: block_now() is not None and self.twin(fid, block_now(), keep=True),
                           lambda: self.delete_function(fid, name)],
            "twin-copy": [lambda: block_now() is not None and self.twin(fid, block_now(), keep=True)],
            "enum-grown": [lambda: self.add_enum_value(fid, first=True)],
            "includes-moved": [lambda: self.move_includes(fid, keep=edit.between or ())],
        }.get(fate, [])

    def _edit_near(self, fid: int, ident: int) -> None:
        """Edit the context line two above the edit (not adjacent: a merge still resolves it)."""
        where = self.locate(fid, ident)
        if where and where[1] >= 4:
            self.rewrite(fid, self.files[fid].blocks[where[0]].lines[where[1] - 2][0])

    def _insert_between(self, fid: int, between: tuple[int, int] | None) -> None:
        where = self.locate(fid, between[1]) if between else None
        if where:
            self.code.serial += 1
            block = self.files[fid].blocks[where[0]]
            block.lines.insert(where[1], self.code.ids([self.code.define(self.files[fid].lang,
                                                                          f"UPSTREAM_{self.code.serial}", 1)])[0])
            self.dirty.add(fid)


def _lang_files(files: dict[int, _File], lang: str) -> list[int]:
    return [fid for fid, f in files.items() if f.lang == lang]


def _make_queue(bld: _Builder, style: str, langs: tuple[str, ...], n: int, now: int, last: int
                ) -> list[QueuePatch]:
    r = bld.rng
    patches: list[QueuePatch] = []
    forms = {"format-patch": {3: "nobody", 7: "crlf", 11: "short-hunk"}, "quilt": {5: "short-hunk"}}.get(style, {})
    kinds = ("stmt", "stmt", "include", "stmt", "newfunc", "define", "stmt", "enum")
    for k in range(n):
        form = forms.get(k, "")
        edits: list[Edit] = []
        fate = "none"
        for j in range(1 if form == "short-hunk" else r.choice((1, 1, 1, 2, 2, 3))):
            lang = "cpp" if form == "short-hunk" else langs[(k + j) % len(langs)] if j == 0 else r.choice(("cpp", "c", "h"))
            kind = "stmt" if form == "short-hunk" else kinds[(k + 3 * j) % len(kinds)]
            if kind == "enum" and lang != "h":
                kind = "stmt"
            if not edits:
                fates = _FATES[kind]
                fate = fates[(k * 5 + len(style)) % len(fates)]
            deep = not edits and fate in ("split-twins", "twin-slide", "twin-copy")
            choices = [fid for fid in _lang_files(bld.files, lang) if fid not in bld.used]
            for fid in r.sample(choices, len(choices)):
                found = bld.site(fid, kind, form == "short-hunk", deep)
                if found:
                    break
            else:
                continue
            edit, block = found
            bld.used.add(fid)
            file_edits = [edit]
            if kind == "stmt" and r.random() < 0.4 and form != "short-hunk":  # a second hunk
                other = bld.site(fid, "stmt")
                if other and other[1] != block:
                    file_edits.append(other[0])
            if not edits:
                events = bld.fate_events(fate, edit, block)
                at = r.randint(now + 1, last)
                for step, event in enumerate(events):
                    bld.schedule.setdefault(min(at + 3 * step, last), []).append(event)
            edits += file_edits
        if not edits:
            continue
        area = bld.files[edits[0].fid].path.split("/")[-2]
        subject = f"{area} : carried fix {k + 1} ({fate})"
        slug = subject.replace(" : ", "-").replace(" ", "-").replace("(", "").replace(")", "")
        patches.append(QueuePatch(f"{len(patches) + 1:04d}-{slug}.patch", subject,
                                  _AUTHORS[k % len(_AUTHORS)], tuple(edits), fate, form))
    return patches


def _post(frozen: dict[int, tuple[Line, ...]], paths: dict[int, str], patch: QueuePatch
          ) -> dict[str, str] | None:
    """{path: text} of the files the patch changes in that tree, or None (no right place)."""
    out: dict[str, str] = {}
    for fid in dict.fromkeys(e.fid for e in patch.edits):
        lines = frozen.get(fid)
        text = apply_edits(lines, [e for e in patch.edits if e.fid == fid]) if lines is not None else None
        if text is None:
            return None
        out[paths[fid]] = text
    return out


def build_reach_upstream(dest: Path, files: int = 3000, commits: int = 300, seed: int = 17,
                         patches: float = 1.0) -> ReachUpstream:
    """Write the upstream into `dest` and its queues into dest.parent/queue-*; `patches` scales
    every queue's length (at least 6 each)."""
    rng = random.Random(seed * 7919 + files)
    code = _Code(rng)
    folders: set[str] = set()
    tree: dict[int, _File] = {}
    for i in range(files):
        lang = _MIX[i % len(_MIX)]
        folder = _DIRS[lang][i // len(_MIX) % len(_DIRS[lang])]
        stem = _STEMS[i // 7 % len(_STEMS)]
        path = f"{folder}/{stem}-{i:04d}.{lang}"
        folders.add(folder)
        tree[i] = code.file(lang, path, rng.randint(3, 9))
    bld = _Builder(rng, code, tree)
    bld.dirty = set(tree)
    bld.freeze()
    for folder in sorted(folders):  # every source folder has its CMakeLists.txt
        bld.texts[f"{folder}/CMakeLists.txt"] = (f"# {folder}\nfile(GLOB SOURCES *.c *.cpp)\n"
                                                 f"add_library({folder.replace('/', '-')} ${{SOURCES}})\n")
    history: list[Commit] = [Commit("refs/heads/master", None, dict(bld.texts), "import the upstream\n", EPOCH,
                                    tag=f"b{FIRST_TAG}")]
    snapshots: dict[int, tuple[dict[int, tuple[Line, ...]], dict[int, str]]] = {}
    queue_specs: list[tuple[str, str, int, tuple[int, ...], list[QueuePatch]]] = []
    last = commits
    # the queues' bases lie early in the history, so that every later point has history to cross
    bases = {round(share * commits * 0.6): (name, style, langs, n) for name, style, langs, n, share in _QUEUES}
    for c in range(commits + 1):
        if c:
            for event in bld.schedule.pop(c, []):
                event()
            for _ in range(rng.randint(1, 3)):
                bld.background()
            bld.freeze()
            history.append(Commit("refs/heads/master", c - 1, dict(bld.texts), f"upstream change {c}\n",
                                  EPOCH + 3600 * c, tag=f"b{FIRST_TAG + c}"))
        if c in bases:
            name, style, langs, n = bases[c]
            made = _make_queue(bld, style, langs, max(6, round(n * patches)), c, last)
            points = (c, c + (last - c) // 3, c + 2 * (last - c) // 3, last)
            queue_specs.append((name, style, c, points, made))
        if any(c in spec[3] for spec in queue_specs):
            snapshots[c] = (dict(bld.frozen), {fid: f.path for fid, f in bld.files.items()})
    return _write(dest, history, snapshots, queue_specs)


def _write(dest: Path, history: list[Commit], snapshots: dict, queue_specs: list) -> ReachUpstream:
    """The repository (history, the format-patch queue's commits, the speed branch) and the queue folders."""
    init_repo(dest)
    commits = list(history)
    chains: dict[str, str] = {}
    expected: dict[tuple[str, str, str], dict[str, str] | None] = {}
    for name, style, base, points, made in queue_specs:
        frozen, paths = snapshots[base]
        for p in made:
            for point in points:
                expected[(name, p.name, f"b{FIRST_TAG + point}")] = _post(*snapshots[point], p)
        if style == "format-patch":
            files = dict(commits[base].files)
            parent = base
            for k, p in enumerate(made):
                files = {**files, **(expected[(name, p.name, f"b{FIRST_TAG + base}")] or {})}
                commits.append(Commit(f"refs/heads/queue-{name}", parent, files, _message(p),
                                      EPOCH + 3600 * base + 60 * (k + 1), author=p.author))
                parent = len(commits) - 1
            chains[name] = f"queue-{name}"
            # the speed part's refusals: every third patch's place is edited upstream
            gone = dict(commits[base].files)
            for p in made[::3]:
                e = p.edits[0]
                lines = list(frozen[e.fid])
                at = next(i for i, (ident, _) in enumerate(lines) if ident == (e.old[0] if e.old else e.between[1]))
                lines[at:at + bool(e.old)] = [(0, "// upstream: reworked here")]
                gone[paths[e.fid]] = render(lines)
            commits.append(Commit("refs/heads/speed", base, gone, "rework a third of the patched places\n",
                                  EPOCH + 3600 * base + 30, tag="speed-refused"))
    fast_import(dest, commits)
    run(["reset", "--quiet", "--hard", "master"], cwd=dest)
    queues = []
    speed = dest.parent / "queue-speed"
    for name, style, base, points, made in queue_specs:
        folder = dest.parent / f"queue-{name}"
        folder.mkdir()
        frozen, paths = snapshots[base]
        base_tag = f"b{FIRST_TAG + base}"
        if style == "format-patch":
            out = run(["format-patch", "-o", str(folder.resolve()), f"{base_tag}..{chains[name]}"], cwd=dest)
            written = [Path(x) for x in out.splitlines()]
            speed.mkdir()
            for p, path in zip(made, written):
                path.rename(folder / p.name)
                if not p.form:
                    (speed / p.name).write_bytes((folder / p.name).read_bytes())
            (speed / "series").write_text("".join(f"{p.name}\n" for p in made if not p.form))
            run(["update-ref", "-d", f"refs/heads/{chains[name]}"], cwd=dest)
        else:
            for k, p in enumerate(made):
                post = expected[(name, p.name, base_tag)] or {}
                pre = {paths[fid]: render(frozen[fid]) for fid in dict.fromkeys(e.fid for e in p.edits)}
                (folder / p.name).write_text(_plain_patch(style, p, pre, post, k, base))
        for p in made:
            _apply_form(folder / p.name, p.form)
        (folder / "series").write_text("".join(f"{p.name}\n" for p in made))
        queues.append(ReachQueue(name, style, folder, base_tag,
                                 tuple(f"b{FIRST_TAG + c}" for c in points), tuple(made)))
    return ReachUpstream(dest, tuple(queues), expected, speed)


def _message(p: QueuePatch) -> str:
    return f"{p.subject}\n\nCarry this downstream until upstream takes it.\n"


def _plain_patch(style: str, p: QueuePatch, pre: dict[str, str], post: dict[str, str], k: int, base: int) -> str:
    """A GNU `diff -p -u` patch with a mail header, or a quilt patch (Index: lines) without a Date."""
    env = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}
    with tempfile.TemporaryDirectory(prefix="reach-diff-") as tmp:
        for side, content in (("a", pre), ("b", post)):
            for path, text in content.items():
                target = Path(tmp, side, path)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
                os.utime(target, (EPOCH + 3600 * base, EPOCH + 3600 * base + 60 * (k + 1) * (side == "b")))
        diffs = []
        for path in sorted(pre):
            if style == "diff-p":
                cmd = ["diff", "-p", "-u", f"a/{path}", f"b/{path}"]
                head = f"diff -p -u a/{path} b/{path}\n"
            else:
                cmd = ["diff", "-u", *(["-p"] if k % 2 else []), "--label", f"llama.cpp.orig/{path}",
                       "--label", f"llama.cpp/{path}", f"a/{path}", f"b/{path}"]
                head = f"Index: llama.cpp/{path}\n{'=' * 67}\n"
            out = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, check=False)  # 1: they differ
            diffs.append(head + out.stdout)
    if style == "diff-p":
        when = EPOCH + 3600 * base + 60 * (k + 1)
        header = (f"From: {p.author}\nDate: {formatdate(when)}\nSubject: [PATCH] {p.subject}\n\n"
                  f"Carry this downstream until upstream takes it.\n\n---\n")
    elif k % 2:
        header = f"Description: {p.subject}\n Carry this downstream until upstream takes it.\nAuthor: {p.author}\nForwarded: not-needed\n---\n"
    else:
        header = f"From: {p.author}\nSubject: {p.subject}\n\nCarry this downstream until upstream takes it.\n---\n"
    return header + "".join(diffs)


def _apply_form(path: Path, form: str) -> None:
    """Give a patch file its hard form, as real queues have them."""
    if not form:
        return
    text = path.read_text()
    if form == "nobody":
        lines = text.split("\n")
        i = next(i for i, ln in enumerate(lines) if ln.startswith("From: "))
        lines[i] = "From: nobody <>"
        text = "\n".join(lines)
    elif form == "crlf":
        text = text.replace("\n", "\r\n")
    elif form == "short-hunk":  # the last hunk's blank last context line eaten, with the signature
        lines = text.split("\n")
        end = next((i for i, ln in enumerate(lines) if ln == "-- "), len(lines))
        while end > 0 and lines[end - 1] == "":
            end -= 1
        assert lines[end - 1] == " ", f"{path}: no blank last context line to drop"
        text = "\n".join(lines[:end - 1]) + "\n"
    path.write_bytes(text.encode())
