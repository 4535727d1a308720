"""The apply ladder and its verdicts, and the commits that come out of it.

Every patch is tried in series order against upstream's objects plus the patches applied before
it, in memory: nothing is checked out until the result is complete. Each hunk gets a verdict;
each patch gets the verdict its hunks add up to. The commits are then written in one
`git fast-import` into a scratch repository that borrows the mirror's objects (`apply_queue`);
only a caller that asks (`AppliedQueue.record`) writes them into the mirror under a ref.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterator, Sequence

from patchkit import binary, git, ladder, testpoint, witnesses
from patchkit.errors import EnvironmentProblem, PatchkitError
from patchkit.git import ObjectReader
from patchkit.queue import FileChange, Hunk, Patch
from patchkit.scopes import CppScopes, ScopeMemo, Sections, funcname_at, is_cpp, opened_by, section_texts, written_as
from patchkit.upstream import Mirror, Revision


class Verdict(str, enum.Enum):
    CLEAN = "clean"
    OFFSET = "offset"
    MERGED = "merged"
    FUZZED = "fuzzed"
    ALREADY_APPLIED = "already-applied"
    PARTIALLY_APPLIED = "partially-applied"
    AMBIGUOUS = "ambiguous"
    CONFLICT = "conflict"
    MISSING_FILE = "missing-file"
    BLOCKED = "blocked"
    MALFORMED = "malformed"  # the patch file cannot be read as a patch (or as it reads, it does not fit)

    @property
    def good(self) -> bool:
        """Good needs no human; FUZZED is good with a warning (never locked, never a base)."""
        return self in (Verdict.CLEAN, Verdict.OFFSET, Verdict.MERGED, Verdict.FUZZED)


# Which failing hunk verdict names the patch, most telling first.
_FAILURE_ORDER = (Verdict.BLOCKED, Verdict.MISSING_FILE, Verdict.CONFLICT, Verdict.AMBIGUOUS)
_FAILURES = frozenset(_FAILURE_ORDER) | {Verdict.MALFORMED}  # a patch's own, never a hunk's
# A hunk read with a blank last line a mailer ate: placed where the whole pre-image (or its
# post-image) matched, that blank line included. Fuzz ignores it, a failure cannot tell: malformed.
_BLANK_FOUND = frozenset({Verdict.CLEAN, Verdict.OFFSET, Verdict.MERGED, Verdict.ALREADY_APPLIED})
_SYMLINK = "120000"
_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")


@dataclass(frozen=True)
class HunkVerdict:
    file: str
    hunk: int  # 1-based within the file
    verdict: Verdict
    expected_line: int  # where the patch says the pre-image starts (0: a binary hunk)
    actual_line: int | None = None  # where it was found upstream (1-based)
    offset: int | None = None
    fuzz: int = 0
    detail: str = ""
    nearest_line: int | None = None  # failures: the best partial match of the pre-image upstream
    nearest: tuple[str, ...] = ()
    nearest_differs: tuple[int, ...] = ()  # 0-based lines of `nearest` unlike the hunk's pre-image
    blocked_by: str | None = None  # blocked: the earlier patch whose lines this hunk needs


@dataclass(frozen=True)
class PatchResult:
    name: str
    subject: str
    sha256: str
    verdict: Verdict
    hunks: tuple[HunkVerdict, ...]
    commit: str | None = None  # on the patched branch; None when nothing was committed
    blocked_by: tuple[str, ...] = ()  # every earlier patch a blocked hunk waits on
    detail: str = ""

    @property
    def good(self) -> bool:
        return self.verdict.good


# What a patch does to the tree: path -> (mode, new bytes), or None to delete the file.
Changes = dict[str, "tuple[str, bytes] | None"]


@dataclass
class _Applied:
    patch: Patch
    result: PatchResult
    changes: Changes
    warnings: tuple[str, ...] = ()  # how a patch was read, where that took a decision


@dataclass(frozen=True)
class Base:
    """One file before and after the patch, for a 3-way merge, and where the pair came from."""

    label: str
    pre: bytes
    post: bytes
    locate: Callable[[], "str | None"] = lambda: None  # finds the commit the pre-image is read from
    # The tree the patch was made from (`--base`): there its recorded lines are its own. A last good
    # run's pre-image is not: the patch's lines may be older than the file it was placed in.
    own: bool = False

    @functools.cached_property
    def pre_lines(self) -> list[str]:
        return _lines(self.pre)

    @functools.cached_property
    def commit(self) -> str | None:
        """The commit the pre-image is read from (None: none is known). Looked up only when a
        rename is asked about: for an index blob it is a history search, per file."""
        return self.locate()


BaseSource = Callable[[FileChange], "Base | None"]


@dataclass(frozen=True)
class LineOrigin:
    """The upstream commit that brought a line into the file, and whether the line it stands in
    for was there just before that commit and just after it."""

    commit: str
    old_before: bool
    old_after: bool


# (a base's commit, a line of its pre-image, the line upstream has in its place now) -> the commit
# of upstream's history since that base that brought the new line in; None when none did.
LineHistory = Callable[[str, str, str], "LineOrigin | None"]
# TEXT -> whether any version of the file in upstream's history up to the target had a line with it.
TextHistory = Callable[[str], bool]


class WorkTree:
    """Upstream's commit plus the changes of the patches applied so far, kept in memory."""

    def __init__(self, reader: ObjectReader, repo: Path, commit: str) -> None:
        self._reader = reader
        self._repo = repo
        self.commit = commit
        self._changes: Changes = {}
        self._modes: dict[str, str] | None = None

    def read(self, path: str) -> bytes | None:
        if path in self._changes:
            change = self._changes[path]
            return change[1] if change else None
        return self._reader.read(self.commit, path)

    def mode(self, path: str) -> str | None:
        """The file's mode (a folder or a missing path: None)."""
        if path in self._changes:
            change = self._changes[path]
            return change[0] if change else None
        if self._modes is None:  # one listing of the whole tree beats a git call per path
            out = git.run(["ls-tree", "-r", "-z", self.commit], cwd=self._repo)
            self._modes = {entry.split("\t", 1)[1]: entry.split(" ", 1)[0]
                           for entry in out.split("\0") if "\t" in entry}
        return self._modes.get(path)

    def update(self, changes: Changes) -> None:
        self._changes.update(changes)


@dataclass
class _FailedRanges:
    """Post-image line ranges of patches that did not apply, to tell `blocked` from `conflict`;
    and the files of malformed patches, where every later hunk is blocked."""

    ranges: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)
    malformed: dict[str, str] = field(default_factory=dict)  # path -> the first malformed patch naming it

    def add(self, patch: Patch, verdict: Verdict) -> None:
        if verdict is Verdict.MALFORMED:  # what it does to its files is not known: all of each
            for path in patch.touched_paths:
                self.malformed.setdefault(path, patch.name)
            return
        for fc in patch.files:
            spans = [(h.new_start, h.new_start + max(len(h.new_lines), 1)) for h in fc.hunks]
            for start, end in spans or [(0, 1 << 62)]:  # a binary file: all of it
                self.ranges.setdefault(fc.new_path or fc.path, []).append((start, end, patch.name))

    def waits_on(self, path: str, hunk: Hunk | None, failed: bool) -> str | None:
        """The earlier patch hunk HUNK of PATH is blocked by: a malformed one naming PATH, or
        (when the hunk FAILED) one whose post-image overlaps the hunk's pre-image."""
        if path in self.malformed or not failed:
            return self.malformed.get(path)
        lo, hi = (hunk.old_start, hunk.old_start + max(len(hunk.old_lines), 1)) if hunk else (0, 1 << 62)
        for start, end, name in self.ranges.get(path, []):
            if start < hi and lo < end:
                return name
        return None


def _lines(data: bytes) -> list[str]:
    """Lines as patches count them: split at '\n' only (str.splitlines also splits at form
    feeds and other separators, which would shift every later line)."""
    return _LINE.findall(data.decode("utf-8", errors="surrogateescape"))


def _bytes(lines: list[str] | tuple[str, ...]) -> bytes:
    return "".join(lines).encode("utf-8", errors="surrogateescape")


def apply_file(fc: FileChange, current: bytes, bases: BaseSource, fuzz: int,
               history: LineHistory | None = None, own_base: bool = False,
               ever_had: TextHistory | None = None,
               parsed: dict[str, CppScopes] | None = None,
               memo: ScopeMemo | None = None) -> tuple[list[HunkVerdict], bytes | None]:
    """Run the ladder for every hunk of one file; the new content, or None if a hunk failed.
    HISTORY is asked where a base with a commit seems to show a function renamed upstream.
    OWN_BASE: CURRENT is known to be the file the patch was made from (`--base`). EVER_HAD is
    asked whether a section no version at hand names was ever in the file (without it: yes).
    PARSED: path -> the last C++ parse of a version of that file, read and updated (the queue's
    patches change the same files: a parse starts from the one before). MEMO: earlier runs'
    answers of the parse, by file content."""
    file_ladder = _FileLadder(fc, current, bases, fuzz, history, own_base, ever_had)
    file_ladder.memo = memo
    if parsed is not None and fc.path in parsed:
        file_ladder.parsed_before = parsed[fc.path]
    result = file_ladder.run()
    last = file_ladder.last_parse()
    if parsed is not None and last is not None:
        parsed[fc.path] = last
    return result


