"""The issue's fixture scenarios, each checked with the shipped rules: verdicts and line numbers.

Every fixture is written for these tests, shaped like llama.cpp's server-context.cpp: the patched
base under data/, each other scenario as its diff against it (its header line names the scenario). Line numbers below are the lines of the calls in those files.
"""

from __future__ import annotations

import subprocess

import pytest

from check_helpers import (ON_DEVICE, PARTIAL_ONLY, PROMPT, SERVER_CONTEXT, SPEC, check_fixture,
                           fixture_text, rule, shipped_rules, uncounted_rules, verdicts)
from patchkit.checks import SiteStatus, run_checks
from patchkit.git import ObjectReader

PATCHED_SPEC = [(100, "ok"), (112, "ok"), (123, "ok"), (131, "ok"), (166, "ok"), (169, "ok")]
PATCHED_PROMPT = [(80, "ok"), (83, "ok"), (151, "ok"), (154, "ok")]


def test_patched_base_passes_six_speculative_and_four_prompt_cache_sites():
    report = check_fixture("server-context.patched.cpp")
    assert report.passed
    assert verdicts(report, SPEC) == PATCHED_SPEC
    assert verdicts(report, PROMPT) == PATCHED_PROMPT
    spec = rule(report, SPEC)
    assert (spec.expected, spec.found, spec.messages) == (6, 6, ())
    assert {s.flags for s in spec.sites} == {(ON_DEVICE, PARTIAL_ONLY)}
    assert {s.bound_to for s in spec.sites} == {"spec_ckpt"}
    assert [s.call for s in spec.sites] == [
        "slot.spec_ckpt.update_dft(...)", "ckpt.load_dft(...)", "ckpt.update_tgt(...)",
        "ckpt.update_dft(...)", "ckpt.load_tgt(...)", "ckpt.load_dft(...)"]
    prompt = rule(report, PROMPT)
    assert [s.call for s in prompt.sites] == ["cur.update_tgt(...)", "cur.update_dft(...)",
                                              "it->load_tgt(...)", "it->load_dft(...)"]
    assert {s.flags for s in prompt.sites} == {(PARTIAL_ONLY,)}
    assert {s.bound_to for s in prompt.sites} == {"checkpoints"}
    assert spec.sites[0].function == "server_context_impl::update_slots"  # inside a lambda there
    assert spec.sites[4].function == "server_context_impl::reject_draft"


def test_comments_strings_and_if0_never_count_and_the_skipped_regions_are_listed():
    report = check_fixture("server-context.patched.cpp")
    lines = {s.line for s in report.sites}
    # line 164: a comment naming ckpt.load_tgt(...); 177: the call inside #if 0; 180: a string
    assert not lines & {164, 177, 180}
    regions = [(g.kind, g.line, g.end_line) for g in rule(report, SPEC).regions]
    assert regions == [("parse-error", 42, 42), ("disabled", 175, 178)]
    # the "n = %" PRId64 error is listed, and fails nothing: the report passed
    assert "PRId64" in rule(report, SPEC).regions[0].text


def test_unpatched_upstream_misses_on_device_at_all_six_sites():
    report = check_fixture("server-context.upstream.cpp")
    assert verdicts(report, SPEC) == [(99, "missing-flag"), (111, "missing-flag"), (122, "missing-flag"),
                                      (130, "missing-flag"), (165, "missing-flag"), (168, "missing-flag")]
    assert rule(report, PROMPT).passed
    assert rule(report, SPEC).sites[2].message == (
        "tools/server/server-context.cpp:122: speculative site ckpt.update_tgt(...) has flags "
        "{PARTIAL_ONLY}; ON_DEVICE missing")


def test_a_seventh_and_eighth_speculative_call_fail_the_count_naming_both_lines():
    report = check_fixture("server-context.eight-sites.cpp")
    spec = rule(report, SPEC)
    assert (spec.expected, spec.found, spec.passed) == (6, 8, False)
    assert spec.messages == ("tools/server/server-context.cpp: expected 6 speculative sites, found 8: "
                             "new sites at lines 146, 148",)
    assert verdicts(report, SPEC) == [(101, "ok"), (113, "ok"), (124, "ok"), (132, "ok"),
                                      (146, "missing-flag"), (148, "missing-flag"), (178, "ok"), (181, "ok")]
    assert rule(report, PROMPT).passed


