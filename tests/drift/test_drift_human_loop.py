"""The person's side of drift: `rebase` stops at the patch whose conflict upstream made, and names
beside it the struct that changed under its lines; the person fixes the conflict and writes
`Reviewed-Drift:` into the patch; the trailer survives `rebase --continue` (and the night that
finishes it, refreshing the patch), a later `record` and nightly refresh: the queue is good again."""

from __future__ import annotations

import subprocess

from conftest import run_cli, run_json
from test_drift_conflict import case  # noqa: F401 (the fixture)


def _trailer(patch, line: str) -> None:
    """LINE added to PATCH's message, as a person writes it."""
    head, sep, rest = patch.read_text().partition("\n---\n")
    patch.write_text(f"{head.rstrip()}\n\n{line}{sep}{rest}")


def test_rebase_stops_with_the_drift_and_a_reviewed_drift_survives_continue_record_and_the_night(case, tmp_path):
    history, project = case
    stop = run_json("rebase", "upstream@HEAD", cwd=project.root, code=1)["stopped"]
    (drift,) = stop["drift"]
    assert (drift["entity"], drift["patched_at"]) == ("some_input_text", history.lock)
    assert drift["culprit"]["commit"] == history.commits["fix"]
    assert "text_len" in drift["after"]
    # The person resolves the conflict, passes the length, and says they looked at the struct.
    checkout = project.root / "llama.cpp"
    app = checkout / "src" / "app.cpp"
    text = app.read_text()
    start, end = text.index("<<<<<<<"), text.index(">>>>>>>")
    end = text.index("\n", end) + 1
    app.write_text(text[:start] + "    (void) text; // kept for the ABI\n    (void) parse_special;\n"
                   "    auto * input = new some_input_text{text, 0, add_special, parse_special};\n"
                   "    (void) input;\n" + text[end:])
    (patch,) = [p for p in project.patches_dir.glob("*.patch")]
    trailer = f"Reviewed-Drift: some_input_text {history.commits['fix'][:10]}"
    _trailer(patch, trailer)
    finished = run_json("rebase", "--continue", cwd=project.root, code=0)["finished"]
    assert finished["passed"] and finished["lock_moved"]
    assert [d["reviewed"] for d in finished["apply"]["drift"]] == [True]
    assert trailer in patch.read_text()
    # `record` takes an edit in the checkout back into the patch: the trailer stays.
    app.write_text(app.read_text().replace("    (void) input;\n", "    (void) input; // owned by the caller\n"))
    git = ["git", "-C", str(checkout), "-c", "user.name=D", "-c", "user.email=d@x.invalid"]
    subprocess.run([*git, "commit", "-q", "--amend", "--no-edit", "-a"], check=True)
    proc = run_cli("record", cwd=project.root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "owned by the caller" in patch.read_text() and trailer in patch.read_text()
    # The next night refreshes the patch and keeps the trailer.
    proc = run_cli("nightly", "upstream@HEAD", "--report-dir", str(tmp_path / "r"), cwd=project.root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert trailer in patch.read_text()
