"""Whether a file's history ever had a section's text (`Applier._ever_had`, the section-fate
witness's history question): asked through the file's renames, as `git log --follow` sees them,
and once per path and text in a run."""

from __future__ import annotations

from pathlib import Path

from conftest import git_identity
from patchkit import git
from patchkit.apply import Applier
from patchkit.upstream import Mirror
from test_apply_edges import commit, upstream_repo

GONE = "static int vk_probe_queues(void)"


def test_a_section_the_file_had_under_its_old_name_is_known(tmp_path: Path):
    body = "    return 1;\n}\n"
    upstream = upstream_repo(tmp_path, {"src/a.c": f"{GONE} {{\n{body}\nint keep(void) {{\n{body}"})
    commit(upstream, {"src/a.c": f"int keep(void) {{\n{body}"}, "drop the probe")
    git.run(["mv", "src/a.c", "src/b.c"], cwd=upstream)
    git.run(["commit", "--quiet", "-m", "move"], cwd=upstream, env=git_identity())
    mirror = Mirror(upstream / ".git", str(upstream), "master", None)
    with mirror.reader() as reader:
        applier = Applier(mirror, mirror.resolve("HEAD", fetch=False), reader)
        assert applier._ever_had("src/b.c", GONE)  # deleted before the move: the history had it
        assert not applier._ever_had("src/b.c", "vk_fix_queue_family(void)")  # never: an invented section
        (upstream / ".git").rename(tmp_path / "elsewhere.git")  # no git could answer now: the run kept it
        assert applier._ever_had("src/b.c", GONE)
        (tmp_path / "elsewhere.git").rename(upstream / ".git")
