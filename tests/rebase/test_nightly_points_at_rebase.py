"""A bad night names the one command that walks it to a fix: in the terminal, report.md and the
GitHub issue; a patch `rebase --skip` disabled is said to need attention."""

from __future__ import annotations

import json

from conftest import apply, assert_matches_schema, run_cli
from patchkit import git


def test_a_bad_night_gives_the_rebase_command_everywhere(project, upstream, tmp_path, github_issues):
    apply(project, "b1000", update_lock=True)
    commit = git.run(["rev-parse", "scenario/conflict"], cwd=upstream.path)
    env, posted = github_issues
    proc = run_cli("nightly", "upstream@scenario/conflict", "--github-issues", "--report-dir", str(tmp_path / "r"),
                   cwd=project.root, env=env)
    assert proc.returncode == 1, proc.stderr
    command = f"patchkit rebase upstream@{commit}"
    assert f"to fix it: {command}" in proc.stdout
    assert f"To fix it: `{command}`" in (tmp_path / "r" / "report.md").read_text()
    (issue,) = [p for p in posted if "body" in p]
    assert f"`{command}`" in issue["body"]


def test_a_disabled_patch_makes_the_night_need_attention_but_names_no_rebase(project, tmp_path):
    apply(project, "b1000", update_lock=True)
    series = project.patches_dir / "series"
    series.write_text(series.read_text() + "# disabled: old.patch (on 2026-12-01 by `patchkit rebase --skip`: "
                      "conflict at upstream 0123456789ab)\n")
    proc = run_cli("nightly", "upstream@HEAD", "--report-dir", str(tmp_path / "r"), cwd=project.root)
    assert proc.returncode == 1, proc.stderr
    assert "patchkit rebase upstream@" not in proc.stdout
    assert "NEEDS ATTENTION: disabled in the series: old.patch" in proc.stdout
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert_matches_schema(report)
    assert not report["passed"] and report["lock_moved"]  # the rest of the queue is locked all the same
    (finding,) = report["findings"]
    assert finding["patch"] == "old.patch" and finding["kind"] == "disabled"
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert "# patchkit nightly: needs attention" in markdown and "| `old.patch` | disabled |" in markdown
