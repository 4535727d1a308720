"""Semantic drift case by case, each on a small history of its own: what is followed and how
far (the standard library never, a name too common to say which declaration not at all), names
as the patch qualifies them, macros as the preprocessor reads them, parameter types as a caller's
value meets them, constructors, and declarations that moved."""

from __future__ import annotations

from drift_history import HEADER, build
from test_drift_history import drift_of

LIB = "include/lib.h"


def drift(tmp_path, added: str, *changes: tuple, header: str = HEADER, files: dict[str, str] | None = None):
    """The drift of a patch adding ADDED, locked before CHANGES ((name, subject, old, new[, path]))."""
    history = build(tmp_path / "h", changes=changes, added=added, header=header, files=files)
    return history, drift_of(tmp_path, history)


def test_a_name_declared_in_many_headers_is_not_followed(tmp_path):
    """`init` is declared in four vendored headers the patch's file does not include: which one
    it calls the search cannot say, so it reads none of them (and names no drift of one)."""
    api = "#pragma once\nvoid init(int n, int k = 0);\n"
    files = {f"vendor/v{i}/api.h": api for i in range(4)}
    _, found = drift(tmp_path, "    init(n);\n", ("v0", "v0 : init's default (#1)", "int k = 0", "int k = 1",
                                                  "vendor/v0/api.h"), files=files)
    assert found == ()


def test_a_struct_declared_past_the_includes_is_found_by_a_search_for_its_declaration(tmp_path):
    """Three includes deep, among headers that only mention its name: the search finds the one
    that declares it."""
    files = {"include/a.h": '#pragma once\n#include "b.h"\n', "include/b.h": "#pragma once\nstruct deep { int x; int y; };\n",
             **{f"tools/t{i}.h": f"#pragma once\n// a deep copy, {i}\nint deep_{i}(int deep);\n" for i in range(6)}}
    header = HEADER.replace("#include <stddef.h>\n", '#include <stddef.h>\n#include "a.h"\n')
    history, found = drift(tmp_path, "    deep d{1, 2};\n", ("deep", "b : w first (#1)", "int x;", "int w; int x;",
                                                             "include/b.h"), header=header, files=files)
    (d,) = found
    assert (d.kind, d.entity, d.declared_in) == ("members", "deep", "include/b.h")
    assert d.culprit.commit == history.commits["deep"]


NAMESPACES = "#pragma once\nnamespace a { struct cfg { int x; int y; }; }\nnamespace b { struct cfg { int x; int y; }; }\n"


def test_a_qualified_name_means_the_declaration_in_its_namespace(tmp_path):
    history, found = drift(tmp_path, "    b::cfg c{1, 2};\n",
                           ("a", "lib : a::cfg gets w (#1)", "namespace a { struct cfg { int x;",
                            "namespace a { struct cfg { int x; int w;"),
                           ("b", "lib : b::cfg gets w (#2)", "namespace b { struct cfg { int x;",
                            "namespace b { struct cfg { int x; int w;"), header=NAMESPACES)
    (d,) = found
    assert (d.entity, d.before, d.after) == ("b::cfg", "x, y", "x, w, y")
    assert d.culprit.commit == history.commits["b"]


def test_a_bare_name_declared_in_several_places_is_no_finding(tmp_path):
    """Bare `cfg` may be either (the patch's code may sit in either namespace): nothing certain."""
    _, found = drift(tmp_path, "    cfg c{1, 2};\n", ("a", "lib : a::cfg gets w (#1)", "namespace a { struct cfg { int x;",
                                                      "namespace a { struct cfg { int x; int w;"), header=NAMESPACES)
    assert found == ()


def test_the_standard_library_is_never_looked_up(tmp_path):
    """`std::min` is not a vendored `x::min`, whose default argument changes."""
    files = {"vendor/x/x.h": "#pragma once\nnamespace x { int min(int a, int b, int c = 0); }\n"}
    _, found = drift(tmp_path, "    int m = std::min(n, 4);\n    memcpy(&m, &n, sizeof(m));\n",
                     ("x", "vendor : x (#1)", "int c = 0", "int c = 1", "vendor/x/x.h"), files=files)
    assert found == ()
