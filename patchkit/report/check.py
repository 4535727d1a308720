"""Renderers of a `CheckReport`: terminal (rich), JSON, Markdown, JUnit and SARIF 2.1.0."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit import DISTRIBUTION, __version__
from patchkit.checks.results import CheckReport, Region, RuleResult, SiteReport, SiteStatus, flag_shortener
from patchkit.report import JUnitCase, junit_xml, md_table
from patchkit.untrusted import md_code, md_text

if TYPE_CHECKING:
    from rich.console import Console

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_STYLE = {SiteStatus.OK: "green", SiteStatus.MISSING_FLAG: "red", SiteStatus.FORBIDDEN_FLAG: "red",
          SiteStatus.DYNAMIC: "yellow", SiteStatus.UNRESOLVED: "yellow", SiteStatus.PARSE_ERROR: "magenta"}


def render_terminal(report: CheckReport, console: Console, *, quiet: bool = False, verbose: bool = False) -> None:
    """The terminal view: every site, every rule, what to act on, and the verdict line."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    if not quiet:
        sites = Table(title=f"Sites in {escape(report.target)}" if report.target else "Sites",
                      title_justify="left")
        for header in ("site", "call", "bound to", "class", "flags", "verdict"):
            sites.add_column(header, no_wrap=header != "flags")
        for rule in report.rules:
            for s in rule.sites:
                sites.add_row(escape(f"{Path(s.file).name}:{s.line}"), escape(s.call), escape(s.bound_to or "?"),
                              escape(s.site_class), escape(_flags(rule, s)), f"[{_STYLE[s.status]}]{s.status.value}[/]")
        if report.sites:
            console.print(sites)
        rules = Table(title="Rules", title_justify="left")
        for header in ("rule", "file", "expected", "found", "verdict"):
            rules.add_column(header, no_wrap=True)
        for rule in report.rules:
            rules.add_row(escape(rule.id), escape(_file(rule)), "-" if rule.expected is None else str(rule.expected),
                          str(rule.found), "[green]pass[/]" if rule.passed else "[red]fail[/]")
        console.print(rules)
        for line in _problems(report):
            console.print(Text.assemble(("✗ ", "red"), line))
        regions = _regions(report)
        if verbose:
            for file, region in regions:
                console.print(Text(f"{file}: {_region(region)}", style="dim"))
        elif regions:
            console.print(Text(f"{len(regions)} region(s) not read as code (#if 0, parse errors); "
                               "`patchkit -v check` lists them", style="dim"))
    console.print(Text(verdict(report)))


def verdict(report: CheckReport) -> str:
    n, failing = len(report.rules), len(report.failing)
    where = f" on {report.target}" if report.target else ""
    if not n:
        return "check: no rules to check"
    if failing:
        return f"check: {failing} of {n} rule{'s' if n > 1 else ''} failed{where}"
    return f"check: {'the rule' if n == 1 else f'all {n} rules'} passed{where}"


def upstream_verdict(report: CheckReport) -> str:
    """What a check of unpatched upstream means for the patch."""
    if report.passed:
        return ("the intent already holds on upstream: upstream may have adopted the change; "
                "consider dropping the patch (or marking it Applied-Upstream)")
    return "the intent does not hold on upstream: the patch is still needed"


def to_markdown(report: CheckReport) -> str:
    # Upstream's code (its calls, names, `#if 0` text) and paths are text: md_code and md_text.
    out = [f"# patchkit check\n\n**{md_text(verdict(report))}**\n\n"]
    out.append(md_table(["rule", "file", "expected", "found", "verdict"], [
        [r.id, md_code(_file(r)), "-" if r.expected is None else str(r.expected), str(r.found),
         "pass" if r.passed else "**fail**"] for r in report.rules]))
    problems = _problems(report)
    if problems:
        out.append("\n## To act on\n\n" + "".join(f"- {md_text(p)}\n" for p in problems))
    if report.sites:
        out.append("\n## Sites\n\n" + md_table(["site", "call", "bound to", "class", "flags", "verdict"], [
            [md_code(f"{s.file}:{s.line}"), md_code(s.call), md_text(s.bound_to or "?"), s.site_class,
             md_text(_flags(rule, s)), s.status.value if s.status is SiteStatus.OK else f"**{s.status.value}**"]
            for rule in report.rules for s in rule.sites]))
    regions = _regions(report)
    if regions:
        out.append("\n## Not read as code\n\n" + "".join(f"- {md_code(f)} {md_text(_region(g))}\n"
                                                           for f, g in regions))
    return "".join(out)


def _file(rule: RuleResult) -> str:
    return f"{rule.file} (followed rename from {rule.renamed_from})" if rule.renamed_from else rule.file


def to_junit(report: CheckReport) -> str:
    return junit_xml("patchkit check", junit_cases(report))


