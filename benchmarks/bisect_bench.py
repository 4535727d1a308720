"""Wall time and probes of patchkit's bisect against `git bisect run` with `git apply --check`.

Writes an upstream of 5,000 first-parent commits (about 300 of them touching server-context.cpp,
harmlessly but for one that breaks the on-device checkpoint patch), then finds that commit:
  bisect_queue                     probes in memory from the mirror's objects, only the commits
                                   that touch the patch's files
  git bisect run git apply --check  in a temporary clone, checking out every step
and prints both side by side. Usage: python benchmarks/bisect_bench.py [--commits N] [--at K]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from patchkit import git
from patchkit.apply import Applier
from patchkit.checks import queue_rules, run_checks
from patchkit.fixture import build_upstream
from patchkit.nightly.bisect import Finding, bisect_queue
from patchkit.project import Project
from patchkit.queue import Queue
from patchkit.upstream import Mirror

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "testing"))  # the tests' scaffolding
from history_upstream import Event, build_history  # noqa: E402

PATCH = REPO / "patches" / "server-keep-speculative-checkpoints-on-device.patch"
URL = "https://github.com/ggml-org/llama.cpp.git"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--at", type=int, default=3217, help="the breaking commit's position")
    parser.add_argument("--touch-every", type=int, default=17)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="patchkit-bisect-bench-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        upstream = build_upstream(root / "scenarios", PATCH)
        history = build_history(root / "upstream", upstream, args.commits,
                                [Event(args.at, "conflict", "server : also sync the draft state")],
                                touch_every=args.touch_every, merge_every=97)
        built = time.perf_counter() - start
        good, bad = history.commits[0], history.commits[-1]

        mirror = Mirror(history.path / ".git", URL, "master", None)
        # with the patch's site rules (what nightly does), and without (what git apply --check does)
        ours = {label: timed_bisect(root / label, mirror, good, bad, rules)
                for label, rules in (("apply + site checks", True), ("apply only", False))}

        clone = root / "clone"
        git.run(["clone", "--quiet", str(history.path), str(clone)])
        count = root / "steps"
        start = time.perf_counter()
        git.run(["bisect", "start", "--first-parent", bad, good], cwd=clone)
        out = git.run(["bisect", "run", "sh", "-c", f'echo >> "{count}"; exec git apply --check "{PATCH}"'],
                      cwd=clone)
        theirs = time.perf_counter() - start
        named = next(line.split()[0] for line in out.splitlines() if line.endswith("is the first bad commit"))
        steps = len(count.read_text().splitlines())

    expected = history.commits[args.at]
    finding = ours["apply only"][0]
    print(f"upstream: {args.commits} first-parent commits, {finding.candidates} touching the patch's "
          f"files, breaking commit #{args.at} (written in {built:.1f} s)")
    print(f"  {'':42s} {'probes':>6s} {'wall time':>10s}  named")
    for label, (finding, seconds) in ours.items():
        print(f"  {'patchkit bisect_queue, ' + label:42s} {finding.probes:6d} {seconds:9.3f}s  "
              f"{finding.culprit.commit[:12]} (bound {finding.bound})")
    print(f"  {'git bisect run git apply --check':42s} {steps:6d} {theirs:9.3f}s  {named[:12]}")
    print(f"ratio patchkit (apply only) / git bisect: {ours['apply only'][1] / theirs:.2f}x")
    if any(f.culprit.commit != expected for f, _ in ours.values()) or named != expected:
        sys.exit(f"wrong commit named: expected {expected}")


def timed_bisect(fork: Path, mirror: Mirror, good: str, bad: str, rules: bool) -> tuple[Finding, float]:
    """A fork carrying the patch (with its site rules or not) and its bisect: the finding, seconds."""
    (fork / "patches").mkdir(parents=True)
    (fork / "patches" / PATCH.name).write_bytes(PATCH.read_bytes())
    if rules:
        checks = PATCH.with_name(PATCH.name.removesuffix(".patch") + ".checks.yaml")
        (fork / "patches" / checks.name).write_bytes(checks.read_bytes())
    (fork / "patches" / "series").write_text(f"{PATCH.name}\n")
    (fork / "patchkit.yaml").write_text(f"upstream:\n  url: {URL}\ncache: {fork / 'cache'}\n")
    project = Project.load(fork)
    queue = Queue.load(project).patches
    with mirror.reader() as reader:  # the target's state, as `patchkit nightly` has it
        applier = Applier(mirror, mirror.resolve(bad, fetch=False), reader)
        results = [applier.apply(p).result for p in queue]
        report = run_checks(queue_rules(project, queue), applier.tree.read) if rules else None
    start = time.perf_counter()
    (finding,) = bisect_queue(mirror, project, queue, good, bad, results, report)
    return finding, time.perf_counter() - start


if __name__ == "__main__":
    main()
