"""`patchkit demo`: the newcomer's offline walk-through runs the real apply and checks."""

from __future__ import annotations

import json

from conftest import REPO, assert_matches_schema, run_cli
from patchkit.fixture import SCENARIOS, SERVER_CONTEXT


def test_demo_applies_the_queue_and_tours_every_verdict(tmp_path):
    proc = run_cli("demo", str(tmp_path / "demo"), cwd=REPO, env={"COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "1/1 patches applied" in out and "checks passed" in out
    assert "speculative-checkpoints-on-device" in out
    for scenario in SCENARIOS:
        if scenario.name != "master":
            assert scenario.ref in out
    for verdict in ("6 clean", "6 offset", "5 clean, 1 merged", "5 clean, 1 conflict",
                    "6 already-applied", "3 already-applied, 3 offset", "6 merged", "1 merged, 5 offset"):
        assert verdict in out
    assert "7/6, 4/4 FAILED" in out  # new-site: a clean apply that only the site check catches
    patched = (tmp_path / "demo" / "fork" / "llama.cpp" / SERVER_CONTEXT).read_text()
    assert "static constexpr llama_state_seq_flags spec_ckpt_flags" in patched


def test_demo_json(tmp_path):
    proc = run_cli("demo", str(tmp_path / "demo"), "--json", "-", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert_matches_schema(data)
    assert data["head"]["passed"] and data["head"]["patches"][0]["verdict"] == "offset"
    verdicts = {scenario["name"]: report["patches"][0]["verdict"] for scenario, report in data["tour"]}
    assert verdicts["new-site"] == "clean"
    # The HEAD run recorded a 3-way base; its merge would take a twin of hunk 6's site: refused.
    assert verdicts["ambiguous"] == "conflict"


def test_demo_refuses_a_folder_that_is_not_empty(tmp_path):
    (tmp_path / "keep.txt").write_text("mine\n")
    proc = run_cli("demo", str(tmp_path), cwd=REPO)
    assert proc.returncode == 2 and "is not empty" in proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
