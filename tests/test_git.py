"""Isolated git: neither the caller's git variables nor any config change what `patchkit apply`
writes or runs, while the user's network settings keep working."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import git_identity, run_cli, write_project
from patchkit import git
from patchkit.git import GitFailed, network_settings

HOOKS = ("post-checkout", "pre-commit", "reference-transaction", "post-index-change", "pre-auto-gc")


def hooks_dir(root: Path, marker: Path) -> Path:
    """Hooks that each leave their name in MARKER when run."""
    hooks = root / "hooks"
    hooks.mkdir(parents=True)
    for name in HOOKS:
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        (hooks / name).chmod(0o755)
    return hooks


def user_env(tmp_path: Path, gitconfig: str) -> dict[str, str]:
    """A HOME (and XDG_CONFIG_HOME) whose git config is GITCONFIG."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(gitconfig)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}


def apply(root: Path, *args: str, env: dict[str, str] | None = None) -> Path:
    """`patchkit apply` in ROOT, which must succeed; the output repository."""
    proc = run_cli("-q", "apply", "--no-check", *args, cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    return root / "llama.cpp"


@pytest.fixture(scope="module")
def reference(tmp_path_factory, upstream) -> dict[str, str]:
    """HEAD and tree of the output of plain runs, per ref: what every isolated run must give."""
    root = write_project(tmp_path_factory.mktemp("reference") / "fork", str(upstream.path))
    out = {}
    for ref in ("upstream@HEAD", "upstream@b1001"):
        output = apply(root, ref)
        out[ref] = git.run(["rev-parse", "HEAD", "HEAD^{tree}"], cwd=output)
    return out


def assert_pristine(output: Path, expected: str) -> None:
    """OUTPUT has the expected commit and tree, checked out byte for byte as stored."""
    assert git.run(["rev-parse", "HEAD", "HEAD^{tree}"], cwd=output) == expected
    listing = [line.split(maxsplit=3) for line in git.run(["ls-tree", "-r", "HEAD"], cwd=output).splitlines()]
    blobs, paths = [blob for _, _, blob, _ in listing], [path for *_, path in listing]
    assert git.run(["hash-object", "--no-filters", "--", *paths], cwd=output).splitlines() == blobs
    assert git.run(["status", "--porcelain"], cwd=output) == ""


def test_user_config_cannot_change_the_result(tmp_path, upstream, reference):
    marker = tmp_path / "hooks-ran"
    hooks = hooks_dir(tmp_path, marker)
    (tmp_path / "attributes").write_text("* filter=shout\n")
    env = user_env(tmp_path, f"[core]\n\thooksPath = {hooks}\n\tautocrlf = true\n\teol = crlf\n"
                             f"\tattributesFile = {tmp_path / 'attributes'}\n"
                             "[filter \"shout\"]\n\tsmudge = tr a-z A-Z\n\tclean = tr A-Z a-z\n"
                             "[commit]\n\tgpgSign = true\n[gc]\n\tauto = 1\n")
    output = apply(write_project(tmp_path / "fork", str(upstream.path)), env=env)
    assert_pristine(output, reference["upstream@HEAD"])
    assert not marker.exists()


def test_output_repository_config_cannot_change_the_result(tmp_path, upstream, reference):
    root = write_project(tmp_path / "fork", str(upstream.path))
    output = apply(root)
    marker = tmp_path / "hooks-ran"
    hooks = hooks_dir(tmp_path, marker)
    for key, value in (("core.hooksPath", str(hooks)), ("core.autocrlf", "true"), ("core.eol", "crlf"),
                       ("filter.shout.smudge", "tr a-z A-Z"), ("filter.shout.clean", "false"),
                       ("filter.shout.required", "true")):
        subprocess.run(["git", "config", key, value], cwd=output, check=True)
    (output / ".git" / "info").mkdir(exist_ok=True)
    (output / ".git" / "info" / "attributes").write_text("* filter=shout\n")  # names the driver
    apply(root, "upstream@b1001")
    assert_pristine(output, reference["upstream@b1001"])
    assert not marker.exists()


def test_the_callers_git_variables_are_ignored(tmp_path, upstream, reference):
    """As when patchkit runs inside a git hook of another repository."""
    decoy = tmp_path / "decoy"
    subprocess.run(["git", "init", "-q", str(decoy)], check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "decoy"], cwd=decoy, check=True,
                   env={**git_identity(), "PATH": "/usr/bin:/bin"})
    refs_before = git.run(["for-each-ref"], cwd=decoy)
    marker = tmp_path / "hooks-ran"
    env = {"GIT_DIR": str(decoy / ".git"), "GIT_WORK_TREE": str(decoy), "GIT_INDEX_FILE": str(tmp_path / "index"),
           "GIT_OBJECT_DIRECTORY": str(tmp_path / "objects"), "GIT_COMMON_DIR": str(decoy / ".git"),
           "GIT_NAMESPACE": "decoy", "GIT_CEILING_DIRECTORIES": str(tmp_path),
           "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.hooksPath",
           "GIT_CONFIG_VALUE_0": str(hooks_dir(tmp_path, marker)),
           "GIT_CONFIG_PARAMETERS": "'core.autocrlf'='true'"}
    output = apply(write_project(tmp_path / "fork", str(upstream.path)), env=env)
    assert_pristine(output, reference["upstream@HEAD"])
    assert git.run(["for-each-ref"], cwd=decoy) == refs_before
    assert not (tmp_path / "index").exists() and not (tmp_path / "objects").exists()
    assert not marker.exists()