def test_constant_without_on_device_fails_all_six():
    report = check_fixture("server-context.no-on-device.cpp")
    assert [status for _, status in verdicts(report, SPEC)] == ["missing-flag"] * 6
    assert {s.flags for s in rule(report, SPEC).sites} == {(PARTIAL_ONLY,)}
    assert rule(report, PROMPT).passed


def test_constant_in_a_member_function_body_fails_as_unresolved():
    report = check_fixture("server-context.misplaced-constant.cpp")
    assert verdicts(report, SPEC) == [(101, "unresolved"), (113, "unresolved"), (124, "unresolved"),
                                      (132, "unresolved"), (167, "unresolved"), (170, "unresolved")]
    message = rule(report, SPEC).sites[0].message
    assert "server_slot has no member spec_ckpt_flags declared at class scope" in message
    assert "declared at line 38 inside the body of server_slot::reset()" in message


def test_constant_in_another_struct_does_not_count():
    report = check_fixture("shapes.cpp", uncounted_rules())
    site = next(s for s in rule(report, SPEC).sites if s.line == 67)
    assert site.status is SiteStatus.UNRESOLVED
    assert "server_slot has no member spec_dft_flags declared at class scope" in site.message
    assert "line 21 in struct server_context_impl" in site.message


def test_prompt_cache_site_given_on_device_fails():
    report = check_fixture("server-context.prompt-on-device.cpp")
    assert rule(report, SPEC).passed
    assert verdicts(report, PROMPT) == [(81, "ok"), (84, "ok"), (152, "forbidden-flag"), (155, "ok")]
    assert rule(report, PROMPT).sites[2].message.startswith(
        "tools/server/server-context.cpp:152: prompt-cache site it->load_tgt(...) carries ON_DEVICE")


def test_restore_code_wrapped_in_an_extra_block_still_finds_its_sites():
    report = check_fixture("server-context.restore-block.cpp")
    assert report.passed
    assert verdicts(report, SPEC)[4:] == [(168, "ok"), (173, "ok")]


def test_run_time_flags_are_dynamic_and_never_satisfy_require_flag():
    report = check_fixture("server-context.runtime-flags.cpp")
    assert verdicts(report, SPEC) == [(104, "dynamic"), (116, "dynamic"), (128, "dynamic"),
                                      (136, "dynamic"), (171, "dynamic"), (174, "dynamic")]
    first, via_local = rule(report, SPEC).sites[0], rule(report, SPEC).sites[2]
    assert "the result of server_slot::spec_ckpt_place(...)" in first.message
    assert "upstream may have adopted a run-time choice" in first.message
    assert "the result of server_slot::spec_ckpt_place(...)" in via_local.message  # const flags_tgt = f()
    assert not rule(report, SPEC).passed and rule(report, PROMPT).passed


def test_parse_errors_fail_only_the_sites_and_declarations_they_overlap():
    report = check_fixture("server-context.parse-errors.cpp")
    # 124: macro-joined tokens inside the call; 169 and 172 use a local constant (line 167) whose
    # initialiser has them; the other sites, and the PRId64 line, are untouched
    assert verdicts(report, SPEC) == [(101, "ok"), (113, "ok"), (124, "parse-error"), (132, "ok"),
                                      (169, "parse-error"), (172, "parse-error")]
    assert "line 167" in rule(report, SPEC).sites[4].message
    assert rule(report, PROMPT).passed
    assert [(g.kind, g.line) for g in rule(report, SPEC).regions] == [
        ("parse-error", 43), ("parse-error", 124), ("parse-error", 167), ("disabled", 178)]


def test_a_parse_error_that_may_hide_a_call_fails_the_counts():
    report = check_fixture("server-context.conflict.cpp")
    # conflict markers: tree-sitter reads "ours" ckpt.load_tgt(...) as a declaration
    for rule_id in (SPEC, PROMPT):
        messages = rule(report, rule_id).messages
        assert len(messages) == 1 and "the count is uncertain: lines 167-168" in messages[0]
        assert "name load_tgt" in messages[0]
    assert (170, "missing-flag") in verdicts(report, SPEC)  # the "theirs" side


SHAPES_SPEC = [
    (28, "ok"),            # split over lines, comments inside
    (36, "ok"),            # a chain of references, flags from a #define
    (40, "ok"),            # a pointer; a cast around parentheses
    (44, "ok"),            # (*p); static_cast of a local constexpr
    (50, "missing-flag"),  # inside a lambda and nested blocks
    (57, "dynamic"),       # a non-constant member, in a macro argument
    (60, "dynamic"),       # a run-time function
    (64, "dynamic"),       # a variable, not a constant
    (67, "unresolved"),    # a member of another struct
    (89, "ok"),            # the live branch of #if 1 / #else
    (97, "unresolved"),    # receiver is a parameter
]
SHAPES_PROMPT = [(71, "ok"), (76, "forbidden-flag"), (80, "ok"), (97, "unresolved")]


