"""One patch's text, whatever its form, made into the queue's form: a git format-patch mail.

A mail (git format-patch, an mbox message) is read by `git mailinfo`, as `git am` reads it:
encodings, quoted-printable, `[PATCH n/m]` prefixes and in-body headers are git's business. A
DEP-3 header's `Description:`/`Subject:` gives the subject and body, `Author:`/`From:` the
author, every other field a trailer. A plain diff has nothing but the change: the author and
subject come from `--author` and `--subject` (for a patch from a folder, its file name is the
subject of last resort, with a warning).

The mail is then written the way `git format-patch` writes it (git renders the header from a
commit with the patch's author, date and message), so that the nightly refresh of an imported
patch changes no header byte; the diff follows as the source gave it. How each form is read is
`patchkit.patchfile`'s; what is here is import's: which form a source is, what `--author` and
`--subject` fill in, the warnings.
"""

from __future__ import annotations

import email.utils
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from patchkit import git
from patchkit.errors import PatchkitError
from patchkit.importing.sources import PatchText
from patchkit.patchfile import diff as patch_diff
from patchkit.patchfile import mail as patch_mail
from patchkit.patchfile import trailers as patch_trailers
from patchkit.patchfile.format_patch import format_commit, join
from patchkit.patchfile.mail import git_date, git_zone

_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_COMMITTER = {"GIT_COMMITTER_NAME": git.PATCHKIT_NAME, "GIT_COMMITTER_EMAIL": git.PATCHKIT_EMAIL}


@dataclass(frozen=True)
class ParsedPatch:
    """A patch's parts, as known from its source (and from --author/--subject where it had none)."""

    source: str
    kind: str  # the SOURCE kind: format-patch, mbox, dep3, diff, quilt, gentoo, git, url
    format: str  # what the patch itself was: mail, dep3, diff
    name: str  # author
    email: str
    date: str  # git's raw form: "<unix seconds> <+hhmm>"
    subject: str
    body: str  # the message after the subject, trailers included
    diff: str
    date_set: bool  # the source had no date: the import time is the Date
    file_subject: bool = False  # the subject is the file name's words
    warnings: tuple[str, ...] = field(default_factory=tuple)


def parse_author(value: str, what: str = "--author") -> tuple[str, str]:
    name, addr = email.utils.parseaddr(value)
    if not name or not addr or "@" not in addr or set("<>\n") & set(name + addr):
        raise PatchkitError(f"{what} {value!r}: expected 'Name <email>'",
                            'e.g. --author "Ada Lovelace <ada@example.org>"')
    return name, addr


def parse(patch: PatchText, *, author: tuple[str, str] | None = None, subject: str | None = None,
          now: float | None = None) -> ParsedPatch:
    """PATCH's author, date, subject, message and diff; exit 2 when one cannot be known."""
    warnings: list[str] = []
    text = patch.text.removeprefix("\ufeff")
    if "\r\n" in text:
        if all(line.endswith("\r\n") for line in text.splitlines(keepends=True)[:-1]) and text.endswith("\r\n"):
            text = text.replace("\r\n", "\n")
            warnings.append(f"{patch.source}: CRLF line endings (from a mail or a Windows editor) made LF")
        elif not patch_mail.crs_are_content(text.split("\n")[:-1]):
            raise PatchkitError(f"{patch.source}: some lines end in CRLF and some do not (mangled in transit?)",
                                "fix the line endings, or pass --repair to rebuild the patch against upstream")
    lines = patch_diff.lines_of(text, keepends=True)
    start = patch_diff.diff_start(lines)
    if start is None:
        hint = ("is it a patch? one copied from a web page (newlines lost) needs --repair"
                if "\n" not in text.strip() or "diff --git" in text else "is it a patch? expected `diff --git` lines")
        raise PatchkitError(f"{patch.source}: no diff found", hint)
    header = lines[:start]
    form = patch_mail.header_form(header)
    kind = patch.kind or {"mail": "format-patch", "dep3": "dep3", "diff": "diff"}[form]
    if form == "mail":
        who, when, title, body, diff = _mailinfo(text, patch.source)
        trailers: list[tuple[str, str]] = []
    elif form == "dep3":
        dep3 = patch_mail.read_dep3(header)
        who, when, title, body, trailers = dep3.author, dep3.date, dep3.subject, dep3.body, list(dep3.fields)
        diff = "".join(lines[start:])
    else:
        who, when, title = None, None, None
        body, trailers = patch_mail.free_text(header), []
        diff = "".join(lines[start:])
    if patch.origin and not any(k.lower() == "origin" for k, _ in trailers) \
            and not re.search(r"(?mi)^Origin: ", body):
        trailers.append(("Origin", patch.origin))
    body = patch_trailers.append(body, trailers)

    if who is None:
        if author is None:
            what = {"diff": "a plain diff has no author", "dep3": "the DEP-3 header has no Author",
                    "mail": "the mail has no author"}[form]
            raise PatchkitError(f"{patch.source}: {what} (name and e-mail)",
                                'give it with --author "Name <email>"')
        who = author
        warnings.append(f"{patch.source}: author from --author")
    elif not who[1]:
        if author is None:
            raise PatchkitError(f"{patch.source}: the author {who[0]!r} has no e-mail address",
                                'give the author with --author "Name <email>"')
        who = author
        warnings.append(f"{patch.source}: author from --author (the source has no e-mail)")
    from_file = False
    if not title:
        if subject:
            title = subject
        elif patch.file_subject:
            title = patch.file_subject
            from_file = True
            warnings.append(f"{patch.source}: no subject in the patch, so its file name's words are the "
                            f"subject ({title!r}); edit it if it says too little")
        else:
            raise PatchkitError(f"{patch.source}: no subject", 'give one with --subject "what the patch does"')
    date_set = when is None
    date = git_date(when, patch.source) if when else import_date(now)
    if date_set:
        warnings.append(f"{patch.source}: no date in the source, so the import time is its Date")
    diff = normalise_diff(diff, patch.source, warnings, p1=patch.kind in ("quilt", "gentoo"))
    return ParsedPatch(patch.source, kind, form, who[0], who[1], date, " ".join(title.split()), body.strip("\n"),
                 diff, date_set, from_file, tuple(warnings))


