"""The synthetic llama.cpp-shaped upstream that `patchkit demo` runs on (the tests use it too).

`build_upstream` writes a small git repository whose tools/server/server-context.cpp holds the
pre-image of the on-device checkpoint patch exactly at the lines its hunk headers record. The
pre-image is read from the patch at run time; everything around it is C++ of our own (fixed
scaffolding plus generated filler) that tree-sitter-cpp parses without errors. One branch per
scenario shows the apply ladder one situation (offset, ambiguous, merged, conflict, ...), and
`FixtureUpstream.expected_patched` gives, by construction, the text a correct apply must produce.

Everything is deterministic (fixed identities and dates, seeded generators), so two builds give
the same commit ids. What only the tests and benchmarks build on top of this (long histories, the
bulk upstream) lives outside the package, in the repository's testing/ folder; it uses the public
pieces below: `namespace_code`, `Commit`, `fast_import`, `init_repo`, `EPOCH`.
"""

from __future__ import annotations

import random
import textwrap
from dataclasses import dataclass, field, replace
from pathlib import Path

from unidiff import PatchSet

from patchkit.errors import PatchkitError
from patchkit.git import run

SERVER_CONTEXT = "tools/server/server-context.cpp"
RENAMED_CONTEXT = "tools/server/server-context-impl.cpp"
UPSTREAM_AUTHOR = "Upstream Developer <dev@upstream.invalid>"
EPOCH = 1789300000  # 2026-09-13: every commit date is this plus a fixed step


@dataclass(frozen=True)
class Scenario:
    """A ref of the fixture upstream and what applying the patch there must run into."""

    name: str
    ref: str
    description: str
    path: str = SERVER_CONTEXT  # where server-context.cpp lives at that ref


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("base", "b1000", "the pre-image sits at the recorded lines: every hunk is clean"),
    Scenario("master", "master", "b1001..b1003; b1002 inserts lines above hunk 1 and between "
             "hunks 3 and 4: every hunk applies with an offset"),
    Scenario("offset", "scenario/offset", "lines inserted above hunk 1, between hunks 3 and 4 "
             "and between hunks 5 and 6: three different offsets"),
    Scenario("ambiguous", "scenario/ambiguous", "hunk 6's site changed its log line, and its "
             "pre-image appears in two other functions: an applier must refuse, not guess (with a "
             "3-way base too: the merge would take a twin)"),
    Scenario("merged", "scenario/merged", "upstream changed the first context line of hunk 4: "
             "no exact match, a 3-way merge resolves it"),
    Scenario("conflict", "scenario/conflict", "upstream changed the very line hunk 4 removes"),
    Scenario("already-applied", "scenario/already-applied", "upstream carries the whole patch"),
    Scenario("partially-applied", "scenario/partially-applied",
             "upstream carries hunks 1-3; hunks 4-6 are still to apply"),
    Scenario("renamed", "scenario/renamed", "server-context.cpp was renamed to "
             "server-context-impl.cpp without a content change", RENAMED_CONTEXT),
    Scenario("members-added", "scenario/members-added", "a member was added next to spec_ckpt, "
             "inside hunk 1's leading context: fuzz or a 3-way merge is needed"),
    Scenario("new-site", "scenario/new-site", "a new function restores the speculative "
             "checkpoint a 7th time: the patch applies cleanly, only the site check sees it"),
)


@dataclass(frozen=True)
class FixtureUpstream:
    path: Path
    base_commit: str
    scenarios: dict[str, Scenario]
    _expected: dict[str, str | None] = field(default_factory=dict, repr=False, compare=False)

    def expected_patched(self, scenario: str) -> str | None:
        """Text of server-context.cpp (at `Scenario.path`) after a correct apply of the whole
        patch on that scenario; None where no correct full apply exists (ambiguous, conflict)."""
        if scenario not in self.scenarios:
            raise KeyError(f"unknown fixture scenario {scenario!r}; known: {', '.join(self.scenarios)}")
        return self._expected[scenario]


