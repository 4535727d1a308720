"""A regenerated patch as Debian wants it: DEP-3 headers (deb822 fields), then `---` and the diff.

Every field comes from the patch itself: `Description` from its subject and body, `Author` from
its From:, the rest (`Origin`, `Bug`, `Forwarded`, `Applied-Upstream`, `Last-Update`, ...) from
its trailers. A field the queue does not know is left out, never invented; the mail's Date: has
no DEP-3 field and is dropped, so is the mbox `From` line.
"""

from __future__ import annotations

from patchkit.export.patched import ExportedPatch

_GENERATED = ("Description", "Subject", "Author", "From")  # written from the mail's own headers


def dep3_patch(exported: ExportedPatch) -> bytes:
    patch = exported.patch
    text = exported.data.decode("utf-8", errors="surrogateescape")
    _message, found, diff = text.partition("\n---\ndiff --git ")
    if not found:  # the refresh format always has it (patchkit.nightly.refresh.format_patch)
        raise ValueError(f"{exported.name}: not in the refresh format")
    fields = [("Description", _description(patch.subject, _long_description(patch.body, patch.trailers))),
              ("Author", f"{patch.author.name} <{patch.author.email}>")]
    fields += [(key, value) for key, value in _trailer_lines(patch.body, patch.trailers) if key not in _GENERATED]
    header = "".join(f"{key}: {value}\n" for key, value in fields)
    return f"{header}---\ndiff --git {diff}".encode("utf-8", errors="surrogateescape")


def _trailer_lines(body: str, trailers: dict[str, str]) -> list[tuple[str, str]]:
    """Every trailer line of BODY, in order: TRAILERS keeps only the last value of each key, but
    two Reviewed-by: lines are two fields."""
    paragraphs = body.strip().split("\n\n")
    pairs = [line.partition(": ")[::2] for line in paragraphs[-1].splitlines()]
    return [(key, value) for key, value in pairs if key in trailers and value]


def _long_description(body: str, trailers: dict[str, str]) -> str:
    """BODY without its trailer lines, which become fields of their own."""
    paragraphs = body.strip().split("\n\n") if body.strip() else []
    if paragraphs and trailers:
        keep = [line for line in paragraphs[-1].splitlines()
                if line.partition(": ")[0] not in trailers]
        paragraphs[-1:] = ["\n".join(keep)] if keep else []
    return "\n\n".join(paragraphs)


def _description(subject: str, long: str) -> str:
    """deb822's multi-line value: the synopsis, then each line indented by one space, `.` for a blank one."""
    lines = [f" {line}" if line.strip() else " ." for line in long.splitlines()]
    return "\n".join([subject, *lines])
