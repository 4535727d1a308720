"""Wall time of `patchkit apply` from a local upstream, cold and warm, against `git clone` + `git am -3`.

On the bulk upstream (1,500 files, a 40-patch queue whose every hunk needs an offset) grown by a
few thousand first-parent commits, and, with --upstream PATH, on a real llama.cpp repository with
this repository's queue (patches/), times as whole commands in fresh processes:
  cold   patchkit apply upstream@HEAD -o OUT   with an empty cache: the mirror is made first
  warm   the same with the mirror of the previous run (a fetch that finds nothing new)
  git    git clone UPSTREAM OUT && git -C OUT am -3 PATCHES...
and prints the medians and the ratios to git's (target: cold <= 2x).
Usage: python benchmarks/clone_bench.py [--quick] [--runs N] [--commits N] [--upstream PATH]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from apply_bench import bulk_fork, timed  # the same fixture and timing

from patchkit import git
from patchkit.patchfile.series import parse_series

REPO = Path(__file__).resolve().parent.parent


def grow(upstream: Path, commits: int) -> None:
    """Add COMMITS first-parent commits to master, each changing a small file of its own area
    (no file the queue touches), in one `git fast-import`, then pack the repository as a real
    one is."""
    out = [b"reset refs/heads/master\nfrom refs/heads/master^0\n\n"]
    for i in range(1, commits + 1):
        message = f"docs : note {i} (#{20000 + i})\n".encode()
        text = f"note {i}\n".encode()
        out.append(f"commit refs/heads/master\nauthor Up <up@invalid> {1700000000 + 600 * i} +0000\n"
                   f"committer Up <up@invalid> {1700000000 + 600 * i} +0000\ndata {len(message)}\n".encode()
                   + message + f"M 100644 inline docs/notes/note-{i % 200:03d}.md\ndata {len(text)}\n".encode()
                   + text + b"\n")
    git.run(["fast-import", "--quiet"], cwd=upstream, input=b"".join(out))
    git.run(["reset", "--quiet", "--hard", "master"], cwd=upstream)
    git.run(["gc", "--quiet"], cwd=upstream)


def real_fork(root: Path, upstream: Path) -> tuple[list[Path], Path]:
    """This repository's queue on the upstream at PATH: (patches in series order, fork)."""
    patches = root / "patches"
    shutil.copytree(REPO / "patches", patches)
    fork = root / "fork"
    fork.mkdir()
    (fork / "patchkit.yaml").write_text(f"upstream:\n  url: {upstream}\n  branch: "
                                        f"{git.run(['branch', '--show-current'], cwd=upstream)}\n"
                                        f"patches: {patches}\ncache: {root / 'cache'}\n")
    return [patches / name for name in parse_series(patches / "series")], fork


def measure(upstream: Path, patches: list[Path], fork: Path, runs: int) -> dict[str, float]:
    out = fork.parent / "out"
    cache = fork.parent / "cache"
    patchkit = [[sys.executable, "-m", "patchkit", "-q", "apply", "upstream@HEAD", "-o", str(out)]]
    git_am = [["git", "clone", "--quiet", str(upstream), str(out)],
              ["git", "-C", str(out), "am", "-3", "--quiet", *map(str, patches)]]
    times: dict[str, list[float]] = {"patchkit apply, cold": [], "patchkit apply, warm": [],
                                     "git clone + git am -3": []}
    for _ in range(runs):
        for name, commands, cold in (("git clone + git am -3", git_am, False),
                                     ("patchkit apply, cold", patchkit, True),
                                     ("patchkit apply, warm", patchkit, False)):
            shutil.rmtree(out, ignore_errors=True)
            if cold:
                shutil.rmtree(cache, ignore_errors=True)
            times[name].append(timed(commands, fork))
    return {name: statistics.median(values) for name, values in times.items()}


def print_table(title: str, medians: dict[str, float]) -> None:
    print(title)
    git_time = medians["git clone + git am -3"]
    for name, median in medians.items():
        print(f"  {name:24s} {median:7.3f} s  {median / git_time:5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 commits and 3 runs")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--commits", type=int)
    parser.add_argument("--upstream", type=Path, help="a llama.cpp repository (a path) to measure on too")
    args = parser.parse_args()
    runs = args.runs or (3 if args.quick else 5)
    commits = args.commits or (1000 if args.quick else 4000)

    print(f"median of {runs} runs; ratio to git clone + git am -3 (target: cold <= 2x)")
    with tempfile.TemporaryDirectory(prefix="patchkit-clone-bench-") as tmp:
        root = Path(tmp) / "bulk"
        upstream, patches, fork = bulk_fork(root, 1500, 40)
        grow(upstream, commits)
        print_table(f"bulk upstream: 1,500 files, {commits + 2} commits; queue: 40 patches",
                    measure(upstream, patches, fork, runs))
        if args.upstream:
            upstream = args.upstream.resolve()
            patches, fork = real_fork(Path(tmp) / "real", upstream)
            count = git.run(["rev-list", "--count", "HEAD"], cwd=upstream)
            print_table(f"{upstream}: {count} commits; queue: {len(patches)} patches of {REPO / 'patches'}",
                        measure(upstream, patches, fork, runs))


if __name__ == "__main__":
    main()