def test_code_shapes():
    report = check_fixture("shapes.cpp", uncounted_rules())
    assert verdicts(report, SPEC) == SHAPES_SPEC
    assert verdicts(report, PROMPT) == SHAPES_PROMPT
    assert [(g.kind, g.line, g.end_line) for g in rule(report, SPEC).regions] == [
        ("disabled", 85, 87), ("disabled", 90, 91)]
    split = rule(report, SPEC).sites[0]
    assert (split.line, split.end_line) == (28, 31)
    assert split.code.startswith("slot.spec_ckpt.update_tgt(ctx_tgt, slot.id, /* the sequence */")


def test_receivers_are_bound_through_aliases_pointers_and_iterators():
    report = check_fixture("shapes.cpp", uncounted_rules())
    bound = {(s.line, s.receiver): s.bound_to for s in report.sites}
    assert bound[36, "b"] == "spec_ckpt"  # auto & b = a; auto & a = slot.spec_ckpt;
    assert bound[40, "p"] == "spec_ckpt"  # auto * p = &slot.spec_ckpt;
    assert bound[44, "(*p)"] == "spec_ckpt"
    assert bound[71, "it"] == "checkpoints"  # for (auto it = slot.prompt.checkpoints.begin(); ...)
    assert bound[76, "cp"] == "checkpoints"  # for (auto & cp : slot.prompt.checkpoints)
    assert bound[80, "slot.prompt.checkpoints.back()"] == "checkpoints"
    assert bound[97, "ckpt"] is None
    unresolved = next(s for s in rule(report, PROMPT).sites if s.line == 97)
    assert "ckpt is a parameter (line 95)" in unresolved.message


def test_a_missing_file_fails_its_rules_by_name():
    report = run_checks(shipped_rules(), lambda path: None)
    assert not report.passed
    assert all(r.found == 0 and "not found" in r.messages[0] for r in report.rules)


def test_a_rule_that_selects_nothing_fails_unless_it_expects_zero():
    rules = uncounted_rules()
    source = b"void f() { g(1); }\n"
    report = run_checks(rules, lambda path: source)
    assert not report.passed
    assert "no speculative site found" in rule(report, SPEC).messages[0]


def test_the_same_analysis_reads_git_objects_without_a_checkout(tmp_path):
    repo = tmp_path / "repo"
    blob = fixture_text("server-context.upstream.cpp")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "tools" / "server").mkdir(parents=True)
    (repo / SERVER_CONTEXT).write_bytes(blob)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], cwd=repo, check=True)
    (repo / SERVER_CONTEXT).unlink()  # the work tree is never read
    with ObjectReader(repo) as reader:
        report = run_checks(shipped_rules(), lambda path: reader.read("HEAD", path))
    assert [status for _, status in verdicts(report, SPEC)] == ["missing-flag"] * 6


@pytest.mark.parametrize("flags, expected", [
    ("SPEC_FLAGS", "ok"),  # #define SPEC_FLAGS (A | B)
    ("WEIRD", "unresolved"),  # #define WEIRD do { } while (0): not an expression
    ("LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY & LLAMA_STATE_SEQ_FLAGS_ON_DEVICE", "unresolved"),
    ("use_dev ? SPEC_FLAGS : 0", "dynamic"),
    ("0", "missing-flag"),
    ("LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY | pick(ctx)", "dynamic"),
    ("LLAMA_STATE_SEQ_FLAGS_ON_DEVICE | pick(ctx)", "ok"),  # the static part already carries it
])
def test_flag_expressions(flags, expected):
    source = f"""
#define SPEC_FLAGS (LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY | LLAMA_STATE_SEQ_FLAGS_ON_DEVICE)
#define WEIRD do {{ }} while (0)
struct server_slot {{ common_prompt_checkpoint spec_ckpt; }};
void f(server_slot & slot, bool use_dev) {{
    slot.spec_ckpt.load_tgt(ctx, slot.id, {flags});
}}
""".encode()
    report = run_checks(uncounted_rules(), lambda path: source)
    assert verdicts(report, SPEC) == [(6, expected)]
