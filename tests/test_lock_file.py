"""patchkit.lock as read back: a malformed lock is one line naming the file and the field, exit 2,
for every command that reads it (issue 16, item 11)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli, write_project

COMMIT = "a" * 40
SHA256 = "b" * 64
GOOD = {"upstream": {"url": "https://example.invalid/llama.cpp.git", "commit": COMMIT},
        "patches": {"one.patch": SHA256}, "tree": "c" * 40, "tool-version": "1.0"}


def _with(**changes) -> str:
    """GOOD with top-level or `upstream.`-prefixed fields replaced (None: JSON null)."""
    data = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        if key.startswith("upstream_"):
            data["upstream"][key.removeprefix("upstream_")] = value
        else:
            data[key.replace("_", "-")] = value
    return json.dumps(data)


def _without(*keys: str) -> str:
    data = json.loads(json.dumps(GOOD))
    for key in keys:
        if "." in key:
            outer, inner = key.split(".")
            del data[outer][inner]
        else:
            del data[key]
    return json.dumps(data)


INVALID = ": not a valid lock file: "
MALFORMED = [  # (the lock's text, what the error says after the file's name)
    ("null", f"{INVALID}it must be a JSON object, not null"),
    ("[]", f"{INVALID}it must be a JSON object, not a list"),
    ('"lock"', f'{INVALID}it must be a JSON object, not "lock"'),
    ('{"upstream": ', ":1: not valid JSON (Expecting value)"),
    (_with(upstream=None), f"{INVALID}upstream must be an object with url and commit, not null"),
    (_with(upstream_commit=None), f"{INVALID}upstream.commit must be a full commit id (40 hex digits), not null"),
    (_with(upstream_commit="master~2"),
     f'{INVALID}upstream.commit must be a full commit id (40 hex digits), not "master~2"'),
    (_with(upstream_url=None), f"{INVALID}upstream.url must be a non-empty string, not null"),
    (_with(upstream_url=5), f"{INVALID}upstream.url must be a non-empty string, not 5"),
    (_with(patches=None), f"{INVALID}patches must be an object of patch name to sha256, not null"),
    (_with(patches=["one.patch"]), f"{INVALID}patches must be an object of patch name to sha256, not a list"),
    (_with(patches={"one.patch": None}), f'{INVALID}patches["one.patch"] must be a sha256 (64 hex digits), not null'),
    (_with(tree=None), f"{INVALID}tree must be a full tree id (40 hex digits), not null"),
    (_with(tool_version=None), f"{INVALID}tool-version must be a string, not null"),
    (_without("tree"), f"{INVALID}tree is missing"),
    (_without("upstream.commit"), f"{INVALID}upstream.commit is missing"),
]
HINT = ("; restore it from git (`git checkout -- patchkit.lock`), or remove it and run "
        "`patchkit apply upstream@REF --update-lock` on a good commit\n")


@pytest.mark.parametrize("command", ["status", "verify"])
@pytest.mark.parametrize("text, problem", MALFORMED, ids=[problem.removeprefix(INVALID) for _, problem in MALFORMED])
def test_a_malformed_lock_is_one_line_naming_the_field(tmp_path, command, text, problem):
    root = write_project(tmp_path / "fork", "https://example.invalid/llama.cpp.git")
    lock = root / "patchkit.lock"
    lock.write_text(text)
    proc = run_cli(command, cwd=root)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", f"patchkit: error: {lock}{problem}{HINT}")
    assert lock.read_text() == text  # a refused lock is never rewritten


def test_a_lock_that_is_not_utf8_or_a_folder_is_one_line(tmp_path):
    root = write_project(tmp_path / "fork", "https://example.invalid/llama.cpp.git")
    lock = root / "patchkit.lock"
    lock.write_bytes(b'{"upstream": "\xe9"}')
    proc = run_cli("status", cwd=root)
    assert (proc.returncode, proc.stderr) == (2, f"patchkit: error: {lock}:1: not UTF-8 (byte 14 is 0xe9){HINT}")
    lock.unlink()
    lock.mkdir()
    proc = run_cli("verify", cwd=root)
    assert (proc.returncode, proc.stderr) == (2, f"patchkit: error: {lock}: cannot read it (Is a directory){HINT}")


def test_a_well_formed_lock_reads_back(tmp_path):
    from patchkit.project import Lock

    path = tmp_path / "patchkit.lock"
    path.write_text(json.dumps(GOOD))
    lock = Lock.read(path)
    assert (lock.upstream_url, lock.upstream_commit, lock.patches, lock.tree, lock.tool_version) == \
        (GOOD["upstream"]["url"], COMMIT, {"one.patch": SHA256}, "c" * 40, "1.0")
    lock.write(tmp_path / "again.lock")
    assert json.loads((tmp_path / "again.lock").read_text()) == GOOD
    path.write_text(_without("tool-version"))
    assert Lock.read(path).tool_version == ""  # a lock older than the field


@pytest.mark.parametrize("command", [["verify", "--no-fetch"], ["export", "quilt", "out", "--no-fetch"],
                                     ["dist", "-o", "x.tar", "--no-fetch"]])
def test_a_locked_commit_the_mirror_lacks_is_named_as_the_locks(tmp_path, upstream, command):
    # The user named no ref: "unknown upstream ref '1111…'" would send them looking for a typo.
    root = write_project(tmp_path / "fork", str(upstream.path))
    assert run_cli("apply", "upstream@HEAD", "--update-lock", cwd=root).returncode == 0
    lock = json.loads((root / "patchkit.lock").read_text())
    lock["upstream"]["commit"] = "1" * 40
    (root / "patchkit.lock").write_text(json.dumps(lock))
    done = run_cli(*command, cwd=root)
    assert done.returncode == 2, done.stderr
    assert f"the locked commit {'1' * 12} is not in the mirror of {upstream.path}" in done.stderr
    assert "unknown upstream ref" not in done.stderr and done.stderr.count("\n") == 1
    assert not (root / "out").exists() and not (root / "x.tar").exists()
