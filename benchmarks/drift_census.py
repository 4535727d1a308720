"""A census of the semantic drift check on a real tree's public headers: what the night names
when upstream changes every declaration of one kind at once.

TREE is a git repository of a llama.cpp tree (its HEAD is the lock; nothing of it is copied into
this repository). The benchmark clones it into a temporary folder and, for each kind below, makes
one patch per public header (a new file beside it that relies on every such declaration of the
header, as the compiler sees them: tests/drift/oracle.py, libclang) and one upstream branch off the
lock with one commit that changes them all:

- struct members: each aggregate initialised by position with its first two members; upstream
  inserts a member after the first;
- enumerators: each used as a number; upstream inserts one at the head of every enum (those
  counted on from it renumber);
- macros: each object-like macro whose body is a constant (a number, a string, another macro),
  expanded; upstream redefines it;
- defaults: each function with default arguments called without them; upstream changes the first;
- parameter types: each function with a parameter of a number type called with every argument;
  upstream gives that parameter another number type.

What changed is the compiler's to say (the header read again at the branch); the night
(`run_nightly`, at the branch, the lock at TREE's HEAD) names some: per header, the relied-on
declarations, those that changed where the patch feels it, those named, and those named wrongly
(unchanged, or another commit). Then the time of each night.

Usage: python benchmarks/drift_census.py TREE [--kind KIND ...]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "drift"))

from conftest import apply, git_identity, write_project  # noqa: E402

import oracle  # noqa: E402
from patchkit.nightly.night import NightlyOptions, run_nightly  # noqa: E402
from patchkit.project import Project  # noqa: E402
from patchkit.queue import Queue  # noqa: E402

K = oracle.K
KINDS = ("members", "enumerator", "macro", "default-argument", "parameter-type")
# An object-like macro whose body is a constant: a number (`(1u << 3)`), a string, another macro.
_CONSTANT_MACRO = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Z][A-Z0-9_]*)[ \t]+((?=[-~(]*\d)[-+*/%<>|&^~() \t0-9a-fA-FxXuUlL]*"
                             rb"[0-9a-fA-FuUlL)]|\"[^\"\\\n]*\"|[A-Z][A-Z0-9_]*)[ \t]*(?://.*|/\*.*\*/)?$", re.M)

@dataclass
class Census:
    """One kind's edits of one header and the patch's uses of what they edit."""

    edits: list[tuple[int, int, str]] = field(default_factory=list)  # (start, end, new text) by byte offset
    uses: list[str] = field(default_factory=list)  # statements of the patch's function
    relied: set[str] = field(default_factory=set)  # what a drift names: the struct, enumerator, macro, function


def git(repo: Path, *args: str, date: str = "1790600000 +0000") -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(repo),
                               **git_identity("Census", "census@invalid", date)}).stdout.strip()


def _line_end(data: bytes, offset: int) -> int:
    return data.index(b"\n", offset) + 1


def _own(cursor, path: Path) -> bool:
    return cursor.location.file is not None and cursor.location.file.name == str(path)


def census(kind: str, path: Path, includes: list[Path]) -> Census:
    """KIND's edits of the header at PATH and the uses of a patch that relies on each."""
    data = path.read_bytes()
    out = Census()
    if kind == "macro":
        for i, m in enumerate(_CONSTANT_MACRO.finditer(data)):
            name, body = m.group(1).decode(), m.group(2).decode()
            if name in out.relied or name.endswith("_H"):
                continue  # a second definition (another branch of an #if); an include guard
            out.edits.append((*m.span(2), f'{body[:-1]}-census"' if body.startswith('"') else f"({body} + 1)"))
            out.uses.append(f"auto census_{i} = {name};")
            out.relied.add(name)
        return out
    unit = oracle.parse(path, includes, strict=False)
    calls: dict[str, list] = {}
    for i, cursor in enumerate(unit.cursor.walk_preorder()):
        if not _own(cursor, path):
            continue
        if kind == "members" and cursor.kind in (K.STRUCT_DECL, K.CLASS_DECL) and cursor.is_definition() \
                and cursor.spelling and not cursor.is_anonymous():
            children = list(cursor.get_children())
            fields = [c for c in children if c.kind == K.FIELD_DECL]
            if not fields or any(c.kind in (K.CONSTRUCTOR, K.CXX_BASE_SPECIFIER) for c in children) \
                    or children[0].kind != K.FIELD_DECL:
                continue
            name = oracle.qualified(cursor)
            end = _line_end(data, fields[0].extent.end.offset)
            out.edits.append((end, end, f"    int census_inserted_{i};\n"))
            out.uses.append(f"{name} census_{i}{{{', '.join(['{}'] * min(2, len(fields)))}}};")
            out.relied.add(name)
        elif kind == "enumerator" and cursor.kind == K.ENUM_DECL and cursor.is_definition():
            constants = [c for c in cursor.get_children() if c.kind == K.ENUM_CONSTANT_DECL]
            if not constants:
                continue
            start = data.rindex(b"\n", 0, constants[0].extent.start.offset) + 1
            out.edits.append((start, start, f"    CENSUS_INSERTED_{i},\n"))
            for c in constants:
                out.uses.append(f"int census_{i}_{c.spelling} = (int) {oracle.qualified(c)} + 0;")
                out.relied.add(oracle.qualified(c))
        elif kind in ("default-argument", "parameter-type") and cursor.kind == K.FUNCTION_DECL \
                and not cursor.type.is_function_variadic() and cursor.spelling.isidentifier():
            calls.setdefault(oracle.qualified(cursor), []).append(cursor)
    for name, declared in calls.items():
        if len(declared) != 1 or name.startswith("std::"):
            continue  # an overload: which one a call means is the argument types' to say
        arguments = list(declared[0].get_arguments())
        if kind == "default-argument":
            defaulted = [(a, [t for t in a.get_tokens()]) for a in arguments]
            first = next(((a, ts) for a, ts in defaulted if any(t.spelling == "=" for t in ts)), None)
            if first is None:
                continue
            a, tokens = first
            at = [t.spelling for t in tokens].index("=")
            start, end = tokens[at + 1].extent.start.offset, tokens[-1].extent.end.offset
            out.edits.append((start, end, f"({data[start:end].decode()})"))
            out.uses.append(f"{name}({', '.join(['{}'] * arguments.index(a))});")
        else:
            numbers = [a for a in arguments if a.type.get_canonical().kind in _NUMBERS and a.spelling]
            if not numbers:
                continue
            a = numbers[0]
            tokens = list(a.get_tokens())
            names = [t for t in tokens if t.spelling == a.spelling]
            if not names or any(t.spelling in ("=", "[", "(") for t in tokens):
                continue
            start, end = tokens[0].extent.start.offset, names[0].extent.start.offset
            out.edits.append((start, end, f"{_other_number(a.type.get_canonical().kind)} "))
            out.uses.append(f"{name}({', '.join(['{}'] * len(arguments))});")
        out.relied.add(name)
    return out


