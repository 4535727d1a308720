"""Rebuild a patch that a web page or a mailer mangled, from the upstream file it was made against.

The damage handled: newlines collapsed into single spaces (every whitespace run, indentation
included, may be one space), HTML-like tags stripped (`std::vector<int32_t>` -> `std::vector`,
`<mike@example.org>` -> nothing), tabs expanded, trailing whitespace lost, CRLF; in any mix.

The approach: nothing of a context or removed line is trusted but its *normal form*, the text
with tags (`<` + letter ... `>`, what an HTML parser drops) and all whitespace removed. Upstream's
lines are normalised the same way, and each hunk is placed where its pre-image matches:

- a hunk whose lines survived (every line starts with ` `, `-`, `+` and the counts agree with its
  `@@` header) is matched line by line;
- a hunk whose newlines were collapsed is one stream of words. It is segmented by a search in
  which each step consumes the next upstream line (context), `-` and the next upstream line
  (removed), or `+` and some words (an added line), until exactly the header's counts are used.
  So `n + 1` or `-1` inside code are markers only where upstream's lines and the counts say so.
  Blank context lines leave no trace in such a stream, which is why they may consume nothing.
  The section after `@@` runs into the body: it must be (the start of) an upstream line above
  the hunk. Where several segmentations fit, the one with the fewest doubtful lines wins: a
  bare marker read as a blank line (`- foo` is rather the removed line `foo`) and an added line
  that does not end like a C statement or block (`;`, `{`, a lone `}`, `,`, `:`, a backslash)
  are doubtful. Reading a ` + ` of code as a marker cuts a piece that ends in an operand, always
  doubtful, so a wrong reading can at best tie with the right one. Blank context lines are
  placed as git would have (see `_drop_blank_shifts`). What is still tied is decided by the
  patch's `index` line when upstream is the very file it was made against (the one reading
  that makes the post-image blob it names), else refused as ambiguous.

A hunk must have exactly one place and one segmentation (or the one its index line names); else
`RepairRefused` names the hunk and the candidate lines. The rebuilt hunk takes context and
removed lines byte for byte from upstream and keeps the added lines' text, re-indented like the
line they replace (the removed line at the same position in a `-` run followed by a `+` run),
else like the context line before them (after them at a hunk's start); in a collapsed stream, where an added block's own indentation is
lost, a line after one ending in `{` goes one level deeper and a line starting with `}` one level
back. Headers, `index` blob ids (git hash-object) and the mail header are recomputed; the
diffstat is dropped. Text that was stripped and cannot be recovered is asked for, not guessed: an
author without an e-mail needs `author`; an added line that evidently lost `<...>` is refused
(see `_LOST_MARKUP`). Tags that spanned lines in the original are not recovered (such a hunk is
not found and is refused).

Why hunks are found here by searching the text, not by `patchkit.patchfile.diff.walk`: the walk
reads a diff line by line, counting lines as the hunk header says, and in a collapsed stream
there are no lines to count; a hunk's body is whatever lies between one `@@ ... @@` and the
next, wherever it sits in the text. The hunk header itself is the shared `HUNK_HEADER`.
"""

from __future__ import annotations

import bisect
import difflib
import email.utils
import hashlib
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from patchkit.errors import PatchkitError
from patchkit.patchfile.diff import HUNK_HEADER
from patchkit.patchfile.mail import header_fields

# Where a line of code ends, and what never comes right before a ` + ` inside a line: so a
# segmentation that reads an operator as a marker always pays for the piece cut before it. Not
# `)`, `]`, a word, nor a comment's or directive's end: `f(a) + 1`, `// n + 1`, `*p + 1` do.
_LINE_END = re.compile(r"(?:[;{,:\\]|(?:^|\s)\})$")
MBOX_LINE = "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
_TAG = re.compile(r"<[A-Za-z/!?][^>]*>")  # what an HTML parser takes for a tag
_TRANSFER_ENCODED = re.compile(r"(?i)\bContent-Transfer-Encoding:\s*(quoted-printable|base64)\b")
# Also collapsed: "-- 2.55.0" at the end of the one line a web page made of the mail.
_SIGNATURE = re.compile(r"\n-- ?\n[^\n]*\s*\Z|\s-- ?\d[\w.]*\s*\Z")  # format-patch's "-- \n2.55.0"
_TRAILER_KEY = (r"(?:[A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+|Bug|Origin|Forwarded|Author|Fixes|Link"
                r"|Closes|Cc)")
