"""Semantic drift: a patch that still applies and compiles but relies on a declaration upstream
changed since the lock (a member inserted before the ones it initialises by position, an
enumerator it uses as a number moved, a macro it expands redefined, a default argument or a
parameter type of a function it calls changed), with the upstream commit that changed it.

- `relies`: what a patch's added lines rely on;
- `declarations`: the declarations of one file (never bodies);
- `compare`: a reliance against a declaration, at two commits;
- `tree`: where a name is declared in a commit (the patch's files' includes, then the tree);
- `blame`: the commit that changed it;
- `find`: all of it for a queue, with the `Reviewed-Drift:` trailer that silences a finding.
"""

from patchkit.drift.find import REVIEWED, Drift, find_drift

__all__ = ["REVIEWED", "Drift", "find_drift"]
