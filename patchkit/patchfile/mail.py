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
from patchkit.patchfile.diff import diff_start, lines_of, strip_signature

_SUBJECT_PREFIX = re.compile(r"^\s*(\[[^\]]*\]\s*)+")
_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):(?:[ \t]+(.*?))?[ \t]*$")
_DEP3_ONLY = {"description", "origin", "bug", "forwarded", "author", "last-update", "applied-upstream",
              "reviewed-by", "acked-by", "upstream-status"}
_MAIL_FIELDS = {"from", "subject", "date", "message-id", "return-path", "received", "delivered-to", "to",
                "cc", "in-reply-to", "references", "mime-version", "content-type", "content-transfer-encoding",
                "reply-to", "sender", "x-mailer", "user-agent", "list-id"}


# -- a patch file: its mail and its diff ----------------------------------------------------------

class Unreadable(PatchkitError):
    """A patch file that cannot be read as a patch: where (a 1-based line of the file) and why.
    In a queue it is that patch's verdict (`malformed`); `import` refuses it (exit 2)."""

    def __init__(self, path: Path, line: int, why: str, hint: str) -> None:
        super().__init__(f"{path}:{line}: {why}", hint)
        self.line = line
        self.why = why


@dataclass(frozen=True)
class Author:
    name: str
    email: str  # may be empty: git am takes `From: nobody <>`, and so does patchkit


def lf_text(text: str, path: Path) -> tuple[str, bool]:
    """TEXT with LF line ends, and whether it had CRLF ones: a file whose every line ends in CRLF
    went through a mailer or a Windows editor (git am's mailsplit strips them too). Some lines
    CRLF and some not cannot be told apart from content: Unreadable."""
    lines = text.split("\n")[:-1]
    ends = [line.endswith("\r") for line in lines]
    if not any(ends):
        return text, False
    if all(ends):
        return text.replace("\r\n", "\n"), True
    if crs_are_content(lines):  # git format-patch of a CRLF file: the CRs are the file's
        return text, False
    first = ends.index(not ends[0]) + 1
    raise Unreadable(path, first, f"line {first} ends in {'CRLF' if ends[first - 1] else 'LF'}, line 1 in "
                     f"{'CRLF' if ends[0] else 'LF'}: mixed line ends (mangled in transit?)",
                     "convert it with `dos2unix`, or re-export it with git format-patch")


def crs_are_content(lines: list[str]) -> bool:
    """Every one of LINES (without their LF) ending in CR is a line of a hunk (context, removed,
    added) after the first `diff --git`: the file's own line ends, carried as git carries them."""
    start = next((i for i, line in enumerate(lines) if line.startswith("diff --git ")), None)
    return start is not None and all(i > start and line[:1] in (" ", "+", "-") and not line.startswith(("--- ", "+++ "))
                                     for i, line in enumerate(lines) if line.endswith("\r"))


def split(text: str, path: Path) -> tuple[str, str, int]:
    """(header and message, diff less the signature, 1-based line where the diff starts)."""
    lines = lines_of(text, keepends=True)
    start = diff_start(lines)
    if start is None:
        raise Unreadable(path, 1, "no diff found", "is this a patch? expected `diff --git` lines")
    return "".join(lines[:start]), strip_signature("".join(lines[start:])), start + 1


def read_header(header: str, path: Path) -> tuple[Author, str | None, str, str]:
    """The author, date (git's raw form; None when there is no Date:), subject and message of a
    mail's or DEP-3 header."""
    lines = header.splitlines()
    found, i = header_fields(lines)
    fields = {name: _decoded(value) for name, value in found.items()}
    message = _mail_text("\n".join(lines[i:]))
    message = re.split(r"^---\s*$", message, maxsplit=1, flags=re.M)[0].strip("\n")
    who = "from" if "from" in fields else "author"
    name, addr = git_author(fields.get(who, ""))
    if not name:
        raise Unreadable(path, _field_line(lines, who), "missing or malformed author ('From: Name <email>')",
                         "add a From: header with a name and an email address")
    if set("<>\n") & set(name + addr):  # a commit's ident cannot carry them
        raise Unreadable(path, _field_line(lines, who), f"author {name!r} <{addr}> has '<' or '>' in a name "
                         "or address", "fix the From: header")
    subject = fields.get("subject") or fields.get("description")
    if not subject:
        first, _, rest = message.partition("\n")
        subject, message = first, rest.strip("\n")
    subject = subject_text(subject)
    if not subject:
        raise Unreadable(path, _field_line(lines, "subject"), "no Subject",
                         "add a Subject: line naming what the patch does")
    date = None
    if fields.get("date"):
        try:
            date = git_date(fields["date"], path)
        except PatchkitError as exc:
            raise Unreadable(path, _field_line(lines, "date"), f"unreadable Date {fields['date']!r}",
                             exc.hint or "") from None
    return Author(name, addr), date, subject, message.strip()


def subject_text(value: str) -> str:
    """A Subject: less its `[PATCH n/m]` prefixes, as git am takes it."""
    return _SUBJECT_PREFIX.sub("", value).strip()


def git_author(value: str) -> tuple[str, str]:
    """A From: (decoded) as git am reads it (mailinfo's handle_from): the address is the word
    around the first '@' (its '<' and '>' dropped), the name what is left, less a () around it;
    a name that is empty, over 60 characters or holds '@', '<' or '>' is the address. Without an
    '@': `Name <addr>` as written, else nothing. ("" name: git am refuses the patch.)"""
    value = _unquoted(" ".join(value.split()))
    at = value.find("@")
    if at < 0:
        m = re.match(r"^([^<]*)<([^>]*)>", value)
        return (_sane_name(m[1].strip(), m[2]), m[2]) if m else ("", "")
    start = at
    while start > 0 and not value[start - 1].isspace() and value[start - 1] != "<":
        start -= 1
    end = at + len(re.match(r"[^\s>]*", value[at:])[0])
    addr = value[start:end]
    rest = value[:max(start - 1, 0) if start and value[start - 1] == "<" else start] + " " + value[end + 1:]
    name = " ".join(rest.split())
    if name.startswith("(") and name.endswith(")"):
        name = name[1:-1]
    return _sane_name(name, addr), addr


def _unquoted(value: str) -> str:
    """VALUE with each "quoted string" as its text (quotes dropped, backslash pairs undone)."""
    out, quoted, escaped = [], False, False
    for c in value:
        if escaped or (c != '"' and not (quoted and c == "\\")):
            out.append(c)
            escaped = False
        elif c == '"':
            quoted = not quoted
        else:
            escaped = True
    return "".join(out)


def _sane_name(name: str, addr: str) -> str:
    return addr if not name or len(name) > 60 or set("@<>") & set(name) else name


def _field_line(lines: list[str], name: str) -> int:
    """The 1-based line of header field NAME (1 when there is none)."""
    return next((i for i, line in enumerate(lines, 1) if line.lower().startswith(f"{name}:")), 1)


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
