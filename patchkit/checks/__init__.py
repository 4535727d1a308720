"""Site checks: a patch's intent as rules on call sites, verified on a tree by a C++ parse.

    rules = load_rules(Path("patches/NAME.checks.yaml"))
    report = run_checks(rules, lambda path: (tree / path).read_bytes() if (tree / path).is_file() else None)
    report.passed

`read` maps a path in the tree to its bytes (None when absent), so the same analysis runs on a
directory or on git objects, never needing a checkout.
"""

from patchkit.checks.results import CheckReport, Region, RuleResult, SiteReport, SiteStatus
from patchkit.checks.rules import Receiver, Rule, combine_rules, load_rules, parse_rules, queue_rules
from patchkit.checks.run import Reader, run_checks

__all__ = ["CheckReport", "Reader", "Receiver", "Region", "Rule", "RuleResult", "SiteReport",
           "SiteStatus", "combine_rules", "load_rules", "parse_rules", "queue_rules", "run_checks"]
