"""`patchkit absorb`: edits not committed yet folded into the commits that own those lines, then
`record`.

Each hunk of the tracked changes (staged or not, against HEAD, without context) goes to one
branch commit. Its owner is the commit that last touched the lines it changes (git blame of the
branch, upstream's lines counting for no one); an insertion, or a change to upstream's lines,
belongs to the commit that wrote its immediate neighbours, the line above and the line below.
Then, as git-absorb requires, the hunk must commute with every later commit: none of them may
change those lines, or delete lines right there. An edit no commit owns, or that two could own
(its lines or its neighbours are two commits', or a later commit changed them too), is refused
with its file:line and the candidates, and nothing changes; `--new NAME` makes all such edits one
new patch instead.

The branch is rewritten in git's objects first (each commit from the oldest owner on gets the
hunks owned at or below it, at the line where they sit in that commit; message, author and
committer kept), `record` checks and writes the queue from the rewritten tip, and only then is
the branch moved there, its rewritten commits noted as their patches first (a run killed after
the move leaves a branch the next `record` reads right). The work tree is not touched: the new
tip holds exactly its tracked files.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from patchkit import git
from patchkit.branch.checkout import BranchCommit, Checkout, branch_commits, open_checkout, untracked_paths
from patchkit.branch.record import RecordOptions, RecordReport, finish_interrupted, record
from patchkit.errors import PatchkitError
from patchkit.hooks import Hooks
from patchkit.importing.run import check_name
from patchkit.importing.mail import parse_author
from patchkit.patchfile.diff import HUNK_HEADER, lines_of
from patchkit.project import Project

# Every diff option a config could change in a -U0 diff's hunks (diff.interHunkContext joins
# nearby edits into one hunk, which would then have two owners), given on the command line.
_DIFF_FLAGS = ("--no-renames", "--no-ext-diff", "--no-textconv", "--no-color", "--diff-algorithm=myers",
               "--inter-hunk-context=0", "--no-indent-heuristic", "--no-relative", "--src-prefix=a/",
               "--dst-prefix=b/", "--ignore-submodules=none")
_BLAMED = re.compile(r"^([0-9a-f]{40}) \d+ \d+")


@dataclass(frozen=True)
class AbsorbOptions:
    output: Path | None = None
    new: str | None = None  # the patch that edits no commit owns become
    author: str | None = None  # --new's author, "Name <email>"
    dry_run: bool = False
    prune: bool = False
    squash: bool = False
    allow_rewind: bool = False
    upstream: str | None = None


@dataclass(frozen=True)
class Absorbed:
    """One edit (a hunk without context), where it is in the work tree and where it went."""

    path: str
    line: int  # 1-based, in the work tree's file
    commit: str | None  # the branch commit it was folded into (None: refused, or --new)
    patch: str | None  # that commit's patch (--new: the new one)
    candidates: tuple[str, ...] = ()  # refused: the commits that could own it, as "id (subject)"
    why: str = ""  # refused: why no commit, or not one, owns it


@dataclass(frozen=True)
class AbsorbReport:
    checkout: Path
    edits: tuple[Absorbed, ...]
    refused: tuple[Absorbed, ...]  # nothing changed when any is here
    untracked: tuple[str, ...]  # named, never absorbed
    record: RecordReport | None = None

    @property
    def exit_code(self) -> int:
        if self.refused:
            return 1
        return self.record.exit_code if self.record else 0


@dataclass(frozen=True)
class _Hunk:
    path: str
    start: int  # 0-based index in HEAD's file: the first changed line, or where lines are inserted
    old: tuple[bytes, ...]
    new: tuple[bytes, ...]
    new_line: int  # 1-based line in the work tree, for messages


@dataclass(frozen=True)
class _Owned:
    hunk: _Hunk
    owner: int  # index of the owning commit in the branch
    at: dict[int, int]  # branch index -> where the hunk starts in that commit's file


def run_absorb(project: Project, options: AbsorbOptions, hooks: Hooks = Hooks()) -> AbsorbReport:
    record_options = RecordOptions(options.output, options.dry_run, options.prune, options.squash,
                                   options.allow_rewind, options.upstream)
    finished = finish_interrupted(project, record_options, hooks)
    checkout = open_checkout(project, options.output)
    new_name = _new_name(options.new) if options.new is not None else None
    author = _author(options.author) if new_name else None
    commits = branch_commits(checkout, checkout.head)
    whole, hunks = _tracked_changes(checkout)
    if finished and not whole and not hunks:  # the interrupted run absorbed them all
        return AbsorbReport(checkout.path, (), (), tuple(untracked_paths(checkout)),
                            record(project, checkout, checkout.head, record_options, hooks))
    if not whole and not hunks:
        raise PatchkitError(f"{checkout.path} has no tracked changes to absorb",
                            "commit edits with git and run `patchkit record`; untracked files are never absorbed")
    owned: list[_Owned] = []
    refused = [Absorbed(path, 1, None, None, (), why) for path, why in whole]
    for hunk in hunks:
        found = _owner(checkout, commits, hunk)
        if isinstance(found, _Owned):
            owned.append(found)
        else:
            refused.append(Absorbed(hunk.path, hunk.new_line, None, None, tuple(c.short for c in found[0]), found[1]))
    untracked = tuple(untracked_paths(checkout))
    edits = [Absorbed(o.hunk.path, o.hunk.new_line, commits[o.owner].id, _patch_of(commits[o.owner]))
             for o in owned]
    if refused and new_name is None:
        return AbsorbReport(checkout.path, tuple(edits), tuple(refused), untracked)
    tip, renamed = _rewrite(checkout, commits, owned)
    final = _work_tree_tree(checkout)
    names = {}
    if refused:
        assert new_name is not None and author is not None
        tip = _commit(checkout, final, tip, author, new_name.removesuffix(".patch").replace("-", " "))
        names[tip] = new_name
        edits += [Absorbed(r.path, r.line, tip, new_name) for r in refused]
    if git.run(["rev-parse", f"{tip}^{{tree}}"], cwd=checkout.path) != final:
        raise PatchkitError("absorb's rewritten branch does not hold the work tree's files",
                            "this is a bug in patchkit: please report it; nothing was changed")
    identities = {new: list(commits[i].patches) for i, new in renamed.items()}
    report = record(project, checkout, tip, record_options, hooks, identities, names, moves_branch=True)
    return AbsorbReport(checkout.path, tuple(edits), (), untracked, report)


def _new_name(value: str) -> str:
    """--new's file name, checked as import checks its --name (the refusal names --new)."""
    try:
        return check_name(value)
    except PatchkitError as exc:
        raise PatchkitError(exc.message.replace("--name", "--new", 1),
                            "give a plain name like fix-the-build.patch (no folders, spaces or '#'), "
                            "at most 245 bytes") from None


