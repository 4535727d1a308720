"""Reach: how many patches each tool places right, wrong, or refuses, on a generated llama.cpp-shaped
history whose every right result is known (issue 17); and patchkit apply's speed against git am -3.

testing/reach_upstream.py writes the upstream (a few thousand C, C++, header, CMake, Python, .m,
.metal and .cu files; hundreds of commits that move code, rename a file and a function, add enum
values, move includes and add twins) and three queues (git format-patch; GNU `diff -p -u`; quilt
without a Date). Each queue is applied at its base and three later commits by patchkit, git am -3
(a failure skipped with `git am --skip`), patch -F0 and patch -F2 (one patch at a time in a scratch
copy; placed when it exits 0). A placed patch is right when the files it changed are exactly the
expected ones, wrong otherwise; a patch with no right place must be refused.

Issue 25's shapes (testing/reach_shapes.py: one small file each, the right result known) are
measured first, each at its base and at the head, also by patchkit --fuzz 2.

Usage: python benchmarks/reach_bench.py [--quick] [--files N] [--commits N] [--runs N] [--seed N] [--shapes-only]
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
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testing"))  # the tests' scaffolding
from reach_shapes import BASE, HEAD, ShapesUpstream, build_shapes
from reach_upstream import ReachQueue, ReachUpstream, build_reach_upstream

TOOLS = ("patchkit", "git am -3", "patch -F0", "patch -F2")
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@invalid", "LC_ALL": "C"}
Files = dict[str, "str | None"]  # path -> text after the patch (None: deleted)


@dataclass(frozen=True)
class Placement:
    """What one tool did with one patch at one point."""

    changed: Files | None  # the files the patch changed; None: the tool refused it
    reason: str = ""       # why it was refused, as the tool says it


def score(expected: dict[str, str] | None, placement: Placement) -> str:
    """right, wrong or refused: right only when exactly the expected files changed, to the byte."""
    if placement.changed is None:
        return "refused"
    return "right" if expected is not None and placement.changed == expected else "wrong"


def git(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=check, capture_output=True, text=True)


def changed_between(repo: Path, old: str, new: str) -> Files:
    """{path: text} of the files that differ between two commits (renames as delete + add)."""
    raw = git(["diff-tree", "-r", "-z", "--no-renames", old, new], repo).stdout.split("\0")
    entries = [(raw[i + 1], raw[i].split()[3]) for i in range(0, len(raw) - 1, 2)]
    blobs = [blob for _, blob in entries if set(blob) != {"0"}]
    out = subprocess.run(["git", "cat-file", "--batch"], cwd=repo, input="".join(b + "\n" for b in blobs).encode(),
                         capture_output=True, check=True).stdout
    texts: dict[str, str] = {}
    for blob in blobs:
        head, _, out = out.partition(b"\n")
        size = int(head.split()[2])
        texts[blob], out = out[:size].decode(), out[size + 1:]
    return {path: texts.get(blob) for path, blob in entries}


# --- the tools ---------------------------------------------------------------------------------

def run_patchkit(fork: Path, names: list[str], tag: str, out: Path, fuzz: int = 0) -> dict[str, Placement]:
    """`patchkit apply` at tag: each patch's verdict from --json, its bytes from its commit
    (already-applied: it changes nothing)."""
    report = out.with_suffix(".json")
    proc = subprocess.run([sys.executable, "-m", "patchkit", "-q", "apply", f"upstream@{tag}", "-o", str(out),
                           "--json", str(report), *(["--fuzz", str(fuzz)] if fuzz else [])],
                          cwd=fork, env=GIT_ENV, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1) or not report.is_file():
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[0]
        return {name: Placement(None, f"queue stopped (exit {proc.returncode}): {why}") for name in names}
    placements = {}
    for p in json.loads(report.read_text())["patches"]:
        if p.get("commit") and p["verdict"] in ("clean", "offset", "merged", "fuzzed"):
            placements[p["name"]] = Placement(changed_between(out, f"{p['commit']}^", p["commit"]))
            continue
        if p["verdict"] == "already-applied":
            placements[p["name"]] = Placement({})
            continue
        hunks = [f"{h['file']} hunk {h['hunk']}: {h['verdict']}" + (f" ({h['detail']})" if h["detail"] else "")
                 for h in p["hunks"] if h["verdict"] not in ("clean", "offset", "merged", "fuzzed")]
        # the patch's detail lists its hunks: with the hunks' own details, one line each says more
        why = hunks or ([f"{p['verdict']}: {p['detail']}"] if p["detail"] else [])
        placements[p["name"]] = Placement(None, "\n".join([p["verdict"], *why]))
    return placements


def git_am(repo: Path, paths: list[Path], tag: str, tree: Path) -> dict[str, Placement]:
    """`git am -3` of the queue in a worktree at tag, one patch at a time (what the whole queue's run
    does, skipping failures), so that a patch it finds already applied (no commit) is told apart."""
    git(["worktree", "add", "--quiet", "--detach", str(tree), tag], repo)
    try:
        placements = {}
        for path in paths:
            before = git(["rev-parse", "HEAD"], tree).stdout.strip()
            if git(["am", "-3", "--quiet", str(path)], tree, check=False).returncode:
                git(["am", "--abort"], tree, check=False)
                placements[path.name] = Placement(None, "git am failed")
            else:
                placements[path.name] = Placement(changed_between(tree, before, "HEAD"))
        return placements
    finally:
        git(["worktree", "remove", "--force", str(tree)], repo)


def _am_skipping(tree: Path, paths: list[Path]) -> set[int]:
    """Run git am -3 over the paths; the 0-based indexes of the patches it could not apply."""
    failed: set[int] = set()
    proc = git(["am", "-3", "--quiet", *map(str, paths)], tree, check=False)
    state = Path(git(["rev-parse", "--git-path", "rebase-apply"], tree).stdout.strip())
    state = state if state.is_absolute() else tree / state
    while proc.returncode:
        if not (state / "next").is_file():  # git am stopped before it started: nothing applied
            return set(range(len(paths)))
        failed.add(int((state / "next").read_text()) - 1)
        proc = git(["am", "--skip"], tree, check=False)
    return failed


def gnu_patch(tree: Path, paths: list[Path], fuzz: int) -> dict[str, Placement]:
    """GNU patch -F<fuzz>, one patch at a time in the scratch copy, each undone after it is read."""
    placements = {}
    for path in paths:
        names = _named_paths(path)
        before = {n: (tree / n).read_bytes() if (tree / n).is_file() else None for n in names}
        proc = subprocess.run(["patch", "-p1", f"-F{fuzz}", "-N", "--batch", "-s", "--no-backup-if-mismatch",
                               "-r", "-", "-i", str(path)], cwd=tree, capture_output=True, text=True, check=False)
        after = {n: (tree / n).read_bytes() if (tree / n).is_file() else None for n in names}
        for n, data in before.items():
            if data is None:
                (tree / n).unlink(missing_ok=True)
            elif after[n] != data:
                (tree / n).write_bytes(data)
        changed = {n: (a.decode() if a is not None else None) for n, a in after.items() if a != before[n]}
        why = (proc.stdout + proc.stderr).strip().splitlines()
        placements[path.name] = Placement(changed if proc.returncode == 0 else None, why[0] if why else "")
    return placements


def _named_paths(path: Path) -> list[str]:
    """The files a patch names in its ---/+++ lines, less their first directory (-p1)."""
    names = []
    for line in path.read_bytes().decode().splitlines():
        if line.startswith(("--- ", "+++ ")) and not line.startswith(("--- /dev/null", "+++ /dev/null")):
            name = line[4:].split("\t")[0].strip()
            if "/" in name:
                names.append(name.split("/", 1)[1])
    return list(dict.fromkeys(names))


# --- the run -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Result:
    queue: str
    point: str
    patch: str
    tool: str
    outcome: str  # right, wrong, refused
    has_place: bool
    reason: str


def fork_for(root: Path, upstream: Path, folder: Path, name: str) -> Path:
    fork = root / f"fork-{name}"
    fork.mkdir()
    (fork / "patchkit.yaml").write_text(f"upstream:\n  url: {upstream}\n  branch: master\n"
                                        f"patches: {folder}\ncache: {root / 'cache'}\n")
    return fork


def measure(up: ReachUpstream, root: Path) -> list[Result]:
    results = []
    for queue in up.queues:
        fork = fork_for(root, up.repo, queue.folder, queue.name)
        paths = [queue.folder / p.name for p in queue.patches]
        for point in queue.points:
            scratch = root / f"scratch-{queue.name}-{point}"
            git(["worktree", "add", "--quiet", "--detach", str(scratch), point], up.repo)
            by_tool = {
                "patchkit": run_patchkit(fork, [p.name for p in queue.patches], point, root / f"pk-{queue.name}-{point}"),
                "git am -3": git_am(up.repo, paths, point, root / f"am-{queue.name}-{point}"),
                "patch -F0": gnu_patch(scratch, paths, 0),
                "patch -F2": gnu_patch(scratch, paths, 2),
            }
            git(["worktree", "remove", "--force", str(scratch)], up.repo)
            shutil.rmtree(root / f"pk-{queue.name}-{point}", ignore_errors=True)
            for p in queue.patches:
                expected = up.expected[(queue.name, p.name, point)]
                for tool, placements in by_tool.items():
                    placement = placements.get(p.name, Placement(None, "not in the tool's report"))
                    results.append(Result(queue.name, point, p.name, tool, score(expected, placement),
                                          expected is not None, placement.reason))
    return results


def print_table(up: ReachUpstream, results: list[Result]) -> None:
    print("right / wrong / refused, per tool (a patch with no right place must be refused)")
    for queue in up.queues:
        print(f"\nqueue {queue.name} ({queue.style}, {len(queue.patches)} patches, base {queue.base})")
        print(f"  {'point':14s} {'has a place':>11s}" + "".join(f"  {t:>12s}" for t in TOOLS))
        for point in queue.points:
            rows = [r for r in results if r.queue == queue.name and r.point == point]
            placed = len({r.patch for r in rows if r.has_place})
            cells = []
            for tool in TOOLS:
                mine = [r.outcome for r in rows if r.tool == tool]
                cells.append(f"{mine.count('right')}/{mine.count('wrong')}/{mine.count('refused')}")
            label = f"{point} (base)" if point == queue.base else point
            print(f"  {label:14s} {f'{placed}/{len(queue.patches)}':>11s}" + "".join(f"  {c:>12s}" for c in cells))
    print("\ntotal" + "".join(
        f"  {t}: {sum(r.outcome == 'right' for r in results if r.tool == t)} right, "
        f"{sum(r.outcome == 'wrong' for r in results if r.tool == t)} wrong;" for t in TOOLS))

    def row(r: Result) -> tuple[str, str, str]:
        return r.queue, r.point, r.patch

    right = {}
    for r in results:
        if r.outcome == "right" and r.tool != "patchkit":
            right.setdefault(row(r), []).append(r.tool)
    missed = [r for r in results if r.tool == "patchkit" and r.outcome == "refused" and row(r) in right]
    verdicts: dict[str, int] = {}
    for r in missed:
        first = r.reason.split("\n")[0].split(" (exit")[0]
        verdicts[first] = verdicts.get(first, 0) + 1
    print(f"\npatchkit refuses what another tool placed right: {len(missed)} ("
          + ", ".join(f"{v}: {n}" for v, n in sorted(verdicts.items(), key=lambda kv: -kv[1])) + ")")
    stopped: dict[tuple[str, str, str], int] = {}
    for r in missed:
        if r.reason.startswith("queue stopped"):  # one reason for the whole queue: said once
            stopped[(r.queue, r.point, r.reason)] = stopped.get((r.queue, r.point, r.reason), 0) + 1
        else:
            reason = r.reason.replace("\n", "\n        ")
            print(f"  {r.queue}@{r.point} {r.patch} (right by {', '.join(right[row(r)])})\n      {reason}")
    for (queue, point, reason), n in stopped.items():
        print(f"  {queue}@{point}: {n} patches\n      {reason}")
    wrong = [r for r in results if r.outcome == "wrong"]
    print(f"\nwrong placements: {len(wrong)} ("
          + ", ".join(f"{t}: {sum(r.tool == t for r in wrong)}, {sum(r.tool == t and r.has_place for r in wrong)} "
                      "where a right place existed" for t in TOOLS) + ")")
    for tool in TOOLS:
        mine = [r for r in wrong if r.tool == tool]
        shown = mine if tool == "patchkit" else mine[:6]
        for r in shown:
            print(f"  {tool}: {r.queue}@{r.point} {r.patch}" + ("" if r.has_place else " (no right place)"))
        if len(mine) > len(shown):
            print(f"  {tool}: ... and {len(mine) - len(shown)} more")


# --- issue 25's shapes ----------------------------------------------------------------------------

SHAPE_TOOLS = ("patchkit", "patchkit --fuzz 2", "git am -3", "patch -F0", "patch -F2")


def measure_shapes(up: ShapesUpstream, root: Path) -> list[Result]:
    """Every tool on the shapes' queue at its base and at the head."""
    fork = fork_for(root, up.repo, up.folder, "shapes")
    paths = [up.folder / name for name in up.patches]
    results = []
    for point in (BASE, HEAD):
        scratch = root / f"scratch-shapes-{point}"
        git(["worktree", "add", "--quiet", "--detach", str(scratch), point], up.repo)
        names = list(up.patches)
        by_tool = {"patchkit": run_patchkit(fork, names, point, root / f"pk-shapes-{point}"),
                   "patchkit --fuzz 2": run_patchkit(fork, names, point, root / f"pkf-shapes-{point}", fuzz=2),
                   "git am -3": git_am(up.repo, paths, point, root / f"am-shapes-{point}"),
                   "patch -F0": gnu_patch(scratch, paths, 0), "patch -F2": gnu_patch(scratch, paths, 2)}
        git(["worktree", "remove", "--force", str(scratch)], up.repo)
        for shape, name in zip(up.shapes, up.patches):
            expected = shape.expected(point)
            for tool, placements in by_tool.items():
                placement = placements.get(name, Placement(None, "not in the tool's report"))
                results.append(Result("shapes", point, shape.name, tool, score(expected, placement),
                                      expected is not None, placement.reason))
    return results


