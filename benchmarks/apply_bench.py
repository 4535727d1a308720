"""Wall time of `patchkit apply` against `git clone` + `git am -3` of the same queue.

Generates an upstream of ~1,500 files and 40 patches whose every hunk needs an offset on HEAD,
then times, as whole commands in fresh processes, with a warm mirror:
  patchkit apply upstream@HEAD -o OUT           (fetch, ladder, commits, checkout of the branch)
  git clone UPSTREAM OUT && git -C OUT am -3 PATCHES...
and prints the medians and their ratio. Usage: python benchmarks/apply_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testing"))  # the tests' scaffolding
from bulk_upstream import build_bulk_upstream  # noqa: E402

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@invalid"}


def timed(commands: list[list[str]], cwd: Path) -> float:
    start = time.perf_counter()
    for command in commands:
        subprocess.run(command, cwd=cwd, env=GIT_ENV, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def bulk_arguments(doc: str) -> argparse.Namespace:
    """--runs, --files, --patches: the options every benchmark on the bulk upstream takes."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--files", type=int, default=1500)
    parser.add_argument("--patches", type=int, default=40)
    return parser.parse_args()


def bulk_fork(root: Path, files: int, patches: int) -> tuple[Path, list[Path], Path]:
    """The bulk upstream, its queue, and a fork carrying that queue: (upstream, patches, fork)."""
    upstream = root / "upstream"
    queue = build_bulk_upstream(upstream, files, patches)
    fork = root / "fork"
    fork.mkdir()
    (fork / "patchkit.yaml").write_text(
        f"upstream:\n  url: {upstream}\n  branch: master\n"
        f"patches: {queue[0].parent}\ncache: {root / 'cache'}\n")
    return upstream, queue, fork


def print_medians(results: dict[str, list[float]], args: argparse.Namespace) -> dict[str, float]:
    """Print (and return) the median wall time of each command timed on the bulk upstream."""
    print(f"upstream: {args.files} files; queue: {args.patches} patches, every hunk offset; "
          f"{args.runs} runs each, median wall time")
    medians = {name: statistics.median(times) for name, times in results.items()}
    width = max(map(len, medians))
    for name, median in medians.items():
        print(f"  {name:{width}s} {median:7.3f} s")
    return medians


def main() -> None:
    args = bulk_arguments(__doc__)
    with tempfile.TemporaryDirectory(prefix="patchkit-bench-") as tmp:
        root = Path(tmp)
        upstream, patches, fork = bulk_fork(root, args.files, args.patches)
        out = root / "out"
        patchkit = [sys.executable, "-m", "patchkit", "-q", "apply", "upstream@HEAD", "-o", str(out)]
        git_am = [["git", "clone", "--quiet", str(upstream), str(out)],
                  ["git", "-C", str(out), "am", "-3", "--quiet", *map(str, patches)]]

        timed([patchkit], fork)  # warm the mirror, as a daily user has it
        results: dict[str, list[float]] = {"patchkit apply": [], "git clone + git am -3": []}
        for _ in range(args.runs):
            for name, commands in (("patchkit apply", [patchkit]), ("git clone + git am -3", git_am)):
                shutil.rmtree(out, ignore_errors=True)
                results[name].append(timed(commands, fork))

    medians = print_medians(results, args)
    ratio = medians["patchkit apply"] / medians["git clone + git am -3"]
    print(f"ratio patchkit / git am -3: {ratio:.2f}x (target <= 1.2x)")


if __name__ == "__main__":
    main()
