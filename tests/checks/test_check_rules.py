"""Rule files: the shipped rules, and every way a rule can be wrong (named by file, id and key)."""

from __future__ import annotations

import pytest

from check_helpers import ON_DEVICE, PROMPT, SERVER_CONTEXT, SHIPPED_RULES, SPEC, shipped_rules
from patchkit.checks import Receiver, combine_rules, load_rules, parse_rules
from patchkit.errors import PatchkitError

GOOD = {"id": "r1", "file": SERVER_CONTEXT, "calls": ["load_tgt"], "require-flag": ON_DEVICE}


def test_the_shipped_rules():
    spec, prompt = shipped_rules()
    assert (spec.id, spec.site_class, spec.file, spec.expect_count) == (SPEC, "speculative", SERVER_CONTEXT, 6)
    assert spec.calls == ("update_tgt", "update_dft", "load_tgt", "load_dft")
    assert spec.receiver == Receiver("spec_ckpt", bound=True)
    assert (spec.require_flag, spec.forbid_flag, spec.flags_arg) == (ON_DEVICE, None, -1)
    assert (prompt.id, prompt.expect_count, prompt.forbid_flag) == (PROMPT, 4, ON_DEVICE)
    assert prompt.receiver == Receiver("spec_ckpt", bound=False)
    assert spec.source == str(SHIPPED_RULES)


def test_defaults():
    (rule,) = parse_rules([GOOD], "x.yaml")
    assert (rule.site_class, rule.flags_arg, rule.receiver, rule.expect_count) == ("r1", -1, None, None)


@pytest.mark.parametrize("change, key", [
    ({"id": None}, "id"),
    ({"id": "has space"}, "id"),
    ({"file": None}, "file"),
    ({"file": "../outside.cpp"}, "file"),
    ({"file": "/abs.cpp"}, "file"),
    ({"calls": []}, "calls"),
    ({"calls": "load_tgt"}, "calls"),
    ({"calls": ["load-tgt"]}, "calls"),
    ({"receiver": {"bound-to": "a", "not-bound-to": "b"}}, "receiver"),
    ({"receiver": {"bound": "spec_ckpt"}}, "receiver"),
    ({"receiver": {"bound-to": 3}}, "receiver.bound-to"),
    ({"flags-arg": "last"}, "flags-arg"),
    ({"flags-arg": True}, "flags-arg"),
    ({"require-flag": "ON DEVICE"}, "require-flag"),
    ({"forbid-flag": ON_DEVICE}, "forbid-flag"),  # the same flag required and forbidden
    ({"expect-count": -1}, "expect-count"),
    ({"expect-count": "six"}, "expect-count"),
    ({"class": ""}, "class"),
    ({"expected-count": 6}, "expected-count"),  # a typo is an unknown key
    ({"runtime": ["load_tgt"]}, "runtime"),
    ({"runtime": {"require-reached": ["update_pos"]}}, "runtime.require-reached"),  # not one of calls
])
def test_a_bad_rule_names_file_rule_and_key(change, key):
    raw = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    with pytest.raises(PatchkitError) as err:
        parse_rules([raw], "patches/x.checks.yaml")
    message = str(err.value)
    assert message.startswith("patches/x.checks.yaml: rule ")
    assert f"key '{key}'" in message
    if key != "id":
        assert "rule 'r1'" in message
    assert err.value.exit_code == 2


def test_a_rule_that_is_not_a_mapping():
    with pytest.raises(PatchkitError, match=r"x.yaml: rule #2: must be a mapping"):
        parse_rules([GOOD, "load_tgt"], "x.yaml")


def test_not_a_list():
    with pytest.raises(PatchkitError, match="'checks' must be a list"):
        parse_rules({"id": "r1"}, "x.yaml")


def test_duplicate_ids_in_one_file_and_across_files():
    with pytest.raises(PatchkitError, match=r"x.yaml: rule 'r1': key 'id': defined twice"):
        parse_rules([GOOD, GOOD], "x.yaml")
    with pytest.raises(PatchkitError, match=r"b.yaml: rule 'r1': key 'id': also defined in a.yaml"):
        combine_rules([parse_rules([GOOD], "a.yaml"), parse_rules([GOOD], "b.yaml")])


def test_load_rules_file_errors(tmp_path):
    bad_yaml = tmp_path / "a.checks.yaml"
    bad_yaml.write_text("checks:\n  - id: [unclosed\n")
    with pytest.raises(PatchkitError, match=rf"{bad_yaml}:\d+: not valid YAML"):
        load_rules(bad_yaml)
    wrong_top = tmp_path / "b.checks.yaml"
    wrong_top.write_text("rules: []\n")
    with pytest.raises(PatchkitError, match="single key 'checks', got rules"):
        load_rules(wrong_top)
    with pytest.raises(PatchkitError, match="cannot read it"):
        load_rules(tmp_path / "missing.checks.yaml")


def test_the_shipped_rules_match_the_rules_schema_and_carry_their_runtime_coverage():
    import json
    from importlib.resources import files

    import jsonschema
    import yaml

    from conftest import REPO
    from patchkit.checks import load_rules

    path = REPO / "patches" / "server-keep-speculative-checkpoints-on-device.checks.yaml"
    schema = json.loads(files("patchkit").joinpath("schemas/rules.schema.json").read_text())
    jsonschema.validate(yaml.safe_load(path.read_text()), schema)
    speculative, prompt_cache = load_rules(path)
    assert speculative.require_reached == ("update_tgt", "update_dft", "load_tgt", "load_dft")
    assert prompt_cache.require_reached == ("update_tgt", "load_tgt")