def _author(value: str | None) -> str:
    if not value:
        raise PatchkitError("--new makes a new patch and needs its author",
                            'add --author "Name <email>" (who wrote the edits)')
    name, email = parse_author(value)
    return f"{name} <{email}>"


def _patch_of(commit: BranchCommit) -> str | None:
    return commit.patches[0] if commit.patches else None


def _tracked_changes(checkout: Checkout) -> tuple[list[tuple[str, str]], list[_Hunk]]:
    """The tracked changes against HEAD: whole-file ones (a file added, deleted, its mode or
    kind changed, binary), which no commit's lines own, and the hunks of changed text files."""
    path = checkout.path
    git.run(["update-index", "-q", "--refresh"], cwd=path, check=False)
    fields = git.run(["diff-index", "-z", "--no-renames", "HEAD", "--"], cwd=path).split("\0")
    numstat = git.run(["diff", "--numstat", "-z", "--no-renames", "HEAD"], cwd=path).split("\0")
    binary = {entry[4:] for entry in numstat if entry.startswith("-\t-\t")}
    whole: list[tuple[str, str]] = []
    hunks: list[_Hunk] = []
    for meta, name in zip(fields[0::2], fields[1::2]):
        old_mode, new_mode, _, _, status = meta.lstrip(":").split()
        if status == "A":
            whole.append((name, "a new file"))
        elif status == "D":
            whole.append((name, "a deleted file"))
        elif old_mode != new_mode:
            whole.append((name, f"its mode changed ({old_mode} -> {new_mode})"))
        elif name in binary:
            whole.append((name, "a binary file"))
        else:
            hunks += _hunks(checkout, name)
    return whole, hunks