_STD_TEMPLATES = ("vector|array|map|multimap|unordered_map|set|multiset|unordered_set|pair|tuple|"
                  "unique_ptr|shared_ptr|weak_ptr|optional|variant|function|deque|list|queue|"
                  "priority_queue|stack|span|atomic|basic_string|initializer_list|numeric_limits|"
                  "make_unique|make_shared|is_same|enable_if|conditional")
# Added lines that evidently lost `<...>`: an include without its header, a standard template
# without its arguments, a cast or `template` without its angle brackets.
_LOST_MARKUP = (
    (re.compile(r"^\s*#\s*include\s*(?![\s\"<])"), "#include without a header name"),
    (re.compile(rf"\bstd::(?:{_STD_TEMPLATES})\b(?!\s*[<;])"), "a std:: template without arguments"),
    (re.compile(r"\b(?:static|dynamic|const|reinterpret)_cast\s*\("), "a cast without its type"),
    (re.compile(r"^(?!.*<).*\btemplate\b"), "`template` without its parameter list"),
)


@dataclass(frozen=True)
class HunkRepair:
    file: str  # path in the patch
    index: int  # 1-based hunk number within the whole patch
    upstream_line: int  # 1-based line where the pre-image was found upstream
    notes: tuple[str, ...]  # what was repaired in this hunk, human-readable


@dataclass(frozen=True)
class Repaired:
    data: bytes  # a clean git format-patch style mail
    hunks: tuple[HunkRepair, ...]
    notes: tuple[str, ...]  # patch-level repairs


class RepairRefused(PatchkitError):
    """The patch cannot be rebuilt without guessing: exit 1."""

    exit_code = 1


def repair(text: str, read_upstream: Callable[[str], bytes | None], author: str | None = None,
           subject: str | None = None) -> Repaired:
    """TEXT rebuilt against upstream (READ_UPSTREAM(path) -> the file's bytes or None).
    AUTHOR ("Name <email>") and SUBJECT win over what the text holds."""
    notes: list[str] = []
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        notes.append("CRLF removed")
    start = text.find("diff --git ")
    encoded = _TRANSFER_ENCODED.search(text[:start] if start >= 0 else text)
    if encoded:
        # Its diff is encoded too (`=3D` for `=`): rebuilt as it is, an added line would keep that.
        raise PatchkitError(f"the mail is {encoded[1].lower()}-encoded, which --repair does not decode",
                            "import it without --repair (git decodes it), or save the decoded mail")
    if start < 0:
        raise PatchkitError("no `diff --git` found", "--repair needs a git diff (git format-patch output)")
    header = _mail_header(text[:start], author, subject, notes)
    diff = _SIGNATURE.sub("", text[start:])
    files, hunks = [], []
    for part in re.split(r"(?=diff --git )", diff)[1:]:
        rendered, repairs = _repair_file(part, read_upstream, len(hunks))
        files.append(rendered)
        hunks.extend(repairs)
    data = header + "---\n" + "".join(files)
    return Repaired(data.encode("utf-8", errors="surrogateescape"), tuple(hunks), tuple(notes))


# --- the mail header ---------------------------------------------------------------------------

def _mail_header(message: str, author: str | None, subject: str | None, notes: list[str]) -> str:
    """The mail up to (not including) the `---` line: From, Date, Subject, blank line, body."""
    collapsed = "\n" not in message.strip()
    parse = _collapsed_fields if collapsed else _line_fields
    who, date, given_subject, body, stat = parse(message)
    if collapsed and message.strip():
        notes.append("header newlines restored")
    if stat.strip():
        notes.append("diffstat dropped")
    name, addr = _author(who, author, notes)
    subject_line = _subject(given_subject, subject, collapsed, notes)
    if collapsed and subject:
        body = "\n\n".join(part for part in (_after_subject(given_subject, subject), body) if part)
    if not date:
        date = email.utils.formatdate(localtime=True)
        notes.append("no Date: the import time used")
    body = _fill_trailer_emails(body, name, addr, notes)
    head = (f"{MBOX_LINE}\nFrom: {email.utils.formataddr((name, addr))}\nDate: {date}\n"
            f"Subject: {subject_line}\n\n")
    return head + (f"{body}\n" if body else "")


def _line_fields(message: str) -> tuple[str | None, str | None, str, str, str]:
    """(From, Date, Subject, body, diffstat) of a mail whose lines survived."""
    lines = message.split("\n")
    fields, i = header_fields(lines)
    body, stat = _cut("\n".join(line.rstrip() for line in lines[i:]), r"(?m)^---$")
    return (fields.get("from") or fields.get("author"), fields.get("date"),
            fields.get("subject") or fields.get("description", ""), body.strip("\n"), stat)


