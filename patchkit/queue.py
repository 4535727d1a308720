"""The patch queue: the `series` file and each patch's headers, files and hunks.

Patches are git format-patch mails (or plain diffs with DEP-3 headers). The diff part is parsed
with unidiff; everything a later stage needs is copied into small frozen dataclasses, so that no
other module has to know unidiff or mail headers.
"""

from __future__ import annotations

import email.errors
import email.header
import email.utils
import hashlib
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from patchkit import binary
from patchkit.binary import BinaryPatch
from patchkit.errors import PatchkitError
from patchkit.git import Identity, validate_repo_path
from patchkit.project import Project

DEP3_FIELDS = ("Description", "Origin", "Bug", "Forwarded", "Author", "Reviewed-by",
               "Last-Update", "Applied-Upstream", "Upstream-Status")
_SUBJECT_PREFIX = re.compile(r"^\s*(\[[^\]]*\]\s*)+")
_TRAILER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*): (.+)$")
_HUNK_HEADER = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


@dataclass(frozen=True)
class Hunk:
    """One hunk, with its pre-image (context and removed lines) and post-image as whole lines."""

    index: int  # 1-based within its file change
    old_start: int  # 1-based line of the pre-image in the file the patch was made against
    new_start: int
    section: str  # the function name git writes after the second "@@"
    old_lines: tuple[str, ...]  # each line with its newline, except a last line without one
    new_lines: tuple[str, ...]
    leading_context: int
    trailing_context: int


@dataclass(frozen=True)
class FileChange:
    old_path: str | None  # None: the patch creates the file
    new_path: str | None  # None: the patch deletes the file
    old_blob: str | None  # abbreviated or full blob id from the `index` line
    new_mode: str | None
    hunks: tuple[Hunk, ...]
    new_blob: str | None = None
    binary: BinaryPatch | None = None  # a `GIT binary patch` (then there are no hunks)

    @property
    def path(self) -> str:
        """The file the patch reads (or creates)."""
        return self.old_path or self.new_path or ""


@dataclass(frozen=True)
class Patch:
    name: str  # file name as listed in series
    path: Path
    sha256: str
    author: Identity
    subject: str
    body: str  # the message after the subject, trailers included
    trailers: dict[str, str]
    files: tuple[FileChange, ...]

    @property
    def message(self) -> str:
        return f"{self.subject}\n\n{self.body}\n" if self.body else f"{self.subject}\n"

    @property
    def checks_path(self) -> Path:
        """Where this patch's intent lives as site rules (may not exist)."""
        return self.path.with_name(self.path.name.removesuffix(".patch") + ".checks.yaml")

    @property
    def touched_paths(self) -> list[str]:
        return [p for f in self.files for p in dict.fromkeys((f.old_path, f.new_path)) if p]


@dataclass(frozen=True)
class Queue:
    series_path: Path
    patches: tuple[Patch, ...] = field(default_factory=tuple)

    @classmethod
    def load(cls, project: Project) -> Queue:
        series = project.series_path
        if not series.is_file():
            raise PatchkitError(f"{series}: series file not found",
                                "run `patchkit init`, or create it with one patch file name per line")
        names = parse_series(series)
        return cls(series, tuple(read_patch(series.parent / name, name) for name in names))


def parse_series(series: Path) -> list[str]:
    """Patch file names in order; quilt's `-p1` option is accepted, nothing else is."""
    seen: dict[str, int] = {}
    try:
        text = series.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PatchkitError(f"{series}: not UTF-8 text (byte {exc.start})", "save it as UTF-8") from None
    for lineno, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        name, options = posixpath.normpath(words[0]), words[1:]
        where = f"{series}:{lineno}"
        if options not in ([], ["-p1"]):
            raise PatchkitError(f"{where}: unsupported series option {' '.join(options)!r}",
                                "patches must be -p1 (a/ and b/ prefixes)")
        validate_repo_path(name)
        if name in seen:
            raise PatchkitError(f"{where}: {words[0]} is listed twice (first at line {seen[name]})",
                                "remove the duplicate line")
        if not (series.parent / name).is_file():
            raise PatchkitError(f"{where}: {name} does not exist in {series.parent}",
                                "fix the name or remove the line")
        seen[name] = lineno
    return list(seen)