def test_url_rewrites_in_user_config_are_honoured(tmp_path, upstream, reference):
    """Network settings keep working: a fake URL that only the user's insteadOf makes reachable."""
    fake = "https://upstream.invalid/ggml-org/llama.cpp.git"
    env = user_env(tmp_path, f"[url \"file://{upstream.path}\"]\n\tinsteadOf = {fake}\n")
    assert_pristine(apply(write_project(tmp_path / "fork", fake), env=env), reference["upstream@HEAD"])
    proc = run_cli("-q", "apply", "--no-check", cwd=write_project(tmp_path / "without", fake))
    assert proc.returncode == 3 and "cannot fetch upstream https://upstream.invalid/" in proc.stderr


def test_only_network_settings_are_taken_from_user_config(tmp_path, monkeypatch):
    env = user_env(tmp_path, "[http]\n\tproxy = http://proxy.invalid:3128\n\tsslVerify\n"
                             "[http \"https://a.invalid/\"]\n\tsslCAInfo = /ca.pem\n"
                             "[url \"file:///mirror\"]\n\tinsteadOf = https://x.invalid/\n"
                             "[credential]\n\thelper = store\n\thelper = cache\n"
                             "[core]\n\tsshCommand = ssh -i key\n\thooksPath = /hooks\n\tautocrlf = true\n"
                             "[filter \"lfs\"]\n\tsmudge = git-lfs smudge\n[user]\n\tname = Someone\n")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    assert network_settings.__wrapped__() == (
        ("http.proxy", "http://proxy.invalid:3128"), ("http.sslverify", "true"),  # a bare key is true
        ("http.https://a.invalid/.sslcainfo", "/ca.pem"), ("url.file:///mirror.insteadof", "https://x.invalid/"),
        ("credential.helper", "store"), ("credential.helper", "cache"), ("core.sshcommand", "ssh -i key"))


def test_git_failures_are_one_line():
    with pytest.raises(GitFailed) as err:
        git.run(["rev-parse", "--verify", "no-such-ref"], cwd="/")
    assert "\n" not in str(err.value) and str(err.value).startswith("git rev-parse --verify no-such-ref: fatal")
    multi = GitFailed(["fetch"], 128, "remote: counting\nfatal: first\nerror: the reason\nhint: try\n")
    assert multi.summary == "error: the reason"


def test_line_differences_are_gits_ranges_of_lines():
    a = b"one\ntwo\nthree\nfour\n"
    assert git.line_differences(a, a) == []
    assert git.line_differences(a, b"one\ntwo\nnew\nthree\nfour\n") == [(2, 2, 2, 3)]  # inserted before line 3
    assert git.line_differences(a, b"one\nfour\n") == [(1, 3, 1, 1)]
    assert git.line_differences(a, b"ONE\ntwo\nthree\nFOUR") == [(0, 1, 0, 1), (3, 4, 3, 4)]
    # NUL bytes and a missing last newline are lines like any other, not a binary file
    assert git.line_differences(b"x\0\ny\n", b"x\0\ny") == [(1, 2, 1, 2)]