def _collapsed_fields(message: str) -> tuple[str | None, str | None, str, str, str]:
    """(From, Date, Subject, body, diffstat) of a mail collapsed into one line. Subject and
    message run together: the body here is only the trailers; what comes before the first
    trailer is returned as the subject (see `_subject` and `_after_subject`)."""
    text, stat = _cut(message, r"(?:^|\s)---(?:\s|$)")
    pieces = re.split(r"(?:^|\s)(From|Date|Subject): ", text)
    fields = dict(zip(pieces[1::2], (piece.strip() for piece in pieces[2::2])))
    parts = re.split(rf"(?:^|\s)(?={_TRAILER_KEY}: )", fields.get("Subject", ""))
    trailers = "\n".join(part.strip() for part in parts[1:])
    return fields.get("From"), fields.get("Date"), parts[0].strip(), trailers, stat


def _cut(text: str, separator: str) -> tuple[str, str]:
    """TEXT before and after the first SEPARATOR (the message's `---`); all of it if none."""
    m = re.search(separator, text)
    return (text[:m.start()], text[m.end():]) if m else (text, "")


def _author(who: str | None, author: str | None, notes: list[str]) -> tuple[str, str]:
    if author:
        name, addr = email.utils.parseaddr(author)
        if not name or "@" not in addr:
            raise PatchkitError(f"--author {author!r} is not `Name <email>`", 'pass --author "Name <email>"')
        notes.append("author e-mail stripped: taken from --author" if who and "@" not in who
                     else "author taken from --author")
        return name, addr
    if not who or "@" not in who:
        raise PatchkitError(f"the author's e-mail address is missing (From: {who or 'none'}), "
                            "probably stripped with the angle brackets", 'pass --author "Name <email>"')
    name, addr = email.utils.parseaddr(who)
    return name or addr, addr


def _after_subject(given: str, subject: str) -> str:
    """The message that ran into the subject in a collapsed mail: GIVEN after SUBJECT (which may
    lack GIVEN's `[PATCH n/m]`), else all of GIVEN, so that nothing is lost."""
    at = given.find(" ".join(subject.split()))
    if at >= 0 and re.fullmatch(r"(\[[^\]]*\]\s*)*", given[:at]):
        return given[at + len(" ".join(subject.split())):].strip()
    return given


def _subject(given: str, subject: str | None, collapsed: bool, notes: list[str]) -> str:
    if subject:
        notes.append("subject taken from --subject")
        return subject
    if not given:
        raise PatchkitError("the patch has no Subject", 'pass --subject "what the patch does"')
    if collapsed and (len(given) > 150 or re.search(r"[.!?] +\S", given)):
        raise PatchkitError("newlines were collapsed: cannot tell where the subject ends and the "
                            "message begins", 'pass --subject "the subject line"')
    return given


def _fill_trailer_emails(body: str, name: str, addr: str, notes: list[str]) -> str:
    """A trailer naming the author whose `<email>` was stripped gets the author's address."""
    def fill(m: re.Match[str]) -> str:
        notes.append(f"{m['key']}: e-mail taken from the author")
        return f"{m['key']}: {name} <{addr}>"
    return re.sub(rf"(?m)^(?P<key>{_TRAILER_KEY}): {re.escape(name)}\s*$", fill, body)


# --- one file's diff ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Item:
    kind: str  # " " context, "-" removed (both: `line` is upstream's index), "+" added (`text`)
    line: int = -1
    text: str = ""
    given: str = ""  # the line as the patch gave it (in a collapsed stream: its words)


@dataclass(frozen=True)
class _Placed:
    start: int  # 0-based upstream line of the pre-image
    items: tuple[_Item, ...]
    section: str
    collapsed: bool