# --- the patch -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Hunk:
    old_start: int
    pre: tuple[str, ...]      # context and removed lines
    post: tuple[str, ...]     # context and added lines
    removed: tuple[str, ...]
    leading: tuple[str, ...]  # context before the first change


def _server_hunks(patch: Path | str) -> list[_Hunk]:
    text = Path(patch).read_text() if isinstance(patch, Path) or "\n" not in patch else patch
    files = [f for f in PatchSet(text) if f.path == SERVER_CONTEXT]
    if len(files) != 1 or len(files[0]) != 6:
        raise PatchkitError(f"the fixture needs a patch with 6 hunks in {SERVER_CONTEXT}",
                            "pass the on-device checkpoint patch")
    hunks = []
    for h in files[0]:
        lines = [(ln.line_type, ln.value.removesuffix("\n")) for ln in h]
        first_change = next(i for i, (kind, _) in enumerate(lines) if kind != " ")
        hunks.append(_Hunk(
            h.source_start,
            tuple(v for kind, v in lines if kind != "+"),
            tuple(v for kind, v in lines if kind != "-"),
            tuple(v for kind, v in lines if kind == "-"),
            tuple(v for _, v in lines[:first_change]),
        ))
    return hunks


# --- generated filler ------------------------------------------------------------------------

@dataclass(frozen=True)
class _Scope:
    indent: int
    static: bool = False      # namespace-scope helpers are `static`
    statements: bool = False  # inside a function body: statements rather than functions


_NS, _MEMBER, _ROUND = _Scope(0, static=True), _Scope(4), _Scope(12, statements=True)

_VERBS = ("count", "clamp", "estimate", "check", "collect", "reset", "update", "select", "trim",
          "merge", "measure", "limit")
_NOUNS = ("tokens", "batch", "draft", "prompt", "cache", "logits", "probs", "embd", "chunk",
          "window", "budget", "past", "discard", "keep", "predict", "indent", "ctx", "top_k",
          "lora", "slots")
_QUALS = ("for_task", "per_slot", "after_decode", "before_eval", "in_window", "of_request",
          "for_reuse", "for_cache", "at_start", "when_idle", "in_batch", "for_stream")
_OWNERS = (("const server_slot & slot", "slot"), ("const common_params & params", "params"),
           ("const server_task & task", "task"), ("const server_tokens & prompt", "prompt"))
_TYPES = ("int32_t", "int64_t", "size_t", "llama_pos")
_NOTES = ("is counted in tokens, not bytes", "may be negative when the request leaves it unset",
          "comes from the request when it sets one", "falls back to the server default",
          "is shared by every slot of the server", "resets at the start of each task",
          "must stay inside the context window", "is rounded down to a whole batch")


