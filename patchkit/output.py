"""The output repository: where the patched branch is checked out for the user and for builds.

Whatever is in it may be the user's work, so every step here first decides whether it may touch
the tree at all, and says so when it may not.
"""

from __future__ import annotations

from pathlib import Path

from patchkit import git
from patchkit.errors import PatchkitError
from patchkit.upstream import Mirror, Revision


def check_output(output: Path, project_root: Path, force: bool) -> None:
    """Refuse, before any work, an output folder that patchkit must not overwrite."""
    if output == project_root or output in project_root.parents:
        raise PatchkitError(f"output {output} would replace the fork repository itself",
                            "give the patched tree a folder of its own, such as ./llama.cpp")
    if output.exists() and not output.is_dir():
        raise PatchkitError(f"output {output} is not a folder", "give a folder with -o")
    if not output.exists() or not any(output.iterdir()):
        return
    if not (output / ".git").exists():
        raise PatchkitError(f"{output} exists and is not a git repository",
                            "choose another folder with -o, or remove it")
    if force:
        return
    made_by_patchkit = git.run(["rev-parse", "--verify", "--quiet", "refs/patchkit/upstream"],
                               cwd=output, check=False)
    if not made_by_patchkit and git.run(["rev-parse", "--verify", "--quiet", "HEAD"], cwd=output, check=False):
        raise PatchkitError(f"{output} is a git repository patchkit did not create",
                            "choose another folder with -o, or rerun with --force to take it over")
    dirty = git.run(["status", "--porcelain", "--untracked-files=no"], cwd=output, check=False)
    if dirty:
        files = ", ".join(line[3:] for line in dirty.splitlines()[:3])
        raise PatchkitError(f"{output} has uncommitted changes ({files})",
                            "commit or stash them, or rerun with --force to discard them")


def materialise(output: Path, mirror: Mirror, revision: Revision, result_ref: str, tip: str,
                force: bool) -> None:
    """Check the result out as branch `revision.branch_name` in the output repository
    (which `check_output` has vetted)."""
    branch = revision.branch_name
    _validate_branch(branch)
    if not (output / ".git").exists():
        output.parent.mkdir(parents=True, exist_ok=True)
        # --local hardlinks the mirror's objects: seconds instead of minutes for llama.cpp.
        git.run(["clone", "--quiet", "--local", "--no-checkout", "--", str(mirror.path), str(output)])
        git.run(["remote", "set-url", "origin", mirror.url], cwd=output)
    git.run(["fetch", "--quiet", "--no-tags", "--", str(mirror.path), f"+{result_ref}:{result_ref}"],
            cwd=output)
    try:
        git.run(["checkout", "--quiet", *(["--force"] if force else []), "-B", branch, tip], cwd=output)
    except git.GitFailed as exc:
        first = exc.stderr.strip().splitlines()[0] if exc.stderr.strip() else str(exc)
        raise PatchkitError(f"cannot check out {branch} in {output}: {first}",
                            "move the files git names out of the way, or rerun with --force") from None
    git.run(["update-ref", "refs/patchkit/upstream", revision.commit], cwd=output)


def _validate_branch(branch: str) -> None:
    git.validate_ref(branch, "branch")
    try:
        git.run(["check-ref-format", f"refs/heads/{branch}"])
    except git.GitFailed:
        raise PatchkitError(f"cannot name a branch {branch!r}", "name the upstream ref differently") from None