def _repair_file(part: str, read_upstream: Callable[[str], bytes | None],
                 hunks_before: int) -> tuple[str, list[HunkRepair]]:
    first_hunk = HUNK_HEADER.search(part)
    head = part[:first_hunk.start()] if first_hunk else part
    path = _file_path(head)
    if re.search(r"\b(new file mode|deleted file mode|rename from|Binary files|GIT binary patch)\b", head):
        raise RepairRefused(f"{path}: creations, deletions, renames and binary files cannot be "
                            "repaired", "import that file's change without --repair")
    data = read_upstream(path)
    if data is None:
        raise RepairRefused(f"{path}: not in upstream, so its hunks cannot be rebuilt",
                            "check --at, or import without --repair")
    # Lines end at "\n" only, as for git (str.splitlines would also cut at form feeds).
    upstream = re.findall(r"[^\n]*\n|[^\n]+\Z", data.decode("utf-8", errors="surrogateescape"))
    norms = [_norm(line) for line in upstream]
    headers = list(HUNK_HEADER.finditer(part))
    if not headers:
        raise RepairRefused(f"{path}: no hunk found", "is the patch complete?")
    readings: list[list[_Placed]] = []  # each hunk's readings, all at one place
    wheres: list[str] = []
    starts: list[int] = []  # the line each hunk header named
    for k, m in enumerate(headers):
        wheres.append(f"hunk {hunks_before + k + 1} ({path})")
        body = part[m.end():headers[k + 1].start() if k + 1 < len(headers) else len(part)]
        readings.append(_place(body, (int(m[2] or 1), int(m[4] or 1)), norms, wheres[-1]))
        for hunk in readings[-1]:
            _refuse_lost_markup(hunk, wheres[-1])
        starts.append(int(m[1]))
    index = re.search(r"index ([0-9a-f]{7,})\.\.([0-9a-f]{7,})(?: (\d{6}))?", head)
    mode = index[3] if index else None
    placed, text, rebuilt, post = _choose(readings, wheres, index[2] if index else None,
                                          lambda hunks: _render_file(path, upstream, data, hunks, mode))
    for hunk, above, where in zip(placed[1:], placed, wheres[1:]):
        if hunk.start < above.start + _old_count(above):
            raise RepairRefused(f"{where} found at line {hunk.start + 1}, before the end of the "
                                "hunk above it", "fix the hunk order by hand")
    repairs = [HunkRepair(path, hunks_before + k + 1, hunk.start + 1,
                          tuple(_hunk_notes(hunk, lines, upstream, start, len(readings[k]))))
               for k, (hunk, lines, start) in enumerate(zip(placed, rebuilt, starts))]
    if index and _blob_id(data).startswith(index[1]) and not post.startswith(index[2]):
        # Upstream is the patch's pre-image, yet the result is not its post-image: say so.
        repairs[-1] = replace(repairs[-1], notes=repairs[-1].notes + (
            f"the file made is not the patch's (blob {index[2]} in its index line): check the "
            "added lines' indentation",))
    return text, repairs


_MAX_COMBINATIONS = 64


def _choose(readings: list[list[_Placed]], wheres: list[str], post_id: str | None,
            render: Callable[[list[_Placed]], tuple[str, list[list[str]], str]]
            ) -> tuple[list[_Placed], str, list[list[str]], str]:
    """One reading per hunk, and the file's diff, hunk lines and post-image blob id. A hunk read
    in several ways (where blank lines go, which ` + ` is a marker) is decided by the blob id
    of the file after the patch, from its `index` line: the one combination that makes that
    file. None, or no index line: refused, naming the first such hunk and two of its readings."""
    combinations = [[]]
    for options in readings:
        combinations = [done + [p] for done in combinations for p in options][:_MAX_COMBINATIONS + 1]
    for hunks in combinations if len(combinations) <= _MAX_COMBINATIONS else []:
        text, rebuilt, post = render(hunks)
        if len(combinations) == 1 or post_id and post.startswith(post_id):
            return hunks, text, rebuilt, post
    k = next(k for k, options in enumerate(readings) if len(options) > 1)
    shown = " or ".join(_reading(p) for p in readings[k][:2])
    raise RepairRefused(f"{wheres[k]}: at line {readings[k][0].start + 1} its text splits into lines "
                        f"in several ways: {shown}", "repair this hunk by hand")


def _file_path(head: str) -> str:
    m = re.search(r"\+\+\+ b/(\S+)", head) or re.search(r"diff --git a/\S+ b/(\S+)", head)
    if not m:
        raise PatchkitError("a `diff --git` without its file name", "the patch is truncated")
    return m[1]


def _old_count(hunk: _Placed) -> int:
    return sum(item.kind != "+" for item in hunk.items)


def _place(body: str, counts: tuple[int, int], norms: list[str], where: str) -> list[_Placed]:
    """The one place of a hunk in upstream (NORMS: its lines' normal forms), and its readings
    there (one, or several that `_choose` decides between)."""
    found = _place_lines(body, counts, norms)
    if found is None:
        found = _place_stream(body, counts, norms)
    if not found:
        raise RepairRefused(f"{where}: its context and removed lines match nowhere upstream",
                            "is --at the commit the patch was made for? a removed line may differ")
    if len({p.start for p in found}) > 1:
        lines = ", ".join(str(s + 1) for s in sorted({p.start for p in found})[:8])
        raise RepairRefused(f"{where}: its context matches upstream at several places (lines {lines})",
                            "add context to the hunk or repair it by hand")
    return found


