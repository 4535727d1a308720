"""One patch's text, whatever its form, made into the queue's form: a git format-patch mail.

A mail (git format-patch, an mbox message) is read by `git mailinfo`, as `git am` reads it:
encodings, quoted-printable, `[PATCH n/m]` prefixes and in-body headers are git's business. A
DEP-3 header's `Description:`/`Subject:` gives the subject and body, `Author:`/`From:` the
author, every other field a trailer. A plain diff has nothing but the change: the author and
subject come from `--author` and `--subject` (for a patch from a folder, its file name is the
subject of last resort, with a warning).

The mail is then written the way `git format-patch` writes it (git renders the header from a
commit with the patch's author, date and message), so that the nightly refresh of an imported
patch changes no header byte; the diff follows as the source gave it.
"""

from __future__ import annotations

import email.utils
import re
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from patchkit import git
from patchkit.errors import PatchkitError
from patchkit.importing.sources import Piece
from patchkit.queue import git_date, git_zone

_TRAILER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*: \S")
_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):(?:[ \t]+(.*?))?[ \t]*$")
HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_SIGNATURE = re.compile(r"\n-- \n[^\n]*\n*\Z")
_DEP3_ONLY = {"description", "origin", "bug", "forwarded", "author", "last-update", "applied-upstream",
              "reviewed-by", "acked-by", "upstream-status"}
_MAIL_FIELDS = {"from", "subject", "date", "message-id", "return-path", "received", "delivered-to", "to",
                "cc", "in-reply-to", "references", "mime-version", "content-type", "content-transfer-encoding",
                "reply-to", "sender", "x-mailer", "user-agent", "list-id"}
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_COMMITTER = {"GIT_COMMITTER_NAME": git.PATCHKIT_NAME, "GIT_COMMITTER_EMAIL": git.PATCHKIT_EMAIL}


@dataclass(frozen=True)
class Draft:
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


def diff_start(lines: list[str]) -> int | None:
    """Index of the line where the diff begins: `diff --git`, or a `---`/`+++` pair (an `Index:`
    line and its `====` rule before them belong to the diff's header, not to the message)."""
    for i, line in enumerate(lines):
        if line.startswith("diff --git ") or (line.startswith("--- ") and i + 1 < len(lines)
                                               and lines[i + 1].startswith("+++ ")):
            return i
    return None


def parse(piece: Piece, *, author: tuple[str, str] | None = None, subject: str | None = None,
          now: float | None = None) -> Draft:
    """PIECE's author, date, subject, message and diff; exit 2 when one cannot be known."""
    warnings: list[str] = []
    text = piece.text.removeprefix("\ufeff")
    if "\r\n" in text:
        if all(line.endswith("\r\n") for line in text.splitlines(keepends=True)[:-1]) and text.endswith("\r\n"):
            text = text.replace("\r\n", "\n")
            warnings.append(f"{piece.source}: CRLF line endings (from a mail or a Windows editor) made LF")
        else:
            raise PatchkitError(f"{piece.source}: some lines end in CRLF and some do not (mangled in transit?)",
                                "fix the line endings, or pass --repair to rebuild the patch against upstream")
    lines = text.splitlines(keepends=True)
    start = diff_start(lines)
    if start is None:
        hint = ("is it a patch? one copied from a web page (newlines lost) needs --repair"
                if "\n" not in text.strip() or "diff --git" in text else "is it a patch? expected `diff --git` lines")
        raise PatchkitError(f"{piece.source}: no diff found", hint)
    header = lines[:start]
    form = _form(header)
    kind = piece.kind or {"mail": "format-patch", "dep3": "dep3", "diff": "diff"}[form]
    if form == "mail":
        who, when, title, body, diff = _mailinfo(text, piece.source)
        trailers: list[tuple[str, str]] = []
    elif form == "dep3":
        who, when, title, body, trailers = _dep3(header, piece.source)
        diff = "".join(lines[start:])
    else:
        who, when, title = None, None, None
        body, trailers = _free_text(header), []
        diff = "".join(lines[start:])
    if piece.origin and not any(k.lower() == "origin" for k, _ in trailers) \
            and not re.search(r"(?mi)^Origin: ", body):
        trailers.append(("Origin", piece.origin))
    body = with_trailers(body, trailers)

    if who is None:
        if author is None:
            what = {"diff": "a plain diff has no author", "dep3": "the DEP-3 header has no Author",
                    "mail": "the mail has no author"}[form]
            raise PatchkitError(f"{piece.source}: {what} (name and e-mail)",
                                'give it with --author "Name <email>"')
        who = author
        warnings.append(f"{piece.source}: author from --author")
    elif not who[1]:
        if author is None:
            raise PatchkitError(f"{piece.source}: the author {who[0]!r} has no e-mail address",
                                'give the author with --author "Name <email>"')
        who = author
        warnings.append(f"{piece.source}: author from --author (the source has no e-mail)")
    from_file = False
    if not title:
        if subject:
            title = subject
        elif piece.file_subject:
            title = piece.file_subject
            from_file = True
            warnings.append(f"{piece.source}: no subject in the patch, so its file name's words are the "
                            f"subject ({title!r}); edit it if it says too little")
        else:
            raise PatchkitError(f"{piece.source}: no subject", 'give one with --subject "what the patch does"')
    date_set = when is None
    date = git_date(when, piece.source) if when else import_date(now)
    if date_set:
        warnings.append(f"{piece.source}: no date in the source, so the import time is its Date")
    diff = normalise_diff(diff, piece.source, warnings, p1=piece.kind in ("quilt", "gentoo"))
    return Draft(piece.source, kind, form, who[0], who[1], date, " ".join(title.split()), body.strip("\n"),
                 diff, date_set, from_file, tuple(warnings))