class _Gen:
    """Seeded generator of server-flavoured C++ helpers; every function name is new."""

    def __init__(self, seed: int, taken: set[str] | None = None) -> None:
        self._rng = random.Random(seed)
        self.taken = set(taken or ())

    def lines(self, scope: _Scope, n: int) -> list[str]:
        """Exactly n lines valid at `scope`."""
        if scope.statements:
            return self._statements(n, scope.indent, "slot")[0]
        out: list[str] = []
        while n - len(out) >= 5:
            left = n - len(out)
            size = self._rng.randint(7, 18)
            out += self._function(left if left - size < 5 else size, scope)
        pad = " " * scope.indent
        return out + [f"{pad}// {self._rng.choice(_NOUNS)} {self._rng.choice(_NOTES)}"
                      for _ in range(n - len(out))]

    def _function(self, size: int, scope: _Scope) -> list[str]:
        rng, pad = self._rng, " " * scope.indent
        verb, noun, qual = rng.choice(_VERBS), rng.choice(_NOUNS), rng.choice(_QUALS)
        name, twin = f"{verb}_{noun}_{qual}", 2
        while name in self.taken:  # a repeated draw gets a numbered name, still unique
            name, twin = f"{verb}_{noun}_{qual}_{twin}", twin + 1
        self.taken.add(name)
        param, owner = rng.choice(_OWNERS)
        body, names = self._statements(size - 5, scope.indent + 4, owner)
        return [f"{pad}// {verb} the {noun} {qual.replace('_', ' ')}: the result {rng.choice(_NOTES)}",
                f"{pad}{'static ' if scope.static else ''}int64_t {name}({param}) {{",
                *body, f"{pad}    return {names[-1] if names else 0};", f"{pad}}}", ""]

    def _statements(self, n: int, indent: int, owner: str) -> tuple[list[str], list[str]]:
        rng, pad = self._rng, " " * indent
        out: list[str] = []
        names: list[str] = []
        fresh = False  # each new variable gets at most one clamp, log or note: no repeated lines
        while len(out) < n:
            roll, var = rng.random(), names[-1] if names else ""
            if fresh and roll < 0.25 and n - len(out) >= 3:
                limit = rng.randint(2, 4096)
                out += [f"{pad}if ({var} > {limit}) {{", f"{pad}    {var} = {limit};", f"{pad}}}"]
            elif fresh and roll < 0.45:
                out.append(f'{pad}LOG_DBG("%s: {var} = %lld\\n", __func__, (long long) {var});')
            elif fresh and roll < 0.55:
                out.append(f"{pad}// {var} {rng.choice(_NOTES)}")
            else:
                var = f"n_{rng.choice(_NOUNS)}"
                var = var if var not in names else f"{var}_{len(names)}"
                names.append(var)
                out.append(f"{pad}{rng.choice(_TYPES)} {var} = {owner}.n_{rng.choice(_NOUNS)} "
                           f"{rng.choice('+-*/%')} {rng.randint(1, 999)};")
                fresh = True
                continue
            fresh = False
        return out, names


def namespace_code(seed: int, *sizes: int) -> list[list[str]]:
    """Blocks of namespace-scope C++ helpers, one per size (exactly that many lines), from one
    seeded generator: no function name repeats across the blocks."""
    gen = _Gen(seed)
    return [gen.lines(_NS, n) for n in sizes]


# --- the server-context.cpp template ---------------------------------------------------------

@dataclass(frozen=True)
class _Filler:
    scope: _Scope
    n: int | None  # None: sized so that the next hunk starts at its recorded line


@dataclass(frozen=True)
class _HunkAt:
    index: int


@dataclass(frozen=True)
class _Anchor:
    """A place where a scenario's upstream adds lines (nothing in the base)."""

    name: str
    scope: _Scope


_Item = tuple[str, ...] | _Filler | _HunkAt | _Anchor


def _code(text: str, indent: int = 0) -> tuple[str, ...]:
    pad = " " * indent
    return tuple(pad + ln if ln else "" for ln in textwrap.dedent(text).strip("\n").split("\n"))