def _reading(hunk: _Placed) -> str:
    """A segmentation as the refusal shows it: its changed lines, each with its marker, and the
    blank context lines among and next to them (where readings often differ)."""
    items = hunk.items
    near = [n for n, i in enumerate(items) if i.kind != " "]
    shown = [f"{i.kind}{i.given}" if i.kind != " " else "(blank)" for n, i in enumerate(items)
             if i.kind != " " or not i.given and near and near[0] - 1 <= n <= near[-1] + 1]
    return repr(" / ".join(shown))


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", _TAG.sub("", text))


# --- hunks whose lines survived ----------------------------------------------------------------

def _place_lines(body: str, counts: tuple[int, int], norms: list[str]) -> list[_Placed] | None:
    """Placements of a hunk given line by line, or None when its lines did not survive."""
    section, _, rest = body.partition("\n")
    lines = rest.removesuffix("\n").split("\n") if rest else []
    if not lines or any(line[:1] not in ("", " ", "-", "+", "\\") for line in lines):
        return None
    given = [line for line in lines if not line.startswith("\\")]
    if (sum(line[:1] != "+" for line in given), sum(line[:1] != "-" for line in given)) != counts:
        return None
    pre = [_norm(line[1:]) for line in given if line[:1] != "+"]
    placed = []
    for start in range(len(norms) - len(pre) + 1):
        if norms[start:start + len(pre)] == pre:
            items, j = [], start
            for line in given:
                kind = line[:1] or " "
                items.append(_Item(kind, text=line[1:], given=line[1:]) if kind == "+"
                             else _Item(kind, j, given=line[1:]))
                j += kind != "+"
            placed.append(_Placed(start, tuple(items), section.strip(), False))
    return placed


# --- hunks collapsed into one stream -----------------------------------------------------------

def _place_stream(body: str, counts: tuple[int, int], norms: list[str]) -> list[_Placed]:
    """Every (section, start, segmentation) that consumes the whole stream with the header's
    counts; placements that differ only by blank context lines (invisible in a stream) are
    reduced as `_drop_blank_shifts` says, unless a start had more readings than were kept."""
    stream = " ".join(body.split())
    segmenter = _Segmenter(stream, norms, counts)
    found = []
    complete = True
    for cut in _section_cuts(stream):
        # git's section is a line above the hunk (cut to 80 bytes): words that are no such line
        # belong to the hunk's body.
        section = _norm(stream[:cut])
        above = next((j for j, n in enumerate(norms) if n.startswith(section)), len(norms)) if section else -1
        for start in range(max(above + 1, 0), len(norms) - counts[0] + 1):
            ways = segmenter.solutions(cut, start)
            complete = complete and len(ways) <= _MAX_WAYS
            found += [_Placed(start, items, stream[:cut].strip(), True) for items in ways]
    return _drop_blank_shifts(found, norms) if complete else found


def _section_cuts(stream: str) -> list[int]:
    """Where the hunk body may begin: git's section (the text after `@@`) is at most 80 bytes."""
    cuts = [0] + [i + 1 for i, ch in enumerate(stream[:81]) if ch == " "]
    return [c for c in cuts if c <= 81]


_Ways = tuple[int, tuple[tuple["_Item", ...], ...]]  # (cost, its cheapest segmentations)
_MAX_WAYS = 8  # readings kept per state; one more says there were more (too many to choose from)