_NUMBERS = {oracle.cindex.TypeKind.BOOL, oracle.cindex.TypeKind.INT, oracle.cindex.TypeKind.UINT,
            oracle.cindex.TypeKind.LONG, oracle.cindex.TypeKind.ULONG, oracle.cindex.TypeKind.LONGLONG,
            oracle.cindex.TypeKind.ULONGLONG, oracle.cindex.TypeKind.SHORT, oracle.cindex.TypeKind.USHORT,
            oracle.cindex.TypeKind.FLOAT, oracle.cindex.TypeKind.DOUBLE, oracle.cindex.TypeKind.CHAR_S,
            oracle.cindex.TypeKind.UCHAR, oracle.cindex.TypeKind.SCHAR}


def _other_number(kind) -> str:
    """A number type the old one converts to silently, written otherwise."""
    if kind in (oracle.cindex.TypeKind.FLOAT, oracle.cindex.TypeKind.DOUBLE):
        return "long double"
    return "double"


def edited(data: bytes, edits: list[tuple[int, int, str]]) -> bytes:
    for start, end, text in sorted(edits, reverse=True):
        data = data[:start] + text.encode() + data[end:]
    return data


def patch_text(header: str, kind: str, uses: list[str]) -> tuple[str, str]:
    """A patch adding a file beside HEADER whose function makes USES: its name and text."""
    folder, name = header.rsplit("/", 1)
    path = f"{folder}/census-{kind}-{name.removesuffix('.h')}.cpp"
    body = [f'#include "{name}"', "", "void census_uses() {", *(f"    {u}" for u in uses), "}"]
    diff = "".join(f"+{line}\n" for line in body)
    stem = f"census-{kind}-{header.replace('/', '-').removesuffix('.h')}"
    return f"{stem}.patch", (f"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
                             f"From: Census <census@invalid>\nDate: Mon, 1 Jan 2024 00:00:00 +0000\n"
                             f"Subject: [PATCH] census : {kind} of {header}\n\n---\n\n"
                             f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
                             f"@@ -0,0 +1,{len(body)} @@\n{diff}")