def read_patch(path: Path, name: str | None = None) -> Patch:
    data = path.read_bytes()
    text = data.decode("utf-8", errors="surrogateescape")
    if "\r\n" in text:
        raise PatchkitError(f"{path}: has CRLF line endings (mangled in transit?)",
                            "convert it with `dos2unix` or re-export it with git format-patch")
    header, diff, diff_line = _split_mail(text, path)
    author, subject, body = _parse_header(header, path)
    return Patch(
        name=name or path.name,
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        author=author,
        subject=subject,
        body=body,
        trailers=_trailers(body),
        files=_parse_diff(diff, path, diff_line),
    )


def _split_mail(text: str, path: Path) -> tuple[str, str, int]:
    """(header and message, diff, 1-based line where the diff starts)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("diff --git ") or (line.startswith("--- ") and i + 1 < len(lines)
                                               and lines[i + 1].startswith("+++ ")):
            diff = "".join(lines[i:])
            # git format-patch ends the mail with "-- \n<version>": not part of the diff.
            diff = re.sub(r"\n-- \n[^\n]*\n*\Z", "\n", diff)
            return "".join(lines[:i]), diff, i + 1
    raise PatchkitError(f"{path}: no diff found", "is this a patch? expected `diff --git` lines")


def _parse_header(header: str, path: Path) -> tuple[Identity, str, str]:
    lines = header.splitlines()
    if lines and lines[0].startswith("From ") and not lines[0].startswith("From: "):
        lines = lines[1:]  # mbox separator line
    fields: dict[str, str] = {}
    raw: dict[str, str] = {}  # undecoded: an address list is parsed before its words are decoded
    i = 0
    while i < len(lines) and lines[i].strip():
        m = re.match(r"^([A-Za-z-]+):\s*(.*)$", lines[i])
        if not m:
            break
        value = m.group(2)
        while i + 1 < len(lines) and lines[i + 1][:1] in (" ", "\t") and lines[i + 1].strip():
            i += 1
            value += " " + lines[i].strip()  # folded header
        fields.setdefault(m.group(1).lower(), _decoded(value))
        raw.setdefault(m.group(1).lower(), _mail_text(value))
        i += 1
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


def _trailers(body: str) -> dict[str, str]:
    last_paragraph = body.strip().split("\n\n")[-1] if body.strip() else ""
    found = {}
    for line in last_paragraph.splitlines():
        m = _TRAILER.match(line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def _parse_diff(diff: str, path: Path, first_line: int) -> tuple[FileChange, ...]:
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    try:
        patch_set = PatchSet(diff)
    except UnidiffParseError as exc:
        line = first_line + _failing_hunk_line(diff)
        raise PatchkitError(f"{path}:{line}: malformed or truncated patch ({exc})",
                            "re-export it with git format-patch (patches copied from web pages lose lines)") from None
    # unidiff drops the data of binary files: keep each file's own part of the diff for that.
    parts = re.split(r"(?m)^(?=diff --git )", diff)
    sections = dict(enumerate(p for p in parts if p.startswith("diff --git ")))
    changes: list[FileChange] = []
    for pf in patch_set:
        info = str(pf.patch_info)
        old = None if pf.source_file == "/dev/null" else _strip_prefix(pf.source_file, "a/", path)
        new = None if pf.target_file == "/dev/null" else _strip_prefix(pf.target_file, "b/", path)
        index = re.search(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)(?: (\d+))?$", info, re.M)
        mode = re.search(r"^new (?:file )?mode (\d+)$", info, re.M)
        blobs = [b if b and set(b) != {"0"} else None for b in (index.groups()[:2] if index else (None, None))]
        data = None
        if pf.is_binary_file:
            data = _binary(sections.get(len(changes), ""), f"{path}: {new or old}")
            if not index:
                raise PatchkitError(f"{path}: {new or old}: binary patch without an index line",
                                    "re-export with `git format-patch --binary --full-index`")
        changes.append(FileChange(
            old_path=old, new_path=new, old_blob=blobs[0],
            new_mode=mode.group(1) if mode else (index.group(3) if index else None),
            hunks=tuple(_hunk(i, h) for i, h in enumerate(pf, 1)),
            new_blob=blobs[1], binary=data,
        ))
    if not changes:
        raise PatchkitError(f"{path}: the diff changes no file", "re-export the patch")
    return tuple(changes)


def _binary(section: str, where: str) -> BinaryPatch:
    """The `GIT binary patch` data of one file's part of a diff."""
    lines = section.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip("\n") == "GIT binary patch"), None)
    if start is None:
        raise PatchkitError(f"{where}: 'Binary files differ' without the binary data",
                            "re-export with `git format-patch --binary`")
    return binary.parse(lines[start + 1:], where)