class _Segmenter:
    """The search over one hunk's stream for a fixed start: state (position in the stream,
    upstream line, removed and added lines so far). Each state yields its cheapest
    segmentations, at most `_MAX_WAYS` + 1 (more than one: ambiguous). The cost counts bare
    markers read as blank lines: `- foo` is the removed line `foo` rather than a removed blank
    line before the context line `foo`, which the stream alone cannot tell apart."""

    def __init__(self, stream: str, upstream_norm: list[str], counts: tuple[int, int]) -> None:
        self.stream = stream
        self.upstream = upstream_norm
        self.old, self.new = counts
        self.longest = max((len(n) for n in upstream_norm), default=0)
        self.ends = [i for i, ch in enumerate(stream) if ch == " "] + [len(stream)]
        self._prefix_memo: dict[int, dict[str, list[int]]] = {}
        self._memo: dict[tuple[int, int, int, int], _Ways] = {}
        self._start = 0

    def solutions(self, cut: int, start: int) -> tuple[tuple[_Item, ...], ...]:
        if not self._could_start(cut, start):
            return ()
        self._start, self._memo = start, {}
        return self._solve(cut, start, 0, 0)[1]

    def _could_start(self, cut: int, start: int) -> bool:
        """Cheap filter: the stream opens with upstream line START, maybe after a marker."""
        return (self.stream.startswith("+", cut) or bool(self._nexts(cut, start, False))
                or self.stream.startswith("-", cut) and bool(self._nexts(cut + 1, start, True)))

    def _solve(self, p: int, j: int, removed: int, added: int) -> _Ways:
        key = (p, j, removed, added)
        if key not in self._memo:
            self._memo[key] = self._steps(*key)
        return self._memo[key]

    def _steps(self, p: int, j: int, removed: int, added: int) -> _Ways:
        """A blank context line, invisible, may go before or after the added lines next to it:
        both readings are kept (git puts `-old`, a blank line, `+new` as often as `-old`,
        `+new`, a blank line); `_drop_blank_shifts` decides between them, or nothing does."""
        old_used = j - self._start
        context = old_used - removed
        if old_used == self.old and context + added == self.new and p == len(self.stream):
            return 0, ((),)
        options: list[tuple[_Item, _Ways]] = []
        if old_used < self.old and context + 1 + added <= self.new:
            options += [(self._item(" ", j, p, q), self._solve(q, j + 1, removed, added))
                        for q in self._nexts(p, j, False)]
        if old_used < self.old and self.stream.startswith("-", p):
            options += [(self._item("-", j, p + 1, q), self._solve(q, j + 1, removed + 1, added))
                        for q in self._nexts(p + 1, j, True)]
        if context + added < self.new and self.stream.startswith("+", p):
            for end in self.ends[bisect.bisect_left(self.ends, p + 1):]:
                text = self.stream[p + 1:end].strip()
                options.append((_Item("+", text=text, given=text),
                                self._solve(self._after(end), j, removed, added + 1)))
        return _cheapest(options)

    def _item(self, kind: str, j: int, c: int, q: int) -> _Item:
        return _Item(kind, j, given=self.stream[c:q].strip())

    def _after(self, end: int) -> int:
        return end + 1 if end < len(self.stream) else end

    def _nexts(self, c: int, j: int, marked: bool) -> list[int]:
        """Where the next item starts if upstream line J begins at C. A blank context line left
        nothing in the stream; a blank removed line left its lone `-`."""
        if j >= len(self.upstream):
            return []
        if not self.upstream[j]:
            if not marked:
                return [c]
            return [self._after(c)] if c == len(self.stream) or self.stream[c] == " " else []
        return [self._after(q) for q in self._prefixes(c).get(self.upstream[j], [])]

    def _prefixes(self, c: int) -> dict[str, list[int]]:
        """The normal forms of the stream's word runs from C (up to upstream's longest line)."""
        if c not in self._prefix_memo:
            found: dict[str, list[int]] = {}
            for q in self.ends[bisect.bisect_right(self.ends, c):]:
                if len(self.stream[c:q].replace(" ", "")) > self.longest:
                    break
                found.setdefault(_norm(self.stream[c:q]), []).append(q)
            self._prefix_memo[c] = found
        return self._prefix_memo[c]


def _cheapest(options: list[tuple[_Item, _Ways]]) -> _Ways:
    """The cheapest ways on from a state, each prefixed by the item that leads to it."""
    costed = [(cost + _cost(item), item, ways) for item, (cost, ways) in options if ways]
    if not costed:
        return 0, ()
    best = min(cost for cost, _, _ in costed)
    ways = [(item, *way) for cost, item, ways in costed if cost == best for way in ways]
    return best, tuple(ways[:_MAX_WAYS + 1])


def _cost(item: _Item) -> int:
    """How unlikely ITEM is as a line of its own: a bare marker read as a blank line, or an added
    line that does not end like a statement (`+ return n + 1;` is one line, not `return n` and
    `1;`)."""
    if item.kind != " " and not item.given:
        return 1
    if item.kind == "+":
        return not _LINE_END.search(item.text)
    return 0


