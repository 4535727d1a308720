"""A regenerated patch as Debian wants it: DEP-3 headers (deb822 fields), then `---` and the diff.

Every field comes from the patch itself: `Description` from its subject and body, `Author` from
its From:, the rest (`Origin`, `Bug`, `Forwarded`, `Applied-Upstream`, `Last-Update`, ...) from
its trailers. A field the queue does not know is left out, never invented; the mail's Date: has
no DEP-3 field and is dropped, so is the mbox `From` line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchkit.patchfile.trailers import split as split_trailers

if TYPE_CHECKING:  # the type only: the CLI's start-up imports this module (through Format)
    from patchkit.export.patched import ExportedPatch

_GENERATED = ("Description", "Subject", "Author", "From")  # written from the mail's own headers


def dep3_patch(exported: ExportedPatch) -> bytes:
    patch = exported.patch
    text = exported.data.decode("utf-8", errors="surrogateescape")
    _message, found, diff = text.partition("\n---\ndiff --git ")
    if not found:  # the refresh format always has it (patchkit.nightly.refresh.format_patch)
        raise ValueError(f"{exported.name}: not in the refresh format")
    description, trailers = split_trailers(patch.body)  # every Reviewed-by: line is a field of its own
    fields = [("Description", _description(patch.subject, description)),
              ("Author", f"{patch.author.name} <{patch.author.email}>")]
    fields += [(key, value) for key, value in trailers if key not in _GENERATED]
    header = "".join(f"{key}: {value}\n" for key, value in fields)
    return f"{header}---\ndiff --git {diff}".encode("utf-8", errors="surrogateescape")


def _description(subject: str, long: str) -> str:
    """deb822's multi-line value: the synopsis, then each line indented by one space, `.` for a blank one."""
    lines = [f" {line}" if line.strip() else " ." for line in long.splitlines()]
    return "\n".join([subject, *lines])
