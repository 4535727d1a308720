"""A patch that needs a person, written into the checkout as far as it goes.

Hunks the core placed are applied where it placed them; the others become labelled conflict
blocks at the nearest place the core reports, in git's zdiff3 order (upstream's lines, the
patch's pre-image, the patch's post-image), each marker line naming the patch and the hunk so
that `--continue` knows its own markers from a file's text. A hunk with no place at all (its file
is gone, a binary, hunks that would overlap) goes to `.patchkit/rebase/<patch>.rej` with the
nearest upstream lines the core found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from patchkit.apply import HunkVerdict, PatchResult, Verdict
from patchkit.fileio import atomic_write
from patchkit.queue import FileChange, Hunk, Patch

_LINE = re.compile(rb"[^\n]*\n|[^\n]+\Z")
_MARKERS = ("<<<<<<< ", "||||||| ", "=======", ">>>>>>> ")
_OURS = " (patchkit: "


@dataclass(frozen=True)
class Marker:
    """A conflict block written into the checkout."""

    file: str
    line: int  # 1-based: its `<<<<<<<` line
    hunk: int


@dataclass(frozen=True)
class Partial:
    """What of the patch is in the checkout now, and what is not."""

    markers: tuple[Marker, ...] = ()
    rejected: tuple[str, ...] = ()  # "FILE hunk N", as written to `reject_file`
    reject_file: Path | None = None


def write_partial(checkout: Path, patch: Patch, result: PatchResult, renames: dict[str, str],
                  reject_dir: Path) -> Partial:
    """PATCH written into CHECKOUT as far as it goes (RESULT: the core's verdicts for it there;
    RENAMES: old path -> where upstream moved it)."""
    verdicts = {(v.file, v.hunk): v for v in result.hunks}
    markers: list[Marker] = []
    rejects: list[str] = []
    for fc in patch.files:
        path = renames.get(fc.path, fc.path)
        target = checkout / path
        if fc.binary is not None:
            rejects.append(_reject(fc, None, None, "a binary change: apply it by hand"))
            continue
        if fc.old_path is None and not target.exists():  # a new file: its lines are all there is
            atomic_write(target, b"".join(line.encode("utf-8", "surrogateescape")
                                          for h in fc.hunks for line in h.new_lines))
            continue
        if not target.is_file():
            rejects += [_reject(fc, h, verdicts.get((fc.path, h.index)), f"{path} is not in the checkout")
                        for h in fc.hunks]
            continue
        placed = all(verdicts[(fc.path, h.index)].verdict.good for h in fc.hunks if (fc.path, h.index) in verdicts)
        if fc.new_path is None and placed:  # a deletion whose pre-image is there: done as the patch says
            target.unlink()
            continue
        lines = _LINE.findall(target.read_bytes())
        edits: list[tuple[int, int, list[bytes], Hunk, bool]] = []  # start, end, new lines, hunk, marked
        for h in fc.hunks:
            v = verdicts.get((fc.path, h.index))
            if v is None or v.verdict is Verdict.ALREADY_APPLIED:
                continue
            pre = [line.encode("utf-8", "surrogateescape") for line in h.old_lines]
            start = (v.actual_line or 0) - 1
            if v.verdict.good and start >= 0 and lines[start:start + len(pre)] == pre:
                edits.append((start, start + len(pre), _encoded(h.new_lines), h, False))
            elif (v.nearest_line or v.actual_line) is not None:
                start = (v.nearest_line or v.actual_line or 1) - 1
                theirs = _encoded(v.nearest) if v.nearest_line else lines[start:start + len(pre)]
                edits.append((start, start + len(theirs), _block(theirs, h, _label(patch.name, h, path)), h, True))
            else:
                rejects.append(_reject(fc, h, v, v.detail or v.verdict.value))
        edits.sort(key=lambda e: e[0])
        kept, end = [], 0
        for edit in edits:  # two hunks on one place: the later one cannot be written there
            if edit[0] < end:
                rejects.append(_reject(fc, edit[3], verdicts.get((fc.path, edit[3].index)), "overlaps the hunk before it"))
                continue
            kept.append(edit)
            end = edit[1]
        shift = 0
        for start, stop, new, h, marked in kept:
            if marked:
                markers.append(Marker(path, start + shift + 1, h.index))
            shift += len(new) - (stop - start)
        for start, stop, new, _, _ in reversed(kept):
            lines[start:stop] = new
        atomic_write(target, b"".join(lines))
        if fc.new_path not in (None, fc.old_path) and placed:  # the patch moves the file too
            (checkout / fc.new_path).parent.mkdir(parents=True, exist_ok=True)
            target.rename(checkout / fc.new_path)
    reject_file = None
    if rejects:
        reject_file = reject_dir / f"{patch.name}.rej"
        atomic_write(reject_file, "".join(rejects).encode("utf-8", "surrogateescape"))
    return Partial(tuple(markers), tuple(r.split("\n", 1)[0].removeprefix("# ") for r in rejects), reject_file)


def find_markers(checkout: Path, paths: list[str]) -> list[str]:
    """`file:line` of every marker line of patchkit's in PATHS of CHECKOUT."""
    found = []
    for path in paths:
        file = checkout / path
        if not file.is_file() or file.is_symlink():
            continue
        text = file.read_bytes().decode("utf-8", "surrogateescape")
        found += [f"{path}:{n}" for n, line in enumerate(text.splitlines(), 1)
                  if line.startswith(_MARKERS) and _OURS in line]
    return found


