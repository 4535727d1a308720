"""A night's outputs: the report files and refreshed patches CI uploads, GitHub's step summary, and
one GitHub issue per failing patch.

The texts come rendered by the caller (report/ sits above this package); what goes where is
decided here. Where they go is checked before the night (`Destinations.check`): a refusal after
it would come after the lock and the patches moved.

The report folder holds this run's files only. What patchkit writes there is listed in
`.patchkit-manifest` (`sha256  path` lines); the next run removes what an earlier one wrote and
that still has those bytes, and never touches anything else. A file patchkit would write over
that it did not write is refused before the night.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from patchkit.github import GitHub, GitHubConfig, Problem, Subject, run_url
from patchkit.errors import PatchkitError
from patchkit.fileio import append, atomic_file, atomic_write
from patchkit.nightly.night import NightlyReport, write_refresh
from patchkit.nightly.refresh import Change
from patchkit.project import Project
from patchkit.queue import Queue
from patchkit.targets import Places, Target, check
from patchkit.untrusted import md_text

REPORT_FILES = ("report.json", "report.md", "junit.xml")
PATCHES = "patches"  # the refreshed patches, beside the reports, for CI to upload
MANIFEST = ".patchkit-manifest"
LOGS = "logs"  # the build logs, beside the reports
NIGHTLY = "nightly"  # the default report folder, in the project's .patchkit/


@dataclass(frozen=True)
class Destinations:
    """Where a night's outputs go."""

    report_dir: Path
    step_summary: Path | None  # $GITHUB_STEP_SUMMARY: shown on the Actions run's page
    github: GitHubConfig | None  # None: no GitHub issues
    run_url: str | None  # the Actions run, linked from each issue

    @classmethod
    def check(cls, project: Project, queue: Queue, report_dir: Path | None, github_issues: bool,
              places: Places, environ: Mapping[str, str] = os.environ, backends: Sequence[str] = ()) -> Destinations:
        """Everything the night will write, checked before the work (exit 2 when it cannot be):
        the report folder (None: the default, in patchkit's own .patchkit/, where every file is
        patchkit's even from before manifests) and the summary against PLACES (patchkit.targets),
        and every file the night may write in the folder (BACKENDS: the build logs too)."""
        own = report_dir is None
        report_dir = check(project.state_dir / NIGHTLY if own else report_dir, Target.FOLDER, places)
        summary = environ.get("GITHUB_STEP_SUMMARY")
        check(summary or None, Target.FILE, places)
        names = [*REPORT_FILES, *(f"{PATCHES}/{patch.name}" for patch in queue.patches),
                 *(f"{LOGS}/{name}{kind}.log" for name in backends for kind in ("", "-unpatched"))]
        for name in (*names, MANIFEST):  # each file too: a symlink in the folder may lead anywhere
            check(report_dir / name, Target.FILE, places)
        ours = _read_manifest(report_dir)
        for name in names:
            if not own and (report_dir / name).exists() and not _is_ours(report_dir, name, ours):
                raise PatchkitError(f"{report_dir / name} was not written by patchkit, and the night would "
                                    "write over it", "remove it, or give a --report-dir of its own")
        return cls(report_dir=report_dir, step_summary=Path(summary) if summary else None,
                   github=GitHubConfig.from_env(environ) if github_issues else None, run_url=run_url(environ))


@dataclass(frozen=True)
class Rendered:
    """The night's report as the caller rendered it."""

    json: str
    markdown: str
    junit: str
    findings: Mapping[str, str]  # patch name -> its finding on one line, for its GitHub issue


def publish(project: Project, report: NightlyReport, rendered: Rendered, where: Destinations,
            warn: Callable[[str], None], progress: Callable[[str], None] | None = None) -> None:
    """Write the night: its report files, staged before patches/ and the lock change and renamed
    into place after (`write_refresh`), so that a report never tells of a lock that did not move;
    then the step summary and GitHub. A GitHub call that fails is a warning: the exit code stays
    the night's, and the next night updates the issues again. PROGRESS: what each GitHub call is
    waiting for."""
    files = {name: text.encode() for name, text in zip(REPORT_FILES, (rendered.json, rendered.markdown,
                                                                      rendered.junit))}
    files.update({f"{PATCHES}/{r.name}": r.data for r in report.refreshed if r.change is not Change.UNCHANGED})
    files.update(build_logs(report))
    _replace_files(where.report_dir, files, lambda: write_refresh(project, report))
    if where.step_summary is not None:
        append(where.step_summary, rendered.markdown + "\n")
    if where.github is not None:
        try:
            _sync_issues(report, rendered, where.github, where.run_url, progress)
        except PatchkitError as exc:
            warn(f"GitHub issues not updated: {exc}")


