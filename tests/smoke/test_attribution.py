"""Attribution on the compiled fixture: recorded calls joined to the static sites of the real
site checks run on the fixture's server-context.cpp, with both symbolizers."""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from smoke_helpers import FIXTURE, SERVER_CONTEXT, fixture_run, site_lines  # noqa: F401 (a fixture)
from patchkit.checks import CheckReport, load_rules, parse_rules, run_checks
from patchkit.errors import EnvironmentProblem, PatchkitError
from patchkit.smoke.attribution import RuntimeVerdict, attribute, symbolize

SPEC, PROMPT = "speculative-checkpoints-on-device", "prompt-cache-checkpoints-on-host"
RULES = load_rules(FIXTURE.parents[2] / "patches" / "server-keep-speculative-checkpoints-on-device.checks.yaml")


def static(rules=RULES) -> CheckReport:
    return run_checks(rules, lambda path: (FIXTURE / path).read_bytes() if (FIXTURE / path).is_file() else None)


@pytest.fixture(params=["addr2line", "llvm-symbolizer"])
def symbolized(request, fixture_run):
    if shutil.which(request.param) is None:
        pytest.skip(f"{request.param} not installed")
    return symbolize(fixture_run.calls, tool=request.param)


def test_each_site_gets_its_calls_flags_and_verdict(symbolized):
    result = attribute(RULES, static(), symbolized, root=str(FIXTURE))
    lines = site_lines()
    assert [(s.line, s.rule, s.site_class, s.calls_seen, s.flags_seen, s.verdict) for s in result.sites] == [
        (lines["spec-update-tgt"], SPEC, "speculative", 1, (3,), RuntimeVerdict.OK),
        # The return address of this two-line call is on its second line: joined all the same.
        (lines["spec-update-dft"], SPEC, "speculative", 1, (1,), RuntimeVerdict.MISSING_FLAG),
        (lines["spec-load-dft"], SPEC, "speculative", 0, (), RuntimeVerdict.NOT_REACHED),
        (lines["spec-load-tgt"], SPEC, "speculative", 2, (3,), RuntimeVerdict.OK),
        (lines["prompt-update-tgt"], PROMPT, "prompt-cache", 1, (1,), RuntimeVerdict.OK),
        (lines["prompt-load-tgt"], PROMPT, "prompt-cache", 1, (3,), RuntimeVerdict.FORBIDDEN_FLAG),
    ]
    assert {s.file for s in result.sites} == {SERVER_CONTEXT}
    assert not result.passed
    assert result.messages == (
        f"{SERVER_CONTEXT}:{lines['spec-update-dft']}: speculative site slot.spec_ckpt.update_dft(...) reached "
        "once with flags 1, without LLAMA_STATE_SEQ_FLAGS_ON_DEVICE (2)",
        f"{SERVER_CONTEXT}:{lines['prompt-load-tgt']}: prompt-cache site it->load_tgt(...) reached once with "
        "flags 3, which include LLAMA_STATE_SEQ_FLAGS_ON_DEVICE (2)",
    )


def test_the_servers_own_calls_are_other_calls(symbolized):
    result = attribute(RULES, static(), symbolized)  # no root: files matched by their ending
    lines = site_lines()
    path = str(FIXTURE / SERVER_CONTEXT)
    own = [(o.function, o.flags, o.count, o.where.rsplit(" in ", 1)[0]) for o in result.other]
    assert own == [
        ("llama_state_seq_get_data", None, 1, f"{path}:{lines['own-get']}"),
        ("llama_state_seq_get_data_ext", 0, 1, f"{path}:{lines['own-get-ext']}"),
        ("llama_state_seq_load_file", None, 1, f"{path}:{lines['own-load']}"),
        ("llama_state_seq_save_file", None, 1, f"{path}:{lines['own-save']}"),
        ("llama_state_seq_set_data", None, 1, f"{path}:{lines['own-set']}"),
    ]
    # addr2line may name an inlined function after its caller; the line is what counts.
    assert {o.where.rsplit(" in ", 1)[1] for o in result.other} <= {"save_own", "main"}


def test_a_call_from_a_line_no_static_site_knows_is_unexpected(symbolized):
    lines = site_lines()
    report = static()
    # The static analysis "misses" the prompt-cache update_tgt site.
    prompt = next(r for r in report.rules if r.id == PROMPT)
    missed = dataclasses.replace(prompt, sites=tuple(s for s in prompt.sites if s.line != lines["prompt-update-tgt"]))
    report = CheckReport(target=report.target, rules=tuple(missed if r.id == PROMPT else r for r in report.rules))
    result = attribute(RULES, report, symbolized, root=str(FIXTURE))
    (unexpected,) = [s for s in result.sites if s.verdict is RuntimeVerdict.UNEXPECTED_SITE]
    assert (unexpected.file, unexpected.line, unexpected.call, unexpected.rule, unexpected.flags_seen) == (
        SERVER_CONTEXT, lines["prompt-update-tgt"], "update_tgt(...)", f"{SPEC}, {PROMPT}", (1,))
    assert f"{SERVER_CONTEXT}:{lines['prompt-update-tgt']}: update_tgt reached once with flags 1 from a line no " \
           f"static site of {SPEC}, {PROMPT} knows: the site checks missed this call" in result.messages


def test_required_calls_never_reached_fail_and_a_full_run_passes(symbolized):
    # The shipped rules without flags: every reached site is ok, so only coverage decides.
    unflagged = parse_rules([{"id": r.id, "class": r.site_class, "file": r.file, "calls": list(r.calls),
                              "receiver": {"bound-to" if r.receiver.bound else "not-bound-to": r.receiver.member}}
                             for r in RULES], "test rules")
    covered = attribute(unflagged, static(unflagged), symbolized,
                        required={SPEC: ["update_tgt", "update_dft", "load_tgt"], PROMPT: ["update_tgt", "load_tgt"]})
    assert covered.passed and covered.messages == ()
    assert [(c.rule, c.reached, c.missing) for c in covered.coverage] == [
        (SPEC, ("update_tgt", "update_dft", "load_tgt"), ()), (PROMPT, ("update_tgt", "load_tgt"), ())]
    # load_dft's only site is not reached: listed as such, and fails only when required.
    assert [s.verdict for s in covered.sites].count(RuntimeVerdict.NOT_REACHED) == 1
    short = attribute(unflagged, static(unflagged), symbolized, required={SPEC: ["update_tgt", "load_dft"]})
    assert not short.passed
    assert short.messages == (f"rule {SPEC}: load_dft never reached at a speculative site (runtime: require-reached)",)


def test_a_required_name_outside_the_rule_is_bad_input(symbolized):
    with pytest.raises(PatchkitError, match="update_everything is not one of the rule's calls"):
        attribute(RULES, static(), symbolized, required={SPEC: ["update_everything"]})


def test_no_symbolizer_is_an_environment_problem(fixture_run):
    with pytest.raises(EnvironmentProblem, match=r"install binutils \(addr2line\) or llvm"):
        symbolize(fixture_run.calls, tool="patchkit-no-such-symbolizer")