class _FileLadder:
    """The ladder for the hunks of one file: line steps first, then the 3-way merge, which also
    checks the line steps whenever they moved anything; fuzz last, and only when asked."""

    def __init__(self, fc: FileChange, current: bytes, bases: BaseSource, fuzz: int,
                 history: LineHistory | None = None, own_base: bool = False,
                 ever_had: TextHistory | None = None) -> None:
        self.fc = fc
        self._ever_had = ever_had
        self._own_base: bool | None = own_base or None  # None: not known yet
        self.current = current
        self.lines = _lines(current)
        self.index = ladder.line_index(self.lines)
        self.fuzz = fuzz
        self._bases = bases
        self._history = history
        self._base: list[Base | None] = []  # fetched once, when first needed
        self._scopes: dict[str, CppScopes] = {}
        self.parsed_before: CppScopes | None = None  # another version's parse, from an earlier patch
        self.memo: ScopeMemo | None = None  # earlier runs' answers of the parse
        self._own_scope: dict[int, str | None] = {}
        self._fates: dict[int, witnesses.SectionFate | None] = {}  # a hunk's `section_fate`
        self.sections = Sections(self.lines)
        self._cuts: dict[str, set[str]] = {}  # a hunk's section -> the file's section texts it may be cut from
        self.verdicts: dict[int, HunkVerdict] = {}
        self.places: dict[int, ladder.Place] = {}  # already-applied hunks too, as no-op places
        self.refusals: dict[int, str] = {}
        self.twins: dict[int, tuple[int, ...]] = {}  # an ambiguous hunk's places (0-based), for the merge
        # (a, b) -> their differences: the same pair is asked about for each hunk of one merge
        self._diffs: dict[tuple[tuple[str, ...], tuple[str, ...]], list[tuple[int, int, int, int]]] = {}

    def differences(self, a: list[str], b: list[str]) -> list[tuple[int, int, int, int]]:
        """`_differences` of A and B, computed once per pair of texts."""
        key = (tuple(a), tuple(b))
        if key not in self._diffs:
            self._diffs[key] = _differences(a, b)
        return self._diffs[key]

    def at_own_base(self) -> bool:
        """Whether the file is the very one the patch was made from: its index blob or the commit
        the user named with `--base`. There the recorded lines
        are the patch's own, whatever a section or a parse says (git am -3 applies it there)."""
        if self._own_base is None:
            blob = self.fc.old_blob
            base = self.base()
            self._own_base = bool(blob and binary.blob_id(self.current).startswith(blob)) or \
                (base is not None and base.own and base.pre == self.current)
        return bool(self._own_base)

    def base(self) -> Base | None:
        if not self._base:
            self._base.append(self._bases(self.fc))
        return self._base[0]

    def found(self, h: Hunk, verdict: Verdict, place: ladder.Place | None, **kw) -> None:
        line = place.start + 1 if place else None
        offset = line - h.old_start if line is not None and verdict is not Verdict.CLEAN else None
        self.verdicts[h.index] = HunkVerdict(self.fc.path, h.index, verdict, h.old_start, line, offset, **kw)
        if place:
            self.places[h.index] = place

    def run(self) -> tuple[list[HunkVerdict], bytes | None]:
        """The placement policy: the witnesses, asked in this order, cheap before costly (the
        C++ parse, the file's history last); each decides only what is said here. The pure ones
        (on lines only) are in `witnesses`, each with its own tests.

        Per hunk, the line steps (`_line_steps`):
          1. recorded line: the pre-image there is clean where the section names that place
             (`_fits_as_recorded`: any tool's rule, or the block its line opens), at the patch's
             own base whatever the section says (`at_own_base`), or where the section's fate is
             NEVER (`witnesses.section_fate`), this is its one place and its base had one
             (`_placed_by_fate`); the post-image there is `already-applied`.
          2. the whole file: every other place of the pre- or post-image, each judged (`judge`):
             a function that moved whole keeps its hunk (`witnesses.moved_whole`); else the
             section must name it, unless its fate is NEVER (`_says_nothing`; a cut that begins
             several functions' lines says nothing either: `_named_uniquely`), then the parse of
             the base (`_parse_refuses`). Two or more candidates are twins: ambiguous, left to
             the merge (without index lines, one at the recorded line names `--base`); one is
             placed; none leaves the hunk undecided, the refusals kept for its verdict.
        Per file, the exact base's 3-way merge (`_merge`, with the index blob, the --base commit
          or the last good run):
          - it conflicts: the undecided hunks are refused, and every hunk the line steps moved,
            unless its own merge agrees (`_merged_alone`) or its function moved whole;
          - twins: it picks the one it changed where the base has the same twins in the same
            order (`_pick`: `witnesses.touched`, `witnesses.in_base_order`);
          - a hunk the line steps placed elsewhere than the merge: neither is trusted
            (`_disagreements`: `witnesses.placed_differently`);
          - the undecided hunks: placed by it unless it puts a change where the patch has none:
            added lines beside one side of their context, the other moved away
            (`witnesses.moved_apart`), or a change outside every function or section the patch
            names (`_merged_elsewhere`; a section renamed upstream counts as its new line,
            `section_fate`), unless it is the one candidate (`witnesses.merge_only_candidate`).
        Per hunk still undecided, fuzz when asked (`_fuzz_or_fail`): GNU patch's candidates,
          one where the patch's other hunks' offset points (`witnesses.neighbours_pick`);
          else a conflict naming the evidence.
        Per patch (`Applier._told_whole`): a hunk whose block upstream already has beside its
          place, once more than its base, every other hunk applied, is `already-applied`
          (`witnesses.adopted_block_at`)."""
        unresolved = [h for h in self.fc.hunks if not self._line_steps(h)]
        merged = self._merge(unresolved)
        if merged is not None:
            unresolved = []
        for h in unresolved:
            self._fuzz_or_fail(h)
        ordered = [self.verdicts[h.index] for h in self.fc.hunks]
        if any(v.verdict in _FAILURES for v in ordered):
            return ordered, None
        if merged is not None:
            return ordered, merged
        spliced = ladder.splice(self.lines, list(self.places.values()))
        if spliced is None:
            return [HunkVerdict(v.file, v.hunk, Verdict.CONFLICT, v.expected_line, v.actual_line,
                                detail="hunks overlap where they were placed") for v in ordered], None
        return ordered, _bytes(spliced)

    def _line_steps(self, h: Hunk) -> bool:
        """Clean, already applied, offset or ambiguous by line matching; False: not decided."""
        exact = ladder.find_exact(h, self.lines)
        # At the recorded line only the section rules are asked (a parse per file would cost every
        # clean apply); a twin that moved exactly there is still no candidate.
        if exact and (self._fits_as_recorded(h, exact.start, h.old_lines) or self.at_own_base()):
            self.found(h, Verdict.CLEAN, exact)
            return True
        if exact and (fated := self._placed_by_fate(h, exact.start)):
            self.found(h, Verdict.CLEAN, exact, detail=fated)
            return True
        # The post-image where the patch put it settles it, whatever twins the file has.
        at_line = ladder.applied_at_recorded_line(h, self.lines)
        if at_line and self._fits_as_recorded(h, at_line.start, h.new_lines):
            self.found(h, Verdict.ALREADY_APPLIED, at_line, detail="upstream has this change")
            return True
        moved = ladder.find_moved(h, self.lines, self.index, self.judge)
        applied = ladder.find_applied(h, self.lines, self.index, self.judge)
        moved, applied = self._named_uniquely(h, moved), self._named_uniquely(h, applied)
        if len(moved.places) + len(applied.places) > 1:
            # Without index lines nothing tells the patch's own commit from a later one where a twin
            # slid into the recorded lines; the user can (a distribution recipe's queue, `diff -p`'s cut sections).
            own = f"; one is at the recorded line {exact.start + 1}: if the patch was made from this very commit, " \
                "rerun with `--base` naming it" if exact and not self.fc.old_blob else ""
            self.found(h, Verdict.AMBIGUOUS, None, detail=_ambiguity(moved, applied) + own)
            if not applied.places:
                self.twins[h.index] = tuple(p.start for p in moved.places)
        elif moved.place:
            self.found(h, Verdict.OFFSET, moved.place, detail=self._unnamed(h, moved.place.start))
        elif applied.place:
            self.found(h, Verdict.ALREADY_APPLIED, applied.place, detail="upstream has this change")
        else:
            refusal = _refusal("pre-image", moved) or _refusal("post-image", applied)
            if refusal:  # before what the section's fate found (a history that shows no rename)
                self.refusals[h.index] = "; ".join(filter(None, [refusal, self.refusals.get(h.index)]))
            return False
        return True

    def _placed_by_fate(self, h: Hunk, start: int) -> str:
        """Why 0-based START, where H's pre-image is found, is its place by its section's fate
        (`section_fate`), where it is its one place in the file: a section no version of the file
        ever had (a hand-written one, another tool's rule) names no function to hold it to, so the
        hunk goes where its lines are, as git am -3 and GNU patch put it, unless the base has the
        pre-image twice or the parse of the base names another scope. (A rename is followed by the
        merge's check, which has the base a rename needs: `_merged_elsewhere`.) "": it does not."""
        if ladder.occurrences(h.old_lines, self.lines, self.index) != [start]:
            return ""
        base = self.base()
        if base is not None and len(ladder.occurrences(h.old_lines, base.pre_lines, ladder.line_index(base.pre_lines))) != 1:
            return ""  # the base had a twin (upstream deleted one, the other slid here): its merge decides
        unnamed = self._unnamed(h, start)
        return unnamed if unnamed and not self._parse_refuses(h, start) else ""

    def _says_nothing(self, h: Hunk) -> bool:
        """Whether H's section is in no version of the file (its fate NEVER): it names no function
        to hold the hunk to, so a place it does not name is still a candidate."""
        fate = self.section_fate(h)
        return fate is not None and fate.fate is witnesses.Fate.NEVER

    def _unnamed(self, h: Hunk, start: int) -> str:
        """The fate of H's section for the detail of a place at START that the section does not name."""
        if not h.section or self.sections.named(self._whole_section(h), start) is not None or not self._says_nothing(h):
            return ""
        return f"{self.section_fate(h)}, and this is the one place of the pre-image"

    def section_fate(self, h: Hunk) -> witnesses.SectionFate | None:
        """What became of H's section (`witnesses.section_fate`), asked once per hunk: the rename
        through the base and upstream's history, then the file's history."""
        if h.index not in self._fates:
            base = self.base()
            self._fates[h.index] = witnesses.section_fate(
                h.section, self.lines, base.pre_lines if base is not None else [],
                lambda: self._renamed_line(h, base) if base is not None else None, self._ever_had)
        return self._fates[h.index]

    def _fits_as_recorded(self, h: Hunk, start: int, block: tuple[str, ...]) -> bool:
        """Whether BLOCK, found at the recorded line START, is in the hunk's own section: under any
        tool's rule, or (a section no rule gives) inside the block the section's line opens. A
        section naming nothing around START is another function's, or one gone while its twin slid
        here. A section cut so short that it begins several functions' lines does not say which of
        them: then a copy of BLOCK in another of those functions leaves it undecided. Without a
        section, where BLOCK has a twin, the C++ parse of the base decides (upstream's copy of a
        function, added right above it, may sit at the recorded line)."""
        if not h.section:
            if (base := self.base()) is not None and witnesses.named_elsewhere_in_base(h, base.pre_lines, self.lines, start):
                return False  # the function it is in is another one now (a twin slid into its lines)
            if len(ladder.occurrences(block, self.lines, self.index)) < 2 or not is_cpp(self.fc.path):
                return True
            own = self._own_function(h)
            return own is None or self._scopes_of("current", self.lines).scope_at(start + witnesses.anchor(h)) == own
        named = self.sections.named(h.section, start) or opened_by(self.lines, start, h.section)
        if named is None:
            return False  # another function's, or the section's function is gone (a twin slid here)
        if named != h.section and self._named_in_base(h) not in (None, named):
            return False  # a cut: the base shows another function it begins was here (a twin slid in)
        if not self._cut_is_ambiguous(h.section, named):
            return True
        return not any(self.sections.named(h.section, s) not in (None, named)
                       for s in ladder.occurrences(block, self.lines, self.index) if s != start)

    def _named_in_base(self, h: Hunk) -> str | None:
        """The whole section line H's section was written for, in the base's pre-image at H's
        place there; None without a base or where H's place there is unknown."""
        base = self.base()
        if base is None:
            return None
        pre = base.pre_lines
        start = witnesses.place_in(h, pre)
        return Sections(pre).named(h.section, start) if start is not None else None

    def _whole_section(self, h: Hunk) -> str:
        """H's section, or, where it is a cut that begins several functions' lines, the whole line
        the base shows it was written for: upstream's twin `f_f16` beside `f` is no candidate for a
        hunk in `f` because the cut of both lines reads the same."""
        if not h.section or len(self._cut_texts(h.section)) < 2:
            return h.section
        return self._named_in_base(h) or h.section

    def _cut_is_ambiguous(self, section: str, named: str) -> bool:
        """Whether SECTION, written for the line NAMED, is a cut that other section lines of the
        file begin with too."""
        return section != named and len(self._cut_texts(section)) > 1

    def _cut_texts(self, section: str) -> set[str]:
        """The file's section texts SECTION is written for, whole or cut."""
        if section not in self._cuts:
            self._cuts[section] = {text for line in self.index if section in line
                                   for text in section_texts(line) if section in written_as(text)}
        return self._cuts[section]

    def _named_uniquely(self, h: Hunk, search: ladder.Search) -> ladder.Search:
        """SEARCH, its one place refused when the hunk's section is a cut that begins several
        functions' lines: the place may be a twin in another of them, the section cannot say.
        (Several places stay: they are ambiguous anyway.)"""
        place = search.place
        if place is None or not h.section:
            return search
        start = place.start - min(place.fuzz, h.leading_context)  # where the whole hunk starts
        named = self.sections.named(h.section, start)
        if named is None or not self._cut_is_ambiguous(h.section, named) or self._whole_section(h) == named:
            return search
        why = (f"the patch names `{h.section}`, cut short: {len(self._cuts[h.section])} functions' "
               "lines begin so, and it does not say which")
        return ladder.Search((), search.refused + (ladder.Refused(start, f"`{named}`", why),))

    def judge(self, h: Hunk, start: int) -> tuple[str, str] | None:
        """Where a candidate place is, and why it is not the hunk's own, if it is not. A hunk without
        a section (quilt's and plain diff's) is judged by the parse alone, where its base has one.
        A hunk whose whole function moved here unchanged is at home: no section or parse can say
        otherwise, so that cheap witness is asked first (the parse dominates a far rebase)."""
        if self._moved_whole(h, start):
            return None
        if h.section and self.sections.named(self._whole_section(h), start) is None and not self._says_nothing(h):
            here = funcname_at(self.lines, start)
            return f"`{here or 'the top of the file'}`", f"the patch names `{h.section}`"
        return self._parse_refuses(h, start)

    def _parse_refuses(self, h: Hunk, start: int) -> tuple[str, str] | None:
        """Where a candidate place is by the C++ parse, and why it is not the hunk's own, when the
        parse of the hunk's base names another scope for it."""
        own = self._own_function(h)
        if own is None:
            return None
        there = self._scopes_of("current", self.lines).scope_at(start + witnesses.anchor(h))
        if there != own:
            return f"`{there or 'file scope'}` (by a C++ parse)", f"the patch's own place is {_own(h, own)}"
        return None

    def _moved_whole(self, h: Hunk, start: int) -> bool:
        base = self.base()
        return base is not None and witnesses.moved_whole(h, base.pre_lines, self.lines, self.index, start, self.fc.path)

    def _own_function(self, h: Hunk) -> str | None:
        """For C/C++: the scope around the hunk's place in its pre-image, when that is known."""
        if h.index not in self._own_scope:
            self._own_scope[h.index] = None
            base = self.base() if is_cpp(self.fc.path) else None
            if base is not None:
                pre = base.pre_lines
                start = witnesses.place_in(h, pre)
                if start is not None:
                    self._own_scope[h.index] = self._scopes_of("pre", pre).scope_at(start + witnesses.anchor(h))
        return self._own_scope[h.index]

    def _renamed(self, h: Hunk) -> str | None:
        """The hunk's own function (C/C++) as upstream names it now, where its section's fate is a
        rename (`section_fate`) of the line that opens that function in the base: the scope the
        parse finds at the new line. None when it was not renamed, or the base does not show it."""
        fate, own, base = self.section_fate(h), self._own_function(h), self.base()
        renamed = fate.renamed if fate is not None else None
        if renamed is None or not own or base is None:
            return None
        pre = base.pre_lines
        if self._scopes_of("pre", pre).scope_at(renamed.was_at) != own:
            return None  # the section names a class or a label, not the function
        return self._scopes_of("current", self.lines).scope_at(renamed.now_at) or None

    def _replaced_section_line(self, h: Hunk, pre: list[str], start: int) -> tuple[int, int] | None:
        """(its line in PRE, the line in upstream's file) where the line that opens H's function, above
        0-based START in the base's pre-image PRE, is the one line upstream replaced there. That line
        is the one H's section was written for, or one among H's context above its first change: a
        hunk that begins at its function's first line names the function before it."""
        at = witnesses.opening_line(h, pre, start, self.fc.path)
        if at is None:
            named = Sections(pre).named(h.section, start)
            at = next((i for i in range(start - 1, -1, -1) if named in section_texts(pre[i])), None) if named else None
        replaced = next(((i1, i2, j1, j2) for i1, i2, j1, j2 in self.differences(pre, self.lines)
                         if at is not None and i1 <= at < i2), None)
        if at is None or replaced is None or replaced[1] - replaced[0] != 1 or replaced[3] - replaced[2] != 1:
            return None  # the line is unchanged, or went with others around it
        return at, replaced[2]

    def _rename_shown(self, h: Hunk, base: Base, old: str, new: str) -> tuple[bool, str | None]:
        """Whether upstream's history since the base shows line OLD renamed to NEW (`_not_renamed_upstream`;
        without a base commit the difference alone decides), and the commit that did; why not goes
        to H's refusal."""
        origin = self._history(base.commit, old, new) if self._history and base.commit is not None else None
        why = self._not_renamed_upstream(base.commit, old, new, origin) if base.commit is not None else None
        if why and why not in self.refusals.get(h.index, ""):
            self.refusals[h.index] = "; ".join(filter(None, [self.refusals.get(h.index), why]))
        return why is None, origin.commit if origin is not None else None

    @staticmethod
    def _not_renamed_upstream(commit: str, old: str, new: str, origin: LineOrigin | None) -> str | None:
        """Why upstream's history since the base COMMIT shows no rename of line OLD into NEW, ORIGIN
        being where NEW came in."""
        was, now = f"`{old.strip()}`", f"`{new.strip()}`"
        if origin is None:
            return f"upstream's history since {commit[:12]} does not show {now} replacing {was}: no rename is taken"
        if origin.old_after:
            return (f"upstream added {now} in {origin.commit[:12]} as a copy while {was} still existed, and "
                    f"deleted {was} later: a copy, not a rename, so the patch's function is gone")
        if not origin.old_before:
            return (f"upstream deleted {was}, and added {now} later, in {origin.commit[:12]}: "
                    "two changes, not a rename, so the patch's function is gone")
        return None

    def _scopes_of(self, key: str, lines: list[str]) -> CppScopes:
        """The parse of one version of the file: the base's pre-image ("pre") and post-image
        ("post"), upstream's file ("current"), the merge ("merged"). Each starts from the tree of
        a version it differs from in a few places, where one is parsed already (`CppScopes`)."""
        if key not in self._scopes:
            like = next((self._scopes[k] for k in _PARSED_FROM[key] if k in self._scopes and self._scopes[k].parsed),
                        self.parsed_before)
            self._scopes[key] = CppScopes(lines, like and (like, lambda: self.differences(like.lines, lines)), self.memo)
        return self._scopes[key]

    def last_parse(self) -> CppScopes | None:
        """The parse of upstream's file, or else of any version, where one was made."""
        return next((self._scopes[k] for k in ("current", *self._scopes) if k in self._scopes and self._scopes[k].parsed),
                    None)

    def _merge(self, unresolved: list[Hunk]) -> bytes | None:
        """The 3-way merge: it places the hunks the line steps could not, picks among the
        places of an ambiguous hunk where its base confirms the pick, and checks the hunks the
        line steps moved. The merged file, or None when it is not used."""
        ambiguous = [h for h in self.fc.hunks if h.index in self.twins]
        if len(ambiguous) < sum(v.verdict is Verdict.AMBIGUOUS for v in self.verdicts.values()):
            return None  # a post-image found too: upstream may have the change, nothing to merge
        moved = any(v.verdict not in (Verdict.CLEAN, Verdict.AMBIGUOUS) for v in self.verdicts.values())
        base = self.base() if unresolved or ambiguous or moved else None
        if base is None:
            return None
        result, conflicts = git.merge_file(self.current, base.pre, base.post)
        if conflicts:
            self._refuse_merge(unresolved, f"3-way merge from {base.label} conflicts")
            self._refuse_moved(base, f"the 3-way merge from {base.label} conflicts")
            return None
        merged = _lines(result)
        undecided = [h for h in ambiguous if not self._pick(h, merged, base)]
        for index in self._disagreements(merged, complete=not unresolved and not undecided):
            v = self.verdicts[index]
            self.verdicts[index] = HunkVerdict(
                v.file, v.hunk, Verdict.CONFLICT, v.expected_line, v.actual_line,
                detail=f"the line steps put it at line {v.actual_line}, the 3-way merge from "
                       f"{base.label} elsewhere: they disagree, so neither is trusted")
        if not unresolved:
            return None
        apart = self._moved_apart(merged)
        elsewhere = apart or self._merged_elsewhere(merged)
        note = ""
        if elsewhere and not apart and witnesses.merge_only_candidate(
                unresolved, base.pre_lines, self.lines, self.index, self.differences(self.lines, merged)):
            # the section line above the change is another one now (upstream added a line a
            # section rule takes, or the parse names another scope), while the patch's sections
            # still stand and nothing in base or target could be a twin: git am -3's place
            note, elsewhere = f"; it {elsewhere.split(', where', 1)[0]}, the one candidate: no twin of its lines " \
                "or of the merged change's context in base or upstream, the patch's sections still stand", None
        if elsewhere:
            self._refuse_merge(unresolved, f"the 3-way merge from {base.label} {elsewhere}")
            return None
        verdict = Verdict.ALREADY_APPLIED if result == self.current else Verdict.MERGED
        for h in unresolved:
            fate = self._fates.get(h.index)  # a rename the merge's check followed
            followed = f"; {fate}" if fate is not None and fate.fate is witnesses.Fate.RENAMED else ""
            self.found(h, verdict, None, detail=f"3-way merge from {base.label}{note}{followed}")
        return result

    def _pick(self, h: Hunk, merged: list[str], base: Base) -> bool:
        """Place the ambiguous hunk H at the twin the evidence agrees on (`witnesses.ranked_twin`):
        the exact base's merge turned it into H's post-image (the merge aligns lines, and of twins
        it may take any: it is not enough alone), the twins' order in the base points at it (the
        base has as many places for the hunk, in its section, as upstream, and the patch's own is
        the k-th), and neither the recorded line nor the offset of the patch's other hunks in the
        file points at another (`witnesses.ranked_twin`). Where upstream added, removed or moved a twin, the order says
        nothing and it is refused, with a section or without: in a file without one (or with
        twins in one function) the order is the only witness besides the merge, and a section
        naming every twin adds none; the section's fate and the parse have judged every twin
        already (`judge`). The merged lines around the pick are checked against the hunk later,
        as any place the line steps found."""
        places = self.twins[h.index]
        pre = base.pre_lines
        merge = witnesses.Vote(f"the 3-way merge from {base.label}", witnesses.merged_into(
            h, places, self.differences(self.lines, merged), merged))
        order = witnesses.Vote("the base's twin order", tuple(p for p in [witnesses.in_base_order(h, pre, places)]
                                                               if p is not None))
        offsets = {(v.offset or 0) for i, v in self.verdicts.items() if i != h.index and i in self.places
                   and v.verdict in (Verdict.CLEAN, Verdict.OFFSET)}
        others = [witnesses.near_vote("the recorded line", h.old_start - 1, places)] + \
            [witnesses.near_vote(f"the offset of the patch's other hunks ({offset:+d})", h.old_start - 1 + offset, places)
             for offset in offsets if len(offsets) == 1]
        pick = witnesses.ranked_twin(merge, order, others)
        lines = ", ".join(str(s + 1) for s in places)
        if pick is None:
            v = self.verdicts[h.index]
            said = "; ".join(str(vote) for vote in (merge, order, *others) if vote.places)
            why = ("the 3-way merge from {} changed {}".format(base.label, "none of them" if not merge.places else
                   f"line {merge.places[0] + 1}" if len(merge.places) == 1 else "several")
                   + (f", and the base does not confirm it: the patch's own place is not one of {len(places)} "
                      f"there in the same order (its base has {len(witnesses.places_in_base(h, pre))})"
                      if merge.places and not order.places else "")
                   + (f"; the evidence disagrees: {said}" if merge.places and order.places else ""))
            self.verdicts[h.index] = replace(v, detail=f"{v.detail}; {why}")
            return False
        k = places.index(pick)
        agree = [str(vote.witness) for vote in others if vote.places]
        self.found(h, Verdict.MERGED, ladder.Place(pick, len(h.old_lines), h.new_lines),
                   detail=f"3-way merge from {base.label}: of the places at lines {lines}, the "
                          f"{_ordinal(k + 1)}, as in its base" + (f" ({', '.join(agree)} agreeing)" if agree else ""))
        return True

    def _refuse_merge(self, unresolved: list[Hunk], why: str) -> None:
        for h in unresolved:
            self.refusals[h.index] = "; ".join(filter(None, [why, self.refusals.get(h.index)]))

    def _refuse_moved(self, base: Base, why: str) -> None:
        """Refuse every hunk the line steps moved, WHY naming the merge that does not confirm it.
        A hunk moved away from its recorded line may be a twin whose lines still match while its
        own site changed; the merge is the one witness of where the base's lines went, and one that
        conflicts does not say the new place is the old one (git am -3 keeps its `git apply`
        offset, and puts the change into the twin). Two witnesses remain: the hunk's own merge
        (`_merged_alone`: the conflict is another hunk's, whose line upstream changed), and a
        function that moved whole (`_moved_whole`: a merge conflicts on every move, the moved
        lines being deleted in one place and added in another)."""
        hunks = {h.index: h for h in self.fc.hunks}
        for index, v in list(self.verdicts.items()):
            if v.verdict is Verdict.OFFSET and not self._merged_alone(hunks[index], base) and \
                    not self._moved_whole(hunks[index], self.places[index].start):
                self.verdicts[index] = replace(
                    v, verdict=Verdict.CONFLICT, offset=None,
                    detail=f"the line steps put it at line {v.actual_line}, but {why}, so that place "
                           "is not known to be the patch's own")
                self.places.pop(index, None)

    def _merged_alone(self, h: Hunk, base: Base) -> bool:
        """Whether the 3-way merge of hunk H alone (its base's pre-image, and that with H applied
        at its one place there) is clean and gives what the line steps give: H's own lines went
        where the line steps put it, whatever upstream did to another hunk's lines. Its pre-image
        must be once in the base: of twins there the merge may take either."""
        pre = base.pre_lines
        starts = ladder.occurrences(h.old_lines, pre, ladder.line_index(pre))
        if len(starts) != 1:
            return False
        start = starts[0]
        post = ladder.splice(pre, [ladder.Place(start, len(h.old_lines), h.new_lines)])
        result, conflicts = git.merge_file(self.current, base.pre, _bytes(post or []))
        return not conflicts and _bytes(ladder.splice(self.lines, [self.places[h.index]]) or []) == result

    def _merged_elsewhere(self, merged: list[str]) -> str | None:
        """Where the merge put a change that is not the patch's own (C/C++): outside every
        function the patch changes, unless it is a hunk's added lines where the line steps agree.

        A merge aligns lines, not functions: when the hunk's own site changed and a twin kept its
        lines, the merge takes the twin as readily as the line steps would. Lines a hunk adds at
        file scope (an `#include`, a `#define`, a new function) are in no function the patch
        changes; they are the patch's own where one side of the hunk's context is found there and
        nowhere else, and the parse puts them in the scope they have in the patch's post-image."""
        if not is_cpp(self.fc.path):
            return self._merged_outside_sections(merged)
        own_of = {h.index: self._own_function(h) for h in self.fc.hunks}
        sectioned = [h for h in self.fc.hunks if h.section]
        if not sectioned or any(own_of[h.index] is None for h in sectioned):
            return None  # not C/C++, or a hunk's own place is unknown: nothing to compare with
        own = {scope for scope in own_of.values() if scope is not None}
        current = self._scopes_of("current", self.lines)
        own |= {self._renamed(h) for h in sectioned} - {None}
        after = self._scopes_of("merged", merged)
        for i1, i2, j1, j2 in self.differences(self.lines, merged):
            there = after.scope_at(j1) if j2 > j1 else current.scope_at(min(i1, len(self.lines) - 1))
            if there not in own and not (i1 == i2 and self._adds_own_lines(merged[j1:j2], i1, there)):
                return (f"put a change at line {j1 + 1}, in `{there or 'file scope'}` (by a C++ parse), "
                        f"where the patch changes nothing; its hunks are in "
                        + ", ".join(f"`{s or 'file scope'}`" for s in sorted(own))
                        + " (by a C++ parse of its base, their sections "
                        + ", ".join(dict.fromkeys(f"`{h.section}`" for h in sectioned)) + ")")
        return None

    def _merged_outside_sections(self, merged: list[str]) -> str | None:
        """Where the merge put a change (in a file without the C++ parse) under a section that no
        hunk of the patch names, read where that hunk would start: the patch's function deleted
        upstream and a copy slid into its place. A section line upstream replaced by one other
        line is the function renamed only where upstream's history shows it (`section_fate`)."""
        base = self.base()
        if base is None or not any(h.section for h in self.fc.hunks):
            return None
        sections = Sections(merged)
        renamed = [text for h in self.fc.hunks for fate in [self.section_fate(h)] if fate and fate.renamed
                   for text in section_texts(fate.renamed.line)]

        def own(h: Hunk, start: int) -> bool:
            found = list(sections.at(start))
            if not h.section:
                return not found  # a hunk at the top of the file, before any section
            return sections.named(h.section, start) is not None or any(text in found for text in renamed)

        for _, _, j1, _ in self.differences(self.lines, merged):
            if not any(own(h, max(0, j1 - h.leading_context)) for h in self.fc.hunks):
                there = next(sections.at(j1), "")
                return (f"put a change at line {j1 + 1}, under `{there or 'no section'}`, where the patch "
                        "changes nothing; its hunks are under "
                        + ", ".join(dict.fromkeys(f"`{h.section}`" for h in self.fc.hunks if h.section)))
        return None

    def _renamed_line(self, h: Hunk, base: Base) -> witnesses.Renamed | None:
        """The line that replaced the one that opens H's function at its place in the base (the
        section's, or its own first line), where upstream's history shows a rename (the question
        `section_fate` asks); None otherwise. A split into twins is no rename: which twin the
        difference calls renamed is chance.

        The difference of two files cannot tell a rename from a copy added under a new name while
        the function was there, the function deleted later: the copy slid into its place, and the
        patch's function is gone. Where the base is a commit, upstream's history since it tells:
        only a commit that replaced the line (the old one gone in it) renamed the function. An
        index blob's commit is the oldest upstream one holding it; with none known, the
        difference alone decides."""
        pre = base.pre_lines
        start = witnesses.place_in(h, pre)
        replaced = self._replaced_section_line(h, pre, start) if start is not None else None
        if replaced is None or len(ladder.occurrences(h.old_lines, self.lines, self.index)) > \
                len(ladder.occurrences(h.old_lines, pre, ladder.line_index(pre))):
            return None
        shown, commit = self._rename_shown(h, base, pre[replaced[0]], self.lines[replaced[1]])
        return witnesses.Renamed(replaced[0], replaced[1], self.lines[replaced[1]], commit) if shown else None

    def _moved_apart(self, merged: list[str]) -> str | None:
        """Where the merge put lines a hunk adds beside one side of its context while the other
        side is found unchanged elsewhere in upstream's file (`witnesses.moved_apart`)."""
        base = self.base()
        at = witnesses.moved_apart(self.differences(self.lines, merged), merged, self.fc.hunks, self.lines,
                                   self.index, base.pre_lines if base is not None else [])
        if at is None:
            return None
        return (f"put the lines a hunk adds at line {at + 1}, beside one side of its context, while "
                "the other side is found unchanged elsewhere: upstream moved them apart")

    def _adds_own_lines(self, added: list[str], at: int, there: str) -> bool:
        """Whether ADDED, which the merge inserted before 0-based line AT of upstream's file in
        scope THERE, is a hunk's own added lines where the line steps agree: the hunk's context
        on one side of them found there and nowhere else in the file, and THERE the scope the
        lines have in the base's post-image."""
        base = self.base()
        if base is None:
            return False
        post = _lines(base.post)
        for before, after, h, k in witnesses.stands_in_hunks(added, self.fc.hunks):
            found = (before and ladder.occurrences(before, self.lines, self.index) == [at - len(before)]) or \
                (after and ladder.occurrences(after, self.lines, self.index) == [at])
            places = ladder.occurrences(h.new_lines, post, ladder.line_index(post)) if found else []
            if len(places) == 1 and self._scopes_of("post", post).scope_at(places[0] + k) == there:
                return True
        return False

    def _disagreements(self, merged: list[str], complete: bool) -> set[int]:
        """Hunks whose lines the line steps and the merge put differently. With every hunk placed
        (COMPLETE) any difference counts; else differences outside the placed hunks are the
        unplaced hunks' own changes."""
        spliced = ladder.splice(self.lines, list(self.places.values()))
        if spliced is None:
            return set()  # reported as overlapping hunks
        differing = self.differences(spliced, merged)
        hit = witnesses.placed_differently(ladder.spliced_ranges(self.places), differing)
        if complete and differing and not hit:
            hit = {i for i, v in self.verdicts.items() if v.verdict is not Verdict.CLEAN}
        return hit

    def _where_neighbours_say(self, h: Hunk, fuzzed: ladder.Search) -> tuple[ladder.Place, int] | None:
        """`witnesses.neighbours_pick` with the offsets of the hunks the line steps placed."""
        offsets = {(v.offset or 0) for i, v in self.verdicts.items() if i != h.index and i in self.places
                   and v.verdict in (Verdict.CLEAN, Verdict.OFFSET)}
        return witnesses.neighbours_pick(h, fuzzed.places, offsets)

    def _fuzz_or_fail(self, h: Hunk) -> None:
        fuzzed = ladder.find_fuzzed(h, self.lines, self.index, self.fuzz, self.judge) if self.fuzz else ladder.Search()
        fuzzed = self._named_uniquely(h, fuzzed)
        if fuzzed.place:
            self.found(h, Verdict.FUZZED, fuzzed.place, fuzz=fuzzed.place.fuzz,
                       detail=f"placed ignoring {fuzzed.place.fuzz} context line(s) at each end")
            return
        corroborated = self._where_neighbours_say(h, fuzzed) if fuzzed.ambiguous else None
        if corroborated:
            place, offset = corroborated
            self.found(h, Verdict.FUZZED, place, fuzz=place.fuzz,
                       detail=f"placed ignoring {place.fuzz} context line(s) at each end, at the one candidate "
                              f"where the offset of the patch's other hunks in the file ({offset:+d}) puts it; the "
                              f"others, at lines {', '.join(str(p.start + 1) for p in fuzzed.places if p is not place)}, "
                              f"are {witnesses.FAR}+ lines from it")
            return
        near = ladder.nearest(h, self.lines, self.index)
        verdict = Verdict.CONFLICT
        detail = self.refusals.get(h.index) or _refusal("fuzzed pre-image", fuzzed) or (
            "3-way merge found no conflict-free place" if self._base and self._base[0]
            else "context does not match and no 3-way base is known")
        if fuzzed.ambiguous:
            verdict, detail = Verdict.AMBIGUOUS, _ambiguity(fuzzed, ladder.Search(), "with fuzz, the pre-image")
        elif not h.old_lines:
            verdict, detail = Verdict.AMBIGUOUS, ("the hunk has no context lines, so no place can be "
                                                  "verified; re-export the patch with context")
        nearest = near[1] if near else ()
        self.verdicts[h.index] = HunkVerdict(
            self.fc.path, h.index, verdict, h.old_start, detail=detail,
            nearest_line=near[0] + 1 if near else None, nearest=nearest,
            nearest_differs=tuple(i for i, line in enumerate(nearest)
                                  if i >= len(h.old_lines) or line != h.old_lines[i]))