def _hunks(checkout: Checkout, name: str) -> list[_Hunk]:
    # The work tree's file as git would commit it (its attributes' line ends applied): the bytes
    # the diff below compares, and the ones the rewritten commits hold.
    blob = git.run(["hash-object", "-w", "--", name], cwd=checkout.path)
    with git.ObjectReader(checkout.path) as reader:
        old = lines_of(reader.read("HEAD", name) or b"", keepends=True)
        new = lines_of(reader.read(blob) or b"", keepends=True)
    out = git.run(["diff", "-U0", *_DIFF_FLAGS, "HEAD", "--", name], cwd=checkout.path)
    hunks = []
    for a, b, c, d in _headers(out):
        hunks.append(_Hunk(name, a, tuple(old[a:a + b]), tuple(new[c:c + d]), c + 1 if d else c))
    return hunks


def _headers(diff: str) -> list[tuple[int, int, int, int]]:
    """The -U0 hunk headers of DIFF as (old start, old count, new start, new count), each start the
    0-based index of the first line, or, for a count of 0, of the line the change comes before."""
    found = []
    for line in diff.split("\n"):
        m = HUNK_HEADER.match(line)
        if m:
            a, b, c, d = int(m[1]), int(m[2] or 1), int(m[3]), int(m[4] or 1)
            found.append((a - 1 if b else a, b, c - 1 if d else c, d))
    return found


def _owner(checkout: Checkout, commits: list[BranchCommit],
           hunk: _Hunk) -> _Owned | tuple[list[BranchCommit], str]:
    """The commit that owns HUNK and where the hunk sits in each commit from it on; or the
    candidates and why none or not one does."""
    index = {c.id: i for i, c in enumerate(commits)}
    n = len(hunk.old)
    owners = _blamed(checkout, hunk.path, hunk.start, hunk.start + n, index) if n else set()
    if not owners:
        owners = _blamed(checkout, hunk.path, hunk.start - 1, hunk.start, index) | \
            _blamed(checkout, hunk.path, hunk.start + n, hunk.start + n + 1, index)
    if not owners:
        return [], "no patch changed these lines or the lines next to them"
    owner = max(owners)
    pos, at, later = hunk.start, {}, set()
    for i in range(len(commits) - 1, owner - 1, -1):
        at[i] = pos
        if i == owner:
            break
        changes = _changes(checkout, commits[i], hunk.path)
        if any(_overlaps(pos, n, start, count) for _, _, start, count in changes):
            later.add(i)
        pos -= sum(count - old_count for _, old_count, start, count in changes if start + count <= pos
                   and not _overlaps(pos, n, start, count))
    candidates = owners | later
    if len(candidates) > 1:
        return [commits[i] for i in sorted(candidates)], "more than one patch could own it"
    return _Owned(hunk, owner, at)


def _overlaps(pos: int, n: int, start: int, count: int) -> bool:
    """An edit of the lines [POS, POS+N) (N 0: an insertion before POS) and a commit's change of
    [START, START+COUNT) (COUNT 0: a deletion before START) touch the same lines."""
    if n and count:
        return start < pos + n and pos < start + count
    if n:
        return pos < start < pos + n
    if count:
        return start < pos < start + count
    return start == pos


def _blamed(checkout: Checkout, path: str, first: int, end: int, index: dict[str, int]) -> set[int]:
    """The branch commits (by index) that last changed HEAD's lines [FIRST, END) of PATH."""
    with git.ObjectReader(checkout.path) as reader:
        total = len(lines_of(reader.read("HEAD", path) or b"", keepends=True)) if first < end else 0
    first, end = max(first, 0), min(end, total)
    if first >= end:
        return set()
    out = git.run(["blame", "--porcelain", "-L", f"{first + 1},{end}", f"{checkout.upstream}..HEAD", "--", path],
                  cwd=checkout.path)
    return {index[m[1]] for m in map(_BLAMED.match, out.split("\n")) if m and m[1] in index}


