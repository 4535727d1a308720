"""checks/cpp.py on small C++ sources: which calls count, what their receivers are bound to, and
the flag names a flags argument resolves to, through the ways C++ spells a constant."""

from __future__ import annotations

import pytest

from patchkit.checks.cpp import CppFile

CALLS = frozenset({"load_tgt", "update_tgt"})
P, D = "LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY", "LLAMA_STATE_SEQ_FLAGS_ON_DEVICE"

SLOT = f"""\
struct common_prompt_checkpoint {{ int pos_min; }};

struct server_slot {{
    int id;
    common_prompt_checkpoint spec_ckpt;
    std::vector<common_prompt_checkpoint> checkpoints;
    static constexpr llama_state_seq_flags spec_flags = {P} | {D};
    static constexpr llama_state_seq_flags host_flags = {P};
    llama_state_seq_flags flags_now = {P};
}};
"""


def parsed(body: str, prelude: str = SLOT) -> CppFile:
    return CppFile((prelude + body).encode(), CALLS)


def only_call(source: CppFile):
    (call,) = source.calls
    return call


def flags_of(body: str, prelude: str = SLOT):
    source = parsed(body, prelude)
    return source.flags(only_call(source), -1)


def bound(body: str, prelude: str = SLOT) -> tuple[str | None, str]:
    source = parsed(body, prelude)
    binding = source.binding(only_call(source))
    return binding.member, binding.reason


# -- constants -------------------------------------------------------------------------------

def test_a_static_constexpr_member_through_its_object_and_its_class():
    via_object = flags_of("void f(server_slot & slot) { slot.spec_ckpt.load_tgt(c, 0, slot.spec_flags); }")
    assert via_object.names == {P, D} and not via_object.dynamic and not via_object.unresolved
    via_class = flags_of("void f(server_slot & slot) { slot.spec_ckpt.load_tgt(c, 0, server_slot::host_flags); }")
    assert via_class.names == {P}
    # an element of a container of server_slot, reached through an index
    indexed = flags_of("void f(std::vector<server_slot> & s) { s[0].spec_ckpt.load_tgt(c, 0, s[0].host_flags); }")
    assert indexed.names == {P}


def test_macros_chain_and_only_a_live_define_before_the_use_counts():
    body = f"""
#define BASE {P}
#define BOTH (BASE | {D})
#if 0
#define LATE {D}
#endif
void f(server_slot & slot) {{
    slot.spec_ckpt.load_tgt(c, 0, BOTH);
}}
"""
    assert flags_of(body).names == {P, D}
    # a #define after the use, or one in #if 0, is not what the use means: the name is a flag itself
    late = flags_of(body.replace("0, BOTH", "0, LATE"))
    assert late.names == {"LATE"}
    after = flags_of("void f(server_slot & s) { s.spec_ckpt.load_tgt(c, 0, AFTER); }\n#define AFTER 0\n")
    assert after.names == {"AFTER"}


def test_a_constant_in_the_body_is_not_the_member_of_the_same_name():
    prelude = f"""\
struct server_slot {{
    common_prompt_checkpoint spec_ckpt;
    static constexpr llama_state_seq_flags flags = {D};

    void before() {{
        spec_ckpt.load_tgt(c, 0, flags);
    }}

    void inside() {{
        constexpr llama_state_seq_flags flags = {P};
        spec_ckpt.update_tgt(c, 0, flags);
    }}
}};
"""
    source = CppFile(prelude.encode(), CALLS)
    before, inside = source.calls
    assert source.flags(before, -1).names == {D}
    assert source.flags(inside, -1).names == {P}


def test_casts_zero_and_numbers():
    assert flags_of(f"void f(server_slot & s) {{ s.spec_ckpt.load_tgt(c, 0, static_cast<llama_state_seq_flags>({P})); }}").names == {P}
    assert flags_of(f"void f(server_slot & s) {{ s.spec_ckpt.load_tgt(c, 0, (llama_state_seq_flags) ({D})); }}").names == {D}
    assert flags_of("void f(server_slot & s) { s.spec_ckpt.load_tgt(c, 0, 0); }").names == frozenset()
    assert flags_of("void f(server_slot & s) { s.spec_ckpt.load_tgt(c, 0, 0u); }").names == frozenset()
    assert flags_of("void f(server_slot & s) { s.spec_ckpt.load_tgt(c, 0, 2); }").names == {"2"}


