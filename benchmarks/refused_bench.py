"""Refused-heavy apply (issue 25): a ~30-patch queue far from its base, where most patches lose
their place, applied by `patchkit apply` and by `git worktree add` + `git am -3` skipping failures.

The upstream is a local clone of a llama.cpp tree (default: $PATCHKIT_LLAMA_CPP, else
/tmp/oct/llama.cpp; the tree itself is only read). The queue is written at its HEAD: one patch per
large C/C++/Metal/Python file, each changing two statement lines a third and two thirds down. The
far upstream is 20 commits on top: every patched file and every fifth other source file gets a
block of lines near its top (offsets), and of each eight patches five have the first line they
change rewritten (a conflict for every tool), one a line of its context edited (a clean 3-way
merge), one its first hunk's lines copied to the end of the file (a twin). Each timed run starts in a fresh directory with a warm mirror; the two tools alternate
which goes first. Prints the medians, patchkit's ratio to git and the median of each run's own
ratio (steadier on a shared machine).

patchkit keeps its C++ parses' answers beside the mirror (`ScopeMemo`), so its runs after the
first parse nothing; --cold deletes them before each run (a nightly's first apply at a new commit).

Usage: python benchmarks/refused_bench.py [TREE] [--patches N] [--runs N] [--cold]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from reach_bench import GIT_ENV, _am_skipping, fork_for, git

_SOURCES = (".c", ".cpp", ".h", ".cu", ".cuh", ".m", ".metal", ".py")
BASE, FAR = "refused-base", "refused-far"


def statement_sites(lines: list[str]) -> list[int]:
    """0-based lines a patch may change: an indented statement, unique in its file."""
    counts: dict[str, int] = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    return [i for i, line in enumerate(lines) if line.startswith("    ") and line.rstrip().endswith(";")
            and len(line.strip()) > 20 and counts[line] == 1 and "\\" not in line]


def pick_files(repo: Path, n: int) -> list[tuple[str, list[int]]]:
    """N large source files spread over the biggest 5N, each with its two patch sites."""
    sized = []
    for path in git(["ls-files"], repo).stdout.splitlines():
        if path.endswith(_SOURCES) and (repo / path).is_file():
            lines = (repo / path).read_text(errors="replace").split("\n")
            sites = statement_sites(lines)
            if len(lines) >= 300 and len(sites) >= 10:
                sized.append((len(lines), path, sites))
    sized.sort(reverse=True)
    step = max(1, min(5, len(sized) // n))
    picked = []
    for _, path, sites in sized[::step][:n]:
        picked.append((path, [sites[len(sites) // 3], sites[2 * len(sites) // 3]]))
    return picked


def build(tree: Path, root: Path, n: int) -> tuple[Path, Path, int]:
    """The upstream clone (tags BASE and FAR), the queue folder; how many patches lose their place."""
    repo = root / "upstream"
    git(["clone", "--quiet", str(tree), str(repo)], root)
    git(["checkout", "--quiet", "-B", "master"], repo)
    git(["tag", BASE], repo)
    files = pick_files(repo, n)
    git(["checkout", "--quiet", "-b", "queue"], repo)
    for i, (path, sites) in enumerate(files):
        text = (repo / path).read_text(errors="surrogateescape").split("\n")
        for j, at in enumerate(sites):
            text[at] = text[at].rstrip() + f" {_comment(path)} downstream {i}.{j}: keep"
        (repo / path).write_text("\n".join(text), errors="surrogateescape")
        git(["commit", "--quiet", "-am", f"{path.rsplit('/', 1)[-1]} : carried fix {i + 1}"], repo)
    queue = root / "queue"
    out = git(["format-patch", "-o", str(queue), f"{BASE}..queue"], repo).stdout.split()
    (queue / "series").write_text("".join(Path(p).name + "\n" for p in out))
    git(["checkout", "--quiet", "master"], repo)
    git(["branch", "--quiet", "-D", "queue"], repo)
    patched = {path for path, _ in files}
    others = [p for p in git(["ls-files"], repo).stdout.splitlines() if p.endswith(_SOURCES) and p not in patched]
    moved = sorted(patched) + others[::5]
    refused = 0
    for c in range(20):  # the far upstream: many commits, each a share of the edits
        for k, path in enumerate(moved):
            if k % 20 == c:
                lines = (repo / path).read_text(errors="surrogateescape").split("\n")
                lines[10:10] = [f"{_comment(path)} upstream {c}.{k}: a line of a block moved in above"] * 12
                (repo / path).write_text("\n".join(lines), errors="surrogateescape")
        for i, (path, sites) in enumerate(files):
            if i % 20 == c and i % 8 != 7:  # 7: only the offset
                lines = (repo / path).read_text(errors="surrogateescape").split("\n")
                at = lines.index(_original(repo, path, sites[0]))
                if i % 8 < 5:  # the changed line rewritten: a conflict
                    lines[at] = lines[at].rstrip() + f" {_comment(path)} reworked upstream"
                    refused += 1
                elif i % 8 == 5:  # a context line edited: a clean 3-way merge
                    lines[at - 2] = lines[at - 2].rstrip() + f" {_comment(path)} edited upstream"
                else:  # the hunk's lines copied to the end of the file: a twin
                    lines += lines[at - 3:at + 4]
                (repo / path).write_text("\n".join(lines), errors="surrogateescape")
        git(["commit", "--quiet", "--allow-empty", "-am", f"upstream change {c + 1}"], repo)
    git(["tag", FAR], repo)
    return repo, queue, refused


def _comment(path: str) -> str:
    return "#" if path.endswith(".py") else "//"


def _original(repo: Path, path: str, at: int) -> str:
    return git(["show", f"{BASE}:{path}"], repo).stdout.split("\n")[at]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", type=Path,
                        default=Path(os.environ.get("PATCHKIT_LLAMA_CPP", "/tmp/oct/llama.cpp")))
    parser.add_argument("--patches", type=int, default=30)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cold", action="store_true", help="no parse answers kept from an earlier run")
    args = parser.parse_args()
    if not (args.tree / ".git").exists():
        sys.exit(f"refused_bench: {args.tree} is not a git checkout of llama.cpp; give its path (or set PATCHKIT_LLAMA_CPP)")
    with tempfile.TemporaryDirectory(prefix="patchkit-refused-") as tmp:
        root = Path(tmp)
        repo, queue, lost = build(args.tree.resolve(), root, args.patches)
        paths = [queue / n for n in (queue / "series").read_text().split()]
        fork = fork_for(root, repo, queue, "refused")
        report = root / "report.json"

        def patchkit(out: Path) -> list[str]:
            return [sys.executable, "-m", "patchkit", "-q", "apply", f"upstream@{FAR}", "-o", str(out),
                    "--json", str(report)]

        subprocess.run(patchkit(root / "warm"), cwd=fork, env=GIT_ENV, capture_output=True, check=False)  # the mirror
        verdicts = [p["verdict"] for p in json.loads(report.read_text())["patches"]] if report.is_file() else []
        print(f"refused-heavy: {len(paths)} patches on {args.tree} at its HEAD, applied 20 commits later "
              f"({lost} with a rewritten line); median of {args.runs} (wall time, warm mirror, fresh directories, "
              f"{'no' if args.cold else 'the last run’s'} parse answers)")
        times: dict[str, list[float]] = {"patchkit": [], "git": []}
        refused_am = 0
        for r in range(args.runs):
            for tool in ("patchkit", "git") if r % 2 == 0 else ("git", "patchkit"):
                out = root / f"{tool}-{r}"
                start = time.perf_counter()
                if tool == "patchkit":
                    for memo in (root / "cache").rglob("*.scopes.json") if args.cold else ():
                        memo.unlink()
                    subprocess.run(patchkit(out), cwd=fork, env=GIT_ENV, capture_output=True, check=False)
                else:
                    git(["worktree", "add", "--quiet", "--detach", str(out), FAR], repo)
                    refused_am = len(_am_skipping(out, paths))
                times[tool].append(time.perf_counter() - start)
                if tool == "git":
                    git(["worktree", "remove", "--force", str(out)], repo)
                else:
                    shutil.rmtree(out)
        good = sum(v in ("clean", "offset", "merged", "fuzzed") for v in verdicts)
        pk, am = statistics.median(times["patchkit"]), statistics.median(times["git"])
        print(f"  patchkit apply                  {pk:6.2f} s  ({len(paths) - good} refused)")
        print(f"  git worktree add + git am -3    {am:6.2f} s  ({refused_am} refused, each skipped)")
        paired = statistics.median(p / g for p, g in zip(times["patchkit"], times["git"]))
        print(f"  ratio {pk / am:.2f}x, median of the runs' own ratios {paired:.2f}x  (runs: patchkit {', '.join(f'{t:.1f}' for t in times['patchkit'])}; "
              f"git {', '.join(f'{t:.1f}' for t in times['git'])})")


if __name__ == "__main__":
    main()
