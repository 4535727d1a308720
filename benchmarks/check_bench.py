"""Time to check the on-device patch's rules on a generated 300 KB server-context.cpp.

The file is the patched test fixture (its 6 speculative and 4 prompt-cache sites) followed by
generated server-like code until it reaches the size: member functions full of checkpoint calls on
other receivers, lambdas, loops, comments, string literals, `#if 0` blocks and the
`"n = %" PRId64` log lines that tree-sitter cannot parse. The time covers what a check costs:
parsing, the one query, receiver binding and flag resolution, and the verdicts.

With `--nested N`, the file is instead the fixture with the body of reject_draft() wrapped in N
nested blocks (about 11 bytes each: 20,000 make a 220 KB file), so that two sites, the `#if 0`
and a parse error sit N levels deep and every name lookup from them walks out through N scopes:
the cost of a check must grow linearly with nesting depth.
Usage: python benchmarks/check_bench.py [--kb 300 | --nested 20000] [--runs 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

from patchkit.checks import load_rules, run_checks

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "checks" / "data" / "server-context.patched.cpp"
RULES = REPO / "patches" / "server-keep-speculative-checkpoints-on-device.checks.yaml"


def filler_function(i: int, rng: random.Random) -> str:
    """One generated member function: server-like statements, none of them a rule's site."""
    body = []
    for j in range(rng.randint(8, 20)):
        kind = rng.randrange(6)
        if kind == 0:
            body.append(f'        LOG_DBG("task {i}.{j}: n = %" PRId64 " tokens\\n", (int64_t) n_{j});')
        elif kind == 1:
            body.append(f"        // state.load_tgt(ctx, id, flags) would go here in step {j}")
        elif kind == 2:
            body.append(f"        for (auto & t : tasks_{j % 4}) {{ t.update_pos(n_{j}, t.id, {j}); }}")
        elif kind == 3:
            body.append(f"        auto cb_{j} = [&](int k) {{ return metrics.record(k + {j}, \"load_dft\"); }};")
        elif kind == 4:
            body.append(f"        cache.entries[{j}].update_stats(ctx_tgt, {j}, cache.flags_{j % 3});")
        else:
            body.append(f"        if (n_{j} > {j}) {{ n_{j} = std::min(n_{j}, params.n_ctx - {j}); }}")
    decls = "\n".join(f"        int64_t n_{j} = {j};" for j in range(20))
    disabled = f"\n#if 0\n        legacy_{i}.load_tgt(ctx, 0, 0);\n#endif\n" if i % 7 == 0 else "\n"
    return f"    void handle_task_{i}(server_task & task) {{\n{decls}\n" + "\n".join(body) + disabled + "    }\n\n"


def generate(kb: int) -> bytes:
    base = FIXTURE.read_text()
    head, tail = base.rsplit("};", 1)  # grow server_context_impl, the struct the sites live in
    rng = random.Random(1234)
    parts, size, i = [head], len(base), 0
    while size < kb * 1024:
        parts.append(filler_function(i, rng))
        size += len(parts[-1])
        i += 1
    return ("".join(parts) + "};" + tail).encode()


def nested(depth: int) -> bytes:
    """The fixture with reject_draft()'s body DEPTH blocks deep, one statement per level."""
    base = FIXTURE.read_text()
    start = "    void reject_draft(server_slot & slot, int n_accepted) {\n        auto & ckpt = slot.spec_ckpt;\n"
    head, rest = base.split(start, 1)
    body, tail = rest.split("\n    }\n};", 1)
    opening = "".join(f"{{ n += {i % 10};\n" for i in range(depth))
    deepest = '        LOG_DBG("n = %" PRId64 "\\n", (int64_t) n);\n'  # a parse error at the bottom
    return (head + start + "        int n = 0;\n" + opening + deepest + body + "\n" + "}" * depth
            + "\n    }\n};" + tail).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, default=300)
    parser.add_argument("--nested", type=int, metavar="DEPTH", help="the fixture with sites DEPTH blocks deep")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    source = nested(args.nested) if args.nested else generate(args.kb)
    rules = load_rules(RULES)
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        report = run_checks(rules, lambda path: source)
        times.append(time.perf_counter() - start)
    if not report.passed:
        sys.exit("benchmark file fails its checks: " + "; ".join(m for r in report.rules for m in r.messages))
    regions, lines = len(report.rules[0].regions), source.count(b"\n")
    shape = f" ({args.nested} nested blocks)" if args.nested else ""
    print(f"checked {len(source) / 1024:.0f} KB{shape}, {lines} lines, "
          f"{sum(r.found for r in report.rules)} sites, {regions} regions not read as code: "
          f"median {statistics.median(times) * 1000:.0f} ms, best {min(times) * 1000:.0f} ms "
          f"over {args.runs} runs")


if __name__ == "__main__":
    main()
