"""Which upstream commit broke each patch (or made it unnecessary), found without a work tree.

For each patch that needs a human at the target, a binary search runs over the first-parent
commits between the lock and the target that touch what the patch can see: the files of the
patch and of the patches before it (it may depend on them), and the files its site rules read.
A probe applies the queue up to the patch in memory from the mirror's objects (`Applier`) and
runs the patch's rules on the result (`run_checks` on `applier.tree.read`): nothing is checked
out. Probes are kept per (commit, queue prefix), so searches that meet on a commit pay once.

Budget per patch, ceil(log2 n) + 2 probes for n candidates: one at the lock (is it good there
at all?), at most ceil(log2 n) for the search, and one left, spent on the least probed stretch
of the history to see whether it goes good again after bad (a non-monotonic history, where the
named commit is only one of the places it broke). The culprit's parent is the search's last
good probe, or has the same blobs of every path that probe read, so that probe confirms it;
otherwise the parent is probed (from the spare probe).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from patchkit import git
from patchkit.apply import Applier, PatchResult, Verdict
from patchkit.checks import CheckReport, Rule, queue_rules, run_checks
from patchkit.culprit import Culprit
from patchkit.culprit import read as _culprit
from patchkit.project import Project
from patchkit.queue import Patch
from patchkit.upstream import Mirror, Revision

Progress = Callable[[str], None]

# Good without fuzz: probes never fuzz, so a patch fuzzed at the target is bisected for the
# commit that took its clean place away.
_GOOD = frozenset({Verdict.CLEAN, Verdict.OFFSET, Verdict.MERGED})
_ADOPTED = frozenset({Verdict.ALREADY_APPLIED, Verdict.PARTIALLY_APPLIED})
_OWN_FAILURES = frozenset({Verdict.CONFLICT, Verdict.AMBIGUOUS, Verdict.MISSING_FILE})


@dataclass(frozen=True)
class Finding:
    patch: str
    kind: str  # broke, superseded, partially-applied, blocked, malformed, unknown; drift (night.py)
    culprit: Culprit | None
    probes: int  # probes spent on this patch (reused ones included)
    reused: int  # of those, answered from probes made for another search
    candidates: int  # first-parent commits between lock and target touching what the patch sees
    bound: int  # ceil(log2(candidates)) + 2
    monotonic: bool  # False when a probe saw the patch good again after bad
    parent_good: bool  # the culprit's parent is confirmed good
    blocked_by: str | None
    applied_upstream: str | None  # superseded: the DEP-3 line to add before dropping the patch
    detail: str  # one line for humans


@dataclass(frozen=True)
class _State:
    """One patch at one commit, as a probe saw it."""

    bad: bool
    what: str  # "clean", "conflict", "site checks fail", "rules hold on upstream", ...


def bisect_queue(mirror: Mirror, project: Project, queue: Sequence[Patch], good: str | None, bad: str,
                 bad_results: Sequence[PatchResult], bad_checks: CheckReport | None, *,
                 progress: Progress | None = None) -> list[Finding]:
    """One Finding per patch that needs a human at BAD: not good there, failing its own site
    rules, or already (partially) applied upstream. GOOD: the locked commit (None: no lock, so
    nothing is bisected); BAD: the target; BAD_RESULTS: the apply results at BAD, one per patch
    of QUEUE in order; BAD_CHECKS: the site checks at BAD, if any ran."""
    patches = list(queue)
    if len(bad_results) != len(patches):
        raise ValueError("bad_results must hold one result per queue patch")
    rules = queue_rules(project, patches)
    own = [[r for r in rules if r.source == str(p.checks_path)] for p in patches]
    failing = {r.source for r in (bad_checks.failing if bad_checks else ())}
    with mirror.reader() as reader:
        prober = _Prober(mirror, reader, patches, own)
        why_not = _no_bisect(mirror, good, bad)
        findings: dict[str, Finding] = {}
        for i, (patch, result) in enumerate(zip(patches, bad_results)):
            kind = _kind(result, bool(own[i]) and prober.rules_hold_upstream(bad, i),
                         str(patch.checks_path) in failing)
            if kind is None:
                continue
            if kind == "malformed":  # no upstream commit made it so: nothing to bisect
                findings[patch.name] = Finding(patch.name, "malformed", None, 0, 0, 0, 0, True, False, None, None,
                                               f"not bisected: {result.detail}")
            elif kind == "blocked":
                findings[patch.name] = _blocked(patch, result, findings)
            elif why_not or good is None:
                findings[patch.name] = _unknown(patch.name, kind, why_not or "no lock")
            else:
                findings[patch.name] = _Search(prober, mirror, i, kind, good, bad, result, progress).run()
    return list(findings.values())


def _kind(result: PatchResult, rules_hold_upstream: bool, rules_fail: bool) -> str | None:
    """What the target says about one patch: the kind of finding it needs, or None."""
    if result.verdict is Verdict.MALFORMED:
        return "malformed"
    if result.verdict is Verdict.ALREADY_APPLIED or rules_hold_upstream:
        return "superseded"
    if result.verdict is Verdict.PARTIALLY_APPLIED:
        return "partially-applied"
    if result.verdict is Verdict.BLOCKED and not any(h.verdict in _OWN_FAILURES for h in result.hunks):
        return "blocked"
    if result.verdict not in _GOOD or rules_fail:
        return "broke"
    return None


def _no_bisect(mirror: Mirror, good: str | None, bad: str) -> str | None:
    """Why no search can run between GOOD and BAD, if none can."""
    if good is None:
        return "no lock: nothing to bisect from; run `patchkit apply --update-lock` on a good commit"
    if git.run(["merge-base", good, bad], cwd=mirror.path, check=False) != good:
        return f"the locked commit {good[:12]} is not an ancestor of the target {bad[:12]}"
    return None


def _unknown(name: str, kind: str, why: str) -> Finding:
    return Finding(name, "unknown", None, 0, 0, 0, 0, True, False, None, None,
                   f"{kind} at the target; not bisected: {why}")


def _blocked(patch: Patch, result: PatchResult, findings: dict[str, Finding]) -> Finding:
    """A patch that only waits on an earlier one shares that one's culprit: not bisected again."""
    blocker = result.blocked_by[0] if result.blocked_by else None
    found = findings.get(blocker) if blocker else None
    culprit = found.culprit if found else None
    where = f" (which went bad at {culprit.commit[:12]} {culprit.subject})" if culprit else ""
    return Finding(patch.name, "blocked", culprit, 0, 0, 0, 0, found.monotonic if found else True,
                   found.parent_good if found else False, blocker, None,
                   f"blocked by {blocker}{where}; fix that one first")


