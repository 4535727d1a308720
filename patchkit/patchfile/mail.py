"""A patch file's mail part: where it ends and the diff begins, its header fields, the mbox that
may hold several, and the DEP-3 header a Debian patch has in its place.

A git format-patch mail is `From <id> <date>` (the mbox postmark), header fields (folded lines
continue with whitespace; RFC 2047 words for what is not ASCII), an empty line, the message, a
`---` line, the diff. A DEP-3 header is deb822 fields (`Description:`, `Author:`, `Origin:`, ...;
continuation lines start with a space, " ." is an empty line) before a plain diff.
"""

from __future__ import annotations

import email.errors
import email.header
import email.utils
import re
from dataclasses import dataclass
from pathlib import Path

from patchkit.errors import PatchkitError
from patchkit.git import Identity
from patchkit.patchfile.diff import diff_start, strip_signature

_SUBJECT_PREFIX = re.compile(r"^\s*(\[[^\]]*\]\s*)+")
_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):(?:[ \t]+(.*?))?[ \t]*$")
_DEP3_ONLY = {"description", "origin", "bug", "forwarded", "author", "last-update", "applied-upstream",
              "reviewed-by", "acked-by", "upstream-status"}
_MAIL_FIELDS = {"from", "subject", "date", "message-id", "return-path", "received", "delivered-to", "to",
                "cc", "in-reply-to", "references", "mime-version", "content-type", "content-transfer-encoding",
                "reply-to", "sender", "x-mailer", "user-agent", "list-id"}


# -- a patch file: its mail and its diff ----------------------------------------------------------

def split(text: str, path: Path) -> tuple[str, str, int]:
    """(header and message, diff less the signature, 1-based line where the diff starts)."""
    lines = text.splitlines(keepends=True)
    start = diff_start(lines)
    if start is None:
        raise PatchkitError(f"{path}: no diff found", "is this a patch? expected `diff --git` lines")
    return "".join(lines[:start]), strip_signature("".join(lines[start:])), start + 1


def read_header(header: str, path: Path) -> tuple[Identity, str, str]:
    """The author (with the Date), subject and message of a mail's or DEP-3 header."""
    lines = header.splitlines()
    found, i = header_fields(lines)
    fields = {name: _decoded(value) for name, value in found.items()}
    # Undecoded too: an address list is parsed before its words are decoded.
    raw = {name: _mail_text(value) for name, value in found.items()}
    message = _mail_text("\n".join(lines[i:]))
    message = re.split(r"^---\s*$", message, maxsplit=1, flags=re.M)[0].strip("\n")
    who = raw.get("from") or raw.get("author")
    name, addr = email.utils.parseaddr(who or "")
    name = _decoded(name)  # "=?UTF-8?q?M=C3=BCller=2C_Hans?=" holds a comma only once decoded
    if not who or not name or not addr:
        raise PatchkitError(f"{path}: missing or malformed author ('From: Name <email>')",
                            "add a From: header with a name and an email address")
    if set("<>\n") & set(name + addr):  # a commit's ident cannot carry them
        raise PatchkitError(f"{path}: author {name!r} <{addr}> has '<' or '>' in a name or address",
                            "fix the From: header")
    subject = fields.get("subject") or fields.get("description")
    if not subject:
        first, _, rest = message.partition("\n")
        subject, message = first, rest.strip("\n")
    subject = _SUBJECT_PREFIX.sub("", subject).strip()
    if not subject:
        raise PatchkitError(f"{path}: no Subject", "add a Subject: line naming what the patch does")
    if not fields.get("date"):
        raise PatchkitError(f"{path}: no Date header", "add `Date: <RFC 2822 date>`")
    return Identity(name, addr, git_date(fields["date"], path)), subject, message.strip()


def header_fields(lines: list[str]) -> tuple[dict[str, str], int]:
    """The header fields LINES start with (after an mbox postmark), by lowercase name, the first
    of each name, folded values unfolded; and the index of the first line after them."""
    i = 1 if lines and lines[0].startswith("From ") and not lines[0].startswith("From: ") else 0
    fields: dict[str, str] = {}
    while i < len(lines) and lines[i].strip():
        m = re.match(r"^([A-Za-z-]+):\s*(.*)$", lines[i])
        if not m:
            break
        value = m.group(2)
        while i + 1 < len(lines) and lines[i + 1][:1] in (" ", "\t") and lines[i + 1].strip():
            i += 1
            value += " " + lines[i].strip()
        fields.setdefault(m.group(1).lower(), value.strip())
        i += 1
    return fields, i


