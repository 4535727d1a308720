"""A real queue, side by side: which patches patchkit, git am -3 and GNU patch place on an upstream
commit, and where a placement differs from git am -3's (issue 17's check on third-party queues,
which this repository never holds: point it at a folder of patches you have).

QUEUE is a folder with a `series` file (quilt's, or one name per line) of -p1 mail or diff patches;
a combined patch can be split into one patch per file with --split FILE (its paths stripped of
--strip leading components, as `patch -pN`). Each patch is tried alone on REF by git am -3 and
patch -F0/-F2 (independent per-file patches), and the whole queue by patchkit apply (and with --fuzz 2).

Usage: python benchmarks/real_queue.py UPSTREAM_REPO REF QUEUE [--split FILE --strip N]
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

from reach_bench import Placement, changed_between, fork_for, git, gnu_patch, run_patchkit


def split(combined: Path, strip: int, queue: Path) -> None:
    """One -p1 mail patch per file of COMBINED, in its order, and their series."""
    parts = [p for p in re.split(r"(?m)^(?=diff --git )", combined.read_text()) if p.startswith("diff --git")]
    queue.mkdir(parents=True, exist_ok=True)
    names = []
    extra = re.compile(r"(?<= [ab]/)(?:[^/\s]+/){%d}" % (strip - 1))  # what -pN strips beyond a/ and b/
    for i, part in enumerate(parts, 1):
        header, at, hunks = part.partition("\n@@")  # the paths are in the header, never in a hunk
        part = extra.sub("", header) + at + hunks
        path = re.match(r"diff --git a/(\S+)", part).group(1)
        name = f"{i:04d}-{path.replace('/', '-')}.patch"
        part += "" if part.endswith("\n") else "\n"  # never strip: a last blank context line is " \n"
        (queue / name).write_text(f"From: {combined.stem} <queue@invalid>\nDate: Mon, 1 Dec 2026 00:00:00 +0000\n"
                                  f"Subject: [PATCH] {path}\n\n---\n{part}")
        names.append(name)
    (queue / "series").write_text("\n".join(names) + "\n")


def am_each(repo: Path, paths: list[Path], ref: str, tree: Path) -> dict[str, Placement]:
    """git am -3 of each patch alone on REF."""
    git(["worktree", "add", "--quiet", "--detach", str(tree), ref], repo)
    placed = {}
    for p in paths:
        git(["reset", "--quiet", "--hard", ref], tree)
        ok = git(["am", "-3", str(p)], tree, check=False).returncode == 0
        if not ok:
            git(["am", "--abort"], tree, check=False)
        placed[p.name] = Placement(changed_between(tree, ref, "HEAD") if ok else None, "git am failed")
    git(["worktree", "remove", "--force", str(tree)], repo)
    return placed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("upstream", type=Path)
    parser.add_argument("ref")
    parser.add_argument("queue", type=Path)
    parser.add_argument("--split", type=Path, help="a combined patch to split into QUEUE first")
    parser.add_argument("--strip", type=int, default=1)
    args = parser.parse_args()
    upstream, queue = args.upstream.resolve(), args.queue.resolve()
    # one commit id: a name like HEAD would mean another commit inside the worktrees the tools change
    ref = git(["rev-parse", "--verify", f"{args.ref}^{{commit}}"], upstream).stdout.strip()
    if args.split:
        split(args.split, args.strip, queue)
    paths = [queue / line.split()[0] for line in (queue / "series").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    with tempfile.TemporaryDirectory(prefix="patchkit-real-") as tmp:
        root = Path(tmp)
        fork = fork_for(root, upstream, queue, "real")
        scratch = root / "scratch"
        git(["worktree", "add", "--quiet", "--detach", str(scratch), ref], upstream)
        names = [p.name for p in paths]
        results = {"patchkit": run_patchkit(fork, names, ref, root / "pk"),
                   "patchkit --fuzz 2": run_patchkit(fork, names, ref, root / "pkf", fuzz=2),
                   "git am -3": am_each(upstream, paths, ref, root / "am"),
                   "patch -F0": gnu_patch(scratch, paths, 0), "patch -F2": gnu_patch(scratch, paths, 2)}
        git(["worktree", "remove", "--force", str(scratch)], upstream)
    print(f"{len(paths)} patches on {args.ref} ({ref[:12]}): placed per tool")
    for tool, placed in results.items():
        print(f"  {tool:17s} {sum(p.changed is not None for p in placed.values())}/{len(paths)}")
    print("per patch (a placement unlike git am -3's is marked !=am, where git am -3 refused one unlike patch -F2's "
          "!=F2; patchkit's reason where another tool placed it):")
    for p in paths:
        judge = "git am -3" if results["git am -3"][p.name].changed is not None else "patch -F2"
        theirs = results[judge][p.name].changed
        mark = " !=am" if judge == "git am -3" else " !=F2"
        cells = [f"{tool}: {'placed' if r[p.name].changed is not None else 'refused'}"
                 + (mark if r[p.name].changed not in (None, theirs) and theirs is not None else "")
                 for tool, r in results.items()]
        print(f"  {p.name}: " + ", ".join(cells))
        if results["patchkit"][p.name].changed is None and any(r[p.name].changed is not None for r in results.values()):
            print("      patchkit: " + results["patchkit"][p.name].reason.replace("\n", "\n      "))


if __name__ == "__main__":
    main()
