"""`patchkit import --name`: a name longer than a file system allows is refused up front, as such.

A file name is at most 255 bytes (NAME_MAX, counted in UTF-8), and patchkit writes each file
beside itself first as `.<name>.XXXXXXXX` (patchkit.fileio's atomic write): 10 bytes more. So a
patch name is at most 245 bytes, `.patch` included."""

from __future__ import annotations

from conftest import run_cli, seed_patch_path
from import_helpers import AT, commit_change, fork, patches_state, plain_diff, series, work_clone

LONGEST = 245  # bytes: NAME_MAX 255 less the temporary file's "." + "." + 8 random characters


def test_a_name_too_long_for_the_file_system_is_refused_as_such(tmp_path, upstream):
    root = fork(tmp_path, upstream)
    before = patches_state(root)
    for name in ("x" * 300 + ".patch",  # the report's case: it used to say the file "already exists"
                 "x" * (LONGEST - 5) + ".patch",  # one byte over: the temporary file would not fit
                 "é" * 120 + ".patch"):  # 126 characters, 246 bytes: bytes are what counts
        result = run_cli("import", str(seed_patch_path()), "--name", name, "--at", AT, cwd=root)
        assert result.returncode == 2, result.stderr
        [line] = result.stderr.splitlines()
        size = len(name.encode())
        assert line.startswith(f"patchkit: error: --name is {size} bytes long, "
                               f"and a patch name can be at most {LONGEST} (.patch included); "), line
        assert "shorter" in line and "already exists" not in line
        assert patches_state(root) == before  # nothing written, nothing left beside it
        assert not list((root / "patches").glob(".*"))


def test_the_longest_name_is_imported(tmp_path, upstream):
    root = fork(tmp_path, upstream)
    name = "é" * 119 + "x" * (LONGEST - 238 - 6) + ".patch"  # exactly LONGEST bytes
    assert len(name.encode()) == LONGEST
    result = run_cli("import", str(seed_patch_path()), "--name", name, "--at", AT, cwd=root)
    assert result.returncode == 0, result.stderr
    assert series(root) == [name]
    assert (root / "patches" / name).read_bytes().startswith(b"From ")


def test_a_name_made_from_a_long_subject_stays_short(tmp_path, upstream):
    # A generated name never comes near the limit: the subject's slug is cut to 64 characters.
    root = fork(tmp_path, upstream)
    work = work_clone(tmp_path, upstream)
    commit = commit_change(work, "docs : a line", "README.md", "append", "\nOne more line.\n")
    diff = tmp_path / "change.diff"
    diff.write_text(plain_diff(work, commit))
    subject = "docs : " + " ".join(["explain"] * 60)  # 427 characters
    result = run_cli("import", str(diff), "--subject", subject, "--author", "Ada Lovelace <ada@example.org>",
                     "--at", AT, cwd=root)
    assert result.returncode == 0, result.stderr
    [name] = series(root)
    assert name.startswith("docs-explain-explain") and len(name.encode()) <= 64 + len(".patch")