def _drop_blank_shifts(found: list[_Placed], norms: list[str]) -> list[_Placed]:
    """Of placements with the same visible lines (they differ in the blank lines around and
    between them), one: when they all make the same file, the one whose leading and trailing
    context are closest in length (git's header); else the one file the git-shaped ones make.
    git gives a hunk as many leading as trailing context lines unless the file starts or ends
    first, so `-old`, blank, `+new` in the middle of a file is not `-old`, `+new`, blank. Then
    a line edited in place is not read as moved across a blank line: of `-f(a, x);`, blank,
    `+f(a, y);` and `-f(a, x);`, `+f(a, y);`, blank, the second. Where that does not decide,
    all are kept, and refused as ambiguous (unless the index line decides, see `_choose`)."""
    def anchor(p: _Placed) -> tuple:
        return tuple((i.kind, i.line, i.text) for i in p.items if i.kind == "+" or norms[i.line])

    def context(p: _Placed) -> tuple[int, int]:
        kinds = [i.kind for i in p.items]
        lead = next((n for n, k in enumerate(kinds) if k != " "), len(kinds))
        trail = next((n for n, k in enumerate(reversed(kinds)) if k != " "), len(kinds))
        return lead, trail

    def git_shaped(p: _Placed) -> bool:
        lead, trail = context(p)
        return (lead == trail or lead < trail and p.start == 0
                or trail < lead and p.start + _old_count(p) == len(norms))

    def imbalance(p: _Placed) -> int:
        lead, trail = context(p)
        return abs(lead - trail)

    groups: dict[tuple, list[_Placed]] = {}
    for p in found:
        groups.setdefault(anchor(p), []).append(p)
    kept = []
    for group in groups.values():
        lo = min(p.start for p in group)
        hi = max(p.start + _old_count(p) for p in group)

        def made(p: _Placed) -> tuple[str, ...]:
            """The file's lines LO..HI after P, as normal forms (a blank line is a blank line)."""
            body = [norms[i.line] if i.kind == " " else _norm(i.text) for i in p.items if i.kind != "-"]
            return tuple(norms[lo:p.start] + body + norms[p.start + _old_count(p):hi])

        shaped = [p for p in group if git_shaped(p)]
        for candidates in (group, shaped, [p for p in shaped if not _splits_an_edit(p, norms)]):
            if len({made(p) for p in candidates}) == 1:
                kept.append(min(candidates, key=imbalance))
                break
        else:
            kept += group
    return kept


def _splits_an_edit(hunk: _Placed, norms: list[str]) -> bool:
    """HUNK has removed lines, then blank context lines, then as many added lines, each like the
    removed line in its place: an edit in place, read as a move across the blank lines."""
    items = hunk.items
    for n in range(len(items)):
        removed = list(itertools.takewhile(lambda i: i.kind == "-", items[n:]))
        if not removed or n and items[n - 1].kind == "-":
            continue
        rest = items[n + len(removed):]
        blanks = list(itertools.takewhile(lambda i: i.kind == " " and not norms[i.line], rest))
        added = list(itertools.takewhile(lambda i: i.kind == "+", rest[len(blanks):]))
        if blanks and len(added) == len(removed) and all(
                difflib.SequenceMatcher(None, norms[r.line], _norm(a.text)).ratio() >= 0.6
                for r, a in zip(removed, added)):
            return True
    return False


# --- checks and the rebuilt text ---------------------------------------------------------------

def _refuse_lost_markup(hunk: _Placed, where: str) -> None:
    for item in (i for i in hunk.items if i.kind == "+"):
        code = item.text.split("//", 1)[0]  # a comment may name a template in passing
        for pattern, what in _LOST_MARKUP:
            if pattern.search(code):
                raise RepairRefused(f"{where}: added line {item.text.strip()!r} lost its text in "
                                    f"angle brackets ({what})",
                                    "restore that line in the patch and import it again")


def _render_file(path: str, upstream: list[str], data: bytes, placed: list[_Placed],
                 mode: str | None) -> tuple[str, list[list[str]], str]:
    """The file's diff, each hunk's rebuilt lines (with their markers), the post-image's blob id."""
    unit = _indent_unit(upstream)
    post: list[str] = []
    cursor = offset = 0
    out, rebuilt = [], []
    for hunk in placed:
        lines = _rebuild(hunk, upstream, unit)
        old = sum(line[0] != "+" for line in lines)
        new = sum(line[0] != "-" for line in lines)
        out.append(f"@@ -{_range(hunk.start, old)} +{_range(hunk.start + offset, new)} @@"
                   f"{' ' + hunk.section if hunk.section else ''}\n")
        out += [_with_newline(line) for line in lines]
        post += upstream[cursor:hunk.start] + [line[1:] for line in lines if line[0] != "-"]
        cursor, offset = hunk.start + old, offset + new - old
        rebuilt.append(lines)
    post += upstream[cursor:]
    after = _blob_id("".join(post).encode("utf-8", errors="surrogateescape"))
    head = (f"diff --git a/{path} b/{path}\nindex {_blob_id(data)}..{after}"
            f"{' ' + mode if mode else ''}\n--- a/{path}\n+++ b/{path}\n")
    return head + "".join(out), rebuilt, after