def build_logs(report: NightlyReport) -> dict[str, bytes]:
    """Each build's log (`logs/BACKEND.log`) and each unpatched build's (`logs/BACKEND-unpatched.log`),
    so that the report folder (the artifact an issue names) holds them."""
    logs = {}
    for result in report.apply.builds.results if report.apply.builds else ():
        with contextlib.suppress(OSError):
            if result.log is not None:
                logs[f"{LOGS}/{result.backend}.log"] = result.log.read_bytes()
    logs.update({f"{LOGS}/{b.backend}-unpatched.log": b.log for b in report.build_blame if b.log})
    return logs


def _replace_files(folder: Path, files: Mapping[str, bytes], between: Callable[[], None]) -> None:
    """Write FILES (path in FOLDER -> bytes) and remove what an earlier run wrote there; BETWEEN runs
    once they are all staged, before any is renamed into place (none is, if it fails). The manifest
    lists both while the files change, so that a run killed half way leaves none unlisted."""
    earlier = {(path, digest) for path, digest in _read_manifest(folder)
               if _is_ours(folder, path, [(path, digest)])}
    now = {(path, hashlib.sha256(data).hexdigest()) for path, data in files.items()}
    _write_manifest(folder, earlier | now)
    # All of them, those this run writes again too: until its own are renamed into place, the
    # folder holds no report rather than the last night's, which tells of another lock.
    for path in sorted({path for path, _ in earlier}):
        (folder / path).unlink(missing_ok=True)
        if (folder / path).parent != folder:
            with contextlib.suppress(OSError):  # not empty: this run's or someone else's files are in it
                (folder / path).parent.rmdir()
    with contextlib.ExitStack() as staged:
        for path, data in files.items():
            staged.enter_context(atomic_file(folder / path)).write(data)
        between()
    _write_manifest(folder, now)


def _read_manifest(folder: Path) -> list[tuple[str, str]]:
    """(path, sha256) pairs; a path may be listed twice while a run replaces it."""
    try:
        text = (folder / MANIFEST).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise PatchkitError(f"{folder / MANIFEST}: cannot read it ({exc})",
                            "remove it, or give a --report-dir of its own") from None
    entries = []
    for line in text.splitlines():
        digest, sep, path = line.partition("  ")
        if not sep or len(digest) != 64 or Path(path).is_absolute() or ".." in Path(path).parts:
            raise PatchkitError(f"{folder / MANIFEST}: not a patchkit manifest ({line[:60]!r})",
                                "remove it, or give a --report-dir of its own")
        entries.append((path, digest))
    return entries


def _write_manifest(folder: Path, entries: set[tuple[str, str]]) -> None:
    atomic_write(folder / MANIFEST, "".join(f"{digest}  {path}\n" for path, digest in sorted(entries)).encode())


def _is_ours(folder: Path, path: str, manifest: list[tuple[str, str]]) -> bool:
    """PATH in FOLDER is listed in MANIFEST with the bytes it has now (patchkit wrote it, nobody changed it)."""
    digests = {digest for listed, digest in manifest if listed == path}
    if not digests:
        return False
    try:
        return hashlib.sha256((folder / path).read_bytes()).hexdigest() in digests
    except OSError:
        return False


def _sync_issues(report: NightlyReport, rendered: Rendered, github: GitHubConfig, run_url: str | None,
                 progress: Callable[[str], None] | None) -> None:
    """One issue per failing patch; those of patches good again are closed."""
    drifted = {d.patch for d in report.apply.drift if not d.reviewed}  # good, but relies on what changed
    # A drifting patch's issue stays open: it applies, but what it relies on changed unreviewed.
    problems, good = patch_issues([(p.name, "drifting" if p.good and p.name in drifted else p.verdict.value,
                                    p.good and p.name not in drifted, p.detail) for p in report.apply.patches],
                                  rendered.findings,
                                  report.apply.upstream_commit)
    GitHub(github, progress=progress).sync_issues(problems, good, run_url)


def patch_issues(patches: Sequence[tuple[str, str, bool, str]], findings: Mapping[str, str],
                 upstream_commit: str | None) -> tuple[list[Problem], list[Subject]]:
    """The failing patches' issues and the good patches, from each patch's (name, verdict, good,
    detail, plain text) and the FINDINGS' Markdown lines (a good patch with a finding failed its
    site checks); each body ends with the command that fixes it at UPSTREAM_COMMIT."""
    fix = (f"\n\nTo fix it: `patchkit rebase upstream@{upstream_commit}`, edit, `patchkit rebase --continue`."
           if upstream_commit else "")
    problems = [Problem(Subject("patch", name), verdict, detail or verdict, findings.get(name, md_text(detail)) + fix)
                for name, verdict, good, detail in patches if not good or name in findings]
    good = [Subject("patch", name) for name, _, good, _ in patches if good and name not in findings]
    return problems, good