def _form(header: list[str]) -> str:
    """mail, dep3 or diff, from what comes before the diff."""
    rest = [line.rstrip("\n") for line in header]
    while rest and not rest[0].strip():
        rest.pop(0)
    if not rest:
        return "diff"
    if rest[0].startswith("From ") and not rest[0].startswith("From: "):
        return "mail"  # an mbox postmark
    names = []
    for line in rest:
        if not line.strip() or line.strip() == "---":
            break
        if line[:1] in (" ", "\t") and names:
            continue
        m = _FIELD.match(line)
        if not m:
            return "diff"  # free text first: a plain diff with a description
        names.append(m.group(1).lower())
    if any(n in _DEP3_ONLY or n.startswith("bug-") for n in names):
        return "dep3"
    if "from" in names or "subject" in names or set(names) & _MAIL_FIELDS:
        return "mail"
    return "diff"


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
    start = diff_start(lines)
    if start is None:
        raise PatchkitError(f"{source}: the mail holds no diff", "is it a patch? expected `diff --git` lines")
    name, addr = info.get("Author", ""), info.get("Email", "")
    who = (name or addr, addr) if name or addr else None
    return who, info.get("Date") or None, info.get("Subject", ""), body, "".join(lines[start:])


def _dep3(header: list[str], source: str) -> tuple[tuple[str, str] | None, str | None, str, str,
                                                    list[tuple[str, str]]]:
    """(author, date, subject, body, trailers) of a DEP-3 header."""
    fields: list[tuple[str, list[str]]] = []
    free: list[str] = []
    paragraphs: list[list[str]] = [[]]
    for raw in header:
        line = raw.rstrip("\n")
        if line.strip() == "---":
            break
        if not line.strip():
            if paragraphs[-1]:
                paragraphs.append([])
            continue
        paragraphs[-1].append(line)
    for paragraph in paragraphs:
        if not paragraph:
            continue
        is_fields = all(_FIELD.match(line) or (line[:1] in (" ", "\t") and i > 0) for i, line in enumerate(paragraph))
        if not is_fields:
            free += paragraph + [""]
            continue
        for line in paragraph:
            m = _FIELD.match(line) if line[:1] not in (" ", "\t") else None
            if m:
                fields.append((m.group(1), [m.group(2) or ""]))
            else:
                fields[-1][1].append(line)
    who = None
    date = None
    title = ""
    description: list[str] = []
    trailers: list[tuple[str, str]] = []
    for name, value in fields:
        key = name.lower()
        first = value[0].strip()
        more = [_continuation(v) for v in value[1:]]
        if key in ("description", "subject") and not title:
            title = first
            description = more
        elif key in ("author", "from") and who is None:
            person, addr = email.utils.parseaddr(" ".join([first, *(m.strip() for m in more)]))
            who = (person or addr, addr) if person or addr else None
            if who and not who[0]:
                who = None
        elif key == "date" and date is None:
            date = first
        else:
            trailers.append((name, " ".join([first, *(m.strip() for m in more)]).strip()))
    body = "\n".join(description).strip("\n")
    free_text = "\n".join(free).strip("\n")
    body = "\n\n".join(part for part in (body, free_text) if part)
    return who, date, title, body, trailers


def _continuation(line: str) -> str:
    """A DEP-3 continuation line's text: one leading space dropped; " ." is an empty line."""
    text = line[1:] if line[:1] in (" ", "\t") else line
    return "" if text.strip() == "." else text.rstrip()


