"""Cost of the semantic drift check per patch on a llama.cpp-sized tree, and what it finds.

TREE is a git repository of a llama.cpp tree (its HEAD is used; nothing of it is copied into this
repository). The benchmark clones it into a temporary folder, locks the queue of this repository
(patches/) there, then adds COMMITS first-parent commits that change `include/llama.h`: with
`--change none` a comment each (nothing the queue relies on moves: there must be no finding);
with `--change macro` one of them, in the middle, also gives LLAMA_STATE_SEQ_FLAGS_ON_DEVICE
another value (the queue's patch uses it as a number: one finding, naming that commit). A second
patch joins the queue: an ordinary one, a function appended to tools/server/server-context.cpp
whose lines call what any patch calls (`std::min`, `std::vector<int>(n)`, `memcpy`, `printf`,
the llama API, `json::parse`, bare `init`/`load`/`format`): nothing of it drifts, and none of it
may send the check through the whole tree. The time is `find_drift` for each patch at the last
commit against the lock, on a warm mirror (the apply has run, tree-sitter is loaded): the first
run (nothing parsed yet) and the median of RUNS.

Usage: python benchmarks/drift_bench.py TREE [--change none|macro] [--commits 64] [--runs 5]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from conftest import git_identity, write_project  # noqa: E402

from patchkit.drift import find_drift  # noqa: E402
from patchkit.pipeline import ApplyOptions, run_apply  # noqa: E402
from patchkit.project import Project  # noqa: E402
from patchkit.queue import Queue  # noqa: E402
from patchkit.upstream import Mirror  # noqa: E402

FLAG = re.compile(r"(#define LLAMA_STATE_SEQ_FLAGS_ON_DEVICE\s+)(\S+)")
CALLS_FILE = "tools/server/server-context.cpp"
CALLS = """
static void bench_ordinary_calls(llama_context * ctx, int n_draft_max) {
    int a1 = std::min(n_draft_max, 4);
    int a2 = std::max(a1, 2);
    std::string s1 = std::to_string(a2);
    char buf1[64];
    snprintf(buf1, sizeof(buf1), "%d", a1);
    printf("%s\\n", buf1);
    size_t l1 = strlen(buf1);
    memcpy(buf1, s1.c_str(), std::min(l1, s1.size()));
    int n1 = llama_n_ctx(ctx);
    auto v1 = std::vector<int>(n1);
    std::fill(v1.begin(), v1.end(), 0);
    std::sort(v1.begin(), v1.end());
    int a3 = abs(a1 - a2);
    int a4 = (int) LLAMA_VOCAB_TYPE_BPE + GGML_TYPE_F16;
    GGML_ASSERT(a3 >= 0 && a4 >= 0);
    auto j1 = json::parse("{}");
    auto r1 = format("%d", a1);
    auto e1 = encode(s1);
    bool ok1 = load(s1);
    init(n1);
    reset();
    (void) j1; (void) r1; (void) e1; (void) ok1;
}
"""


def git(repo: Path, *args: str, date: str = "1790600000 +0000") -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(repo),
                               **git_identity("Bench", "bench@invalid", date)}).stdout.strip()


def history(scratch: Path, change: str, commits: int) -> tuple[str, str | None]:
    """The clone's lock commit; COMMITS commits on it; the commit that moved the flag, if any."""
    lock = git(scratch, "rev-parse", "HEAD")
    header = scratch / "include" / "llama.h"
    culprit = None
    for i in range(commits):
        text = header.read_text() + f"// bench {i}\n"
        if change == "macro" and i == commits // 2:
            text, n = FLAG.subn(r"\g<1>(\g<2> << 4)", text, count=1)
            if not n:
                raise SystemExit("include/llama.h defines no LLAMA_STATE_SEQ_FLAGS_ON_DEVICE")
        header.write_text(text)
        git(scratch, "commit", "--quiet", "-am", f"bench : change {i} (#{9000 + i})", date=f"{1790600000 + i} +0000")
        if change == "macro" and i == commits // 2:
            culprit = git(scratch, "rev-parse", "HEAD")
    return lock, culprit


def calls_patch(scratch: Path, out: Path) -> Path:
    """The ordinary patch, made at the clone's HEAD (the lock), in OUT."""
    git(scratch, "checkout", "--quiet", "-b", "bench-calls")
    source = scratch / CALLS_FILE
    if not source.exists():
        raise SystemExit(f"the tree has no {CALLS_FILE}")
    source.write_text(source.read_text() + CALLS)
    git(scratch, "commit", "--quiet", "-am", "server : ordinary calls")
    patch = Path(git(scratch, "format-patch", "-1", "-o", str(out), "--no-signature", "HEAD"))
    git(scratch, "checkout", "--quiet", "-")
    git(scratch, "branch", "--quiet", "-D", "bench-calls")
    return patch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--change", choices=("none", "macro"), default="none")
    parser.add_argument("--commits", type=int, default=64)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="drift-bench-") as tmp:
        scratch = Path(tmp) / "llama.cpp"
        git(Path(tmp), "clone", "--quiet", "--no-hardlinks", str(args.tree.resolve()), str(scratch))
        calls = calls_patch(scratch, Path(tmp) / "calls")
        lock, culprit = history(scratch, args.change, args.commits)
        patches = [p.path for p in Queue.load(Project.load(REPO)).patches] + [calls]
        project = Project.load(write_project(Path(tmp) / "fork", str(scratch), patches))
        run_apply(project, ApplyOptions(spec=f"upstream@{lock}", check=False, update_lock=True))
        target = git(scratch, "rev-parse", "HEAD")
        report = run_apply(project, ApplyOptions(spec=f"upstream@{target}", check=False))
        bad = [p.name for p in report.patches if not p.good]
        if bad:
            raise SystemExit(f"not good at the target: {', '.join(bad)}")
        queue = Queue.load(project).patches
        mirror = Mirror.open(project)
        print(f"tree {args.tree} ({git(scratch, 'ls-files').count(chr(10)) + 1} files), {args.commits} commits "
              f"after the lock, change: {args.change}")
        found = []
        with mirror.locked():
            for patch, result in zip(queue, report.patches):
                times = []
                for _ in range(args.runs + 1):
                    start = time.perf_counter()
                    drift = find_drift(mirror, [patch], [result], lock, target)
                    times.append(time.perf_counter() - start)
                found += drift
                print(f"{patch.name}: first run {times[0]:.3f} s, median of {args.runs} warm runs "
                      f"{statistics.median(times[1:]):.3f} s")
        for d in found:
            named = d.culprit.commit[:12] if d.culprit else "unknown"
            expected = "" if culprit is None else (" (the commit that moved it)" if d.culprit and
                                                   d.culprit.commit == culprit else " (NOT the commit that moved it)")
            print(f"finding: {d.patch}: {d.detail}; commit {named}{expected}")
        if not found:
            print("no finding")


if __name__ == "__main__":
    main()