def _strip_prefix(name: str, prefix: str, path: Path) -> str:
    name = _unquote(name)
    if not name.startswith(prefix):
        validate_repo_path(name)  # an absolute or '..' path is named as such
        raise PatchkitError(f"{path}: path {name!r} lacks the {prefix!r} prefix",
                            "patches must be -p1, as git format-patch writes them")
    return validate_repo_path(name[len(prefix):])


_C_ESCAPE = re.compile(rb'\\([0-7]{3}|[abtnvfr"\\])')
_C_ESCAPES = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13, b'"': 34, b"\\": 92}


def _unquote(name: str) -> str:
    """A path as git quotes it when it has bytes outside printable ASCII ("a/caf\\303\\251.md"),
    back to its text (UTF-8; other bytes as surrogate escapes, as every path patchkit reads)."""
    if len(name) < 2 or name[0] != '"' or name[-1] != '"':
        return name

    def byte(m: re.Match) -> bytes:
        code = m.group(1)
        return bytes([int(code, 8) if len(code) == 3 else _C_ESCAPES[code]])

    return _C_ESCAPE.sub(byte, name[1:-1].encode("utf-8")).decode("utf-8", errors="surrogateescape")


def _hunk(index: int, h) -> Hunk:  # h: unidiff Hunk
    old: list[str] = []
    new: list[str] = []
    kinds = []
    for line in h:
        if line.line_type == "\\":  # "\ No newline at end of file": the line before has none
            for side in ([old, new] if kinds[-1] == " " else [old] if kinds[-1] == "-" else [new]):
                side[-1] = side[-1].removesuffix("\n")
            continue
        kinds.append(line.line_type)
        if line.line_type in (" ", "-"):
            old.append(line.value)
        if line.line_type in (" ", "+"):
            new.append(line.value)
    lead = next((i for i, k in enumerate(kinds) if k != " "), len(kinds))
    trail = next((i for i, k in enumerate(reversed(kinds)) if k != " "), len(kinds))
    return Hunk(index, h.source_start, h.target_start, h.section_header.strip(),
                tuple(old), tuple(new), lead, trail)


def _failing_hunk_line(diff: str) -> int:
    """0-based line in DIFF of the hunk header whose body is short or malformed (for messages)."""
    lines = diff.splitlines()
    i = 0
    while i < len(lines):
        m = _HUNK_HEADER.match(lines[i])
        if not m:
            i += 1
            continue
        header = i
        old_left = int(m.group(1) or 1)
        new_left = int(m.group(2) or 1)
        i += 1
        while old_left > 0 or new_left > 0:
            if i >= len(lines) or lines[i][:1] not in (" ", "-", "+", "\\", ""):
                return header
            kind = lines[i][:1]
            old_left -= kind in (" ", "-", "")
            new_left -= kind in (" ", "+", "")
            i += 1
    return max(len(lines) - 1, 0)
