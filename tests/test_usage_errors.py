"""A mistake on the command line is a usage error like any other bad input: one line saying what is
wrong and where the help is, exit 2, nothing written; not click's multi-line box."""

from __future__ import annotations

import pytest

from conftest import run_cli


CASES = [
    (["apply", "--no-such-option-xyz"], "patchkit: error: no such option: --no-such-option-xyz; see 'python -m patchkit apply --help'"),
    (["nosuch"], "patchkit: error: no such command 'nosuch'; see 'python -m patchkit --help'"),
    (["apply", "--fuzz", "x"], "patchkit: error: invalid value for '--fuzz': "),
    (["export"], "patchkit: error: missing argument 'FORMAT'. Choose from: debian, quilt, rpm, nix, arch, "
                 "gentoo, mbox; see 'python -m patchkit export --help'"),
    (["export", "bogus", "out"], "patchkit: error: invalid value for 'FORMAT': "),
    (["apply", "--json"], "patchkit: error: option '--json' requires an argument"),
]


@pytest.mark.parametrize("args, line", CASES, ids=[" ".join(args) for args, _ in CASES])
def test_a_usage_error_is_one_line_and_exit_2(tmp_path, args, line):
    done = run_cli(*args, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(line), done.stderr
    assert list(tmp_path.iterdir()) == []


def test_help_and_version_still_exit_0(tmp_path):
    assert run_cli("apply", "--help", cwd=tmp_path).returncode == 0
    version = run_cli("--version", cwd=tmp_path)
    assert (version.returncode, version.stdout.startswith("patchkit ")) == (0, True)