def print_shapes(up: ShapesUpstream, results: list[Result]) -> None:
    print(f"\nissue 25's shapes: one patch each, at its base ({BASE}) and at the head ({HEAD}); "
          "a trap has no right place at the head")
    print(f"  {'shape':22s} {'point':5s}" + "".join(f"  {t:>17s}" for t in SHAPE_TOOLS))
    for shape in up.shapes:
        for point in (BASE, HEAD):
            cells = {r.tool: r.outcome for r in results if r.patch == shape.name and r.point == point}
            print(f"  {shape.name:22s} {'base' if point == BASE else 'head':5s}"
                  + "".join(f"  {cells[t]:>17s}" for t in SHAPE_TOOLS))
    print("  total right/wrong/refused:" + "".join(
        f"  {t}: {sum(r.outcome == 'right' for r in results if r.tool == t)}/"
        f"{sum(r.outcome == 'wrong' for r in results if r.tool == t)}/"
        f"{sum(r.outcome == 'refused' for r in results if r.tool == t)};" for t in SHAPE_TOOLS))
    for r in results:
        if r.tool.startswith("patchkit") and r.outcome != "right":
            why = r.reason.replace("\n", "\n        ")
            print(f"  {r.tool} {r.outcome} {r.patch}@{'base' if r.point == BASE else 'head'}: {why}")


