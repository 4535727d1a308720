"""patchkit's own refs, all under `refs/patchkit/`, named here once.

In the mirror: the 3-way bases of good patches (by patch sha256) and the result of the last
`apply` per project and branch. In the checked-out tree: the upstream commit it was applied to,
the tip patchkit last checked out per branch, and commits of the user's that `--force` set aside.
Fetches never touch them (the mirror fetches only `refs/heads/*` and `refs/tags/*`).
"""

from __future__ import annotations

NAMESPACE = "refs/patchkit"
BASES = f"{NAMESPACE}/bases"  # in the mirror: <patch sha256> -> that patch's commit in a good run
RESULTS = f"{NAMESPACE}/results"  # in the mirror: <project key>/<branch> -> the last apply's tip
UPSTREAM = f"{NAMESPACE}/upstream"  # in the checkout: the upstream commit under the patches
APPLIED = f"{NAMESPACE}/applied"  # in the checkout: <branch> -> the tip patchkit last checked out
SAVED = f"{NAMESPACE}/saved"  # in the checkout: commits of the user's that --force set aside


def result(project_key: str, branch: str) -> str:
    """Where `apply` keeps its result for PROJECT_KEY's BRANCH (patchkit/<ref>)."""
    return f"{RESULTS}/{project_key}/{branch}"
