"""Renderers: result dataclasses in, text out. Nothing else in patchkit formats output.

This module holds what every report shares: the JSON envelope, JUnit and Markdown building
blocks, and the atomic writer used for every `--json/--markdown/--junit/--sarif FILE`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from patchkit.fileio import atomic_write
from patchkit.plain import plain

SCHEMA_VERSION = 1


def to_json(kind: str, result: Any) -> str:
    """The JSON document of a report: `{"schema": 1, "kind": KIND, ...fields of result}`."""
    return json.dumps({"schema": SCHEMA_VERSION, "kind": kind, **plain(result)}, indent=2) + "\n"


def write_output(target: str | Path, text: str) -> None:
    """Write a report to FILE, or to standard output for '-'.

    A file is replaced whole (a symlink's target, the link kept), so that a failed run never
    leaves half a report where a CI job expects a whole one; a device or FIFO is written through.
    """
    if str(target) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    atomic_write(Path(target), text.encode())


@dataclasses.dataclass(frozen=True)
class JUnitCase:
    """One testcase: a patch, a rule or a build. `failure` is None when it passed."""

    classname: str
    name: str
    failure: str | None = None
    details: str = ""
    skipped: str | None = None
    seconds: float = 0.0


def junit_xml(suite: str, cases: list[JUnitCase]) -> str:
    """A JUnit document that GitLab, Jenkins and GitHub's test reporters all read."""
    failures = sum(c.failure is not None for c in cases)
    skipped = sum(c.skipped is not None and c.failure is None for c in cases)
    root = ET.Element("testsuites", name="patchkit", tests=str(len(cases)), failures=str(failures))
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)),
                       failures=str(failures), errors="0", skipped=str(skipped),
                       time=f"{sum(c.seconds for c in cases):.3f}")
    for case in cases:
        tc = ET.SubElement(ts, "testcase", classname=case.classname, name=case.name,
                           time=f"{case.seconds:.3f}")
        if case.failure is not None:
            ET.SubElement(tc, "failure", message=case.failure, type="patchkit").text = case.details
        elif case.skipped is not None:
            ET.SubElement(tc, "skipped", message=case.skipped)
        elif case.details:
            ET.SubElement(tc, "system-out").text = case.details
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def md_table(headers: list[str], rows: list[list[str]]) -> str:
    def cell(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", "<br>")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