def _range(start: int, count: int) -> str:
    """git's `start,count`: a count of 1 is left out, an empty side names the line before."""
    first = start + 1 if count else start
    return str(first) if count == 1 else f"{first},{count}"


def _with_newline(line: str) -> str:
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


def _blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _rebuild(hunk: _Placed, upstream: list[str], unit: str) -> list[str]:
    """The hunk's lines with their markers: context and removed lines from upstream, added lines
    indented like the line they replace or follow (see the module docstring)."""
    lines: list[str] = []
    replaced: list[_Item] = []  # the removed lines an added run may replace, in order
    depth = 0
    for n, item in enumerate(hunk.items):
        if item.kind != "+":
            lines.append(item.kind + upstream[item.line])
            after_removal = n and hunk.items[n - 1].kind == "-"
            replaced = (replaced + [item] if after_removal else [item]) if item.kind == "-" else []
            depth = 0
            continue
        if replaced:
            ref, depth = replaced.pop(0), 0
        else:
            ref = _neighbour(hunk.items, n)
            if n and hunk.items[n - 1].kind != "+" and upstream[ref.line].rstrip().endswith("{"):
                depth = 1
        depth -= item.text.lstrip().startswith("}")
        indented = _indented(item, ref, upstream, unit, depth if hunk.collapsed else None)
        lines.append("+" + indented + _eol(upstream[ref.line]))
        depth += item.text.rstrip().endswith("{")
    return lines


def _neighbour(items: tuple[_Item, ...], n: int) -> _Item:
    """The context or removed line before item N, else the first one after it."""
    before = [i for i in items[:n] if i.kind != "+"]
    return before[-1] if before else next(i for i in items[n:] if i.kind != "+")


def _indented(item: _Item, ref: _Item, upstream: list[str], unit: str, depth: int | None) -> str:
    """ITEM's text with its indentation. Lines that survived (DEPTH None) keep theirs when the
    reference line's indentation is upstream's, else get upstream's plus their own offset from
    the reference line; in a collapsed stream, upstream's plus DEPTH units."""
    ref_upstream = _indent(upstream[ref.line])
    text = item.text.lstrip()
    if depth is None:
        if _indent(ref.given) == ref_upstream:
            return item.text
        width = _width(ref_upstream) + _width(_indent(item.given)) - _width(_indent(ref.given))
        return _spaces(max(width, 0), "\t" in ref_upstream) + text
    if depth < 0:
        return ref_upstream.removesuffix(unit) + text
    return ref_upstream + unit * depth + text


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def _width(indent: str) -> int:
    return len(indent.expandtabs(8))


def _spaces(width: int, tabs: bool) -> str:
    return "\t" * (width // 8) + " " * (width % 8) if tabs else " " * width


def _eol(line: str) -> str:
    return "\r\n" if line.endswith("\r\n") else "\n"


def _indent_unit(upstream: list[str]) -> str:
    """One indentation level of the file: a tab, else the commonest step between lines' spaces."""
    indents = [_indent(line) for line in upstream if line.strip()]
    if sum(i.startswith("\t") for i in indents) > len(indents) // 2:
        return "\t"
    steps: dict[int, int] = {}
    for a, b in zip(indents, indents[1:]):
        if len(b) > len(a):
            steps[len(b) - len(a)] = steps.get(len(b) - len(a), 0) + 1
    return " " * max(steps, key=lambda k: steps[k], default=4)


def _hunk_notes(hunk: _Placed, lines: list[str], upstream: list[str], header_start: int,
                readings: int) -> list[str]:
    notes = ["newlines restored from upstream"] if hunk.collapsed else []
    if readings > 1:
        notes.append(f"of {readings} ways to read it, the one the index line's blob id names")
    differed = sum(_shape(i.given, hunk.collapsed) != _shape(upstream[i.line].rstrip("\r\n"), hunk.collapsed)
                   for i in hunk.items if i.kind != "+")
    if differed:
        lines_word = "line" if differed == 1 else "lines"
        notes.append(f"context taken from upstream ({differed} {lines_word} differed only in "
                     "whitespace/markup)")
    added = [line[1:].rstrip("\r\n") for line in lines if line[0] == "+"]
    if added != [i.given for i in hunk.items if i.kind == "+"]:
        notes.append("added lines re-indented")
    if hunk.start + 1 != header_start:
        notes.append(f"found at line {hunk.start + 1} (the header said {header_start})")
    return notes


def _shape(text: str, collapsed: bool) -> str:
    """TEXT as the comparison for notes sees it: whitespace runs count as one in a stream."""
    return " ".join(text.split()) if collapsed else text
