"""`patchkit ci github` (write the nightly workflow) and `patchkit ci pull-request` (its PR step)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from patchkit.cli.app import app, check_reports, console, cwd_path, warn
from patchkit.cli.progress import progress_display
from patchkit.errors import PatchkitError

if TYPE_CHECKING:
    from patchkit.project import Project

ci_app = typer.Typer(help="Set up and serve continuous integration (GitHub Actions).", no_args_is_help=True)
app.add_typer(ci_app, name="ci")

DEFAULT_WORKFLOW = Path(".github/workflows/patchkit-nightly.yml")


@ci_app.command("github")
def github_command(
    backend: List[str] = typer.Option([], "--backend", "-b", metavar="NAME",
                                      help="A recipe a build job builds, in the recipe's ci: environment "
                                           "(repeats; default: cpu)."),
    runs_on: List[str] = typer.Option([], "--runs-on", metavar="BACKEND=LABEL",
                                      help="Build BACKEND on the runner with LABEL (comma-separated labels: "
                                           "all of them, e.g. self-hosted,gpu; repeats)."),
    smoke: bool = typer.Option(False, "--smoke", help="Run `patchkit smoke` after each build on a Linux "
                                                     "runner that can run it."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", metavar="FILE", show_default=False,
                                          help=f"Where to write the workflow (default: {DEFAULT_WORKFLOW} "
                                               "in the project)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing workflow that differs."),
    cron: str = typer.Option("17 3 * * *", "--cron", metavar="CRON", help="When the nightly runs (UTC)."),
    python: str = typer.Option("3.11", "--python", metavar="X.Y", help="Python on the runners."),
    branch: str = typer.Option("patchkit/refresh", "--branch", metavar="NAME",
                               help="The branch a good night pushes and opens a pull request for."),
    patchkit: Optional[str] = typer.Option(None, "--patchkit", metavar="REQUIREMENT", show_default=False,
                                           help="What pip installs as patchkit on the runners (default: "
                                                "this patchkit, from its git commit or as a wheel in "
                                                ".github/patchkit/)."),
) -> None:
    """Write the GitHub Actions workflow that runs `patchkit nightly`, builds its result per backend and gives one verdict.

    Set the repository up once: Settings > Actions > General > "Allow GitHub Actions to create and approve pull requests", and a secret PATCHKIT_TOKEN (a PAT or an app token) so that the nightly's pull request triggers its own checks.

    Examples:\n
      patchkit ci github\n
      patchkit ci github --backend cpu --backend vulkan --smoke\n
      patchkit ci github --backend cpu --backend cuda --runs-on cuda=self-hosted,gpu\n
      patchkit ci github -o .github/workflows/nightly.yml --force --cron '30 2 * * 1-5'
    """
    from patchkit.backends.recipe import default_recipes_dir, load_recipes, select
    from patchkit.fileio import atomic_write
    from patchkit.ci.install import resolve
    from patchkit.ci.workflow import actionlint_config, ci_environments, nightly_workflow
    from patchkit.project import Project
    from patchkit.targets import Places, Target, check

    project = Project.find()
    recipes = select(load_recipes(default_recipes_dir(project)), backend or ["cpu"])
    labels = _runs_on(runs_on)
    environments = ci_environments({r.name: r for r in recipes}, labels)
    cache = _runner_cache(project, [name for name, ci in environments.items() if ci.container])
    target = cwd_path(output) if output else project.root / DEFAULT_WORKFLOW
    check(target, Target.FILE, Places.of(project))  # before the wheel is packed
    install = resolve(patchkit)
    text = nightly_workflow(environments, self_hosted=frozenset(labels), smoke=smoke, cron=cron, python=python,
                            branch=branch, cache=cache, install=install)
    backends = list(environments)
    # The workflow, and the wheel it installs (in the fork, where the jobs check it out).
    files = {target: text.encode(), **{project.root / path: data for path, data in install.files.items()}}
    for path in files:  # a folder, an unwritable place, the queue: before anything
        check(path, Target.FILE, Places.of(project))
    lint = actionlint_config(labels)
    differ = [path for path, data in files.items() if not (path.is_file() and path.read_bytes() == data)]
    if not differ:  # a FIFO is never read
        print(f"{target} is up to date")
    elif not force and any(path.is_file() for path in differ):
        exists = next(path for path in differ if path.is_file())
        raise PatchkitError(f"{exists} exists and differs from what patchkit writes",
                            "rerun with --force to replace it")
    else:
        for path in differ:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, files[path])
        print(f"wrote {target} (build: {', '.join(backends)})")
        if install.files:
            print(f"wrote {', '.join(sorted(install.files))}: commit them with the workflow, which installs "
                  "patchkit from there")
    if lint:  # printed, not written: that file may hold the user's own settings
        print(f"actionlint knows these runner labels only from .github/actionlint.yaml:\n{lint}", end="")


@ci_app.command("pull-request")
def pull_request_command(
    branch: str = typer.Argument(..., help="The pushed branch with the refreshed patches and lock."),
    base: str = typer.Option(..., "--base", metavar="BRANCH", help="The branch to merge into."),
    title: Optional[str] = typer.Option(None, "--title", show_default=False,
                                        help="Default: names the locked upstream commit."),
    body_file: Optional[Path] = typer.Option(None, "--body-file", metavar="FILE", show_default=False,
                                             help="Markdown for the description (the nightly's report.md)."),
) -> None:
    """Open a pull request for BRANCH, or update the open one (the nightly workflow's last step).

    The repository, the token and the API come from GITHUB_REPOSITORY, GITHUB_TOKEN and GITHUB_API_URL; without a token, prints what would be sent. Each call to GitHub, retries included, gives up after PATCHKIT_GITHUB_DEADLINE seconds (default 900), exit 3.

    Example:\n
      patchkit ci pull-request patchkit/refresh --base main --body-file .patchkit/nightly/report.md
    """
    from patchkit.github import GitHub, GitHubConfig
    from patchkit.project import Project

    config = GitHubConfig.from_env()
    if title is None:
        project = Project.find_optional()
        lock = project.lock() if project else None
        title = (f"patchkit: queue refreshed on upstream {lock.upstream_commit[:12]}" if lock
                 else "patchkit: queue refreshed")
    body = _read_body(body_file) if body_file else "Refreshed by `patchkit nightly`."
    with progress_display("ci pull-request") as progress:
        action = GitHub(config, progress=progress).open_pull_request(branch, base, title, body)
    verb = {"open-pr": "opened", "update-pr": "updated"}[action.kind]
    if action.dry_run:
        console().print(f"dry run: would have {verb} the pull request for {branch}", markup=False)
    else:
        console().print(f"{verb} pull request {action.target} for {branch}: {action.url}", markup=False)


@ci_app.command("summary")
def summary_command(
    reports: Path = typer.Argument(..., metavar="REPORTS",
                                   help="The folder the workflow downloads every job's report to, one folder each."),
    backend: List[str] = typer.Option([], "--backend", "-b", metavar="NAME",
                                      help="A backend the workflow builds (repeats): one with no report failed."),
    smoke: List[str] = typer.Option([], "--smoke", metavar="NAME",
                                    help="A backend whose job runs the smoke test after its build (repeats)."),
    report_dir: Path = typer.Option(Path(".patchkit/summary"), "--report-dir", metavar="DIR",
                                    help="Where report.json and report.md go."),
    github_issues: bool = typer.Option(False, "--github-issues",
                                       help="Open, update and close one GitHub issue per failing patch or backend."),
) -> None:
    """Gather a night's reports (the nightly job's, each build job's) into one verdict: the summary job of `ci github`'s workflow.

    Writes report.json and report.md, appends the Markdown to $GITHUB_STEP_SUMMARY and `refresh=true|false` to $GITHUB_OUTPUT: true when the queue is good and every backend built, or failed on the unpatched upstream too. Exit 0 all good, 1 when anything needs a person.

    Example:\n
      patchkit ci summary reports --backend cpu --backend cuda --github-issues
    """
    from patchkit.ci.summary import Destinations, Rendered, gather, publish
    from patchkit.project import Project
    from patchkit.report import summary as render
    from patchkit.report import to_json
    from patchkit.report.nightly import finding_lines

    from patchkit.backends.recipe import default_recipes_dir, load_recipes
    from patchkit.ci import builds

    project = Project.find_optional()
    places = check_reports(project)
    where = Destinations.check(cwd_path(report_dir), github_issues, places)
    # What the fork says (its recipes, its record beside the lock): not the artifacts, which
    # upstream's code could have written.
    recipes = load_recipes(default_recipes_dir(project))
    environments = {name: builds.environment_id(recipes[name]) for name in backend if name in recipes}
    record = builds.read(project.root) if project else {}
    summary = gather(cwd_path(reports), list(dict.fromkeys(backend)), smoke, environments, record)
    rendered = Rendered(json=to_json("summary", summary), markdown=render.to_markdown(summary),
                        findings=finding_lines(summary.findings, markdown=True),
                        backend_issues={b.name: render.backend_issue(b, summary) for b in summary.backends})
    with progress_display("ci summary") as progress:
        publish(summary, rendered, where, warn, progress, record)
    render.render_terminal(summary, console())
    raise typer.Exit(summary.exit_code)


def _runs_on(pairs: List[str]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for pair in pairs:
        name, sep, label = pair.partition("=")
        if not sep or not name or not label:
            raise PatchkitError(f"--runs-on {pair!r}: expected BACKEND=LABEL", "e.g. --runs-on cuda=self-hosted,gpu")
        labels[name] = label
    return labels


def _runner_cache(project: Project, containers: List[str]) -> str:
    """patchkit's cache folder as the jobs see it, relative to the checkout: the default is the
    workflow's own (in the workspace), a `cache:` inside the repository is that. Any other is
    taken as it is, except where a job runs in a CONTAINER: there the mirror the nightly saved
    would be restored elsewhere than patchkit looks."""
    from patchkit.ci.workflow import DEFAULT_CACHE
    from patchkit.project import default_cache_dir

    cache, root = project.cache_dir.resolve(), project.root.resolve()
    if cache == default_cache_dir().resolve():
        return DEFAULT_CACHE
    if cache.is_relative_to(root):
        return cache.relative_to(root).as_posix()
    if containers:
        raise PatchkitError(f"{project.config_path}: key 'cache' names {cache}, outside the repository, where "
                            f"the {containers[0]} job's container would not find the mirror",
                            "drop the key (the workflow keeps the cache in the workspace), or name a "
                            "folder inside the repository")
    return str(cache)


def _read_body(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise PatchkitError(f"--body-file {path}: cannot read it ({exc.strerror})",
                            "give the nightly's report.md") from None