# -- what cannot be told statically ------------------------------------------------------------

@pytest.mark.parametrize("argument, kind, words", [
    ("slot.flags_now", "dynamic", "flags_now is a non-constant member"),
    ("n", "dynamic", "n is a parameter"),
    ("pick(slot)", "dynamic", "the result of pick(...)"),
    (f"slot.id ? {P} : {D}", "dynamic", "chosen at run time"),
    ("mutable_flags", "dynamic", "mutable_flags is a variable, not a constant"),
    (f"{P} & {D}", "unresolved", "operator &"),
    ("slot.missing_flags", "unresolved", "server_slot has no member missing_flags"),
    ("other.flags", "unresolved", "cannot tell which struct other is"),
])
def test_run_time_and_unknown_parts_are_said_with_their_reason(argument, kind, words):
    flags = flags_of(f"""
void f(server_slot & slot, llama_state_seq_flags n) {{
    llama_state_seq_flags mutable_flags = {P};
    slot.spec_ckpt.load_tgt(c, 0, {argument});
}}""")
    parts = flags.dynamic if kind == "dynamic" else flags.unresolved
    assert any(words in part for part in parts), parts
    other = flags.unresolved if kind == "dynamic" else flags.dynamic
    assert not other


def test_a_known_name_beside_a_dynamic_one_keeps_both():
    flags = flags_of(f"void f(server_slot & s, int n) {{ s.spec_ckpt.load_tgt(c, 0, {P} | n); }}")
    assert flags.names == {P} and flags.dynamic == ("n is a parameter (line 11)",)


# -- which calls count --------------------------------------------------------------------------

def test_comments_strings_and_dead_code_hold_no_call():
    source = parsed(f"""
void f(server_slot & slot) {{
    // slot.spec_ckpt.load_tgt(c, 0, {P});
    /* slot.spec_ckpt.update_tgt(c, 0, {P}); */
    const char * s = "slot.spec_ckpt.load_tgt(c, 0, {P});";
#if 0
    slot.spec_ckpt.load_tgt(c, 0, {P});
#elif 1
    slot.spec_ckpt.update_tgt(c, 0, /* not {P} */ {D} /* last */);
#else
    slot.spec_ckpt.load_tgt(c, 0, {P});
#endif
    slot.spec_ckpt.other_call(c, 0, {P});
}}""")
    (call,) = source.calls
    assert call.name == "update_tgt" and call.short == "slot.spec_ckpt.update_tgt(...)"
    # comments between the arguments are not arguments
    assert source.flags(call, -1).names == {D} and source.flags(call, 2).names == {D}
    assert source.flags(call, 3) is None
    assert [r.kind for r in source.regions] == ["disabled", "disabled"]
    assert [r.line for r in source.regions] == [16, 20]


# -- receivers ------------------------------------------------------------------------------------

@pytest.mark.parametrize("statement, member", [
    ("slot.spec_ckpt.load_tgt(c, 0, 0);", "spec_ckpt"),
    ("auto & a = slot.spec_ckpt; auto & b = a; b.load_tgt(c, 0, 0);", "spec_ckpt"),
    ("auto * p = &slot.spec_ckpt; p->load_tgt(c, 0, 0);", "spec_ckpt"),
    ("auto * p = &slot.spec_ckpt; (*p).load_tgt(c, 0, 0);", "spec_ckpt"),
    ("slot.checkpoints.back().load_tgt(c, 0, 0);", "checkpoints"),
    ("slot.checkpoints[1].load_tgt(c, 0, 0);", "checkpoints"),
    ("for (auto it = slot.checkpoints.begin(); it != slot.checkpoints.end(); ++it) { it->load_tgt(c, 0, 0); }",
     "checkpoints"),
    ("for (auto & cp : slot.checkpoints) { cp.load_tgt(c, 0, 0); }", "checkpoints"),
    ("auto it = std::find_if(slot.checkpoints.rbegin(), slot.checkpoints.rend(), ok); it->load_tgt(c, 0, 0);",
     "checkpoints"),
    ("auto run = [&](int n) { if (n) { slot.spec_ckpt.load_tgt(c, 0, 0); } }; run(1);", "spec_ckpt"),
])
def test_receivers_are_bound_to_the_member_they_come_from(statement, member):
    assert bound(f"void f(server_slot & slot) {{ {statement} }}") == (member, "")


