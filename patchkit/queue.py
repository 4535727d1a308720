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
from patchkit.git import Identity, validate_repo_path
from patchkit.patchfile import diff as patch_diff
from patchkit.patchfile import mail
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
        series_path = project.series_path
        if not series_path.is_file():
            raise PatchkitError(f"{series_path}: series file not found",
                                "run `patchkit init`, or create it with one patch file name per line")
        names = parse_series(series_path)
        return cls(series_path, tuple(read_patch(series_path.parent / name, name) for name in names))


def read_patch(path: Path, name: str | None = None) -> Patch:
    data = path.read_bytes()
    text = data.decode("utf-8", errors="surrogateescape")
    if "\r\n" in text:
        raise PatchkitError(f"{path}: has CRLF line endings (mangled in transit?)",
                            "convert it with `dos2unix` or re-export it with git format-patch")
    header, diff, diff_line = mail.split(text, path)
    author, subject, body = mail.read_header(header, path)
    return Patch(
        name=name or path.name,
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        author=author,
        subject=subject,
        body=body,
        trailers=dict(split_trailers(body)[1]),
        files=_parse_diff(diff, path, diff_line),
    )


def _parse_diff(diff: str, path: Path, first_line: int) -> tuple[FileChange, ...]:
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    try:
        patch_set = PatchSet(diff)
    except UnidiffParseError as exc:
        line = first_line + patch_diff.short_hunk(diff.splitlines())
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
    name = patch_diff.unquote(name)
    if not name.startswith(prefix):
        validate_repo_path(name)  # an absolute or '..' path is named as such
        raise PatchkitError(f"{path}: path {name!r} lacks the {prefix!r} prefix",
                            "patches must be -p1, as git format-patch writes them")
    return validate_repo_path(name[len(prefix):])


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
