"""The 3-way merge's reach (issue 17, classes 3 and 5) and its one witness rule. Each fixture is
a patch made with `git format-patch --full-index` at upstream's first commit (so its index blob
is a base), applied after upstream moved on; where git am -3 places it right, patchkit gives the
same bytes, and where git am -3 places it wrong, patchkit refuses."""

from __future__ import annotations

import pytest

from git_am import git_am_3
from patchkit.apply import Verdict
from test_apply_edges import apply, commit, make_patches, replace, upstream_repo

# Two methods whose bodies are the same lines: a hunk in one of them matches the other too.
METHODS = """\
#import "GGMLQueue.h"

@implementation GGMLQueue

- (void)drainEncoder {
    [self lock];
    NSInteger count = self.pending;
    if (count > 0) {
        [self prepare];
    }
    [self.queue flush];
    [self unlock];
}

- (void)drainDecoder {
    [self lock];
    NSInteger count = self.pending;
    if (count > 0) {
        [self prepare];
    }
    [self.queue flush];
    [self unlock];
}

@end
"""
PREPARE = "        [self prepare];\n"
PREPARED = "        [self prepare:YES];\n"


@pytest.mark.parametrize("path", ["ggml/src/ggml-metal/ggml-queue.m", "docs/queue.txt"])
def test_a_hunk_the_line_steps_moved_is_refused_when_the_merge_conflicts(tmp_path, path):
    """Upstream edits the line next to the patch's change in the first method: the hunk's context
    is found only in the twin, which the line steps take (git am -3 too: its `git apply` step
    offsets the hunk there). The merge from the patch's base, the one witness of where the base's
    lines went, conflicts: the twin is not known to be the place, so the hunk is refused."""
    upstream = upstream_repo(tmp_path, {path: METHODS})
    (patch,) = make_patches(tmp_path, upstream, [("prepare-all", replace(path, PREPARE, PREPARED))])
    assert "index " in patch.read_text()
    edited = METHODS.replace("    if (count > 0) {\n", "    if (count > 0 && self.ready) {\n", 1)
    commit(upstream, {path: "// upstream: the queue drains both ways\n" + edited}, "queue : drain when ready")

    project, report = apply(tmp_path / "fork", upstream, [patch])
    (result,) = report.patches
    assert result.verdict is Verdict.CONFLICT and result.commit is None
    (hunk,) = result.hunks
    assert "3-way merge" in hunk.detail and "conflicts" in hunk.detail
    assert (project.output_dir / path).read_text() == "// upstream: the queue drains both ways\n" + edited
    # git am -3 puts the change into the twin: the method the patch never touched.
    am = git_am_3(upstream, patch, tmp_path / "am")
    assert am is not None
    assert (am / path).read_text() == "// upstream: the queue drains both ways\n" + \
        edited[::-1].replace(PREPARE[::-1], PREPARED[::-1], 1)[::-1]