@pytest.mark.parametrize("statement, reason", [
    ("get_ckpt().load_tgt(c, 0, 0);", "get_ckpt() is returned by a function"),
    ("ckpt.load_tgt(c, 0, 0);", "ckpt is a parameter (line 12) not bound in this file"),
    ("nowhere.load_tgt(c, 0, 0);", "nowhere is not declared in this file"),
    ("load_tgt(c, 0, 0);", "load_tgt(...) has no receiver"),
])
def test_receivers_that_cannot_be_bound_say_why(statement, reason):
    assert bound(f"void f(server_slot & slot,\n       common_prompt_checkpoint & ckpt) {{ {statement} }}") == (None, reason)


def test_a_member_used_inside_a_method_is_this_member():
    source = CppFile(b"""
struct server_slot {
    common_prompt_checkpoint spec_ckpt;
    void round();
    void rollback() { spec_ckpt.load_tgt(c, 0, 0); }
};
void server_slot::round() {
    spec_ckpt.update_tgt(c, 0, 0);
}
""", CALLS)
    inline, outside = source.calls
    assert source.binding(inline).member == "spec_ckpt"
    assert source.binding(outside).member == "spec_ckpt"  # out of class: S:: says whose members
    assert source.function_of(inline.node) == "server_slot::rollback"
    assert source.function_of(outside.node) == "server_slot::round"


def test_a_parameter_hides_the_member_of_the_same_name():
    source = CppFile(b"""
struct server_slot {
    common_prompt_checkpoint spec_ckpt;
    void take(common_prompt_checkpoint & spec_ckpt) { spec_ckpt.load_tgt(c, 0, 0); }
};
""", CALLS)
    assert source.binding(only_call(source)).member is None


def test_a_parameter_hides_the_member_in_a_function_returning_a_reference():
    source = CppFile(b"""
struct server_slot {
    common_prompt_checkpoint spec_ckpt;
    int & take(common_prompt_checkpoint & spec_ckpt) { spec_ckpt.load_tgt(c, 0, 0); return id; }
};
""", CALLS)
    call = only_call(source)
    assert source.function_of(call.node) == "server_slot::take"
    assert source.binding(call).member is None


# -- depth and parse errors ----------------------------------------------------------------------

def test_deep_nesting_keeps_each_level_its_own_names():
    """400 nested blocks; a constant redeclared at level 200 holds for the levels below it only,
    and a lookup from deep down (remembered per scope) does not leak into a shallower one."""
    depth, shadow = 400, 200
    lines = ["void f(server_slot & slot) {", f"    constexpr llama_state_seq_flags fl = {D};"]
    for level in range(1, depth + 1):
        lines.append("{")
        if level == shadow:
            lines.append(f"constexpr llama_state_seq_flags fl = {P};")
        if level == shadow - 1:
            lines.append("slot.spec_ckpt.load_tgt(c, 0, fl);")  # before the shadowing block opens
    lines.append("slot.spec_ckpt.update_tgt(c, 0, fl);")
    lines += ["}"] * depth + ["}"]
    source = parsed("\n".join(lines) + "\n")
    deep_first = [c for c in source.calls if c.name == "update_tgt"] + \
                 [c for c in source.calls if c.name == "load_tgt"]
    deep, shallow = deep_first
    assert source.flags(deep, -1).names == {P}
    assert source.flags(shallow, -1).names == {D}
    assert source.binding(deep).member == source.binding(shallow).member == "spec_ckpt"
    assert not source.regions


def test_a_parse_error_taints_only_what_overlaps_it():
    source = parsed(f"""
void f(server_slot & slot) {{
    constexpr llama_state_seq_flags good = {D};
    constexpr llama_state_seq_flags bad = {P} |;
    slot.spec_ckpt.load_tgt(c, 0, good);
    slot.spec_ckpt.update_tgt(c, 0, bad);
}}""")
    first, second = source.calls
    assert [r.kind for r in source.regions] == ["parse-error"] and source.regions[0].line == 14
    clean = source.flags(first, -1)
    assert clean.names == {D} and clean.errors == ()
    tainted = source.flags(second, -1)
    assert tainted.errors == source.regions
