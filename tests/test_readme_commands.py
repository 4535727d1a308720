"""The README opens with the two commands a newcomer needs, and CI runs the second one exactly, so
that what CI proves is what a fresh machine gets."""

from __future__ import annotations

import re

from conftest import REPO


def readme_commands() -> list[str]:
    block = re.search(r"```sh\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert block, "the README opens with a sh block"
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines()]


def test_the_first_command_installs_and_runs_the_main_job():
    first = readme_commands()[0]
    assert first.startswith("pip install . && ") and "patchkit apply upstream@HEAD" in first


def test_the_second_installs_what_the_tests_need_and_ci_runs_it_exactly():
    second = readme_commands()[1]
    install, run = second.split(" && ")
    assert "install" in install and "'.[test]'" in install  # pytest and the tests' tools come with it
    assert run == "python3 -m pytest -q"
    assert second in (REPO / ".ci" / "run").read_text().splitlines()