def changed(kind: str, before: oracle.Seen, after: oracle.Seen, relied: set[str]) -> set[str]:
    """What of RELIED changed where the patch's use feels it, as the compiler reads both."""
    if kind == "members":
        reach = {n: min(2, len(before.structs.get(n, []))) for n in relied}  # the values the patch gives
        return {n for n in relied if before.structs.get(n, [])[:reach[n]] != after.structs.get(n, [])[:reach[n]]}
    if kind == "enumerator":
        return {n for n in relied if before.enumerators.get(n) != after.enumerators.get(n)}
    if kind == "default-argument":
        return set(relied)
    if kind == "parameter-type":
        return {n for n in relied if before.functions.get(n) != after.functions.get(n)}
    return set(relied)  # macros: every body edited


def named(kind: str, drift) -> str:
    """What a drift names, as `relied` keys it: an enumerator by its qualified name."""
    if kind != "enumerator":
        return drift.entity
    bare = re.search(r"\((\w+) = ", drift.after).group(1)
    scope = drift.entity.rsplit("::", 1)[0] if "::" in drift.entity else ""
    return f"{scope}::{bare}" if scope else bare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--kind", action="append", choices=KINDS)
    args = parser.parse_args()
    kinds = args.kind or list(KINDS)
    with tempfile.TemporaryDirectory(prefix="drift-census-") as tmp:
        scratch = Path(tmp) / "llama.cpp"
        git(Path(tmp), "clone", "--quiet", "--no-hardlinks", str(args.tree.resolve()), str(scratch))
        lock = git(scratch, "rev-parse", "HEAD")
        includes = [scratch / d for d in oracle.INCLUDES]
        headers = oracle.public_headers(scratch)
        patches, plans, branches = [], {}, {}
        (Path(tmp) / "patches").mkdir()
        for n, kind in enumerate(kinds, 1):
            git(scratch, "checkout", "--quiet", "-b", f"census-{kind}", lock)
            for header in headers:
                plan = census(kind, scratch / header, includes)
                if not plan.uses:
                    continue
                before = oracle.read(scratch / header, includes, strict=False)
                (scratch / header).write_bytes(edited((scratch / header).read_bytes(), plan.edits))
                after = oracle.read(scratch / header, includes, strict=False)
                name, text = patch_text(header, kind, plan.uses)
                (Path(tmp) / "patches" / name).write_text(text)
                patches.append(Path(tmp) / "patches" / name)
                plans[name] = (kind, header, plan, changed(kind, before, after, plan.relied))
            git(scratch, "commit", "--quiet", "-am", f"census : change every {kind} (#{99000 + n})",
                date=f"{1790600000 + n * 3600} +0000")
            branches[kind] = git(scratch, "rev-parse", "HEAD")
            git(scratch, "checkout", "--quiet", lock)
        project = Project.load(write_project(Path(tmp) / "fork", str(scratch), patches))
        apply(project, lock, update_lock=True)
        queue = Queue.load(project)
        rows = []
        for kind in kinds:
            mine = tuple(p for p in queue.patches if plans[p.name][0] == kind)
            start = time.perf_counter()
            night = run_nightly(project, NightlyOptions(spec=f"upstream@census-{kind}", refresh=False,
                                                        update_lock=False), queue=replace(queue, patches=mine))
            seconds = time.perf_counter() - start
            totals = [0, 0, 0, 0]
            for patch in mine:
                _, header, plan, moved = plans[patch.name]
                found = {named(kind, d): d for d in night.apply.drift if d.patch == patch.name}
                right = {n for n, d in found.items() if n in moved and d.culprit and d.culprit.commit == branches[kind]}
                counts = [len(plan.relied), len(moved), len(right), len(found) - len(right)]
                totals = [a + b for a, b in zip(totals, counts)]
                rows.append((kind, header, *counts, None))
                missed = sorted(moved - set(found))
                if missed:
                    print(f"  {kind} {header}: not named: {', '.join(missed[:8])}", file=sys.stderr)
            rows.append((kind, "all", *totals, seconds))
        print(f"{'kind':<17} {'header':<28} {'relied':>6} {'changed':>7} {'named':>5} {'wrong':>5}  time")
        for kind, header, relied, moved, right, wrong, seconds in rows:
            shown = f"{seconds:.1f} s" if seconds is not None else ""
            print(f"{kind:<17} {header:<28} {relied:>6} {moved:>7} {right:>5} {wrong:>5}  {shown}")


if __name__ == "__main__":
    main()
