"""The patch queue: the series and each patch as the apply needs it.

Patches are git format-patch mails (or plain diffs with DEP-3 headers); `patchkit.patchfile`
reads the format (the mail, its trailers, the series). The diff part is parsed with unidiff;
everything a later stage needs is copied into small frozen dataclasses, so that no other module
has to know unidiff or mail headers.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from patchkit import binary
from patchkit.binary import BinaryPatch
from patchkit.errors import PatchkitError
from patchkit.git import validate_repo_path
from patchkit.patchfile import diff as patch_diff
from patchkit.patchfile import mail
from patchkit.patchfile.mail import Author, Unreadable
from patchkit.patchfile.series import parse_series
from patchkit.patchfile.trailers import split as split_trailers
from patchkit.project import Project


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
    # The patch file's line where this hunk stopped one context line short: read as a blank line a
    # mailer ate, which the apply must find upstream, or the patch is malformed after all.
    blank_read_at: int | None = None


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
class Malformed:
    """Why a patch file cannot be read, and where: that patch's verdict, not the queue's end."""

    line: int  # 1-based line of the patch file
    why: str
    hint: str


@dataclass(frozen=True)
class Patch:
    name: str  # file name as listed in series
    path: Path
    sha256: str
    author: Author
    date: str | None  # git's raw form; None: no Date: line (the apply dates it at the upstream commit)
    subject: str
    body: str  # the message after the subject, trailers included
    trailers: dict[str, str]
    # Malformed: the files its diff headers name, without hunks (an apply blocks later patches there)
    files: tuple[FileChange, ...]
    crlf: bool = False  # every line ended in CRLF: read as LF, which the apply checks against upstream
    malformed: Malformed | None = None

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
        series_path = project.series_path
        if not series_path.is_file():
            raise PatchkitError(f"{series_path}: series file not found",
                                "run `patchkit init`, or create it with one patch file name per line")
        names = parse_series(series_path)
        return cls(series_path, tuple(_read_queued(series_path.parent / name, name) for name in names))


def _read_queued(path: Path, name: str) -> Patch:
    """A queue's patch; one that cannot be read is kept as malformed, so that the rest of the
    queue still applies (what reads it says why)."""
    try:
        return read_patch(path, name)
    except Unreadable as exc:
        return malformed_patch(path, name, Malformed(exc.line, exc.why, exc.hint or ""))


def read_patch(path: Path, name: str | None = None) -> Patch:
    """The patch file PATH; Unreadable when it cannot be read as a patch."""
    data = path.read_bytes()
    text, crlf = mail.lf_text(data.decode("utf-8", errors="surrogateescape"), path)
    header, diff, diff_line = mail.split(text, path)
    author, date, subject, body = mail.read_header(header, path)
    return Patch(
        name=name or path.name,
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        author=author,
        date=date,
        subject=subject,
        body=body,
        trailers=dict(split_trailers(body)[1]),
        files=_parse_diff(diff, path, diff_line),
        crlf=crlf,
    )


def malformed_patch(path: Path, name: str, why: Malformed) -> Patch:
    """What can be known of a patch file that cannot be read: its bytes' hash, its subject if it
    says one, and the files its diff headers name (none, when even those cannot be read)."""
    data = path.read_bytes()
    text = data.decode("utf-8", errors="surrogateescape").replace("\r\n", "\n")
    fields, _ = mail.header_fields(text.splitlines())
    named = []
    for line in text.splitlines():
        for found in _named(line):
            try:
                named.append(validate_repo_path(patch_diff.unquote(found)))
            except PatchkitError:
                continue  # no path in the tree: nothing there to block
    return Patch(name, path, hashlib.sha256(data).hexdigest(), Author("", ""), None,
                 mail.subject_text(" ".join(fields.get("subject", "").split())) or name, "", {},
                 tuple(FileChange(p, p, None, None, ()) for p in dict.fromkeys(named)), malformed=why)


def _named(line: str) -> list[str]:
    """The paths one line of a diff's headers names, prefixes dropped (a `diff --git` line of two
    unquoted names splits where its halves name the same file, as git reads it)."""
    if line.startswith(("--- a/", "+++ b/", '--- "a/', '+++ "b/')):
        name = line[4:].split("\t")[0]
        return [f'"{name[3:]}' if name.startswith('"') else name[2:]]
    if line.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
        return [line.split(" ", 2)[2]]
    if not line.startswith("diff --git "):
        return []
    rest = line[len("diff --git "):]
    if rest.startswith('"'):
        return [f'"{q}"' for q in re.findall(r'"[ab]/((?:[^"\\]|\\.)*)"', rest)]
    half = (len(rest) - 1) // 2
    if rest[half:half + 1] == " " and rest[2:half] == rest[half + 3:]:
        return [rest[2:half]]
    return [w[2:] for w in rest.split(" ") if w[:2] in ("a/", "b/")]


def _parse_diff(diff: str, path: Path, first_line: int) -> tuple[FileChange, ...]:
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    lines = patch_diff.lines_of(diff, keepends=True)
    eaten = patch_diff.eaten_blank_lines(lines)
    blank_read_at = {_hunk_ordinal(lines, i): first_line + i for i in eaten}
    for i in reversed(eaten):  # the blank context line back where the hunk's counts say it was
        lines[i - 1] = lines[i - 1] if lines[i - 1].endswith("\n") else lines[i - 1] + "\n"
        lines.insert(i, " \n")
    diff = "".join(lines)
    try:
        patch_set = PatchSet(diff)
    except UnidiffParseError as exc:
        line = first_line + patch_diff.short_hunk(patch_diff.lines_of(diff))
        raise Unreadable(path, line - len([i for i in eaten if first_line + i < line]),
                         f"malformed or truncated patch ({exc})",
                         "re-export it with git format-patch (patches copied from web pages lose lines)") from None
    # unidiff drops the data of binary files: keep each file's own part of the diff for that.
    parts = re.split(r"(?m)^(?=diff --git )", diff)
    sections = dict(enumerate(p for p in parts if p.startswith("diff --git ")))
    starts = _file_starts(patch_diff.lines_of(diff))
    changes: list[FileChange] = []
    ordinal = 0
    for pf in patch_set:
        where = first_line + (starts[len(changes)] if len(changes) < len(starts) else 0)
        where -= len([i for i in eaten if first_line + i < where])
        info = str(pf.patch_info)
        # A traditional diff (quilt's, `diff -u`'s) is -p1 as GNU patch and git apply read it: its
        # first path component goes whatever it is (`llama.cpp.orig/`); git's own says a/ and b/.
        git_diff = "diff --git " in info
        old = None if pf.source_file == "/dev/null" else _strip_prefix(pf.source_file, "a/" if git_diff else "", path, where)
        new = None if pf.target_file == "/dev/null" else _strip_prefix(pf.target_file, "b/" if git_diff else "", path, where)
        index = re.search(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)(?: (\d+))?$", info, re.M)
        mode = re.search(r"^new (?:file )?mode (\d+)$", info, re.M)
        blobs = [b if b and set(b) != {"0"} else None for b in (index.groups()[:2] if index else (None, None))]
        data = None
        if pf.is_binary_file:
            if not index:  # nothing to check the data against, so nothing to apply it to
                raise Unreadable(path, where, f"{new or old}: binary patch without an index line",
                                 "re-export with `git format-patch --binary --full-index`")
            data = _binary(sections.get(len(changes), ""), path, where, new or old or "")
        hunks = []
        for i, h in enumerate(pf, 1):
            hunks.append(_hunk(i, h, blank_read_at.get(ordinal)))
            ordinal += 1
        changes.append(FileChange(
            old_path=old, new_path=new, old_blob=blobs[0],
            new_mode=mode.group(1) if mode else (index.group(3) if index else None),
            hunks=tuple(hunks), new_blob=blobs[1], binary=data,
        ))
    if not changes:
        raise Unreadable(path, first_line, "the diff changes no file", "re-export the patch")
    return tuple(changes)


def _hunk_ordinal(lines: list[str], end: int) -> int:
    """How many hunk headers LINES has before index END, less one: the hunk END ends."""
    return sum(line.part is patch_diff.Part.HEADER for line in patch_diff.walk(lines[:end])) - 1


def _file_starts(lines: list[str]) -> list[int]:
    """The index of each file's first header line: `diff --git`, else `--- ` (a plain diff)."""
    starts: list[int] = []
    git_header = False  # the file being read began with `diff --git`
    for i, line in enumerate(patch_diff.walk(lines)):
        if line.part is not patch_diff.Part.OUTSIDE:
            git_header = False
        elif line.text.startswith("diff --git "):
            starts.append(i)
            git_header = True
        elif line.text.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ") \
                and not git_header:
            starts.append(i)
    return starts


