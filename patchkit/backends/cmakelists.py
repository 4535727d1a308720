"""What a tree's own CMake asks for: the `find_package(NAME ... CONFIG REQUIRED)` calls of a file.

Read so that a package upstream starts to require shows up as a probe reason before the build,
not as a failed configure after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CALL = re.compile(r"\bfind_package\s*\(([^()]*)\)", re.IGNORECASE)  # command names ignore case
_CONFIG_MODE = {"CONFIG", "NO_MODULE"}  # keywords are case-sensitive


@dataclass(frozen=True)
class FindPackage:
    name: str
    line: int


def required_config_packages(text: str) -> list[FindPackage]:
    """The config-mode packages TEXT (a CMakeLists.txt) requires, in order, each with its line.

    Module-mode calls (`find_package(Vulkan ...)`) are left out: their Find modules have their
    own rules, which a config-file search cannot stand in for. Names built from variables too.
    """
    # Line comments out, line numbers kept.
    code = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    found = []
    for m in _CALL.finditer(code):
        args = m.group(1).split()
        if args and "$" not in args[0] and "REQUIRED" in args and _CONFIG_MODE & set(args):
            found.append(FindPackage(args[0], code.count("\n", 0, m.start()) + 1))
    return found