def _free_text(header: list[str]) -> str:
    """What comes before a plain diff, less quilt's `Index:` lines and rules."""
    kept = [line.rstrip("\n") for line in header
            if not line.startswith("Index: ") and not re.match(r"^={10,}\s*$", line)]
    return "\n".join(kept).strip("\n")


def with_trailers(body: str, trailers: list[tuple[str, str]]) -> str:
    """BODY with TRAILERS at its end: in its last paragraph when that is a trailer block."""
    if not trailers:
        return body
    added = "\n".join(f"{k}: {v}" for k, v in trailers)
    paragraphs = body.strip("\n").split("\n\n") if body.strip() else []
    if paragraphs and all(_TRAILER.match(line) or line[:1] in (" ", "\t")
                          for line in paragraphs[-1].splitlines()):
        paragraphs[-1] += "\n" + added
    else:
        paragraphs.append(added)
    return "\n\n".join(paragraphs)


def import_date(now: float | None = None) -> str:
    seconds = int(time.time() if now is None else now)
    return f"{seconds} {git_zone(time.localtime(seconds).tm_gmtoff // 60)}"


def normalise_diff(diff: str, source: str, warnings: list[str], p1: bool = False) -> str:
    """The diff as given, less what follows it (a mail signature, trailing blank lines); with P1
    (a quilt or Gentoo patch, applied with -p1), a traditional diff's paths get git's a/ and b/
    prefixes in place of their first component."""
    diff = _SIGNATURE.sub("\n", diff)
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
    for i, (line, in_hunk, _) in enumerate(walk_hunks(lines)):
        if not in_hunk and line.startswith(("--- ", "+++ ")) and (
                line.startswith("+++ ") or (i + 1 < len(lines) and lines[i + 1].startswith("+++ "))):
            prefix = "a/" if line.startswith("---") else "b/"
            fixed = _reprefix(line, prefix)
            changed = changed or fixed != line
            lines[i] = fixed
    if changed:
        warnings.append(f"{source}: paths given git's a/ and b/ prefixes (the diff is -p1)")
    return "".join(lines)


def _hunks_complete(lines: list[str]) -> bool:
    """The last hunk in LINES has all the lines its header counts."""
    left = (0, 0)
    for _, _, left in walk_hunks(lines):
        pass
    return max(left) <= 0


def walk_hunks(lines: Iterable[str]) -> Iterator[tuple[str, bool, tuple[int, int]]]:
    """Each line of a diff; whether it falls inside a hunk, as the hunk's header counts lines;
    and the old and new lines the hunk still awaits after it. An empty line in a hunk is a
    context line whose space a mailer ate."""
    old_left = new_left = 0
    for line in lines:
        if old_left > 0 or new_left > 0:
            kind = line[:1]
            if kind != "\\":
                old_left -= kind in (" ", "-", "\n", "")
                new_left -= kind in (" ", "+", "\n", "")
            yield line, True, (old_left, new_left)
            continue
        m = HUNK.match(line)
        if m:
            old_left, new_left = int(m.group(1) or 1), int(m.group(2) or 1)
        yield line, False, (old_left, new_left)


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
    """Writes drafts as git format-patch mails, git rendering the header (encoding, folding)."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="patchkit-mail-")
        self._repo = Path(self._tmp.name)
        git.run(["init", "--bare", "--quiet", str(self._repo)])
        git.run(["hash-object", "-t", "tree", "-w", "--stdin"], cwd=self._repo, input=b"")

    def __enter__(self) -> MailWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._tmp.cleanup()

    def write(self, draft: Draft) -> bytes:
        message = f"{draft.subject}\n\n{draft.body}\n" if draft.body else f"{draft.subject}\n"
        env = {"GIT_AUTHOR_NAME": draft.name, "GIT_AUTHOR_EMAIL": draft.email, "GIT_AUTHOR_DATE": draft.date,
               "GIT_COMMITTER_DATE": draft.date, **_COMMITTER}
        try:
            commit = git.run(["commit-tree", _EMPTY_TREE, "-F", "-"], cwd=self._repo, env=env,
                             input=message.encode("utf-8", errors="surrogateescape"))
        except git.GitFailed as exc:
            raise PatchkitError(f"{draft.source}: git cannot take this author or message ({exc.summary})",
                                "fix the author (--author) or the message") from None
        out = git.run(["format-patch", "-1", "--always", "--stdout", "--zero-commit", "--no-signature", "--no-stat",
                       "--no-numbered", "--encoding=UTF-8", commit], cwd=self._repo)
        return f"{out.rstrip(chr(10))}\n---\n{draft.diff}".encode("utf-8", errors="surrogateescape")