def _binary(section: str, path: Path, line: int, name: str) -> BinaryPatch:
    """The `GIT binary patch` data of one file's part of a diff."""
    lines = patch_diff.lines_of(section, keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip("\n") == "GIT binary patch"), None)
    if start is None:
        raise Unreadable(path, line, f"{name}: 'Binary files differ' without the binary data",
                         "re-export with `git format-patch --binary`")
    try:
        return binary.parse(lines[start + 1:], f"{path}: {name}")
    except PatchkitError as exc:
        raise Unreadable(path, line + start + 1, exc.message.removeprefix(f"{path}: "), exc.hint or "") from None


def _strip_prefix(name: str, prefix: str, path: Path, line: int) -> str:
    """NAME less PREFIX; PREFIX "": less its first component, whatever it is (-p1)."""
    name = patch_diff.unquote(name)
    first, slash, rest = name.partition("/")
    if prefix:
        stripped = name[len(prefix):] if name.startswith(prefix) else None
    else:
        stripped = rest if slash and rest else None
    try:
        if stripped is None:
            validate_repo_path(name)  # an absolute or '..' path is named as such
            raise PatchkitError(f"path {name!r} lacks the {prefix or 'folder'!r} prefix",
                                "patches must be -p1, as git format-patch and quilt write them")
        return validate_repo_path(stripped)
    except PatchkitError as exc:
        raise Unreadable(path, line, exc.message, exc.hint or "") from None


def _hunk(index: int, h, blank_read_at: int | None) -> Hunk:  # h: unidiff Hunk
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
                tuple(old), tuple(new), lead, trail, blank_read_at)