class _Prober:
    """Probe results per (commit, queue prefix). An Applier per probed commit goes on from the
    patches it applied already, so a later patch's probe there only applies the rest."""

    def __init__(self, mirror: Mirror, reader: git.ObjectReader, patches: list[Patch],
                 rules: list[list[Rule]]) -> None:
        self.mirror = mirror
        self.reader = reader
        self.patches = patches
        self.rules = rules
        self._appliers: dict[str, tuple[Applier, int]] = {}  # commit -> applier, patches applied
        self._verdicts: dict[tuple[str, int], Verdict] = {}
        self._states: dict[tuple[str, int, bool], _State] = {}
        self._upstream: dict[tuple[str, int], bool] = {}

    def seen(self, commit: str, i: int, adopted: bool) -> bool:
        return (commit, i, adopted) in self._states

    def state(self, commit: str, i: int, adopted: bool) -> _State:
        """Patch I at COMMIT: bad when it fails (ADOPTED false) or when upstream has it (true)."""
        key = (commit, i, adopted)
        if key not in self._states:
            self._states[key] = self._adopted(commit, i) if adopted else self._broken(commit, i)
        return self._states[key]

    def _broken(self, commit: str, i: int) -> _State:
        verdict = self._verdict(commit, i)
        if verdict not in _GOOD:
            return _State(True, verdict.value)
        if self.rules[i] and not self._rules_pass(commit, i):
            return _State(True, f"{verdict.value}, site checks fail")
        return _State(False, verdict.value)

    def _adopted(self, commit: str, i: int) -> _State:
        if self.rules[i] and self.rules_hold_upstream(commit, i):
            return _State(True, "its site rules hold on upstream")
        verdict = self._verdict(commit, i)
        return _State(verdict in _ADOPTED, verdict.value)

    def rules_hold_upstream(self, commit: str, i: int) -> bool:
        """`check --on-upstream` for patch I: its rules on COMMIT's own blobs."""
        if (commit, i) not in self._upstream:
            report = run_checks(self.rules[i], lambda path: self.reader.read(commit, path))
            self._upstream[(commit, i)] = report.passed
        return self._upstream[(commit, i)]

    def _verdict(self, commit: str, i: int) -> Verdict:
        if (commit, i) not in self._verdicts:
            applier, done = self._applier(commit, i)
            for j in range(done, i + 1):
                self._verdicts[(commit, j)] = applier.apply(self.patches[j]).result.verdict
            self._appliers[commit] = (applier, i + 1)
        return self._verdicts[(commit, i)]

    def _rules_pass(self, commit: str, i: int) -> bool:
        """Patch I's rules on COMMIT with patches 0..I applied (a tree that is gone once a later
        patch was applied there: then the prefix is applied again)."""
        applier, done = self._appliers[commit]
        if done != i + 1:
            applier, _ = self._applier(commit, -1)
            for j in range(i + 1):
                applier.apply(self.patches[j])
        return run_checks(self.rules[i], applier.tree.read, renames=applier.renames).passed

    def _applier(self, commit: str, i: int) -> tuple[Applier, int]:
        """COMMIT's applier if it has applied no further than patch I, else a fresh one."""
        known = self._appliers.get(commit)
        if known and known[1] <= i:
            return known
        revision = Revision(spec=f"upstream@{commit}", ref=commit, commit=commit, date="",
                            branch_name=f"patchkit/{commit[:12]}")  # date: only commits use it
        return Applier(self.mirror, revision, self.reader), 0


