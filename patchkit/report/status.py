"""Renderer of `patchkit status`."""

from __future__ import annotations

from patchkit.report import plain
from patchkit.report import to_json as envelope
from patchkit.status import QueueStatus


def render_terminal(status: QueueStatus, console) -> None:
    from rich.table import Table

    console.print(f"upstream {status.upstream_url} (branch {status.upstream_branch})", markup=False)
    table = Table(title="queue", title_justify="left")
    for column in ("#", "patch", "files", "hunks", "forwarded", "locked", "last verdict"):
        table.add_column(column)
    for i, p in enumerate(status.patches, 1):
        table.add_row(str(i), p.name, "\n".join(p.files), str(p.hunks), p.forwarded or "-",
                      "yes" if p.locked else "no", p.last_verdict or "-")
    console.print(table)
    if status.lock:
        console.print(f"locked base: {status.lock.upstream_commit} (tree {status.lock.tree[:12]}, "
                      f"patchkit {status.lock.tool_version})", markup=False)
    else:
        console.print("locked base: none (run `patchkit apply --update-lock`)", markup=False)
    if status.version:
        console.print(f"version at the locked base: {status.version}", markup=False)
    elif status.version_note:
        console.print(status.version_note, markup=False)
    for d in status.disabled:
        console.print(f"disabled, needs attention: {d.name} ({d.why})", markup=False)
    if status.rebase:
        r = status.rebase
        at = f", stopped at {r.stopped}" if r.stopped and r.phase == "stopped" else f" ({r.phase})"
        then = ("its checkout was removed: `patchkit rebase --abort`" if r.checkout_gone else
                "`patchkit rebase --continue` or `--abort`")
        console.print(f"rebase in progress onto {r.spec} ({r.upstream_commit[:12]}){at}: {then}", markup=False)
    if status.last_run:
        r = status.last_run
        console.print(f"last apply: {r['ref']} at {r['upstream_commit'][:12]} -> {r['branch']} "
                      f"({r['tip'][:12]})", markup=False)


def to_json(status: QueueStatus) -> str:
    """`version` and `version_note` are left out when they have no value, as a consumer of the
    version expects either the string or no key at all."""
    data = plain(status)
    for key in ("version", "version_note"):
        if data[key] is None:
            del data[key]
    return envelope("status", data)
