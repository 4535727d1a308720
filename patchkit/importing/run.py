"""`patchkit import` end to end: gather, (repair,) parse, name, check against the queue, apply at
`--at` (the apply core: nothing recorded in the mirror), and only then write: the new patch files,
then `patches/series`.

Everything that can refuse happens before the first byte is written, so a refused import leaves
`patches/` exactly as it was. Bad input (malformed, a duplicate, an unknown --after) is exit 2; a
new patch that is not good at `--at`, or that breaks a patch of the queue that was good there,
is exit 1 with its hunk verdicts, unless --allow-failing.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import tempfile
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from patchkit import testpoint
from patchkit.apply import HunkVerdict, PatchResult, Verdict, apply_queue
from patchkit.errors import PatchkitError
from patchkit.fileio import atomic_write
from patchkit.git import validate_repo_path
from patchkit.hooks import Hooks, collect_warnings
from patchkit.importing import mail, sources
from patchkit.importing.repair import HunkRepair, Repaired, repair
from patchkit.importing.sources import PatchText
from patchkit.patchfile import diff as patch_diff
from patchkit.patchfile.diff import Part
from patchkit.patchfile.series import insert_into_series, write_series
from patchkit.project import Project
from patchkit.queue import Patch, Queue, read_patch
from patchkit.upstream import Mirror, Revision, parse_spec

NAME_MAX = 64  # characters before ".patch", as git format-patch's default --filename-max-length


@dataclass(frozen=True)
class ImportOptions:
    sources: tuple[str, ...] = ()
    from_repo: tuple[str, str] | None = None  # (PATH, A..B)
    name: str | None = None
    after: str | None = None
    at: str | None = None  # upstream@REF; None: upstream@locked when locked, else upstream@HEAD
    base: str | None = None  # --base upstream@REF: the commit the patches were made from
    upstream: str | None = None
    fetch: bool = True
    author: str | None = None  # "Name <email>"
    subject: str | None = None
    ebuild: Path | None = None
    sha256: tuple[str, ...] = ()
    allow_http: bool = False
    allow_failing: bool = False
    repair: bool = False
    dry_run: bool = False
    now: float | None = None  # the import time (tests fix it)


@dataclass(frozen=True)
class Entry:
    """One new queue entry: where it comes from, where it goes, and how it applies there."""

    name: str
    position: int  # 1-based in patches/series after the import
    source: str
    kind: str  # format-patch, mbox, dep3, diff, quilt, gentoo, git, url
    format: str  # mail, dep3, diff
    subject: str
    author: str  # "Name <email>"
    date: str  # the Date: header it was given
    date_set: bool  # no date in the source: the import time
    sha256: str
    verdict: Verdict | None = None  # None only before the scratch apply
    hunks: tuple[HunkVerdict, ...] = ()
    blocked_by: tuple[str, ...] = ()
    detail: str = ""
    repairs: tuple[HunkRepair, ...] = ()
    repair_notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def good(self) -> bool:
        return self.verdict is not None and self.verdict.good


@dataclass(frozen=True)
class Broken:
    """A patch of the queue, good at --at before the import, that the new entries break."""

    name: str
    verdict: Verdict
    hunks: tuple[HunkVerdict, ...]
    blocked_by: tuple[str, ...]
    detail: str


@dataclass(frozen=True)
class ImportReport:
    upstream_url: str
    ref: str
    upstream_commit: str
    series: str  # relative to the project when inside it
    after: str | None
    dry_run: bool
    allow_failing: bool
    written: bool
    entries: tuple[Entry, ...]
    broken: tuple[Broken, ...]
    warnings: tuple[str, ...]
    passed: bool = field(init=False)  # every new entry good, nothing of the queue broken

    def __post_init__(self) -> None:
        object.__setattr__(self, "passed", all(e.good for e in self.entries) and not self.broken)

    @property
    def refused(self) -> bool:
        return not self.passed and not self.allow_failing

    @property
    def exit_code(self) -> int:
        return 1 if self.refused else 0


@dataclass
class _Incoming:
    piece: PatchText
    draft: mail.ParsedPatch
    data: bytes
    patch: Patch
    key: str
    repairs: tuple[HunkRepair, ...] = ()
    repair_notes: tuple[str, ...] = ()
    name: str = ""


def run_import(project: Project, options: ImportOptions, hooks: Hooks = Hooks()) -> ImportReport:
    warnings, warn = collect_warnings(hooks)
    # -- what can be checked from the command line and the queue alone -----------------------
    author = mail.parse_author(options.author) if options.author else None
    name = check_name(options.name) if options.name is not None else None
    for spec in (options.at, options.base):
        if spec is not None:
            parse_spec(spec)
    if options.subject is not None and not options.subject.strip():
        raise PatchkitError("--subject is empty", "say what the patch does")
    queue = Queue.load(project)
    series_bytes = project.series_path.read_bytes()
    existing = [p.name for p in queue.patches]
    after = _after(options.after, existing, project.series_path) if options.after is not None else None

    mirror = Mirror.open(project, options.upstream)  # a bad --upstream is said before any download

    # -- the sources -----------------------------------------------------------------------------
    gathered = sources.gather(list(options.sources), from_repo=options.from_repo, ebuild=options.ebuild,
                              sha256=list(options.sha256), allow_http=options.allow_http)
    for message in gathered.warnings:
        warn(message)
    pieces = list(gathered.pieces)
    if name is not None and len(pieces) != 1:
        raise PatchkitError(f"--name names one patch, and the sources hold {len(pieces)}",
                            "leave --name out (names come from the subjects), or import one patch")
    if options.subject is not None and len(pieces) != 1:
        raise PatchkitError(f"--subject is one patch's, and the sources hold {len(pieces)}",
                            "import that patch on its own with --subject")

    revision: Revision | None = None
    repaired: dict[int, Repaired] = {}
    if options.repair:
        revision = _resolve(project, mirror, options, hooks, warn)
        repaired = _repair(mirror, revision, pieces, options)
        for i, r in repaired.items():
            pieces[i] = replace(pieces[i], text=sources.decode(r.data))

    # -- parse, render, read back as the queue will -------------------------------------------
    incoming: list[_Incoming] = []
    with mail.MailWriter() as writer, tempfile.TemporaryDirectory(prefix="patchkit-import-check-") as tmp:
        for i, piece in enumerate(pieces):
            draft = mail.parse(piece, author=author, subject=options.subject, now=options.now)
            data = writer.write(draft)
            probe = Path(tmp) / f"{i}.patch"
            probe.write_bytes(data)
            try:
                patch = read_patch(probe, piece.source)
            except PatchkitError as exc:  # named by the probe's path: name the source instead
                raise PatchkitError(exc.message.replace(str(probe), piece.source), exc.hint) from None
            r = repaired.get(i)
            incoming.append(_Incoming(
                piece, draft, data, patch, change_key(data, patch),
                repairs=r.hunks if r else (), repair_notes=r.notes if r else ()))
    for item in incoming:
        for message in item.draft.warnings:
            warn(message)
    if author is not None and all("--author" not in m for item in incoming for m in item.draft.warnings) \
            and not repaired:
        warn("--author was not needed: every patch names its author")
    if options.subject is not None and incoming and incoming[0].draft.subject != " ".join(options.subject.split()):
        warn("--subject was not used: the patch has its own subject")

    # -- names and duplicates --------------------------------------------------------------------
    _check_duplicates(incoming, queue)
    _assign_names(incoming, name, existing, project.patches_dir)
    new_names = [item.name for item in incoming]
    series_text = insert_into_series(series_bytes.decode("utf-8"), new_names, after)
    order = _series_order(existing, new_names, after)
    position = {n: i for i, n in enumerate(order, 1)}

    # -- the scratch apply at --at -------------------------------------------------------------
    if revision is None:
        revision = _resolve(project, mirror, options, hooks, warn)
    base = None
    if options.base is not None:
        with mirror.locked(hooks.progress):
            base = mirror.resolve(options.base, fetch=False)
    results, broken = _scratch_apply(mirror, revision, queue, incoming, order, base)
    entries = tuple(Entry(
        name=item.name, position=position[item.name], source=item.piece.source, kind=item.draft.kind,
        format=item.draft.format, subject=item.patch.subject,
        author=f"{item.patch.author.name} <{item.patch.author.email}>",
        date=_date_header(item.data), date_set=item.draft.date_set, sha256=hashlib.sha256(item.data).hexdigest(),
        verdict=results[item.name].verdict, hunks=results[item.name].hunks, blocked_by=results[item.name].blocked_by,
        detail=results[item.name].detail, repairs=item.repairs, repair_notes=item.repair_notes,
        warnings=item.draft.warnings) for item in incoming)
    report = ImportReport(mirror.url, revision.ref, revision.commit, _shown(project, project.series_path), after,
                          options.dry_run, options.allow_failing, False, entries, broken, tuple(warnings))
    if not report.passed and options.allow_failing:
        taken = "would be imported" if options.dry_run else "imported"
        for e in entries:
            if not e.good:
                warn(f"{e.name} is {e.verdict.value if e.verdict else 'not applied'} at "
                     f"{revision.commit[:12]}, {taken} anyway (--allow-failing)")
        for b in broken:
            warn(f"{b.name} is {b.verdict.value} at {revision.commit[:12]} after the import (--allow-failing)")
    if report.refused or options.dry_run:
        return replace(report, warnings=tuple(warnings))
    write_entries(project, [(item.name, item.data) for item in incoming], series_bytes, series_text)
    return replace(report, written=True, warnings=tuple(warnings))


# -- --at -------------------------------------------------------------------------------------------

def default_spec(project: Project, mirror: Mirror) -> str:
    """upstream@locked when patchkit.lock holds a commit of this upstream, else upstream@HEAD."""
    return "upstream@locked" if mirror.locked_commit else "upstream@HEAD"


def _resolve(project: Project, mirror: Mirror, options: ImportOptions, hooks: Hooks,
             warn: Callable[[str], None]) -> Revision:
    spec = options.at or default_spec(project, mirror)
    with mirror.locked(hooks.progress):
        return mirror.resolve(spec, fetch=options.fetch, progress=hooks.progress, warn=warn)


# -- --repair --------------------------------------------------------------------------------------

def _repair(mirror: Mirror, revision: Revision, pieces: list[PatchText], options: ImportOptions) -> dict[int, Repaired]:
    """Each text piece rebuilt against upstream at REVISION."""
    done: dict[int, Repaired] = {}
    with mirror.locked(), mirror.reader() as reader:
        def read_upstream(path: str) -> bytes | None:
            return reader.read(revision.commit, path)

        for i, piece in enumerate(pieces):
            if not piece.repairable:
                continue
            try:
                done[i] = repair(piece.text, read_upstream, author=options.author, subject=options.subject)
            except PatchkitError as exc:  # the same failure (and exit code), named by its source
                raise type(exc)(f"{piece.source}: {exc.message}", exc.hint) from None
    return done


# -- names -------------------------------------------------------------------------------------------

def slug(subject: str) -> str:
    """A file name's stem from a subject: lowercase ASCII words joined by '-', at most NAME_MAX."""
    text = unicodedata.normalize("NFKD", subject).encode("ascii", "ignore").decode()
    text = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if len(text) > NAME_MAX:
        cut = text[:NAME_MAX + 1].rfind("-")
        text = text[:cut if cut >= NAME_MAX // 2 else NAME_MAX].strip("-")
    return text or "patch"


def check_name(value: str) -> str:
    """--name: a plain file name, '.patch' added when it has no .patch or .diff suffix."""
    name = value.strip()
    if not name.endswith(sources.PATCH_SUFFIXES):
        name += ".patch"
    if ("/" in name or "\\" in name or name.startswith((".", "-")) or name in ("series", ".patch")
            or any(c.isspace() or not c.isprintable() or c == "#" for c in name)
            or name.endswith(".checks.yaml")):
        raise PatchkitError(f"--name {value!r}: not a usable patch file name",
                            "give a plain name like fix-the-build.patch (no folders, spaces or '#')")
    validate_repo_path(name)
    # NAME_MAX is 255 bytes, and the file is first written beside itself as `.<name>.XXXXXXXX`
    # (fileio.atomic_file, mkstemp's 8 random characters): 10 bytes of it are not the name's.
    longest = 255 - len("..") - 8
    if len(name.encode()) > longest:
        raise PatchkitError(f"--name is {len(name.encode())} bytes long, and a patch name can be at most "
                            f"{longest} (.patch included); file systems allow 255 bytes per name",
                            "give a shorter --name, or leave it out to name the patch from its subject")
    return name


def _assign_names(incoming: list[_Incoming], name: str | None, existing: list[str], folder: Path) -> None:
    """Each entry's file name: --name, else its subject's slug; a slug two entries share gets
    -2, -3... in the order of the sources. A name the queue has is refused."""
    taken: set[str] = set()
    listed = set(existing)
    for item in incoming:
        if name is not None:
            chosen = name
        else:
            base = slug(item.patch.subject)
            chosen = f"{base}.patch"
            n = 2
            while chosen in taken:  # a later twin: the next number free everywhere
                chosen = f"{base}-{n}.patch"
                if chosen in listed or _occupied(folder / chosen, item.data):
                    chosen = f"{base}.patch"
                n += 1
        if chosen in listed:
            raise PatchkitError(f"{item.piece.source}: a patch named {chosen} is already in the queue "
                                f"(another change)", "pick another name with --name, or drop the old one first"
                                if name is None or len(incoming) == 1 else "rename the old one first")
        if _occupied(folder / chosen, item.data):
            raise PatchkitError(f"{item.piece.source}: {folder / chosen} already exists (not in the series)",
                                "remove or rename that file, or pick another name with --name")
        taken.add(chosen)
        item.name = chosen


def _occupied(path: Path, data: bytes) -> bool:
    """PATH is there with other bytes than DATA. The same bytes, unlisted, are what an import
    killed between its files and the series left: taken as this import's own."""
    try:
        return path.read_bytes() != data
    except FileNotFoundError:
        return False
    except OSError:
        return True


# -- duplicates --------------------------------------------------------------------------------------

def change_key(data: bytes, patch: Patch) -> str:
    """What a patch changes, by content: the files it touches and its +/- lines in order; not its
    headers, `index` lines, hunk line numbers nor context."""
    lines = data.decode("utf-8", errors="surrogateescape").splitlines()
    start = patch_diff.diff_start(lines)
    changed = ["@@" if line.part is Part.HEADER else line.text
               for line in patch_diff.walk(lines[start:] if start is not None else [])
               if line.part is Part.HEADER or line.changed]
    files = [(f.old_path, f.new_path, f.new_blob if f.binary else None) for f in patch.files]
    return hashlib.sha256(repr((files, changed)).encode("utf-8", errors="surrogateescape")).hexdigest()


def _check_duplicates(incoming: list[_Incoming], queue: Queue) -> None:
    known = {}
    for p in queue.patches:
        known.setdefault(change_key(p.path.read_bytes(), p), p.name)
    first: dict[str, _Incoming] = {}
    for item in incoming:
        if item.key in known:
            raise PatchkitError(f"{item.piece.source}: the same change is already in the queue as {known[item.key]}",
                                "nothing to import; to replace it, drop the old one first")
        if item.key in first:
            raise PatchkitError(f"{item.piece.source}: the same change as {first[item.key].piece.source}",
                                "give each patch once")
        first[item.key] = item


# -- the series -------------------------------------------------------------------------------------

def _after(value: str, existing: list[str], series: Path) -> str:
    name = posixpath.normpath(value.strip())
    for candidate in (name, f"{name}.patch"):
        if candidate in existing:
            return candidate
    import difflib

    close = difflib.get_close_matches(name, existing, n=3, cutoff=0.5)
    raise PatchkitError(f"--after {value}: not in {series}" + (f" (did you mean {', '.join(close)}?)" if close else ""),
                        "name a patch the series lists" if existing else "the series is empty: leave --after out")


def _series_order(existing: list[str], new: list[str], after: str | None) -> list[str]:
    at = existing.index(after) + 1 if after is not None else len(existing)
    return existing[:at] + new + existing[at:]


# -- applying at --at, nothing written -----------------------------------------------------------

def _scratch_apply(mirror: Mirror, revision: Revision, queue: Queue, incoming: list[_Incoming],
                   order: list[str], base: Revision | None = None) -> tuple[dict[str, PatchResult], tuple[Broken, ...]]:
    """The queue with the new entries in ORDER, applied at REVISION (BASE: where the user says
    they were made); and the patches of the queue that were good there without them and are not
    with them. Read-only: the trial's commits live in a scratch repository (`apply_queue`), not
    in the mirror."""
    patches = {p.name: p for p in queue.patches} | {item.name: replace(item.patch, name=item.name) for item in incoming}
    with apply_queue(mirror, revision, [patches[name] for name in order], base=base) as applied:
        results = {r.name: r for r in applied.patches}
    first_new = min(order.index(item.name) for item in incoming)
    suspects = [p.name for p in queue.patches if order.index(p.name) > first_new and not results[p.name].good]
    broken: list[Broken] = []
    if suspects:
        with apply_queue(mirror, revision, queue.patches) as before:
            good_before = {r.name for r in before.patches if r.good}
        broken = [Broken(n, results[n].verdict, results[n].hunks, results[n].blocked_by, results[n].detail)
                  for n in suspects if n in good_before]
    return results, tuple(broken)


# -- writing -------------------------------------------------------------------------------------------

def write_entries(project: Project, files: list[tuple[str, bytes]], series_before: bytes, series_text: str) -> None:
    """The new patch files, each whole, then the series in one rename; a failure part way removes
    the files already written, so patches/ is as it was."""
    if project.series_path.read_bytes() != series_before:
        raise PatchkitError(f"{project.series_path} changed while importing", "run the import again")
    written: list[Path] = []
    try:
        for name, data in files:
            path = project.patches_dir / name
            if _occupied(path, data):
                raise PatchkitError(f"{path} appeared while importing", "run the import again")
            if not path.exists():
                atomic_write(path, data)
                written.append(path)
            testpoint.pause("import-write")
        write_series(project.series_path, series_text)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise


def _shown(project: Project, path: Path) -> str:
    try:
        return path.resolve().relative_to(project.root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _date_header(data: bytes) -> str:
    m = re.search(rb"(?m)^Date: (.*)$", data)
    return m.group(1).decode() if m else ""
