"""A library header as tree-sitter can read it, every byte in its place (offsets and line numbers
are the file's): what only the preprocessor or one compiler makes sense of is blanked, so the C++
parse sees plain declarations. Without it the parse misreads whole files: llama.h's export
macros hide 9 in 10 functions, and mtmd.h's `extern "C" {`, opened in one `#ifdef __cplusplus`
and closed in another, hides every declaration of the file.

- `#ifdef __cplusplus` / `extern "C" {` / `#endif` and the `}` that closes it: both blocks;
- export macros (`LLAMA_API`, `GGML_BACKEND_API`, `MTMD_API`) and `__attribute__((...))`;
- `DEPRECATED(decl, "hint")`, `GGML_DEPRECATED(decl, "hint")`: the declaration alone;
- `#  define`: `#define` (tree-sitter reads no space inside a directive's name).
"""

from __future__ import annotations

import re

_DIRECTIVE = re.compile(rb"^([ \t]*)#([ \t]+)(\w+)", re.M)
_EXPORT = re.compile(rb"\b[A-Z][A-Z0-9_]*_API\b")  # empty or an attribute, by platform
_ATTRIBUTE = re.compile(rb"\b__attribute__\s*\(")
_DEPRECATED = re.compile(rb"\b(?:[A-Z][A-Z0-9]*_)?DEPRECATED\s*\(")
# A block that holds only an opening or a closing of `extern "C"` (a comment may follow).
_SPLIT_EXTERN = re.compile(rb'^[ \t]*#[ \t]*(?:ifdef[ \t]+__cplusplus|if[ \t]+defined[ \t]*\(?[ \t]*__cplusplus[ \t]*\)?)'
                           rb'[ \t]*\n[ \t]*(?:extern[ \t]+"C"[ \t]*\{|\})[ \t]*(?://[^\n]*)?\n[ \t]*#[ \t]*endif\b[^\n]*',
                           re.M)


def readable(source: bytes) -> bytes:
    data = bytearray(_DIRECTIVE.sub(lambda m: m.group(1) + b"#" + m.group(3) + m.group(2), source))
    for pattern in (_SPLIT_EXTERN, _EXPORT):
        for m in pattern.finditer(bytes(data)):
            _blank(data, m.start(), m.end())
    for m in _ATTRIBUTE.finditer(bytes(data)):
        end = _closing(data, m.end())
        if end is not None:
            _blank(data, m.start(), end + 1)
    for m in _DEPRECATED.finditer(bytes(data)):
        end = _closing(data, m.end())
        comma = _last_comma(data, m.end(), end) if end is not None else None
        if comma is not None:
            _blank(data, m.start(), m.end())
            _blank(data, comma, end + 1)
    return bytes(data)


def _blank(data: bytearray, start: int, end: int) -> None:
    """Spaces for DATA[START:END], its newlines kept: the lines stay where they were."""
    data[start:end] = bytes(b if b == ord("\n") else ord(" ") for b in data[start:end])


def _closing(data: bytearray, start: int) -> int | None:
    """The `)` that closes the `(` just before START."""
    depth = 1
    for i in range(start, len(data)):
        depth += (data[i] == ord("(")) - (data[i] == ord(")"))
        if depth == 0:
            return i
    return None


def _last_comma(data: bytearray, start: int, end: int) -> int | None:
    """The last comma at the top level of DATA[START:END]: the one before the hint."""
    depth, comma = 0, None
    for i in range(start, end):
        depth += (data[i] == ord("(")) - (data[i] == ord(")"))
        if depth == 0 and data[i] == ord(","):
            comma = i
    return comma
