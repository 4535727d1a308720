"""Site checks on code nested 20,000 levels deep: the right sites and verdicts, no RecursionError.

Nothing here is timed (benchmarks/check_bench.py --nested measures); the depth is past Python's
recursion limit, so any recursion per level, or a walk up per level per question, shows here.
"""

from __future__ import annotations

from check_helpers import PROMPT, SERVER_CONTEXT, SPEC, fixture_text, rule, uncounted_rules, verdicts
from patchkit.checks import run_checks

DEPTH = 20_000
REJECT_DRAFT = "    void reject_draft(server_slot & slot, int n_accepted) {\n"


def deep_reject_draft() -> tuple[bytes, dict[str, int]]:
    """The patched fixture with reject_draft() rewritten DEPTH blocks deep, and the line of each
    marked statement. Half-way down: an on-device constant, and a sibling block (closed, so out
    of scope below it) that declares another `ckpt` and `flags`; at the bottom: sites that use
    both names, one parse error, one `#if 0`."""
    head, rest = fixture_text("server-context.patched.cpp").decode().split(REJECT_DRAFT)
    tail = rest[rest.index("\n    }\n};"):]
    half = DEPTH // 2
    lines = ["        auto & ckpt = slot.spec_ckpt;", "        int n = 0;"]
    for level in range(DEPTH):
        if level == half:
            lines += ["{ constexpr auto flags = LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY | LLAMA_STATE_SEQ_FLAGS_ON_DEVICE;",
                      "{ auto & ckpt = slot.prompt.checkpoints.back(); constexpr auto flags = 0; }"]
        else:
            lines.append(f"{{ n += {level % 10};")
    marked = {
        "spec": "ckpt.load_tgt(slot.ctx_tgt, slot.id, flags);",
        "error": 'LOG_DBG("n = %" PRId64 "\\n", (int64_t) n);',
        "prompt": "{ auto & cur = slot.prompt.checkpoints.back(); cur.load_dft(ctx_dft, slot.id, 0); }",
        "if0": "#if 0\nckpt.load_dft(slot.ctx_dft, slot.id, 0);\n#endif",
        "missing": "ckpt.load_dft(slot.ctx_dft, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);",
    }
    first = head.count("\n") + 2 + len(lines)  # line numbers are 1-based; REJECT_DRAFT is one line
    at, line = {}, first
    for name, code in marked.items():
        at[name] = line
        line += code.count("\n") + 1
    lines += list(marked.values()) + ["}" * DEPTH]
    return (head + REJECT_DRAFT + "\n".join(lines) + tail).encode(), at


def test_twenty_thousand_nested_blocks_give_the_right_sites_and_verdicts():
    source, at = deep_reject_draft()
    report = run_checks(uncounted_rules(), lambda path: source if path == SERVER_CONTEXT else None)

    # the fixture's sites outside reject_draft(), then the deep ones; the one in #if 0 never counts
    assert verdicts(report, SPEC) == [(100, "ok"), (112, "ok"), (123, "ok"), (131, "ok"),
                                      (at["spec"], "ok"), (at["missing"], "missing-flag")]
    assert verdicts(report, PROMPT) == [(80, "ok"), (83, "ok"), (151, "ok"), (154, "ok"), (at["prompt"], "ok")]
    spec_sites = rule(report, SPEC).sites[-2:]
    # `ckpt` and `flags` resolve 10,000 levels up, past the closed block that redeclares both
    assert [(s.bound_to, s.flags) for s in spec_sites] == [
        ("spec_ckpt", ("LLAMA_STATE_SEQ_FLAGS_ON_DEVICE", "LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY")),
        ("spec_ckpt", ("LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY",))]
    assert rule(report, PROMPT).sites[-1].bound_to == "checkpoints"
    assert {s.function for s in spec_sites} == {"server_context_impl::reject_draft"}
    # the deep parse error and #if 0 are listed where they are, and taint no site
    regions = [(g.kind, g.line, g.end_line) for g in rule(report, SPEC).regions]
    assert regions == [("parse-error", 42, 42), ("parse-error", at["error"], at["error"]),
                       ("disabled", at["if0"], at["if0"] + 2)]


def test_a_declaration_twenty_thousand_ifdef_blocks_deep_is_found():
    # `#ifdef` blocks open no scope: the reference declared inside all of them is seen by the
    # call after them, and the one in the `#if 0` branch never is
    source = ("struct S {\n    ckpt_t spec_ckpt;\n    ckpt_t other;\n    void f() {\n"
              + "#ifdef A\n" * DEPTH + "auto & c = spec_ckpt;\n#if 0\nauto & c = other;\n#endif\n"
              + "#endif\n" * DEPTH + "c.load_tgt(ctx, 0, LLAMA_STATE_SEQ_FLAGS_ON_DEVICE);\n    }\n};\n").encode()
    report = run_checks(uncounted_rules(), lambda path: source if path == SERVER_CONTEXT else None)
    assert verdicts(report, SPEC) == [(2 * DEPTH + 9, "ok")]
    assert rule(report, SPEC).sites[0].bound_to == "spec_ckpt"
    assert rule(report, PROMPT).sites == ()