# --- the speed part ----------------------------------------------------------------------------

def speed(up: ReachUpstream, root: Path, runs: int) -> None:
    """patchkit apply against git worktree add + git am -3 (skipping failures), median of `runs`."""
    fork = fork_for(root, up.repo, up.speed_folder, "speed")
    paths = [up.speed_folder / n for n in (up.speed_folder / "series").read_text().split()]
    fp = up.queues[0]
    out, tree = root / "speed-out", root / "speed-am"
    print(f"\nspeed: {len(paths)} format-patch patches, median of {runs} (wall time, warm mirror)")
    for label, tag in (("everything applies", fp.base), ("a third refused", up.speed_refused)):
        patchkit = [sys.executable, "-m", "patchkit", "-q", "apply", f"upstream@{tag}", "-o", str(out),
                    "--json", str(root / "speed.json")]
        subprocess.run(patchkit, cwd=fork, env=GIT_ENV, capture_output=True, check=False)  # warm the mirror
        verdicts = [p["verdict"] for p in json.loads((root / "speed.json").read_text())["patches"]] \
            if (root / "speed.json").is_file() else []
        times: dict[str, list[float]] = {"patchkit": [], "git": []}
        refused_am = 0
        for _ in range(runs):
            shutil.rmtree(out, ignore_errors=True)
            start = time.perf_counter()
            subprocess.run(patchkit, cwd=fork, env=GIT_ENV, capture_output=True, check=False)
            times["patchkit"].append(time.perf_counter() - start)
            start = time.perf_counter()
            git(["worktree", "add", "--quiet", "--detach", str(tree), tag], up.repo)
            refused_am = len(_am_skipping(tree, paths))
            times["git"].append(time.perf_counter() - start)
            git(["worktree", "remove", "--force", str(tree)], up.repo)
        pk, am = statistics.median(times["patchkit"]), statistics.median(times["git"])
        good = sum(v in ("clean", "offset", "merged", "fuzzed") for v in verdicts)
        print(f"  {label:19s} ({tag}): patchkit apply {pk:6.2f} s ({len(paths) - good} refused), "
              f"git worktree add + git am -3 {am:6.2f} s ({refused_am} refused); ratio {pk / am:.2f}x")
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller upstream and 3 timing runs")
    parser.add_argument("--files", type=int)
    parser.add_argument("--commits", type=int)
    parser.add_argument("--runs", type=int)
    parser.add_argument("--no-speed", action="store_true", help="skip the speed part")
    parser.add_argument("--seed", type=int, default=17, help="another history and queues of the same shape")
    parser.add_argument("--shapes-only", action="store_true", help="only issue 25's shapes (a few seconds)")
    args = parser.parse_args()
    files = args.files or (1500 if args.quick else 3000)
    commits = args.commits or (150 if args.quick else 300)
    runs = args.runs or (3 if args.quick else 5)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="patchkit-reach-") as tmp:
        root = Path(tmp)
        shapes = build_shapes(root / "shapes" / "upstream")
        print_shapes(shapes, measure_shapes(shapes, root))
        if args.shapes_only:
            return
        up = build_reach_upstream(root / "upstream", files=files, commits=commits, seed=args.seed)
        n_files = len(git(["ls-files"], up.repo).stdout.splitlines())
        print(f"reach: {n_files} files, {commits + 1} commits; queues "
              + ", ".join(f"{q.name} ({q.style}, {len(q.patches)})" for q in up.queues))
        print_table(up, measure(up, root))
        if not args.no_speed:
            speed(up, root, runs)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