# The versions of a file whose parse each version's parse may start from, closest first.
_PARSED_FROM = {"pre": ("current",), "current": ("pre",), "post": ("pre", "current"), "merged": ("current", "pre")}


def _differences(a: list[str], b: list[str]) -> list[tuple[int, int, int, int]]:
    """The (i1, i2, j1, j2) ranges where A and B differ. The common head and tail are cut first:
    the merge and the line steps differ in a few places of a long file; where only one side has
    lines between them that is the one difference, else git's diff aligns the rest."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a_mid, b_mid = a[head:len(a) - tail], b[head:len(b) - tail]
    if not a_mid and not b_mid:
        return []
    if not a_mid or not b_mid:
        return [(head, len(a) - tail, head, len(b) - tail)]
    return [(i1 + head, i2 + head, j1 + head, j2 + head)
            for i1, i2, j1, j2 in git.line_differences(_bytes(a_mid), _bytes(b_mid))]


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _own(h: Hunk, scope: str) -> str:
    """The hunk's own place for a message, by its section: the parse of the base is named beside
    it where the section does not name the same function (git names every method `private:`, and
    a parse that a macro misled may name a function for an enum's lines)."""
    name = scope.rsplit("::", 1)[-1]
    if not h.section or (name and name in h.section):
        return f"in `{scope or 'file scope'}`"
    return f"under `{h.section}` (in `{scope or 'file scope'}` by a C++ parse of its base)"


def _ambiguity(moved: ladder.Search, applied: ladder.Search, what: str = "the pre-image") -> str:
    def lines(search: ladder.Search) -> str:
        starts = [p.start + 1 for p in search.places]
        return f"line{'s' if len(starts) > 1 else ''} {', '.join(map(str, starts))}"

    parts = ([f"{what} occurs at {lines(moved)}"] if moved.places else []) + \
        ([f"the post-image at {lines(applied)}"] if applied.places else [])
    return f"{' and '.join(parts)}; refusing to guess"


def _refusal(what: str, search: ladder.Search) -> str:
    """Why the matches found were not taken, in one sentence naming every place (empty when there
    were none)."""
    if not search.refused:
        return ""
    places = [f"line {r.start + 1}, in {r.where}" for r in search.refused]
    whys = "; ".join(dict.fromkeys(r.why for r in search.refused if r.why))
    head = (f"the {what} is only found at {places[0]}" if len(places) == 1 else
            f"the {what} is found only in other functions: at {', at '.join(places[:-1])}, and at {places[-1]}")
    return f"{head}; {whys}" if whys else head


def _patch_verdict(hunks: list[HunkVerdict]) -> Verdict:
    kinds = {h.verdict for h in hunks}
    for failure in _FAILURE_ORDER:
        if failure in kinds:
            return failure
    if kinds == {Verdict.ALREADY_APPLIED}:
        return Verdict.ALREADY_APPLIED
    if Verdict.ALREADY_APPLIED in kinds:
        return Verdict.PARTIALLY_APPLIED
    for verdict in (Verdict.FUZZED, Verdict.MERGED, Verdict.OFFSET):
        if verdict in kinds:
            return verdict
    return Verdict.CLEAN


class Applier:
    """Applies a queue on one upstream commit, patch by patch, in memory."""

    def __init__(self, mirror: Mirror, revision: Revision, reader: ObjectReader, fuzz: int = 0,
                 base: Revision | None = None, memo: ScopeMemo | None = None) -> None:
        self.mirror = mirror
        self.memo = memo
        self.revision = revision
        self.reader = reader
        self.fuzz = fuzz
        # BASE: the commit the user says the queue was made from (`--base`). At it, every hunk's
        # recorded lines are its own; elsewhere the queue applied there gives each patch's files
        # before and after it, a 3-way base for a queue without index lines.
        self.own_base = base is not None and base.commit == revision.commit
        self._at_base = Applier(mirror, base, reader, base=base) if base is not None and not self.own_base else None
        self._made_at: dict[str, Base] = {}  # the patch being applied: path -> its files at BASE
        self.tree = WorkTree(reader, mirror.path, revision.commit)
        self._failed = _FailedRanges()
        self._bases = mirror.base_commits()
        self._moves: dict[str, str | None] = {}  # a path upstream lacks -> where it moved
        self.renames: dict[str, str] = {}  # old path -> new, for every file a patch followed there
        self._parsed: dict[str, CppScopes] = {}  # path -> the last C++ parse of it (`apply_file`)
        self._had: dict[tuple[str, str], bool] = {}  # (path, text) -> `_ever_had`

    def apply(self, patch: Patch) -> _Applied:
        if patch.malformed:
            return self._malformed(patch, f"{patch.name}:{patch.malformed.line}: {patch.malformed.why}")
        crlf = self._crlf_upstream(patch) if patch.crlf else None
        if crlf:
            return self._malformed(patch, crlf)
        self._made_at = self._files_at_base(patch)
        hunks, changes = self._place(patch)
        blank = self._blank_not_found(patch, hunks)
        short: tuple[str, ...] = ()
        read = patch  # as it was read for the result
        if blank and not self.fuzz:
            return self._malformed(patch, f"{blank}; read as written instead, its missing line is one line of "
                                          "fuzz (GNU patch places it so with -F1): rerun with --fuzz 1 to allow it")
        if blank:
            # The other reading of a hunk one line short: as written, the line deleted by hand
            # being another than a blank last one. Its header's last line is missing: GNU patch
            # places it so only with fuzz 1 (`_short_read`). Taken where every such hunk is placed
            # within the --fuzz asked, that line counted.
            written = _as_written(patch, {(v.file, v.hunk) for v in hunks if v.verdict not in _BLANK_FOUND})
            hunks, changes, read = *self._place(written), written
            short_keys = {(fc.path, h.index) for fc, h in _short_hunks(patch, written)}
            hunks = [_short_read(v) if (v.file, v.hunk) in short_keys else v for v in hunks]
            if any(v.verdict not in _BLANK_FOUND | {Verdict.FUZZED} or v.fuzz > self.fuzz
                   for v in hunks if (v.file, v.hunk) in short_keys):
                return self._malformed(patch, blank)
            short = tuple(f"{patch.name}:{h.blank_read_at}: hunk {h.index} of {fc.path} is one line short of its "
                          "header's count, and upstream has no blank line there: read as written"
                          for fc, h in _short_hunks(patch, written))
        verdict = _patch_verdict(hunks)
        if verdict in _FAILURES:
            self._failed.add(patch, verdict)
        if verdict in _FAILURES or verdict is Verdict.ALREADY_APPLIED:
            changes = {}
        blocked_by = tuple(dict.fromkeys(h.blocked_by for h in hunks if h.blocked_by))
        result = PatchResult(patch.name, patch.subject, patch.sha256, verdict, tuple(hunks),
                             blocked_by=blocked_by, detail=_summary(verdict, hunks, blocked_by))
        self.tree.update(changes)
        return _Applied(patch, result, changes, (_read_warnings(read, self.revision) + short) if changes else ())

    def _place(self, patch: Patch) -> tuple[list[HunkVerdict], Changes]:
        """Every hunk's verdict, and what PATCH does to the tree."""
        hunks: list[HunkVerdict] = []
        changes: Changes = {}
        recorded = self._bases.get(patch.sha256)
        for fc in patch.files:
            verdicts, change = self._apply_file(fc, recorded, changes)
            hunks += verdicts
            changes.update(change)
        return self._told_whole(patch, self._mark_blocked(patch, hunks), recorded), changes

    def _files_at_base(self, patch: Patch) -> dict[str, Base]:
        """PATCH's text files before and after it where the queue was made (`--base`), when it
        applies there: path -> that pair."""
        if self._at_base is None:
            return {}
        at = self._at_base
        before = {fc.old_path: at.tree.read(fc.old_path) for fc in patch.files if fc.old_path and not fc.binary}
        applied = at.apply(patch)
        if not applied.result.good:
            return {}
        commit = at.revision.commit
        pairs = {}
        for fc in patch.files:
            pre, post = before.get(fc.old_path or ""), applied.changes.get(fc.new_path or fc.old_path or "")
            if pre is not None and post is not None:
                pairs[fc.old_path or ""] = Base(f"the --base commit {commit[:12]}", pre, post[1], lambda: commit,
                                                    own=True)
        return pairs

    def _told_whole(self, patch: Patch, hunks: list[HunkVerdict], recorded: str | None) -> list[HunkVerdict]:
        """HUNKS, where upstream adopted the patch, each hunk not found applied said to be so too:
        some hunks are upstream's already, and the block of lines each other one only adds stands
        beside its place (upstream put the same test case a few lines off), one more copy of it
        than its base (RECORDED: the last good run's commit) had. Placing them would add second
        copies. Without a base, the block must be upstream's one copy in the file."""
        pending = [v for v in hunks if v.verdict is not Verdict.ALREADY_APPLIED]
        if len(pending) == len(hunks) or not pending or not all(v.verdict.good for v in pending):
            return hunks
        told = {}
        for v in pending:
            found = next(((fc, h) for fc in patch.files if fc.path == v.file and not fc.binary
                          for h in fc.hunks if h.index == v.hunk), None)
            if found is None:
                return hunks  # a binary file's change: no block to find
            fc, h = found
            current, base = self.tree.read(v.file), self._base(fc, recorded)
            at = witnesses.adopted_block_at(h, _lines(current), base.pre_lines if base is not None else None) \
                if current is not None else None
            if at is None:
                return hunks
            told[id(v)] = replace(v, verdict=Verdict.ALREADY_APPLIED, actual_line=at + 1, offset=None,
                                  detail=f"upstream has the lines it adds at line {at + 1}, beside its place, "
                                         "and the rest of the patch: upstream adopted it (placing it would add "
                                         "a second copy)")
        return [told.get(id(v), v) for v in hunks]

    def _malformed(self, patch: Patch, why: str) -> _Applied:
        """PATCH's verdict when it cannot be read, or not as it fits upstream: it applies nothing,
        and every later hunk in a file it names is blocked by it."""
        self._failed.add(patch, Verdict.MALFORMED)
        named = ", ".join(patch.touched_paths)
        detail = f"{why}; later patches are blocked in " + (named if named else "no file (it names none)")
        return _Applied(patch, PatchResult(patch.name, patch.subject, patch.sha256, Verdict.MALFORMED, (),
                                           detail=detail), {})

    def _crlf_upstream(self, patch: Patch) -> str | None:
        """Why a patch read as LF (every line ended in CRLF) cannot be: a file it changes has CRLF
        line ends upstream, so whether a \\r was the mailer's or the file's cannot be told."""
        for fc in patch.files:
            current = self.tree.read(fc.old_path) if fc.old_path and not fc.binary else None
            if current is not None and b"\r\n" in current:
                return (f"{patch.name}:1: every line ends in CRLF, and {fc.old_path} has CRLF line ends upstream: "
                        "which \\r are the file's cannot be told; re-export it with git format-patch")
        return None

    def _blank_not_found(self, patch: Patch, hunks: list[HunkVerdict]) -> str | None:
        """Why a hunk read with a blank last line a mailer ate was not placed with that line found
        upstream (a blocked one waits on its blocker first)."""
        verdicts = {(v.file, v.hunk): v for v in hunks}
        for fc in patch.files:
            for h in fc.hunks:
                v = verdicts.get((fc.path, h.index))
                if h.blank_read_at and v and v.verdict not in _BLANK_FOUND and v.verdict is not Verdict.BLOCKED:
                    return (f"{patch.name}:{h.blank_read_at}: hunk {h.index} of {fc.path} is one line short of "
                            f"its header's count; read as a blank context line only where upstream has one "
                            f"there, and it was {v.verdict.value}" + (f" ({v.detail})" if v.detail else ""))
        return None

    def _apply_file(self, fc: FileChange, recorded: str | None,
                    earlier: Changes) -> tuple[list[HunkVerdict], Changes]:
        """One file's verdicts and changes; EARLIER: what this patch changed before it."""
        blocked_path = self._not_a_folder(fc.new_path or fc.path, earlier)
        if blocked_path:
            return _every_hunk(fc, Verdict.CONFLICT, blocked_path), {}
        if fc.old_path is None:
            return self._create(fc)
        at, bases = fc.old_path, lambda f: self._base(f, recorded)
        current = self.tree.read(at)
        if current is None:
            moved, base, why = self._moved(fc, recorded)
            if why:
                return _every_hunk(fc, Verdict.MISSING_FILE, why), {}
            at, bases, current = moved, lambda f: base, self.tree.read(moved)
        if fc.binary:
            verdicts, content = _apply_binary(fc, current)
        else:
            verdicts, content = apply_file(fc, current, bases, self.fuzz,
                                           lambda commit, old, new: self._line_origin(at, commit, old, new),
                                           self.own_base and at == fc.old_path, lambda text: self._ever_had(at, text),
                                           self._parsed, self.memo)
        if at != fc.old_path:
            verdicts = _followed(verdicts, f"followed rename {fc.old_path} → {at}")
        if content is None:
            return verdicts, {}
        if at != fc.old_path:
            self.renames[fc.old_path] = at
        if fc.new_path is None:
            return verdicts, {at: None}
        path = fc.new_path if at == fc.old_path else at
        changes: Changes = {path: (fc.new_mode or self.tree.mode(at) or "100644", content)}
        if path != at:
            changes[at] = None
        return verdicts, changes

    def _moved(self, fc: FileChange, recorded: str | None) -> tuple[str, Base | None, str]:
        """Where upstream moved a file it no longer has, as git's rename detection sees it, and
        the patch's base to merge it there with; else why the patch does not follow it."""
        path = fc.old_path or ""
        if path not in self._moves:
            self._moves[path] = self.mirror.rename_target(path, self.revision.commit)
        moved = self._moves[path]
        if moved is None:
            return "", None, "upstream has no such file"
        if self.tree.read(moved) is None:
            return "", None, f"upstream moved it to {moved}, which is gone too"
        if fc.new_path not in (fc.old_path, None):
            return "", None, f"upstream moved it to {moved}, the patch to {fc.new_path}"
        base = self._base(fc, recorded)
        if base is None and not fc.binary:  # a binary patch names its exact blob: no base needed
            return "", None, (f"upstream moved it to {moved}; the patch's base is unknown (its index "
                              "blobs are not in the mirror, and no earlier good run kept one), so "
                              "the move is not followed")
        return moved, base, ""

    def _not_a_folder(self, path: str, earlier: Changes) -> str | None:
        """Why a folder of PATH is none in the tree (a symbolic link or a file, upstream's or one
        an earlier patch made): writing PATH would write through the link, or replace the file."""
        parts = path.split("/")
        for n in range(1, len(parts)):
            prefix = "/".join(parts[:n])
            change = earlier.get(prefix)  # this patch's own files before this one
            mode = (change[0] if change else None) if prefix in earlier else self.tree.mode(prefix)
            if mode is not None:
                kind = "a symbolic link" if mode == _SYMLINK else "a file"
                return f"{prefix} is {kind} in the tree the patch applies to; the patch would write through it"
        return None

    def _create(self, fc: FileChange) -> tuple[list[HunkVerdict], Changes]:
        path = fc.new_path or ""
        if fc.binary:
            try:
                content = binary.apply(fc.binary, b"")
            except binary.BadBinaryPatch as exc:
                return _every_hunk(fc, Verdict.CONFLICT, f"the binary patch does not make a file ({exc})"), {}
            if fc.new_blob and not binary.blob_id(content).startswith(fc.new_blob):
                return _every_hunk(fc, Verdict.CONFLICT, f"the binary patch does not give blob {fc.new_blob[:12]}"), {}
        else:
            content = _bytes([line for h in fc.hunks for line in h.new_lines])
        existing = self.tree.read(path)
        verdict, detail = (
            (Verdict.CLEAN, "new file") if existing is None else
            (Verdict.ALREADY_APPLIED, "upstream has this file") if existing == content else
            (Verdict.CONFLICT, "the patch creates this file, but upstream has a different one"))
        return _every_hunk(fc, verdict, detail), ({path: (fc.new_mode or "100644", content)} if existing is None else {})

    def _base(self, fc: FileChange, recorded: str | None) -> Base | None:
        """A pre-image and post-image of this file for a 3-way merge, best source first."""
        if recorded:
            parent = _parents(self.reader, recorded)[0][:1]
            pre = self.reader.read(parent[0], fc.path) if parent else None
            post = self.reader.read(recorded, fc.new_path or fc.path)
            if pre is not None and post is not None:
                return Base(f"the last good run ({recorded[:12]})", pre, post, lambda: parent[0])
        if fc.old_blob:
            pre = self.reader.read(fc.old_blob)
            if pre is not None:
                lines = _lines(pre)
                places = [ladder.find_exact(h, lines) for h in fc.hunks]
                if all(places):
                    post_lines = ladder.splice(lines, places)  # type: ignore[arg-type]
                    if post_lines is not None:
                        return Base(f"the patch's index blob {fc.old_blob}", pre, _bytes(post_lines),
                                    lambda: self._blob_commit(fc.path, fc.old_blob))
        return self._made_at.get(fc.path)

    def _blob_commit(self, path: str, blob: str) -> str | None:
        """The oldest upstream commit whose PATH is BLOB: where the patch's index blob starts
        upstream's history, for asking it about renames (None: no such commit)."""
        found = git.run(["rev-parse", "--verify", "--quiet", f"{blob}^{{blob}}"], cwd=self.mirror.path, check=False)
        made = git.run(["log", "--format=%H", f"--find-object={found}", self.revision.commit, "--", path],
                       cwd=self.mirror.path).split() if found else []
        return made[-1] if made else None

    def _ever_had(self, path: str, text: str) -> bool:
        """Whether any commit of upstream's history up to the target added or removed TEXT in PATH,
        or in the file under the names it had before upstream moved it (so some version of the file
        had it). Asked once per path and text in a run: a queue's patches name the same sections."""
        key = (path, text)
        if key not in self._had:
            self._had[key] = bool(git.run(["log", "-n1", "--format=%H", "--follow", f"-S{text}", self.revision.commit,
                                           "--", f":(literal){path}"], cwd=self.mirror.path))
        return self._had[key]

    def _line_origin(self, path: str, base: str, old: str, new: str) -> LineOrigin | None:
        """Where line NEW came into PATH in upstream's history from the upstream commit under BASE
        (a commit of the last good run, or upstream's own) to the target, and whether line OLD was
        in the file just before and just after. A side branch merged in counts as the commits it
        made (the merge hides a copy made there and the original deleted later): the first commit
        that brought NEW in without replacing OLD, else the first that did."""
        since = _upstream_under(self.reader, base)
        origins = []
        for commit in self.mirror.commits_changing(path, new.rstrip("\n"), since, self.revision.commit) if since else ():
            before, after = (_lines(self.reader.read(rev, path) or b"") for rev in (f"{commit}^", commit))
            if new in after and new not in before:
                origins.append(LineOrigin(commit, old in before, old in after))
        return next((o for o in origins if o.old_after or not o.old_before), origins[0] if origins else None)

    def _mark_blocked(self, patch: Patch, hunks: list[HunkVerdict]) -> list[HunkVerdict]:
        """Each failing hunk that needs lines of an earlier failed patch is blocked by that one;
        every hunk in a file an earlier malformed patch names is blocked by it."""
        by_key = {(fc.path, h.index): h for fc in patch.files for h in fc.hunks}
        marked = []
        for v in hunks:
            name = self._failed.waits_on(v.file, by_key.get((v.file, v.hunk)), v.verdict in _FAILURES)
            why = "is malformed" if self._failed.malformed.get(v.file) == name else "did not apply"
            marked.append(v if name is None else HunkVerdict(
                v.file, v.hunk, Verdict.BLOCKED, v.expected_line,
                detail=f"needs lines of {name}, which {why}", blocked_by=name))
        return marked


def _parents(reader: ObjectReader, commit: str) -> tuple[list[str], bool]:
    """COMMIT's parents, first parent first (none when the mirror lacks it), and whether patchkit
    wrote it (its fixed committer)."""
    head = (reader.read(commit) or b"").split(b"\n\n", 1)[0].decode(errors="replace").splitlines()
    return ([line.split(" ", 1)[1] for line in head if line.startswith("parent ")],
            any(line.startswith(f"committer {git.PATCHKIT_NAME} <{git.PATCHKIT_EMAIL}> ") for line in head))


def _upstream_under(reader: ObjectReader, commit: str) -> str | None:
    """The upstream commit under COMMIT: COMMIT itself, or, for a patched commit (of an earlier
    run), the first commit along its first parents that patchkit did not write."""
    parents, patched = _parents(reader, commit)
    while patched and parents:
        commit = parents[0]
        parents, patched = _parents(reader, commit)
    return None if patched else commit


def _followed(verdicts: list[HunkVerdict], rename: str) -> list[HunkVerdict]:
    """Verdicts on a file upstream moved: a hunk placed there was placed by the patch's base
    (as git am -3 merges it), so it is merged; every detail names the rename."""
    return [replace(v, verdict=Verdict.MERGED if v.verdict in (Verdict.CLEAN, Verdict.OFFSET) else v.verdict,
                    detail="; ".join(filter(None, [rename, v.detail]))) for v in verdicts]


def _every_hunk(fc: FileChange, verdict: Verdict, detail: str) -> list[HunkVerdict]:
    """One verdict for all of a file's hunks (a binary file counts as one hunk)."""
    return [HunkVerdict(fc.path, h.index, verdict, h.old_start, detail=detail) for h in fc.hunks] or \
        [HunkVerdict(fc.path, 1, verdict, 0, detail=detail)]


def _apply_binary(fc: FileChange, current: bytes) -> tuple[list[HunkVerdict], bytes | None]:
    """A binary hunk applies only to the exact blob the patch names in its `index` line."""
    assert fc.binary is not None
    have = binary.blob_id(current)
    if fc.new_blob and have.startswith(fc.new_blob):
        return _every_hunk(fc, Verdict.ALREADY_APPLIED, f"upstream has the patched file (blob {have[:12]})"), None
    if not fc.old_blob or not have.startswith(fc.old_blob):
        return _every_hunk(fc, Verdict.CONFLICT, f"upstream's file is blob {have[:12]}, the binary patch "
                           f"was made against {(fc.old_blob or 'an unnamed blob')[:12]}"), None
    try:
        content = binary.apply(fc.binary, current)
    except binary.BadBinaryPatch as exc:
        return _every_hunk(fc, Verdict.CONFLICT, f"the binary patch does not fit its pre-image ({exc})"), None
    if fc.new_blob and not binary.blob_id(content).startswith(fc.new_blob):
        return _every_hunk(fc, Verdict.CONFLICT, f"the binary patch does not give blob {fc.new_blob[:12]}"), None
    return _every_hunk(fc, Verdict.CLEAN, "binary"), content


def _as_written(patch: Patch, keys: set[tuple[str, int]]) -> Patch:
    """PATCH with each hunk of KEYS read with a blank last line read as written instead: without it."""
    def written(fc: FileChange, h: Hunk) -> Hunk:
        if not h.blank_read_at or (fc.path, h.index) not in keys:
            return h
        return replace(h, old_lines=h.old_lines[:-1], new_lines=h.new_lines[:-1],
                       trailing_context=h.trailing_context - 1, blank_read_at=None)
    return replace(patch, files=tuple(replace(fc, hunks=tuple(written(fc, h) for h in fc.hunks)) for fc in patch.files))


def _short_read(v: HunkVerdict) -> HunkVerdict:
    """The verdict of a hunk read as written, one line short of its header's count: where it was
    placed by its lines, the line its header promised and it lacks is one line of fuzz (GNU patch
    places it with fuzz 1, not with -F0)."""
    if v.verdict not in (Verdict.CLEAN, Verdict.OFFSET, Verdict.FUZZED):
        return v
    fuzz = v.fuzz + 1
    return replace(v, verdict=Verdict.FUZZED, fuzz=fuzz, offset=v.offset or 0,
                   detail="; ".join(filter(None, [f"read as written, one line short of its header's count: "
                                                  f"placed with fuzz {fuzz}", v.detail])))


def _short_hunks(patch: Patch, written: Patch) -> Iterator[tuple[FileChange, Hunk]]:
    """The hunks of PATCH that WRITTEN reads as written (one line short)."""
    for fc, wfc in zip(patch.files, written.files):
        yield from ((fc, h) for h, w in zip(fc.hunks, wfc.hunks) if h is not w)


def _read_warnings(patch: Patch, revision: Revision) -> tuple[str, ...]:
    """What a maintainer should know of how a committed patch was read."""
    warnings = []
    if patch.crlf:
        warnings.append(f"{patch.name}: every line ends in CRLF (a mailer's or an editor's); read as LF")
    warnings += [f"{patch.name}:{h.blank_read_at}: hunk {h.index} of {fc.path} is one line short of its header's "
                 "count; read as the blank context line upstream has there"
                 for fc in patch.files for h in fc.hunks if h.blank_read_at]
    if patch.date is None:
        warnings.append(f"{patch.name} has no Date: its commit is dated at upstream's {revision.commit[:12]}, "
                        "so its id is the same on every run; add a Date: line")
    return tuple(warnings)


def _summary(verdict: Verdict, hunks: list[HunkVerdict], blocked_by: tuple[str, ...]) -> str:
    if verdict is Verdict.BLOCKED:
        return f"waits on {', '.join(blocked_by)}, which did not apply"
    if verdict is Verdict.PARTIALLY_APPLIED:
        have = [str(h.hunk) for h in hunks if h.verdict is Verdict.ALREADY_APPLIED]
        return f"upstream already has hunk(s) {', '.join(have)}; the rest applied"
    if verdict is Verdict.ALREADY_APPLIED:
        return "upstream has the whole change; drop the patch from the queue"
    # The verdict stands beside this text in every report: name it only where a hunk's differs.
    return "; ".join(f"{h.file} hunk {h.hunk}" + (f" ({h.verdict.value})" if h.verdict is not verdict else "")
                     for h in hunks if h.verdict in _FAILURES)


@dataclass(frozen=True)
class AppliedQueue:
    """A queue applied at one upstream commit: each patch's result with its commit, and the
    repository that holds those commits. Nothing of it is in the mirror unless `record` puts it
    there; the repository lives only as long as the `apply_queue` block."""

    mirror: Mirror
    revision: Revision
    patches: tuple[PatchResult, ...]
    tip: str  # the last patch's commit (the upstream commit when nothing applied)
    tree: str  # the tip's tree
    repo: Path  # a scratch repository borrowing the mirror's objects: read the commits there
    renames: dict[str, str] = field(default_factory=dict)  # old path -> new, of files followed where upstream moved them
    read_warnings: tuple[str, ...] = ()  # how the committed patches were read, where it took a decision

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.read_warnings + tuple(f"{r.name} was placed with fuzz: review it, then refresh the patch"
                                          for r in self.patches if r.verdict is Verdict.FUZZED)

    def scratch_mirror(self) -> Mirror:
        """The scratch repository seen as the mirror, for readers that take one (format-patch)."""
        return Mirror(self.repo, self.mirror.url, self.mirror.branch, None)

    def record(self, ref: str) -> None:
        """Give the mirror the commits' objects and point REF at the tip (the caller holds the
        mirror's lock). The objects are the scratch repository's own files, each renamed into
        place whole, a pack before its index: git sees a pack only once its index is there, so
        an interrupted copy leaves nothing git reads. (Writing them again with fast-import
        would cost as much as the first time.)"""
        source, target = self.repo / "objects", self.mirror.path / "objects"
        files = [f for f in source.rglob("*") if f.is_file() and f.parent.name != "info"]
        for file in sorted(files, key=lambda f: f.suffix == ".idx"):
            destination = target / file.relative_to(source)
            if not destination.exists():
                destination.parent.mkdir(exist_ok=True)
                partial = destination.with_name(f".{destination.name}.patchkit")
                shutil.copyfile(file, partial)
                os.replace(partial, destination)
        git.run(["update-ref", ref, self.tip], cwd=self.mirror.path)


_SCRATCH_REF = "refs/heads/applied"


@contextlib.contextmanager
def apply_queue(mirror: Mirror, revision: Revision, patches: Sequence[Patch], fuzz: int = 0,
                base: Revision | None = None) -> Iterator[AppliedQueue]:
    """Apply PATCHES in order at REVISION; yield the result, its commits written into a scratch
    repository that borrows the mirror's objects (`objects/info/alternates`), so that a run that
    only reads the result (verify, export, dist, import's trial) leaves no object or ref behind.
    BASE: the commit the queue was made from, where the user says so (`--base`)."""
    memo = ScopeMemo(mirror.path.with_name(f"{mirror.path.name}.scopes.json"))  # beside the mirror
    with mirror.reader() as reader:
        applier = Applier(mirror, revision, reader, fuzz, base, memo)
        applied = [applier.apply(patch) for patch in patches]
    memo.save()
    committed = [a for a in applied if a.changes]
    with tempfile.TemporaryDirectory(prefix="patchkit-applied-") as tmp:
        repo = Path(tmp) / "applied.git"
        git.run(["init", "--bare", "--quiet", "--template=", str(repo)])
        (repo / "objects" / "info").mkdir(parents=True, exist_ok=True)
        (repo / "objects" / "info" / "alternates").write_text(f"{(mirror.path / 'objects').resolve()}\n")
        ids = _fast_import(repo, _stream(revision, committed, _SCRATCH_REF))
        commits = dict(zip((a.patch.name for a in committed), ids))
        testpoint.pause("fast-import")
        tip = ids[-1] if ids else revision.commit
        yield AppliedQueue(mirror, revision, tuple(replace(a.result, commit=commits.get(a.patch.name)) for a in applied),
                           tip, git.run(["rev-parse", f"{tip}^{{tree}}"], cwd=repo), repo, applier.renames,
                           tuple(w for a in committed for w in a.warnings))


def _stream(revision: Revision, applied: Sequence[_Applied], ref: str) -> bytes:
    """The fast-import stream of one commit per applied patch onto REF.

    Author and date come from the patch (a patch without a date is dated at the upstream
    commit); the committer is fixed and dated at the upstream commit, so the same upstream commit
    and the same queue always give the same ids.
    """
    committer = f"{git.PATCHKIT_NAME} <{git.PATCHKIT_EMAIL}> {revision.date}"
    out = bytearray(f"reset {ref}\nfrom {revision.commit}\n\n".encode())
    for mark, item in enumerate(applied, 1):
        author = item.patch.author
        message = item.patch.message.encode()
        out += (f"commit {ref}\nmark :{mark}\n"
                f"author {author.name} <{author.email}> {item.patch.date or revision.date}\n"
                f"committer {committer}\n"
                f"data {len(message)}\n").encode() + message + b"\n"
        for path, change in sorted(item.changes.items()):
            if change is None:
                out += f"D {_quote(path)}\n".encode()
            else:
                mode, data = change
                out += f"M {mode} inline {_quote(path)}\ndata {len(data)}\n".encode() + data + b"\n"
        out += b"\n"
    out += b"done\n"
    return bytes(out)


def _fast_import(repo: Path, stream: bytes) -> list[str]:
    """Run STREAM through `git fast-import` in REPO; return the ids of its marks in order."""
    with tempfile.TemporaryDirectory(prefix="patchkit-import-") as tmp:
        marks = Path(tmp) / "marks"
        # --force: a rerun after upstream moved replaces the previous result, it does not extend it
        try:
            git.run(["fast-import", "--quiet", "--force", "--done", f"--export-marks={marks}"],
                    cwd=repo, input=stream)
        except git.GitFailed as exc:
            for crash in repo.glob("fast_import_crash_*"):  # its report, of no use to anyone
                crash.unlink()
            raise EnvironmentProblem(f"cannot write the result into {repo}: {exc.summary}",
                                     "check the disk, then rerun") from None
        ids = dict(line.split() for line in marks.read_text().splitlines()) if marks.exists() else {}
    return [ids[f":{mark}"] for mark in range(1, len(ids) + 1)]


def _quote(path: str) -> str:
    if path.startswith('"') or "\n" in path:
        raise PatchkitError(f"unsupported file name {path!r} in patch")
    return path
