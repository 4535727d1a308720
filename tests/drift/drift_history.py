"""A synthetic upstream whose history has one commit per class of semantic drift, and a patch,
made at the lock, that relies on each of them.

The header `include/lib.h` declares what the patch relies on; each commit after the lock changes
one declaration (or only a body), with unrelated commits in between so that the blame has
something to search. The patch adds lines to `src/app.cpp` only, so it applies clean at every
commit: only what it relies on moves.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from conftest import git_identity

HEADER = """\
#pragma once
#include <stddef.h>

#define MAX_TOKENS 16

struct input_text {
    const char * text;
    bool add_special;
    bool parse_special;
};

struct params {
    int a;
    int b;
};

enum mode {
    MODE_A,
    MODE_B,
    MODE_C,
};

int tokenize(const char * text, int n_max = 8);
void resize(int n);
inline int twice(int x) { return x * 2; }
"""

APP = """\
#include "lib.h"

void keep(const char * text, bool add_special, bool parse_special, int n) {
    (void) text;
}
"""

# The patch's added lines: one use of each declaration.
ADDED = """\
    input_text * t = new input_text{text, add_special, parse_special};
    params p = {.a = 1, .b = 2};
    int slot = (int) MODE_B;
    char buf[MAX_TOKENS];
    tokenize(text);
    resize(n);
    int two = twice(3);
"""

# (name, subject, old text, new text[, path]): what each commit after the lock does to the header
# (or to PATH; an empty old text writes the file whole); None for an unrelated commit (to another file).
CHANGES = (
    ("members", "lib : pass the text's length (#101)",
     "    const char * text;\n", "    const char * text;\n    size_t text_len;\n"),
    (None, "docs : readme (#102)", None, None),
    ("designated", "lib : params gets c (#103)", "    int b;\n", "    int b;\n    int c;\n"),
    ("enum", "lib : modes in another order (#104)",
     "    MODE_B,\n    MODE_C,\n", "    MODE_C,\n    MODE_B,\n"),
    (None, "docs : more readme (#105)", None, None),
    ("macro", "lib : more tokens (#106)", "#define MAX_TOKENS 16\n", "#define MAX_TOKENS 32\n"),
    ("default", "lib : tokenize more by default (#107)", "int n_max = 8", "int n_max = 64"),
    ("parameter", "lib : resize takes a size (#108)", "void resize(int n);", "void resize(size_t n);"),
    ("body", "lib : twice by addition (#109)", "return x * 2;", "return x + x;"),
    (None, "docs : even more readme (#110)", None, None),
)


@dataclass(frozen=True)
class History:
    path: Path
    lock: str  # the commit the patch was made at
    commits: dict[str, str]  # change name -> the commit that made it
    target: str
    patch: Path


def _git(repo: Path, *args: str, date: str = "1790600000 +0000") -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(repo), **git_identity("Up Stream",
                               "up@stream.invalid", date)}).stdout.strip()


def build(root: Path, changes=CHANGES, added: str = ADDED, header: str = HEADER, files: dict[str, str] | None = None,
          app: str = APP) -> History:
    """The upstream at ROOT/upstream: the lock (with FILES besides the header and APP), then
    CHANGES; the patch, adding ADDED to APP, at ROOT/patches."""
    repo = root / "upstream"
    (repo / "include").mkdir(parents=True)
    (repo / "src").mkdir()
    _git(repo, "init", "-q", "-b", "master")
    (repo / "include" / "lib.h").write_text(header)
    (repo / "src" / "app.cpp").write_text(app)
    (repo / "README.md").write_text("lib\n")
    for path, text in (files or {}).items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "lib : first")
    lock = _git(repo, "rev-parse", "HEAD")

    _git(repo, "checkout", "-q", "-b", "fork")
    (repo / "src" / "app.cpp").write_text(app.replace("    (void) text;\n", "    (void) text;\n" + added))
    _git(repo, "commit", "-q", "-am", "app : use everything the library declares")
    out = root / "patches"
    out.mkdir()
    name = _git(repo, "format-patch", "-1", "-o", str(out), "--no-signature", "HEAD")
    patch = Path(name)
    _git(repo, "checkout", "-q", "master")
    _git(repo, "branch", "-q", "-D", "fork")

    commits = {}
    for i, (change, subject, old, new, *where) in enumerate(changes, 1):
        date = f"{1790600000 + i * 3600} +0000"
        if old is None:
            readme = repo / "README.md"
            readme.write_text(readme.read_text() + f"{subject}\n")
        else:
            path = repo / (where[0] if where else "include/lib.h")
            path.parent.mkdir(parents=True, exist_ok=True)
            text = path.read_text() if old else ""
            assert old in text, old
            path.write_text(text.replace(old, new, 1) if old else new)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", subject, date=date)
        if change:
            commits[change] = _git(repo, "rev-parse", "HEAD")
    return History(repo, lock, commits, _git(repo, "rev-parse", "HEAD"), patch)
