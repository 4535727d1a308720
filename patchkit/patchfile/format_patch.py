"""`git format-patch`, run one way: every patch patchkit writes from a commit (refresh, export,
import's rendering of a header, `import --from-repo`) has the same form on every machine.

The form: the mbox `From` line with the zero id, From/Date/Subject as git renders them (RFC 2047
for what is not ASCII), the message, `---`, the diff with `a/` and `b/` prefixes, three lines of
context, full `index` blob ids and binary data; no diffstat (its layout follows git's version and
`diff.stat*` settings), no signature, no notes, no base-commit lines.

git.py keeps the user's and the system's config out of every call; a repository's own config is
still read, and a user's repository (`--from-repo`) may say `diff.noprefix`, `format.signOff`,
`format.headers`, `diff.interHunkContext`... So each setting that changes what format-patch
writes is given on the command line, where it outranks every config file.
"""

from __future__ import annotations

import os
from pathlib import Path

from patchkit import git
from patchkit.errors import PatchkitError

FLAGS = (
    "--stdout", "--zero-commit", "--full-index", "--binary", "--no-signature", "--no-stat", "--no-notes",
    "--no-base", "-M", "-U3", "--src-prefix=a/", "--dst-prefix=b/", "--encoding=UTF-8",
    # what format.* settings would add or change
    "--no-numbered", "--subject-prefix=PATCH", "--no-signoff", "--no-thread", "--no-from", "--no-attach",
    "--no-add-header", "--no-to", "--no-cc", "--no-cover-letter", "--no-force-in-body-from",
    # what diff.* settings would change, where format-patch has a flag for it
    "--inter-hunk-context=0", "--diff-algorithm=myers", "--indent-heuristic", "--no-relative",
    "--submodule=short", "--no-color", "--no-ext-diff", "--no-textconv", f"-O{os.devnull}",
)
# Settings without a flag, at git's defaults.
_SETTINGS = (
    ("diff.noprefix", "false"), ("diff.mnemonicPrefix", "false"), ("diff.suppressBlankEmpty", "false"),
    ("format.mboxrd", "false"), ("format.encodeEmailHeaders", "true"),
)


def format_commit(repo: Path | str, commit: str, *, allow_empty: bool = False) -> tuple[str, str]:
    """COMMIT of the repository REPO as (the mail up to its message's end, the diff with its
    last newline). A commit that changes nothing has the diff "" (with ALLOW_EMPTY, for a
    commit made only for its header), else GitFailed."""
    _refuse_diff_lines(repo, commit)
    settings = [arg for key, value in _SETTINGS for arg in ("-c", f"{key}={value}")]
    out = git.run([*settings, "format-patch", "-1", *FLAGS, *(["--always"] if allow_empty else []), commit],
                  cwd=repo)
    # Without a stat git writes no `---` either; `join` puts it back.
    message, found, diff = out.partition("\ndiff --git ")
    message = message.rstrip("\n")
    if message and "\n\n" not in message:  # no body: the empty line that ends the header stays, as with a stat
        message += "\n"
    return message, f"diff --git {diff}\n" if found else ""


def _refuse_diff_lines(repo: Path | str, commit: str) -> None:
    """Refused: a message line that `git am` (mailinfo's patchbreak) takes as the start of the
    diff, `diff -`, `Index: `, or `---` followed by a space and a name or by nothing: written into
    a patch file, the message would end there and the rest would be lost on apply."""
    message = git.run(["log", "-1", "--no-notes", "--format=%B", commit], cwd=repo)
    for number, line in enumerate(message.split("\n"), 1):
        rest = line[3:]
        if line.startswith(("diff -", "Index: ")) or (line.startswith("---") and (
                not rest.strip() or (rest[:1] == " " and rest[1:2].strip()))):
            raise PatchkitError(f"commit {commit[:12]}'s message line {number} ({line[:40]!r}) would be read "
                                "by git am as the start of the diff, cutting the message there",
                                "reword the commit (git commit --amend, or rebase -i reword) so that no line "
                                "starts with `diff -`, `Index: ` or `---`")


def join(message: str, diff: str) -> str:
    """A patch file: MESSAGE (as format_commit gives it), `---`, DIFF. The `---` tells mail tools
    (git am, patch) where the message ends."""
    return f"{message}\n---\n{diff}"
