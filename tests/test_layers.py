"""The data flows one way: no module imports one of a higher layer, function-local imports included.

The layers are README's Layout, bottom up. A module may import its own layer and any below it;
a new module is placed here on purpose (the test names any module no layer holds).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "patchkit"

LAYERS = (
    ("", "errors", "testpoint", "hooks", "plain", "refs", "process", "untrusted"),  # "": __version__, DISTRIBUTION
    ("git", "fileio", "http", "github"),
    ("project", "patchfile", "targets"),
    ("queue", "binary", "upstream", "culprit", "scopes", "ladder", "witnesses", "notes"),
    ("apply", "output"),  # the apply core and the checkout
    ("checks", "drift", "backends", "smoke"),
    ("pipeline",),  # the `apply` command on the core
    ("journal", "looplock"),  # how record and absorb write, one human-loop command at a time
    ("nightly", "ci", "export", "importing", "rebase", "branch", "demo", "status", "scaffold", "fixture"),
    ("report",),  # renders what everything below returns
    ("cli", "__main__"),
)


def _layer(module: str) -> int:
    """The layer of `patchkit.MODULE` (dotted), by its first component."""
    top = module.split(".", 1)[0]
    for level, names in enumerate(LAYERS):
        if top in names:
            return level
    raise AssertionError(f"patchkit.{module} is in no layer of tests/test_layers.py: place it there")


def _imports(path: Path) -> set[str]:
    """The patchkit modules PATH imports, as dotted names below `patchkit`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "patchkit":
                found.update("" if alias.name in ("__version__", "DISTRIBUTION") else alias.name for alias in node.names)
            elif node.module.startswith("patchkit."):
                found.add(node.module.removeprefix("patchkit."))
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix("patchkit.") for a in node.names if a.name.startswith("patchkit."))
    return found


def test_no_module_imports_a_higher_layer():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts).removesuffix("__init__").rstrip(".")
        level = _layer(module)
        upward += [f"patchkit.{module} imports patchkit.{name}" for name in sorted(_imports(path))
                   if _layer(name) > level]
    assert upward == []


def test_the_rule_sees_an_upward_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from patchkit.report import plain\n")
    assert _layer(next(iter(_imports(module)))) > _layer("pipeline")
