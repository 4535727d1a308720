"""Wall time of `patchkit export` and `patchkit dist` against doing the same by hand with git.

On the apply benchmark's upstream (~1,500 files, 40 patches, every hunk offset), locked and with a
warm mirror, times as whole commands in fresh processes:
  patchkit export quilt OUT          vs  git clone + git am -3          (the apply both stand on)
  patchkit dist -o FILE.tar.gz       vs  git clone + git am -3 + git archive --format=tar.gz
and, for the packager's side, `quilt push -a --fuzz=0` of the export on a fresh clone.
Prints the medians and the ratios. Usage: python benchmarks/export_bench.py [--runs N]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from apply_bench import bulk_arguments, bulk_fork, print_medians, timed  # the same set-up and timing


def main() -> None:
    args = bulk_arguments(__doc__)
    with tempfile.TemporaryDirectory(prefix="patchkit-bench-") as tmp:
        root = Path(tmp)
        upstream, patches, fork = bulk_fork(root, args.files, args.patches)
        patchkit = [sys.executable, "-m", "patchkit", "-q"]
        timed([[*patchkit, "apply", "upstream@HEAD", "-o", str(root / "applied"), "--update-lock"]], fork)

        export_dir, tree, tarball = root / "export", root / "tree", root / "dist" / "llama.cpp.tar.gz"
        clone = ["git", "clone", "--quiet", str(upstream), str(tree)]
        git_am = [clone, ["git", "-C", str(tree), "am", "-3", "--quiet", *map(str, patches)]]
        commands = {
            "patchkit export quilt": [[*patchkit, "export", "quilt", str(export_dir), "--force", "--no-fetch"]],
            "git clone + git am -3": git_am,
            "patchkit dist (.tar.gz)": [[*patchkit, "dist", "-o", str(tarball), "--no-fetch"]],
            "... + git archive (.tar.gz)": [*git_am, ["git", "-C", str(tree), "archive", "--format=tar.gz",
                                                      "-o", str(root / "archive.tar.gz"), "HEAD"]],
            # quilt has no -C: coreutils' env changes into the clone for it
            "git clone + quilt push -a": [clone, ["env", "-C", str(tree), f"QUILT_PATCHES={export_dir}",
                                                  "quilt", "push", "-a", "--fuzz=0", "-q"]],
        }
        results: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, steps in commands.items():
                shutil.rmtree(tree, ignore_errors=True)
                results[name].append(timed(steps, fork))

    medians = print_medians(results, args)
    print(f"ratio export / git am -3:            {medians['patchkit export quilt'] / medians['git clone + git am -3']:.2f}x")
    print(f"ratio dist / git am -3 + git archive: "
          f"{medians['patchkit dist (.tar.gz)'] / medians['... + git archive (.tar.gz)']:.2f}x")


if __name__ == "__main__":
    main()
