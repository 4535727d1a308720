"""A commit whose note was lost but which is the very commit a patch was recorded as keeps that
patch: the same commit is the strongest match, and alone is enough."""

from __future__ import annotations

from patchkit import git
from patchkit.branch.checkout import BranchCommit, Checkout
from patchkit.branch.identity import match_unnoted

from conftest import git_identity


def test_commits_matched_by_their_own_id_keep_their_patches(tmp_path):
    git.run(["init", "-q", str(tmp_path)])
    ids = []
    for n in ("a", "b"):
        (tmp_path / n).write_text(n + "\n")
        git.run(["add", n], cwd=tmp_path)
        git.run(["commit", "-qm", f"add {n}"], cwd=tmp_path, env=git_identity())
        ids.append(git.run(["rev-parse", "HEAD"], cwd=tmp_path).strip())
    checkout = Checkout(tmp_path, "patchkit/x", ids[0], ids[1])
    commits = [BranchCommit(i, "", "", f"add {n}", ()) for i, n in zip(ids, "ab")]
    said = []
    matched = match_unnoted(checkout, commits, {"a.patch": ids[0], "b.patch": ids[1]},
                            {"a.patch": "add a", "b.patch": "add b"}, said.append)
    assert [c.patches for c in matched] == [("a.patch",), ("b.patch",)]
    assert said and "names kept" in said[0]