def _label(name: str, h: Hunk, path: str) -> str:
    return f"{_OURS.strip()} {name} hunk {h.index} of {path})"


def _block(theirs: list[bytes], h: Hunk, label: str) -> list[bytes]:
    """The zdiff3 block of one hunk: upstream's lines, the pre-image, the post-image."""
    def closed(lines: list[bytes]) -> list[bytes]:
        return [line if line.endswith(b"\n") else line + b"\n" for line in lines]

    return [f"<<<<<<< upstream {label}\n".encode(), *closed(theirs),
            f"||||||| pre-image {label}\n".encode(), *closed(_encoded(h.old_lines)),
            f"======= {label}\n".encode(), *closed(_encoded(h.new_lines)),
            f">>>>>>> post-image {label}\n".encode()]


def _encoded(lines: tuple[str, ...] | list[str]) -> list[bytes]:
    return [line.encode("utf-8", "surrogateescape") for line in lines]


def _reject(fc: FileChange, h: Hunk | None, v: HunkVerdict | None, why: str) -> str:
    """One rejected hunk as the `.rej` file holds it: the hunk as a diff, then the nearest
    upstream lines the core found ('!' where they differ from the pre-image)."""
    if h is None:
        return f"# {fc.path}: {why}\n\n"
    header = f"@@ -{h.old_start},{len(h.old_lines)} +{h.new_start},{len(h.new_lines)} @@ {h.section}".rstrip()
    body = [f"--- a/{fc.old_path or '/dev/null'}", f"+++ b/{fc.new_path or '/dev/null'}", header]
    old, new = list(h.old_lines), list(h.new_lines)
    body += [f" {line.rstrip(chr(10))}" for line in old[:h.leading_context]]
    body += [f"-{line.rstrip(chr(10))}" for line in old[h.leading_context:len(old) - h.trailing_context]]
    body += [f"+{line.rstrip(chr(10))}" for line in new[h.leading_context:len(new) - h.trailing_context]]
    body += [f" {line.rstrip(chr(10))}" for line in old[len(old) - h.trailing_context:]]
    if v is not None and v.nearest_line is not None:
        body.append(f"# nearest upstream lines at {fc.path}:{v.nearest_line}:")
        body += [f"# {'!' if i in v.nearest_differs else ' '} {t.rstrip(chr(10))}" for i, t in enumerate(v.nearest)]
    return f"# {fc.path} hunk {h.index}: {why}\n" + "\n".join(body) + "\n\n"