def _decoded(value: str) -> str:
    """A header as mail readers decode it: RFC 2047 words (=?UTF-8?q?...?=, what git format-patch
    writes), else the raw bytes as UTF-8, else as Latin-1."""
    text = _mail_text(value)
    try:
        return str(email.header.make_header(email.header.decode_header(text)))
    except (UnicodeError, LookupError, email.errors.HeaderParseError):
        return text


def _mail_text(value: str) -> str:
    """VALUE was read with surrogateescape: its bytes as UTF-8 when they are, else as Latin-1
    (old mailers' default), so that the commit never carries undecodable bytes."""
    raw = value.encode("utf-8", errors="surrogateescape")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def git_date(value: str, where: object) -> str:
    """An RFC 2822 date (a mail's Date:) in git's raw form, "<seconds> <+hhmm>"."""
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        raise PatchkitError(f"{where}: unreadable Date {value!r}", "use RFC 2822, as git format-patch writes") from None
    offset = when.utcoffset()
    return f"{int(when.timestamp())} {git_zone(int(offset.total_seconds() // 60) if offset else 0)}"


def git_zone(minutes: int) -> str:
    """A UTC offset in minutes as git writes it: +0200, -0430."""
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}"


# -- mailboxes ------------------------------------------------------------------------------------

# The mbox "From " line: `From <sender or commit id> <asctime date>`, as git format-patch, mail
# archives (lore, mailman, pipermail) and mail clients write it.
_POSTMARK = re.compile(r"^From \S+ +[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d{1,2}:\d\d(?::\d\d)?"
                       r"(?: [A-Z]{2,5}| [-+]\d{4})? \d{4}\s*$")
_HEADER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*:(?: |$)")
_MBOXRD_FROM = re.compile(r"^>(>*From )", re.M)


def split_mbox(text: str) -> list[str]:
    """The messages of an mbox (one element when TEXT is a single patch).

    A message starts at a "From " line that begins the text or follows an empty line, and looks
    like a postmark (or is followed by a mail header that has a `From:`: a message's paragraph
    "From the docs:" followed by "Note: ..." is no message). A postmark followed by such a header
    starts one anywhere, as for `git am`: format-patch files concatenated after an editor dropped
    their last empty line are still several patches, not one with mails inside its diff. `>From `
    lines are unescaped (mboxrd; for mboxo, whose escaping cannot be undone exactly, the same is
    the best guess).
    """
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("From ") and _starts_message(lines, i)]
    if not starts:
        return [text]
    preamble = "".join(lines[:starts[0]])
    chunks = [preamble] if preamble.strip() else []
    bounds = starts + [len(lines)]
    chunks += ["".join(lines[a:b]) for a, b in zip(bounds, bounds[1:])]
    return [_MBOXRD_FROM.sub(r"\1", chunk) for chunk in chunks]


def _starts_message(lines: list[str], i: int) -> bool:
    postmark = bool(_POSTMARK.match(lines[i].rstrip("\r\n")))
    header = _mail_header_at(lines, i + 1)
    return (postmark or header) if i == 0 or not lines[i - 1].strip() else postmark and header


def _mail_header_at(lines: list[str], start: int) -> bool:
    """LINES from START are header fields (up to an empty line), a `From:` among them."""
    fields = []
    for line in lines[start:]:
        if not line.strip():
            break
        if line[:1] in (" ", "\t") and fields:
            continue
        if not _HEADER.match(line):
            return False
        fields.append(line.split(":", 1)[0].lower())
    return "from" in fields


# -- what comes before a diff: a mail, a DEP-3 header or free text ----------------------------------

def header_form(header: list[str]) -> str:
    """mail, dep3 or diff (free text, or nothing), from the lines before the diff."""
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


@dataclass(frozen=True)
class Dep3Header:
    author: tuple[str, str] | None  # (name, e-mail)
    date: str | None  # as given (RFC 2822)
    subject: str  # the first line of Description: (or Subject:)
    body: str  # the rest of the description, then any free text
    fields: tuple[tuple[str, str], ...]  # every other field, in order: the message's trailers


def read_dep3(header: list[str]) -> Dep3Header:
    """A DEP-3 header (paragraphs of fields, maybe free text among them) up to `---`."""
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
    return Dep3Header(who, date, title, body, tuple(trailers))


def _continuation(line: str) -> str:
    """A DEP-3 continuation line's text: one leading space dropped; " ." is an empty line."""
    text = line[1:] if line[:1] in (" ", "\t") else line
    return "" if text.strip() == "." else text.rstrip()


def free_text(header: list[str]) -> str:
    """What comes before a plain diff, less quilt's `Index:` lines and rules."""
    kept = [line.rstrip("\n") for line in header
            if not line.startswith("Index: ") and not re.match(r"^={10,}\s*$", line)]
    return "\n".join(kept).strip("\n")
