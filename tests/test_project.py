"""patchkit.yaml and the YAML files read through it: bad input is one line, exit 2."""

from __future__ import annotations

import pytest

from conftest import run_cli, write_project
from patchkit.backends.recipe import load_recipe
from patchkit.checks.rules import load_rules
from patchkit.errors import PatchkitError
from patchkit.project import Project

NOT_UTF8 = b"# \xe9t\xe9\nkey: 1\n\xff: 2\n"  # Latin-1 bytes on line 1 (offset 2)


def test_a_cache_that_is_a_file_is_bad_configuration(tmp_path, upstream):
    root = write_project(tmp_path / "fork", str(upstream.path))
    (tmp_path / "cache-file").write_text("")
    config = root / "patchkit.yaml"
    config.write_text(config.read_text().replace(f"cache: {root / 'cache'}", f"cache: {tmp_path / 'cache-file'}"))
    with pytest.raises(PatchkitError, match="key 'cache' names .*cache-file, which is not a folder"):
        Project.load(root)
    proc = run_cli("-q", "apply", "--no-check", cwd=root)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("patchkit: error: ")
    assert not (root / "llama.cpp").exists()


def test_a_non_utf8_patchkit_yaml_is_one_line(tmp_path):
    (tmp_path / "patchkit.yaml").write_bytes(NOT_UTF8)
    proc = run_cli("status", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (f"patchkit: error: {tmp_path / 'patchkit.yaml'}:1: not UTF-8 (byte 2 is 0xe9); "
                           "save the file as UTF-8\n")


@pytest.mark.parametrize("name, load", [("server.checks.yaml", load_rules), ("cpu.yaml", load_recipe)])
def test_non_utf8_checks_and_recipes_name_file_and_line(tmp_path, name, load):
    path = tmp_path / name
    path.write_bytes(b"# fine\n" + NOT_UTF8)
    with pytest.raises(PatchkitError) as err:
        load(path)
    assert err.value.message == f"{path}:2: not UTF-8 (byte 9 is 0xe9)"
    assert err.value.exit_code == 2
