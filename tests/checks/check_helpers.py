"""Shared by the check tests: the shipped rules, the fixture files, one check run on a fixture."""

from __future__ import annotations

from pathlib import Path

from unidiff import PatchSet

from patchkit.checks import CheckReport, Rule, RuleResult, load_rules, parse_rules, run_checks

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
SHIPPED_RULES = REPO / "patches" / "server-keep-speculative-checkpoints-on-device.checks.yaml"
SERVER_CONTEXT = "tools/server/server-context.cpp"
SPEC = "speculative-checkpoints-on-device"
PROMPT = "prompt-cache-checkpoints-on-host"
ON_DEVICE = "LLAMA_STATE_SEQ_FLAGS_ON_DEVICE"
PARTIAL_ONLY = "LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY"


def shipped_rules() -> list[Rule]:
    return load_rules(SHIPPED_RULES)


def uncounted_rules() -> list[Rule]:
    """The shipped rules without expect-count: for fixtures that show many shapes at once."""
    return parse_rules([{k.replace("_", "-"): v for k, v in spec.items()} for spec in (
        {"id": SPEC, "class": "speculative", "file": SERVER_CONTEXT,
         "calls": ["update_tgt", "update_dft", "load_tgt", "load_dft"],
         "receiver": {"bound-to": "spec_ckpt"}, "require_flag": ON_DEVICE},
        {"id": PROMPT, "class": "prompt-cache", "file": SERVER_CONTEXT,
         "calls": ["update_tgt", "update_dft", "load_tgt", "load_dft"],
         "receiver": {"not-bound-to": "spec_ckpt"}, "forbid_flag": ON_DEVICE},
    )], "test rules")


def fixture_text(name: str) -> bytes:
    """DATA/NAME; a scenario of server-context.cpp is kept as its diff against the patched base
    (DATA/NAME with .diff), so each file shows only what its scenario changes."""
    if (DATA / name).exists():
        return (DATA / name).read_bytes()
    lines = (DATA / "server-context.patched.cpp").read_text().splitlines(keepends=True)
    (change,) = PatchSet((DATA / name).with_suffix(".diff").read_text())
    for hunk in reversed(list(change)):
        start = hunk.source_start - 1
        assert lines[start:start + hunk.source_length] == [l.value for l in hunk.source_lines()], name
        lines[start:start + hunk.source_length] = [l.value for l in hunk.target_lines()]
    return "".join(lines).encode()


def check_fixture(name: str, rules: list[Rule] | None = None) -> CheckReport:
    """Check the fixture NAME as if it were tools/server/server-context.cpp of a tree."""
    source = fixture_text(name)
    return run_checks(shipped_rules() if rules is None else rules,
                      lambda path: source if path == SERVER_CONTEXT else None, target=name)


def rule(report: CheckReport, rule_id: str) -> RuleResult:
    return next(r for r in report.rules if r.id == rule_id)


def verdicts(report: CheckReport, rule_id: str) -> list[tuple[int, str]]:
    return [(s.line, s.status.value) for s in rule(report, rule_id).sites]
