"""The upstream mirror: a full bare clone in the cache (of a local upstream, with hardlinks), fetched
with progress, locked while used.

`upstream@REF` resolves here. The mirror also keeps patchkit's own refs (`refs/patchkit/...`):
the 3-way bases of good patches and the commits of the last run, which a fetch never prunes.
"""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from patchkit import git, refs
from patchkit.errors import EnvironmentProblem, PatchkitError
from patchkit.fileio import atomic_folder, remove_aside
from patchkit.project import Project

_FETCH_REFSPECS = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"]
_HEX = re.compile(r"^[0-9a-f]{4,40}$")
_SUFFIX = re.compile(r"[~^].*$", re.DOTALL)  # "~1", "^", "^2~3": a revision relative to a name
# Lock files git leaves behind when killed mid-write; while patchkit holds the mirror's flock no
# other patchkit uses the mirror, so any found then is stale and would fail the next write.
_GIT_LOCKS = ("refs/**/*.lock", "packed-refs.lock", "index.lock", "shallow.lock", "config.lock", "HEAD.lock")

Progress = Callable[[str], None]  # receives lines naming their step ("fetching URL: Receiving objects:  42% ...")


@dataclass(frozen=True)
class Revision:
    """An upstream commit as the user named it."""

    spec: str  # as typed: "upstream@HEAD"
    ref: str  # the part after "@": "HEAD", "b7421", "locked", an id, "master~1"
    commit: str  # full id
    date: str  # committer date, git raw form: the committer date of everything patchkit writes
    branch_name: str  # the output branch: patchkit/<ref>, HEAD being the configured branch,
    # or patchkit/<short id> for a revision expression (git cannot name a branch "master~1")


def parse_spec(spec: str) -> str:
    """The REF of `upstream@REF` (a bare REF is accepted too), validated."""
    ref = spec.removeprefix("upstream@")
    return git.validate_ref(ref, "upstream ref")