def _changes(checkout: Checkout, commit: BranchCommit, path: str) -> list[tuple[int, int, int, int]]:
    return _headers(git.run(["diff-tree", "-p", "-U0", *_DIFF_FLAGS, commit.parent, commit.id, "--", path],
                            cwd=checkout.path))


def _rewrite(checkout: Checkout, commits: list[BranchCommit], owned: list[_Owned]) -> tuple[str, dict[int, str]]:
    """The branch with each hunk folded into its owner and carried through the later commits: the
    new tip, and the new id of every commit rewritten (by branch index)."""
    if not owned:
        return checkout.head, {}
    first = min(o.owner for o in owned)
    parent = commits[first].parent
    renamed: dict[int, str] = {}
    with tempfile.TemporaryDirectory(prefix="patchkit-absorb-") as tmp, git.ObjectReader(checkout.path) as reader:
        index_env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        for i in range(first, len(commits)):
            commit = commits[i]
            here = [o for o in owned if o.owner <= i]
            git.run(["read-tree", commit.id], cwd=checkout.path, env=index_env)
            for path in dict.fromkeys(o.hunk.path for o in here):
                lines = lines_of(reader.read(commit.id, path) or b"", keepends=True)
                for o in sorted((o for o in here if o.hunk.path == path), key=lambda o: -o.at[i]):
                    start = o.at[i]
                    if tuple(lines[start:start + len(o.hunk.old)]) != o.hunk.old:
                        raise PatchkitError(f"{path}:{o.hunk.new_line}: the lines this edit changes are not where "
                                            f"absorb placed them in {commit.short}",
                                            "this is a bug in patchkit: please report it; nothing was changed")
                    lines[start:start + len(o.hunk.old)] = o.hunk.new
                blob = git.run(["hash-object", "-w", "--stdin"], cwd=checkout.path, input=b"".join(lines))
                mode = git.run(["ls-tree", commit.id, "--", path], cwd=checkout.path).split()[0]
                git.run(["update-index", "--cacheinfo", f"{mode},{blob},{path}"], cwd=checkout.path, env=index_env)
            tree = git.run(["write-tree"], cwd=checkout.path, env=index_env)
            parent = renamed[i] = _copy_commit(checkout, commit.id, tree, parent)
    return parent, renamed


def _copy_commit(checkout: Checkout, commit: str, tree: str, parent: str) -> str:
    """COMMIT with another tree and parent; its author, committer and message as they were (a
    signature, which would no longer hold, is left out)."""
    raw = git.run(["cat-file", "commit", commit], cwd=checkout.path)
    header, _, message = raw.partition("\n\n")
    kept: list[str] = []
    skipping = False
    for line in header.split("\n"):
        if line.startswith(" ") and skipping:
            continue
        skipping = line.startswith("gpgsig")
        if skipping:
            continue
        if line.startswith("tree "):
            line = f"tree {tree}"
        elif line.startswith("parent "):
            line = f"parent {parent}"
        kept.append(line)
    data = "\n".join(kept) + "\n\n" + message + "\n"
    return git.run(["hash-object", "-t", "commit", "-w", "--stdin"], cwd=checkout.path,
                   input=data.encode("utf-8", errors="surrogateescape"))


def _work_tree_tree(checkout: Checkout) -> str:
    """The tree of the work tree's tracked files (staged new files included), from a copy of the
    index: the user's index is not touched."""
    with tempfile.TemporaryDirectory(prefix="patchkit-absorb-") as tmp:
        index = os.path.join(tmp, "index")
        git_dir = git.git_dir(checkout.path)
        Path(index).write_bytes((git_dir / "index").read_bytes())
        git.run(["add", "--update", "--", "."], cwd=checkout.path, env={"GIT_INDEX_FILE": index})
        return git.run(["write-tree"], cwd=checkout.path, env={"GIT_INDEX_FILE": index})


def _commit(checkout: Checkout, tree: str, parent: str, author: str, subject: str) -> str:
    """A new commit of TREE on PARENT by AUTHOR, now."""
    when = f"{int(time.time())} +0000"
    data = (f"tree {tree}\nparent {parent}\nauthor {author} {when}\ncommitter {author} {when}\n\n{subject}\n")
    return git.run(["hash-object", "-t", "commit", "-w", "--stdin"], cwd=checkout.path, input=data.encode())