def _mailinfo(text: str, source: str) -> tuple[tuple[str, str] | None, str | None, str, str, str]:
    """(author, date, subject, body, diff) of a mail, as `git am` reads them."""
    with tempfile.TemporaryDirectory(prefix="patchkit-mailinfo-") as tmp:
        msg, patch = Path(tmp) / "msg", Path(tmp) / "patch"
        try:
            out = git.run(["mailinfo", str(msg), str(patch)], cwd=tmp,
                          input=text.encode("utf-8", errors="surrogateescape"))
        except git.GitFailed as exc:
            raise PatchkitError(f"{source}: not a readable mail ({exc.summary})",
                                "re-export it with git format-patch") from None
        body = msg.read_bytes().decode("utf-8", errors="surrogateescape")
        rest = patch.read_bytes().decode("utf-8", errors="surrogateescape")
    info: dict[str, str] = {}
    for line in out.splitlines():
        key, _, value = line.partition(": ")
        info.setdefault(key.rstrip(":"), value.strip())
    lines = rest.splitlines(keepends=True)
    start = patch_diff.diff_start(lines)
    if start is None:
        raise PatchkitError(f"{source}: the mail holds no diff", "is it a patch? expected `diff --git` lines")
    name, addr = info.get("Author", ""), info.get("Email", "")
    who = (name or addr, addr) if name or addr else None
    return who, info.get("Date") or None, info.get("Subject", ""), body, "".join(lines[start:])


def import_date(now: float | None = None) -> str:
    seconds = int(time.time() if now is None else now)
    return f"{seconds} {git_zone(time.localtime(seconds).tm_gmtoff // 60)}"


def normalise_diff(diff: str, source: str, warnings: list[str], p1: bool = False) -> str:
    """The diff as given, less what follows it (a mail signature, trailing blank lines); with P1
    (a quilt or Gentoo patch, applied with -p1), a traditional diff's paths get git's a/ and b/
    prefixes in place of their first component."""
    diff = patch_diff.strip_signature(diff)
    lines = diff.splitlines(keepends=True)
    while lines and not lines[-1].strip() and _hunks_complete(lines[:-1]):
        lines.pop()  # blank lines after the last hunk; one a hunk still counts is a mangled context line
    diff = "".join(lines)
    if not diff.endswith("\n"):
        diff += "\n"
    if not p1 or re.search(r"(?m)^diff --git ", diff):
        return diff
    lines = diff.splitlines(keepends=True)
    changed = False
    for i, walked in enumerate(patch_diff.walk(lines)):
        line = walked.text
        if not walked.in_hunk and line.startswith(("--- ", "+++ ")) and (
                line.startswith("+++ ") or (i + 1 < len(lines) and lines[i + 1].startswith("+++ "))):
            prefix = "a/" if line.startswith("---") else "b/"
            fixed = _reprefix(line, prefix)
            changed = changed or fixed != line
            lines[i] = fixed
    if changed:
        warnings.append(f"{source}: paths given git's a/ and b/ prefixes (the diff is -p1)")
    return "".join(lines)


def _hunks_complete(lines: list[str]) -> bool:
    """The last hunk in LINES has all the lines its header counts (an empty line in a hunk is a
    context line whose space a mailer ate)."""
    last = None
    for last in patch_diff.walk(lines):
        pass
    return last is None or (last.old_left <= 0 and last.new_left <= 0)


def _reprefix(line: str, prefix: str) -> str:
    marker, rest = line[:4], line[4:]
    path, tab, stamp = rest.rstrip("\n").partition("\t")
    if path == "/dev/null" or path.startswith(prefix):
        return line
    head, slash, tail = path.partition("/")
    if not slash or not tail:
        return line  # a -p0 path: left for the queue's parser to name
    return f"{marker}{prefix}{tail}{tab}{stamp}\n"


class MailWriter:
    """Writes parsed patches as git format-patch mails, git rendering the header (encoding, folding)."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="patchkit-mail-")
        self._repo = Path(self._tmp.name)
        git.run(["init", "--bare", "--quiet", str(self._repo)])
        git.run(["hash-object", "-t", "tree", "-w", "--stdin"], cwd=self._repo, input=b"")

    def __enter__(self) -> MailWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._tmp.cleanup()

    def write(self, parsed: ParsedPatch) -> bytes:
        message = f"{parsed.subject}\n\n{parsed.body}\n" if parsed.body else f"{parsed.subject}\n"
        env = {"GIT_AUTHOR_NAME": parsed.name, "GIT_AUTHOR_EMAIL": parsed.email, "GIT_AUTHOR_DATE": parsed.date,
               "GIT_COMMITTER_DATE": parsed.date, **_COMMITTER}
        try:
            commit = git.run(["commit-tree", _EMPTY_TREE, "-F", "-"], cwd=self._repo, env=env,
                             input=message.encode("utf-8", errors="surrogateescape"))
        except git.GitFailed as exc:
            raise PatchkitError(f"{parsed.source}: git cannot take this author or message ({exc.summary})",
                                "fix the author (--author) or the message") from None
        message, _ = format_commit(self._repo, commit, allow_empty=True)
        return join(message, parsed.diff).encode("utf-8", errors="surrogateescape")