def junit_cases(report: CheckReport) -> list[JUnitCase]:
    """One testcase per rule; a failure lists the rule's problems and every site, so that a rule
    which found nothing is as visible as one that found too much."""
    cases = []
    for rule in report.rules:
        details = "\n".join([*rule.messages, *(_site_line(rule, s) for s in rule.sites)] or ["no site found"])
        failure = None
        if not rule.passed:
            failing = [s for s in rule.sites if s.status is not SiteStatus.OK]
            failure = (rule.messages[0] if rule.messages
                       else f"{len(failing)} of {rule.found} {rule.site_class} sites fail")
        cases.append(JUnitCase(classname="patchkit.check", name=rule.id,
                               failure=failure, details=details))
    return cases


def to_sarif(report: CheckReport, root: Path | None = None) -> str:
    """SARIF 2.1.0: one result per failing site at its exact span, and one per rule-level
    problem (count, missing file) at the rule's file. Paths are relative to ROOT (SRCROOT)."""
    rules = [_sarif_rule(r) for r in report.rules]
    results = []
    for index, rule in enumerate(report.rules):
        for message in rule.messages:
            results.append(_sarif_result(rule, index, message, _anchor(rule)))
        for site in rule.sites:
            if site.status is not SiteStatus.OK:
                results.append(_sarif_result(rule, index, site.message, site))
    run: dict = {
        "tool": {"driver": {"name": "patchkit", "version": __version__, **_homepage(), "rules": rules}},
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    if root is not None:
        run["originalUriBaseIds"] = {"SRCROOT": {"uri": root.resolve().as_uri() + "/"}}
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"


def _homepage() -> dict:
    """The tool's informationUri, when the package metadata names a home page."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        meta = metadata(DISTRIBUTION)
    except PackageNotFoundError:
        return {}
    urls = [u.split(",", 1)[-1].strip() for u in meta.get_all("Project-URL") or []]
    home = meta.get("Home-page") or next(iter(urls), None)
    return {"informationUri": home} if home else {}


def _sarif_rule(rule: RuleResult) -> dict:
    what = (f"must carry {rule.require_flag}" if rule.require_flag
            else f"must not carry {rule.forbid_flag}" if rule.forbid_flag else "are counted")
    count = "" if rule.expected is None else f" ({rule.expected} expected)"
    text = f"{rule.site_class} sites of {'/'.join(rule.calls)} in {rule.file} {what}{count}."
    return {"id": rule.id, "name": "".join(p.capitalize() for p in rule.id.replace(".", "-").replace("_", "-").split("-")),
            "shortDescription": {"text": text},
            "fullDescription": {"text": f"{text} Defined in {rule.source}."},
            "help": {"text": f"The patch's intent, checked on every apply. See {rule.source}."},
            "defaultConfiguration": {"level": "error"}}


def _sarif_result(rule: RuleResult, index: int, message: str, at: SiteReport | None) -> dict:
    location: dict = {"artifactLocation": {"uri": rule.file, "uriBaseId": "SRCROOT"}}
    if at is not None:
        location["region"] = {"startLine": at.line, "startColumn": at.column,
                              "endLine": at.end_line, "endColumn": at.end_column,
                              "snippet": {"text": at.code}}
    else:
        location["region"] = {"startLine": 1}
    return {"ruleId": rule.id, "ruleIndex": index, "level": "error", "kind": "fail",
            "message": {"text": message if message.endswith(".") else message + "."},
            "locations": [{"physicalLocation": location}]}


def _anchor(rule: RuleResult) -> SiteReport | None:
    """Where a rule-level problem points: its first failing site, else its first site."""
    failing = [s for s in rule.sites if s.status is not SiteStatus.OK]
    return (failing or list(rule.sites) or [None])[0]


def _problems(report: CheckReport) -> list[str]:
    return [m for r in report.rules for m in (*r.messages, *(s.message for s in r.sites if s.status is not SiteStatus.OK))]


def _regions(report: CheckReport) -> list[tuple[str, Region]]:
    """Each file's regions once, though several rules read the file."""
    return sorted({(r.file, region) for r in report.rules for region in r.regions},
                  key=lambda fr: (fr[0], fr[1].line, fr[1].column))


def _flags(rule: RuleResult, site: SiteReport) -> str:
    short = flag_shortener(rule.require_flag or rule.forbid_flag or "", site.flags)
    if site.status is SiteStatus.DYNAMIC:
        return "run-time"
    if site.status in (SiteStatus.UNRESOLVED, SiteStatus.PARSE_ERROR) and not site.flags:
        return "?"
    return ", ".join(sorted(map(short, site.flags))) or "0"


def _site_line(rule: RuleResult, site: SiteReport) -> str:
    return f"{site.file}:{site.line}: {site.call} [{site.status.value}] flags {{{_flags(rule, site)}}}"


def _region(region: Region) -> str:
    what = "#if 0 (not compiled)" if region.kind == "disabled" else "parse error"
    return f"{region.lines}: {what}: {region.text}"