class Mirror:
    """The mirror of the configured upstream URL, fetched from FETCH_URL (`--upstream`, else that
    URL). `url` is what the lock and the reports record and what the lock's commit belongs to; an
    override only changes where the objects come from, and gets a mirror of its own so that two
    repositories' refs never mix."""

    def __init__(self, path: Path, url: str, branch: str, lock_commit: str | None,
                 fetch_url: str | None = None) -> None:
        self.path = path
        self.url = url
        self.fetch_url = fetch_url or url
        self.branch = branch
        self.locked_commit = lock_commit  # the lock's commit, when the lock is of this upstream

    @classmethod
    def open(cls, project: Project, url_override: str | None = None) -> Mirror:
        url = absolute_location(project.upstream_url, project.root)
        fetch_url = normalise_url(url_override) if url_override else url
        lock = project.lock()
        key = hashlib.sha256(fetch_url.encode()).hexdigest()[:12]
        slug = re.sub(r"[^A-Za-z0-9]+", "-", fetch_url.rstrip("/").rsplit("/", 1)[-1]).strip("-")
        path = project.cache_dir / "mirrors" / f"{slug or 'upstream'}-{key}"
        git.validate_ref(project.upstream_branch, "upstream branch")
        return cls(path, url, project.upstream_branch,
                   lock.upstream_commit if lock and lock.upstream_url == url else None, fetch_url)

    @property
    def exists(self) -> bool:
        return (self.path / "HEAD").is_file()

    @contextlib.contextmanager
    def locked(self, waiting: Progress | None = None) -> Iterator[Mirror]:
        """Exclusive use: two runs fetching or writing refs at once would corrupt the mirror.
        WAITING hears, once, that another run holds it (else a CI log shows a silent wait)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(self.path.parent / f"{self.path.name}.lock", "w")
        except OSError as exc:
            raise _unwritable(self.path.parent, exc) from None
        with fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if waiting:
                    waiting(f"waiting for another patchkit run to finish with the mirror {self.path}")
                fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                self._remove_stale_locks()
                yield self
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _remove_stale_locks(self) -> None:
        for pattern in _GIT_LOCKS:
            for lock in self.path.glob(pattern):
                lock.unlink(missing_ok=True)
        remove_aside(self.path)  # a first fetch killed before its rename

    def fetch(self, progress: Progress | None = None) -> None:
        """Bring the mirror up to date. A first fetch builds it aside and renames it into place,
        so an interrupted first run leaves no half mirror; later fetches only add objects and
        move refs, so a failed one leaves the previous mirror usable."""
        fetch = ["fetch", "--progress", "--prune", "--no-write-fetch-head", "--", self.fetch_url, *_FETCH_REFSPECS]
        try:
            if self.exists:
                self._transfer(fetch, self.path, progress)
            else:
                with atomic_folder(self.path) as tmp:
                    if not self._clone_local(tmp, progress):
                        git.run(["init", "--bare", "--quiet", str(tmp)])
                        self._transfer(fetch, tmp, progress)
        except git.GitFailed as exc:
            if progress:  # the mirror's copy may be used instead: that is not a fetch still running
                progress(f"could not fetch {self.fetch_url}")
            raise EnvironmentProblem(
                f"cannot fetch upstream {self.fetch_url}: {exc.summary}",
                "check the network, or use --upstream with a local mirror (a path or file:// URL)") from None
        if progress:  # the fetch's last line must not stand for the work that follows it
            progress(f"fetched {self.fetch_url}")

    def _clone_local(self, repo: Path, progress: Progress | None) -> bool:
        """A first mirror of a local upstream as `git clone PATH` makes it: hardlinks to its object
        files, which cost what a clone does instead of a repack of every object, and stay whole
        whatever a gc there removes later (alternates, or --shared, would not). Later fetches from
        the path go through git's local transport, which sends only what is new. False, and REPO
        left empty, when the upstream is remote, or a repository git will not clone so (a symlink in
        its objects/): a fetch reads it."""
        local = self.local_path
        if local is None or not Path(local).is_dir():
            return False
        try:
            self._transfer(["clone", "--bare", "--progress", "--", local, str(repo)], repo, progress)
        except git.GitFailed:
            return False
        return True

    @property
    def local_path(self) -> str | None:
        """Where the upstream is on this machine (a path, or a file:// URL's path), else None."""
        location = self.fetch_url.removeprefix("file://")
        return None if git.is_url(location) else location

    def _transfer(self, args: list[str], repo: Path, progress: Progress | None) -> None:
        for line in git.stream_stderr(args, cwd=repo):
            if progress:
                progress(f"fetching {self.fetch_url}: {line}")

    def resolve(self, spec: str, *, fetch: bool = True, progress: Progress | None = None,
                warn: Callable[[str], None] | None = None) -> Revision:
        ref = parse_spec(spec)
        if fetch:
            try:
                self.fetch(progress)
            except EnvironmentProblem as exc:
                commit = self._lookup(ref) if self.exists else None
                local = self.local_path
                if commit is None and local is not None and not Path(local).exists():
                    raise PatchkitError(f"upstream {self.fetch_url}: no such path",
                                        "fix upstream.url in patchkit.yaml, or use --upstream with "
                                        "an existing repository path or a URL") from None
                if commit is None:
                    raise
                if warn:
                    warn(f"{exc.message}; using the mirror's copy of {ref}")
        elif not self.exists:
            raise EnvironmentProblem(f"no mirror of {self.fetch_url} yet", "run once without --no-fetch")
        commit = self._lookup(ref)
        if commit is None and _SUFFIX.sub("", ref) == "locked" and self._lookup("locked") is None:
            # The lock names a commit this mirror never got: not a ref the user mistyped.
            raise PatchkitError(f"upstream@locked: the locked commit {self.locked_commit[:12]} is not in the "
                                f"mirror of {self.fetch_url}",
                                "fetch from an upstream that has it, or name another upstream ref")
        if commit is None:
            raise PatchkitError(f"unknown upstream ref {ref!r}{self._suggest(ref)}",
                                "name a branch, a tag (b7421, v0.7.0), a commit id, HEAD or locked, "
                                "optionally followed by ~N or ^N")
        date = git.run(["show", "-s", "--format=%cd", "--date=raw", commit], cwd=self.path)
        if _SUFFIX.search(ref):
            branch = git.run(["rev-parse", "--short=12", commit], cwd=self.path)
        else:
            branch = self.branch if ref == "HEAD" else ref
        return Revision(spec=spec, ref=ref, commit=commit, date=date,
                        branch_name=f"patchkit/{branch}")

    def _lookup(self, ref: str) -> str | None:
        """REF's commit: a name looked up among upstream's branches and tags only (never
        patchkit's own refs), then any revision suffix ("~1", "^2") applied to it."""
        suffix = _SUFFIX.search(ref)
        name, rest = (ref[:suffix.start()], suffix.group()) if suffix else (ref, "")
        if name == "locked":
            if not self.locked_commit:
                raise PatchkitError(f"upstream@locked: patchkit.lock has no commit for {self.url}",
                                    "run `patchkit apply upstream@HEAD --update-lock` first")
            candidates = [self.locked_commit]
        elif name == "HEAD":
            candidates = [f"refs/heads/{self.branch}"]
        else:
            candidates = [f"refs/heads/{name}", f"refs/tags/{name}"]
            if _HEX.match(name):
                candidates.append(name)
        for candidate in candidates:
            out = git.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{candidate}{rest}^{{commit}}"],
                          cwd=self.path, check=False)
            if out:
                return out
        return None

    def _suggest(self, ref: str) -> str:
        names = git.run(["for-each-ref", "--format=%(refname:lstrip=2)", "refs/heads", "refs/tags"],
                        cwd=self.path).splitlines()
        close = difflib.get_close_matches(ref, names, n=3, cutoff=0.6)
        return f" (did you mean {', '.join(close)}?)" if close else ""

    def reader(self) -> git.ObjectReader:
        return git.ObjectReader(self.path)

    def base_commits(self) -> dict[str, str]:
        """patch sha256 -> the patched commit of that exact patch from the last fully good run."""
        out = git.run(["for-each-ref", "--format=%(refname:lstrip=3) %(objectname)", refs.BASES],
                      cwd=self.path)
        return dict(line.split(" ", 1) for line in out.splitlines())

    def record_bases(self, commits: dict[str, str]) -> None:
        """Keep each patch's commit (by patch sha256) as its 3-way base for later runs."""
        lines = "".join(f"update {refs.BASES}/{sha} {commit}\n" for sha, commit in commits.items())
        git.run(["update-ref", "--stdin"], cwd=self.path, input=lines)

    def guard_pin(self, commit: str) -> None:
        """The lock never moves backwards, nor to a commit that does not contain the locked one:
        a lock is a promise that everything up to it was carried."""
        locked = self.locked_commit
        if locked is None or locked == commit:
            return
        try:
            git.run(["merge-base", "--is-ancestor", locked, commit], cwd=self.path)
        except git.GitFailed:  # exit 1: not an ancestor; 128: the locked commit is not even here
            raise PatchkitError(
                f"upstream {commit[:12]} does not contain the locked commit {locked[:12]}: the lock would "
                "move backwards or sideways", "name a newer upstream ref, or pass --allow-rewind") from None

    def rename_target(self, path: str, commit: str) -> str | None:
        """Where upstream moved PATH, which COMMIT lacks: git's rename detection on the commit
        that removed it, followed through later moves; None when no commit moved it.

        Only a move made in one commit counts. A file deleted in one commit and a similar one
        added in another are two changes, not a move (git am -3 takes them for one, and even a
        similar file that was there all along: its base tree holds only the patch's files)."""
        moved: str | None = None
        seen = {path}
        while git.run(["rev-parse", "--verify", "--quiet", f"{commit}:{path}"], cwd=self.path, check=False) == "":
            gone_in = git.run(["log", "-1", "--format=%H", commit, "--", path], cwd=self.path)
            target = self._moved_in(gone_in, path) if gone_in else None
            if target is None or target in seen:
                break
            moved = path = target
            seen.add(target)
        return moved

    def commits_changing(self, path: str, text: str, since: str, until: str) -> list[str]:
        """The commits after SINCE up to UNTIL, on every branch merged in, that change how often
        TEXT occurs in PATH (git's pickaxe, `log -S`), oldest first; merges only join what their
        branches did, and are not searched."""
        return git.run(["log", "--reverse", "--format=%H", f"-S{text}", f"{since}..{until}", "--", f":(literal){path}"],
                       cwd=self.path).split()

    def _moved_in(self, commit: str, path: str) -> str | None:
        out = git.run(["diff-tree", "-r", "-M", "--name-status", "-z", f"{commit}^", commit],
                      cwd=self.path, check=False)
        fields = out.split("\0")
        for i, status in enumerate(fields):
            if status.startswith("R") and i + 2 < len(fields) and fields[i + 1] == path:
                return fields[i + 2]
        return None


def _unwritable(folder: Path, exc: OSError) -> EnvironmentProblem:
    return EnvironmentProblem(f"cannot write the cache folder {folder}: {exc.strerror}",
                              "set `cache:` in patchkit.yaml (or XDG_CACHE_HOME) to a writable folder")


def normalise_url(url_or_path: str) -> str:
    """`--upstream`: a URL, or a path that must exist (a typo is bad input, not a network error)."""
    if url_or_path.startswith("-"):
        raise PatchkitError(f"invalid --upstream {url_or_path!r}", "give a URL or a path")
    location = absolute_location(url_or_path, Path.cwd())
    if not git.is_url(location) and not Path(location).exists():
        raise PatchkitError(f"--upstream {url_or_path}: no such path", "give an existing repository path or a URL")
    return location


def absolute_location(url_or_path: str, base: Path) -> str:
    """A URL as it is; a local path made absolute against BASE, since git fetches from inside the
    mirror and the same upstream must always key the same mirror."""
    if git.is_url(url_or_path):
        return url_or_path
    path = Path(url_or_path).expanduser()
    return str((base / path).resolve())