class _Search:
    """The bisect of one patch between the lock and the target."""

    def __init__(self, prober: _Prober, mirror: Mirror, index: int, kind: str, good: str, bad: str,
                 result: PatchResult, progress: Progress | None) -> None:
        self.prober = prober
        self.mirror = mirror
        self.index = index
        self.patch = prober.patches[index]
        self.kind = kind
        self.adopted = kind in ("superseded", "partially-applied")
        self.good = good
        self.bad = bad
        self.progress = progress
        self.paths = sorted({p for q in prober.patches[:index + 1] for p in q.touched_paths}
                            | {r.file for r in prober.rules[index]})
        self.commits = git.run(["--literal-pathspecs", "rev-list", "--first-parent", "--reverse",
                                f"{good}..{bad}", "--", *self.paths], cwd=mirror.path).split()
        n = len(self.commits)
        self.bound = math.ceil(math.log2(n)) + 2 if n else 2
        self.probes = 0
        self.reused = 0
        # index in self.commits -> state; -1 is the lock, n - 1 the target (known, never probed)
        self.seen: dict[int, _State] = {}
        if n:
            self.seen[n - 1] = _State(True, _target_state(kind, result))

    def probe(self, at: int, parent: str | None = None) -> _State:
        """Probe search point AT (-1: the lock), or the culprit's PARENT."""
        commit = parent or (self.good if at == -1 else self.commits[at])
        self.probes += 1
        self.reused += self.prober.seen(commit, self.index, self.adopted)
        state = self.prober.state(commit, self.index, self.adopted)
        if self.progress:
            where = "the culprit's parent" if parent else "the lock" if at == -1 else f"{at + 1}/{len(self.commits)}"
            self.progress(f"bisect {self.patch.name}: probe {self.probes}/{self.bound} at {commit[:12]} "
                          f"({where}): {'bad' if state.bad else 'good'} ({state.what})")
        return state

    def run(self) -> Finding:
        at_lock = self.probe(-1)
        if at_lock.bad:
            return self.finding(None, False, f"{self.kind} at the target, but already at the lock "
                                f"{self.good[:12]} ({at_lock.what}): the queue or its rules changed "
                                "since the lock, not upstream")
        self.seen[-1] = at_lock
        if not self.commits:
            return self.finding(None, False, f"{self.kind} at the target, good at the lock, and no "
                                f"first-parent commit between them touches {', '.join(self.paths)}")
        lo, hi = -1, len(self.commits) - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            self.seen[mid] = self.probe(mid)
            lo, hi = (lo, mid) if self.seen[mid].bad else (mid, hi)
        culprit = self.commits[hi]
        parent_good = self.parent_good(culprit, self.good if lo == -1 else self.commits[lo])
        if self.probes < self.bound:
            self.spot_check()
        return self.finding(culprit, parent_good, "")

    def parent_good(self, culprit: str, last_good: str) -> bool:
        parent = git.run(["rev-parse", f"{culprit}^1"], cwd=self.mirror.path)
        if parent == last_good or self._same_blobs(parent, last_good):
            return True
        return not self.probe(-1, parent).bad

    def _same_blobs(self, a: str, b: str) -> bool:
        def blobs(commit: str) -> str:
            return git.run(["--literal-pathspecs", "ls-tree", "-r", commit, "--", *self.paths],
                           cwd=self.mirror.path)
        return blobs(a) == blobs(b)

    def spot_check(self) -> None:
        """Probe the middle of the widest stretch no probe has seen: good there after a bad
        probe, or bad before a good one, shows the history is not monotonic."""
        known = sorted(self.seen)
        gap, at = max((b - a, (a + b) // 2) for a, b in zip(known, known[1:]))
        if gap > 1:
            self.seen[at] = self.probe(at)

    def monotonic(self) -> tuple[bool, str]:
        bads = [i for i, s in self.seen.items() if s.bad]
        later_good = [i for i, s in self.seen.items() if not s.bad and bads and i > min(bads)]
        if not later_good:
            return True, ""
        first_bad, good_again = min(bads), max(later_good)
        return False, (f"; the history is not monotonic: bad at {self.commits[first_bad][:12]}, good "
                       f"again at {self.commits[good_again][:12]}, so this is one of several commits "
                       "where it went bad")

    def finding(self, commit: str | None, parent_good: bool, why: str) -> Finding:
        monotonic, note = self.monotonic()
        culprit = _culprit(self.mirror, commit) if commit else None
        kind, detail, applied = ("unknown", why, None) if culprit is None else \
            (self.kind, _detail(self.kind, culprit, self.patch.name), None)
        if culprit is not None:
            if kind == "superseded":
                applied = f"Applied-Upstream: {culprit.url or 'commit:' + culprit.commit}"
                detail += f"; drop the patch, recording `{applied}`"
            if not parent_good:
                detail += "; its parent was probed bad too, so an earlier commit shares the blame"
        return Finding(self.patch.name, kind, culprit, self.probes, self.reused, len(self.commits),
                       self.bound, monotonic, parent_good, None, applied, detail + note)


def _target_state(kind: str, result: PatchResult) -> str:
    if kind == "broke" and result.verdict in _GOOD:
        return f"{result.verdict.value}, site checks fail"
    if kind == "superseded" and result.verdict is not Verdict.ALREADY_APPLIED:
        return "its site rules hold on upstream"
    return result.verdict.value


def _detail(kind: str, culprit: Culprit, name: str) -> str:
    what = {"broke": "went bad", "superseded": "was adopted upstream",
            "partially-applied": "was partly adopted upstream"}[kind]
    return f"{name} {what} at {culprit.commit[:12]} \"{culprit.subject}\""  # the subject ends with its (#N)
