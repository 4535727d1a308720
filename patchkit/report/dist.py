"""Renderers of a `DistResult`: terminal and JSON."""

from __future__ import annotations

from patchkit.export.dist import DistResult
from patchkit.report import to_json as envelope


def summary_line(result: DistResult) -> str:
    return (f"wrote {result.output} ({result.size} bytes, {result.entries} entries under {result.top}/), "
            f"sums in {result.sums}")


def render_terminal(result: DistResult, console) -> None:
    rows = [("version", result.version),
            ("upstream", f"{result.upstream_url} at {result.upstream_commit}"),
            ("build", f"LLAMA_BUILD_NUMBER={result.build_number} LLAMA_BUILD_COMMIT={result.build_commit}"),
            ("patches", str(len(result.patches))),
            ("mtime", f"{result.mtime} ({result.mtime_source})"),
            (f"sha256 {result.output.name}", result.sha256)]
    if result.tar_name != result.output.name:
        rows.append((f"sha256 {result.tar_name}", f"{result.tar_sha256} (uncompressed; the same on any machine)"))
    for key, value in rows:
        console.print(f"{key}: {value}", markup=False, highlight=False)
    console.print(f"[green]{summary_line(result)}[/]")


def to_json(result: DistResult) -> str:
    return envelope("dist", result)