def _rollback(name: str, why: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Opening and closing of a member function that restores the speculative checkpoint."""
    opening = _code(f"""
        // {why}
        void {name}() {{
            for (auto & slot : slots) {{
                if (!slot.is_processing() || slot.spec_draft.empty()) {{
                    continue;
                }}

                if (slot.n_draft_accepted < slot.spec_draft.size()) {{
                    auto & ckpt = slot.spec_ckpt;
                    if (!ckpt.empty()) {{
                        if (ckpt.pos_max + 1 < slot.prompt.n_tokens()) {{
                            SLT_INF(slot, "draft rejected after %d of %zu tokens\\n", slot.n_draft_accepted, slot.spec_draft.size());
        """, 4)
    closing = _code("""
                            slot.prompt.tokens.keep_first(ckpt.pos_max + 1);
                            slot.spec_draft.clear();
                        }
                    }
                }
            }
        }
        """, 4) + ("",)
    return opening, closing


def _template() -> list[_Item]:
    """The file, top to bottom. Line counts between hunks 2 and 5 are fixed by the hunk headers."""
    rollback_open, rollback_close = _rollback(
        "rollback_rejected_drafts", "a rejected draft takes its slot back to the checkpoint of the round")
    return [
        _code("""
            // server-context.cpp: slots, speculative decoding and the prompt cache of the server.
            // Synthetic upstream written by patchkit's fixture builder; its shape follows llama.cpp.

            #include "server-context.h"
            #include "server-common.h"

            #include "llama.h"

            #include <algorithm>
            #include <cstdint>
            #include <random>
            #include <vector>
            """) + ("",),
        _Anchor("ns-top", _NS),
        _Filler(_NS, None),
        _code("""
            struct server_slot {
                int id = -1;

                llama_context * ctx_tgt = nullptr;
                llama_context * ctx_dft = nullptr;

                server_prompt prompt;
                server_slot_memory mem;
            """) + ("",),
        _Filler(_MEMBER, 150),
        _code("""
            // speculative decoding: the draft of this round and the state a rejected draft returns to
            llama_tokens spec_draft;
            int32_t n_draft_max = 0;
            int32_t n_draft_accepted = 0;
            """, 4),
        _HunkAt(0),
        _Filler(_MEMBER, 120),
        ("};", ""),
        _Filler(_NS, 420),
        _code("""
            struct server_context_impl {
            public:
                common_params params_base;

                std::vector<server_slot> slots;
                server_task_runner slot_tasks;
            """) + ("",),
        _Filler(_MEMBER, 700),
        ("private:",),
        _Filler(_MEMBER, None),
        _code("""
            // The prompt cache keeps several checkpoints per slot, one per cached prefix. They are
            // loaded long after they are taken, so they stay in host memory.
            void save_prompt_checkpoint(server_slot & slot) {
                llama_context * ctx_tgt = slot.ctx_tgt;
                llama_context * ctx_dft = slot.ctx_dft;

                while (slot.prompt.checkpoints.size() >= params_base.n_ctx_checkpoints) {
                    slot.prompt.checkpoints.erase(slot.prompt.checkpoints.begin());
                }

                const llama_pos pos_min = llama_memory_seq_pos_min(llama_get_memory(ctx_tgt), slot.id);
                const llama_pos pos_max = llama_memory_seq_pos_max(llama_get_memory(ctx_tgt), slot.id);

                auto & cur = slot.prompt.checkpoints.emplace_back();
                cur.update_pos(pos_min, pos_max);
                cur.update_tgt(ctx_tgt, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
                if (ctx_dft) {
                    cur.update_dft(ctx_dft, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
                }

                SLT_INF(slot, "saved prompt checkpoint %zu (pos_min = %d, pos_max = %d)\\n",
                        slot.prompt.checkpoints.size(), pos_min, pos_max);
            }
            """, 4) + ("",),
        _Filler(_MEMBER, 260),
        # hunk 2 starts inside the call that opens the checkpoint's position range
        _code("""
            // Before a speculative round: remember the range the checkpoint of this round covers.
            void begin_speculative_round(server_slot & slot) {
                llama_context * ctx_tgt = slot.ctx_tgt;
                llama_context * ctx_dft = slot.ctx_dft;
                const bool use_ckpt_dft = ctx_dft != nullptr && slot.n_draft_max > 0;

                for (size_t i_batch = 0; i_batch < slot.spec_i_batch.size(); ++i_batch) {
                    if (slot.spec_i_batch[i_batch] < 0) {
                        continue;
                    }

                    if (i_batch + 1 == slot.spec_i_batch.size()) {
                        if (!slot.spec_draft.empty()) {
                            if (slot.spec_ckpt.empty() || slot.spec_ckpt.pos_max < slot.spec_i_batch[i_batch]) {
                                slot.spec_ckpt.update_pos(
                                        llama_memory_seq_pos_min(llama_get_memory(ctx_tgt), slot.id),
            """, 4),
        _HunkAt(1),
        _code("""
                            }
                        }
                    }
                }
            }
            """, 4) + ("",),
        _Filler(_MEMBER, None),
        # hunks 3-5 sit in one lambda, on a reference to the slot's speculative checkpoint
        _code("""
            // After the target verified a draft: take the draft model back to the checkpoint, then
            // take the checkpoint of the next round on both models.
            void sync_speculative_checkpoint(server_slot & slot, bool use_ckpt_tgt, bool use_ckpt_dft) {
                llama_context * ctx_tgt = slot.ctx_tgt;
                llama_context * ctx_dft = slot.ctx_dft;

                slot_tasks.run(slot.id, [&]() {
                    auto & ckpt = slot.spec_ckpt;
                    if (ckpt.pos_max < 0) {
                        return;
                    }
            """, 4),
        _HunkAt(2),
        _code("""
                    SLT_WRN(slot, "could not trim the draft memory after pos %d\\n", ckpt.pos_max);
                    llama_memory_seq_rm(llama_get_memory(ctx_dft), slot.id, -1, -1);
                    ckpt.clear();
                    return;
                }
            }
            """, 12) + ("",),
        _Anchor("round", _ROUND),
        _code("""
            // keep the state of this round, so that a rejected draft can return to it
            ckpt.pos_min = llama_memory_seq_pos_min(llama_get_memory(ctx_tgt), slot.id);
            ckpt.pos_max = llama_memory_seq_pos_max(llama_get_memory(ctx_tgt), slot.id);

            if (ckpt.pos_max >= ckpt.pos_min) {
            """, 12),
        _HunkAt(3),
        ("",) + _code("""
                SLT_DBG(slot, "saved the target checkpoint (size = %zu)\\n", ckpt.size());
            } else {
                // without a target checkpoint, a rejected draft is replayed from the accepted tokens
                slot.spec_is_replay = true;
            """, 16),
        _HunkAt(4),
        ("    }", ""),
        _Filler(_MEMBER, 240),
        _code("""
            // Reuse of a cached prompt: load the newest prompt checkpoint that ends before pos.
            bool restore_prompt_checkpoint(server_slot & slot, llama_pos pos) {
                auto it = std::find_if(slot.prompt.checkpoints.rbegin(), slot.prompt.checkpoints.rend(),
                        [&](const auto & c) { return c.pos_max < pos; });
                if (it == slot.prompt.checkpoints.rend()) {
                    return false;
                }

                it->load_tgt(slot.ctx_tgt, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
                if (slot.ctx_dft) {
                    it->load_dft(slot.ctx_dft, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
                }

                SLT_WRN(slot, "restored prompt checkpoint (pos_min = %d, pos_max = %d)\\n", it->pos_min, it->pos_max);
                return true;
            }
            """, 4) + ("",),
        _Anchor("before-rollback", _MEMBER),
        _Filler(_MEMBER, None),
        rollback_open,
        _HunkAt(5),
        rollback_close,
        _Anchor("after-rollback", _MEMBER),
        _Filler(_MEMBER, 60),
        ("};", ""),
        _Filler(_NS, 90),
    ]


@dataclass(frozen=True)
class _Edit:
    """Upstream replaced one line of a hunk's region by `new` (in the pre- and post-image alike)."""

    hunk: int
    old: str
    new: tuple[str, ...]

    def apply(self, lines: list[str]) -> list[str]:
        i = lines.index(self.old)
        return lines[:i] + list(self.new) + lines[i + 1:]


@dataclass(frozen=True)
class _Variant:
    """server-context.cpp as one upstream commit has it."""

    post: frozenset[int] = frozenset()                     # hunks upstream already carries
    edits: tuple[_Edit, ...] = ()
    inserts: dict[str, list[str]] = field(default_factory=dict)  # anchor name -> lines
    patchable: bool = True                                 # a correct full apply exists


class _Layout:
    """The template with its filler generated once; hunks and anchors stay open slots."""

    def __init__(self, hunks: list[_Hunk]) -> None:
        self.hunks = hunks
        items = _template()
        sizes = self._elastic_sizes(items)
        gen = _Gen(seed=1000)
        self.parts: list[tuple[str, ...] | _HunkAt | _Anchor] = []
        for i, item in enumerate(items):
            if isinstance(item, _Filler):
                self.parts.append(tuple(gen.lines(item.scope, sizes.get(i, item.n or 0))))
            else:
                self.parts.append(item)
        self._taken = gen.taken
        self._anchors = {p.name: p.scope for p in self.parts if isinstance(p, _Anchor)}

    def _elastic_sizes(self, items: list[_Item]) -> dict[int, int]:
        sizes: dict[int, int] = {}
        count, elastic = 0, None
        for i, item in enumerate(items):
            if isinstance(item, tuple):
                count += len(item)
            elif isinstance(item, _Filler):
                if item.n is None:
                    elastic = i
                else:
                    count += item.n
            elif isinstance(item, _HunkAt):
                hunk = self.hunks[item.index]
                gap = hunk.old_start - 1 - count
                if gap < 0 or (gap and elastic is None):
                    raise PatchkitError(f"hunk {item.index + 1} (line {hunk.old_start}) does not fit "
                                        "the fixture's template", "pass the on-device checkpoint patch")
                if elastic is not None:
                    sizes[elastic] = gap
                count, elastic = hunk.old_start - 1 + len(hunk.pre), None
        return sizes

    def fill(self, anchor: str, n: int, seed: int) -> list[str]:
        """n new lines fit for `anchor`, with function names the base does not use."""
        return _Gen(seed, self._taken).lines(self._anchors[anchor], n)

    def render(self, variant: _Variant) -> str:
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, _HunkAt):
                hunk = self.hunks[part.index]
                lines = list(hunk.post if part.index in variant.post else hunk.pre)
                for edit in variant.edits:
                    if edit.hunk == part.index:
                        lines = edit.apply(lines)
                out += lines
            elif isinstance(part, _Anchor):
                out += variant.inserts.get(part.name, ())
            else:
                out += part
        return "\n".join(out).rstrip("\n") + "\n"


def _changed(line: str, old: str, new: str) -> str:
    if old not in line:
        raise PatchkitError(f"the fixture cannot find {old!r} in {line.strip()!r}",
                            "pass the on-device checkpoint patch")
    return line.replace(old, new, 1)


def _variants(layout: _Layout) -> dict[str, _Variant]:
    """server-context.cpp at the tip of each scenario, as changes to the base."""
    h = layout.hunks
    all_hunks = frozenset(range(len(h)))
    log_line = next(ln for ln in h[5].leading if ln.strip())
    member_anchor = h[0].leading[-1]
    member_pad = member_anchor[: len(member_anchor) - len(member_anchor.lstrip())]
    copies: list[str] = []
    for name, why in (("rollback_cancelled_drafts", "a cancelled task drops its draft the same way"),
                      ("rollback_evicted_drafts", "an evicted slot drops its draft before reuse")):
        opening, closing = _rollback(name, why)
        copies += [*opening, *h[5].pre, *closing]
    flag = "LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY)"
    return {
        "base": _Variant(),
        "master": _Variant(inserts={"ns-top": layout.fill("ns-top", 25, 1002),
                                    "round": layout.fill("round", 10, 1003)}),
        "offset": _Variant(inserts={"ns-top": layout.fill("ns-top", 31, 2001),
                                    "round": layout.fill("round", 12, 2002),
                                    "before-rollback": layout.fill("before-rollback", 20, 2003)}),
        "ambiguous": _Variant(
            edits=(_Edit(5, log_line, (_changed(log_line, "SLT_DBG", "SLT_INF"),)),),
            inserts={"after-rollback": copies}, patchable=False),
        "merged": _Variant(edits=(_Edit(3, h[3].pre[0], (
            _changed(h[3].pre[0], ") {", " && !slot.spec_is_replay) {"),)),)),
        "conflict": _Variant(edits=(_Edit(3, h[3].removed[0], (
            _changed(h[3].removed[0], flag, f"{flag[:-1]} | LLAMA_STATE_SEQ_FLAGS_NO_SYNC)"),)),),
            patchable=False),
        "already-applied": _Variant(post=all_hunks),
        "partially-applied": _Variant(post=frozenset({0, 1, 2})),
        "renamed": _Variant(),
        "members-added": _Variant(edits=(_Edit(0, member_anchor, (
            f"{member_pad}int32_t spec_n_accepted = 0;", member_anchor)),)),
        "new-site": _Variant(inserts={"after-rollback": list(_code("""
            // a replayed round restores the draft model's checkpoint before drafting again
            void replay_speculative_round(server_slot & slot) {
                auto & ckpt = slot.spec_ckpt;
                if (slot.ctx_dft && !ckpt.empty()) {
                    ckpt.load_dft(slot.ctx_dft, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
                }
            }
            """, 4) + ("",))}),
    }


# --- the rest of the tree ------------------------------------------------------------------------

def _cmakelists(options: list[tuple[str, str, str]]) -> str:
    lines = [f'option({name} "{doc}" {default})' for name, doc, default in options]
    return "\n".join([
        "cmake_minimum_required(VERSION 3.14)", 'project("llama.cpp" C CXX)', "",
        "set(CMAKE_CXX_STANDARD 17)", "set(CMAKE_CXX_STANDARD_REQUIRED ON)", "", *lines, "",
        "if (LLAMA_BUILD_SERVER)", "    add_subdirectory(tools/server)", "endif()", ""])


_OPTIONS = [("GGML_NATIVE", "ggml: optimize the build for the host CPU", "ON"),
            ("GGML_CUDA", "ggml: use CUDA", "OFF"),
            ("GGML_VULKAN", "ggml: use Vulkan", "OFF"),
            ("LLAMA_BUILD_SERVER", "llama: build the server", "ON")]


def _support_files(server_source: str) -> dict[str, str]:
    return {
        ".gitignore": "/build*/\n*.o\n/.cache/\n",
        "README.md": "# llama.cpp (synthetic)\n\nA small upstream shaped like llama.cpp, written by "
                     "patchkit's fixture builder for its tests and its demo.\n",
        "CMakeLists.txt": _cmakelists(_OPTIONS),
        "include/llama.h": "\n".join(_code("""
            #pragma once

            #include <stdint.h>

            typedef uint32_t llama_state_seq_flags;

            // what a sequence state save or load covers, and where the copy lives
            enum llama_state_seq_flag {
                LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY = 1, // the recurrent (partial) state only
                LLAMA_STATE_SEQ_FLAGS_ON_DEVICE    = 2, // keep the copy in device memory
            };
            """)) + "\n",
        "tools/server/CMakeLists.txt": "\n".join([
            "set(TARGET llama-server)", "",
            f"add_executable(${{TARGET}} {Path(server_source).name} server-common.cpp)",
            "target_include_directories(${TARGET} PRIVATE ../../include)",
            "target_compile_features(${TARGET} PRIVATE cxx_std_17)", ""]),
        "tools/server/server-common.cpp": "\n".join([
            "// server-common.cpp: helpers shared by the server's translation units", "",
            '#include "server-common.h"', "", *namespace_code(7, 60)[0]]).rstrip("\n") + "\n",
    }


# --- git -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Commit:
    ref: str
    parent: int | None      # index of the parent in the list given to fast_import
    files: dict[str, str]   # the whole tree
    message: str
    when: int
    author: str = UPSTREAM_AUTHOR
    tag: str | None = None


def fast_import(repo: Path, commits: list[Commit]) -> None:
    """Write all commits in one `git fast-import` run (one process, whatever the tree size)."""
    out: list[bytes] = []

    def data(text: str) -> None:
        raw = text.encode()
        out.append(b"data %d\n%s\n" % (len(raw), raw))

    for mark, c in enumerate(commits, 1):
        parent = commits[c.parent].files if c.parent is not None else {}
        out.append(f"commit {c.ref}\nmark :{mark}\nauthor {c.author} {c.when} +0000\n"
                   f"committer {c.author} {c.when} +0000\n".encode())
        data(c.message)
        if c.parent is not None:
            out.append(f"from :{c.parent + 1}\n".encode())
        out += [f"D {p}\n".encode() for p in sorted(parent.keys() - c.files.keys())]
        for path, text in sorted(c.files.items()):
            if parent.get(path) != text:
                out.append(f"M 100644 inline {path}\n".encode())
                data(text)
        if c.tag:
            out.append(f"reset refs/tags/{c.tag}\nfrom :{mark}\n".encode())
    run(["fast-import", "--quiet"], cwd=repo, input=b"".join(out))


def init_repo(dest: Path) -> None:
    if dest.exists() and any(dest.iterdir()):
        raise PatchkitError(f"{dest} is not empty", "give the fixture a new directory")
    dest.mkdir(parents=True, exist_ok=True)
    run(["init", "--quiet", "--initial-branch=master"], cwd=dest)


def build_upstream(dest: Path, patch: Path | str) -> FixtureUpstream:
    """Write the scenario upstream for `patch` (a .patch path or its text) into `dest`."""
    layout = _Layout(_server_hunks(patch))
    variants = _variants(layout)
    base = {**_support_files(SERVER_CONTEXT), SERVER_CONTEXT: layout.render(variants["base"])}
    b1001 = {**base, "tools/server/server-common.cpp": base["tools/server/server-common.cpp"]
             + "\n" + "\n".join(namespace_code(1001, 14)[0]).rstrip("\n") + "\n"}
    b1002 = {**b1001, SERVER_CONTEXT: layout.render(variants["master"])}
    b1003 = {**b1002, "CMakeLists.txt": _cmakelists(
        [*_OPTIONS[:3], ("GGML_HIP", "ggml: use HIP", "OFF"), *_OPTIONS[3:]])}
    commits = [
        Commit("refs/heads/master", None, base, "server : import the server sources\n", EPOCH,
                tag="b1000"),
        Commit("refs/heads/master", 0, b1001, "server : add shared helpers\n", EPOCH + 3600,
                tag="b1001"),
        Commit("refs/heads/master", 1, b1002, "server : move slot helpers up\n", EPOCH + 7200,
                tag="b1002"),
        Commit("refs/heads/master", 2, b1003, "ggml : add the HIP option\n", EPOCH + 10800,
                tag="b1003"),
    ]
    for step, s in enumerate(SCENARIOS[2:], 1):
        files = {**_support_files(s.path), s.path: layout.render(variants[s.name])}
        commits.append(Commit(f"refs/heads/{s.ref}", 0, files, f"server : scenario {s.name}\n\n"
                               f"{textwrap.fill(s.description, 72)}\n",
                               EPOCH + 86400 + 60 * step))
    init_repo(dest)
    fast_import(dest, commits)
    run(["reset", "--quiet", "--hard", "master"], cwd=dest)
    every_hunk = frozenset(range(len(layout.hunks)))
    expected = {name: layout.render(replace(v, post=every_hunk)) if v.patchable else None
                for name, v in variants.items()}
    return FixtureUpstream(dest, run(["rev-parse", "b1000^{commit}"], cwd=dest),
                           {s.name: s for s in SCENARIOS}, expected)
