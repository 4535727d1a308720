"""Long upstream histories for the bisect tests and benchmark, written in one `git fast-import`.

The history is a first-parent line of `length` commits on `master`. Commit 0 holds the fixture
upstream's base tree (`build_upstream`, scenario `base`); each later commit either touches
server-context.cpp without changing anything a patch sees (its last line, a revision note) or
another file of its own. At the positions `events` name, server-context.cpp becomes the file of
a fixture scenario (`conflict`, `new-site`, `already-applied`, ...), optionally through a side
branch that a merge brings in, so that the first-parent culprit is the merge, not the side commit.
Subjects end in a pull request number, `(#N)`, as llama.cpp's squash merges do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from patchkit.errors import PatchkitError
from patchkit.fixture import EPOCH, SERVER_CONTEXT, UPSTREAM_AUTHOR, FixtureUpstream, init_repo
from patchkit.git import run

_SIDE_AUTHOR = "Side Contributor <side@upstream.invalid>"
FIRST_PULL = 10000  # commit i's subject ends in (#FIRST_PULL + i)


@dataclass(frozen=True)
class Event:
    """From commit `at` on, server-context.cpp is the file of fixture scenario `scenario`."""

    at: int
    scenario: str
    subject: str
    via_merge: bool = False  # the change lands on a side branch, and commit `at` merges it


@dataclass(frozen=True)
class History:
    path: Path
    commits: tuple[str, ...]  # the first-parent line, oldest first
    side_commits: dict[int, str]  # position of a merge -> the side commit it brings in

    def subject(self, i: int) -> str:
        return run(["show", "-s", "--format=%s", self.commits[i]], cwd=self.path)


def scenario_files(upstream: FixtureUpstream) -> dict[str, dict[str, str]]:
    """Every scenario's whole tree, read from the fixture upstream (scenario name -> path -> text)."""
    trees = {}
    for name, scenario in upstream.scenarios.items():
        ref = scenario.ref
        paths = run(["ls-tree", "-r", "--name-only", ref], cwd=upstream.path).splitlines()
        trees[name] = {p: run(["show", f"{ref}:{p}"], cwd=upstream.path) + "\n" for p in paths}
    return trees


def build_history(dest: Path, upstream: FixtureUpstream, length: int, events: Sequence[Event] = (),
                  touch_every: int = 3, merge_every: int = 0) -> History:
    """Write the history into DEST (see the module's doc). Every TOUCH_EVERY-th commit touches
    server-context.cpp harmlessly; every MERGE_EVERY-th (0: none besides the events' own) merges
    a side branch that changes another file."""
    trees = scenario_files(upstream)
    at = {e.at: e for e in events}
    if len(at) != len(events) or any(not 0 < e.at < length for e in events):
        raise PatchkitError("history events need distinct positions inside the history")
    if any(e.scenario not in trees for e in events):
        raise PatchkitError(f"unknown scenario; known: {', '.join(trees)}")
    server = trees["base"][SERVER_CONTEXT]
    out: list[bytes] = []
    marks: dict[str, int] = {}
    side_marks: dict[int, int] = {}

    def commit(ref: str, mark: int, author: str, when: int, subject: str, parents: Sequence[int],
               files: dict[str, str]) -> None:
        message = f"{subject}\n".encode()
        out.append(f"commit {ref}\nmark :{mark}\nauthor {author} {when} +0000\n"
                   f"committer {author} {when} +0000\ndata {len(message)}\n".encode() + message)
        out.extend(f"{'from' if n == 0 else 'merge'} :{p}\n".encode() for n, p in enumerate(parents))
        for path, text in files.items():
            raw = text.encode()
            out.append(f"M 100644 inline {path}\ndata {len(raw)}\n".encode() + raw + b"\n")
        out.append(b"\n")

    commit("refs/heads/master", 1, UPSTREAM_AUTHOR, EPOCH, f"server : import the server sources (#{FIRST_PULL})",
           [], trees["base"])
    next_mark = 2
    for i in range(1, length):
        when, pull = EPOCH + 600 * i, FIRST_PULL + i
        event = at.get(i)
        if event is not None:
            server = trees[event.scenario][SERVER_CONTEXT]
            change = {SERVER_CONTEXT: f"{server}// revision {i}\n"}
            subject = f"{event.subject} (#{pull})"
        elif i % touch_every == 0:
            change = {SERVER_CONTEXT: f"{server}// revision {i}\n"}
            subject = f"server : tidy after revision {i} (#{pull})"
        else:
            change = {f"src/part-{i % 40:02d}.cpp": f"// part {i % 40}, revision {i}\n"}
            subject = f"src : update part {i % 40} (#{pull})"
        parents = [next_mark - 1]
        if (event is not None and event.via_merge) or (event is None and merge_every and i % merge_every == 0):
            # the side branch forks from the previous first-parent commit and carries the change
            commit(f"refs/heads/side-{i}", next_mark, _SIDE_AUTHOR, when - 300, f"{subject} (side)",
                   parents, change)
            side_marks[i] = next_mark
            parents.append(next_mark)
            next_mark += 1
            subject = f"Merge branch 'side-{i}' (#{pull})"
        commit("refs/heads/master", next_mark, UPSTREAM_AUTHOR, when, subject, parents, change)
        marks[f":{next_mark}"] = i
        next_mark += 1
    out.append(b"done\n")
    init_repo(dest)
    marks_file = dest / ".git" / "history-marks"
    run(["fast-import", "--quiet", "--done", f"--export-marks={marks_file}"], cwd=dest, input=b"".join(out))
    ids = dict(line.split() for line in marks_file.read_text().splitlines())
    marks_file.unlink()
    for i in side_marks:  # the side branches served the merges; upstream keeps no such refs
        run(["update-ref", "-d", f"refs/heads/side-{i}"], cwd=dest)
    return History(dest, (ids[":1"], *(ids[m] for m in marks)),
                   {i: ids[f":{m}"] for i, m in side_marks.items()})
