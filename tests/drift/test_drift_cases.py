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
    """`api_init` is declared in four vendored headers the patch's file does not include: which
    one it calls the search cannot say, so it reads none of them (and names no drift of one)."""
    api = "#pragma once\nvoid api_init(int n, int k = 0);\n"
    files = {f"vendor/v{i}/api.h": api for i in range(4)}
    _, found = drift(tmp_path, "    api_init(n);\n", ("v0", "v0 : api_init's default (#1)", "int k = 0", "int k = 1",
                                                      "vendor/v0/api.h"), files=files)
    assert found == ()


def test_a_call_of_a_plain_word_is_not_searched_for_past_the_includes(tmp_path):
    """`init(n)`, declared once but in no file the patch's file includes, is a class's or a
    library's as likely as upstream's: no search; `lib_init(n)` beside it is the project's."""
    files = {"vendor/v/api.h": "#pragma once\nvoid init(int n, int k = 0);\nvoid lib_init(int n, int k = 0);\n"}
    history, found = drift(tmp_path, "    init(n);\n    lib_init(n);\n",
                           ("v", "v : defaults (#1)", "int k = 0);\nvoid lib_init(int n, int k = 0)",
                            "int k = 1);\nvoid lib_init(int n, int k = 1)", "vendor/v/api.h"), files=files)
    (d,) = found
    assert (d.entity, d.before, d.after) == ("lib_init", "k = 0", "k = 1")
    assert d.culprit.commit == history.commits["v"]


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


def test_a_macro_is_compared_token_by_token_without_its_comments(tmp_path):
    _, found = drift(tmp_path, "    char buf[MAX_TOKENS];\n    int s = ADD(1, 2);\n",
                     (None, "lib : spacing and comments (#1)", "#define MAX_TOKENS 16",
                      "#define  MAX_TOKENS   16 /* the maximum\n   of tokens */ // really"),
                     (None, "lib : spacing (#2)", "#define ADD(a, b) ((a)+(b))", "#define ADD(a,b) ( (a) + (b) )"),
                     header=HEADER + "#define ADD(a, b) ((a)+(b))\n")
    assert found == ()


def test_every_definition_of_a_macro_counts_in_order(tmp_path):
    """A change under `#else` is the patch's on every platform but one."""
    header = HEADER.replace("#define MAX_TOKENS 16\n", "#ifdef _WIN32\n#define MAX_TOKENS 8\n#else\n#define MAX_TOKENS 16\n#endif\n")
    history, found = drift(tmp_path, "    char buf[MAX_TOKENS];\n",
                           ("linux", "lib : more tokens off Windows (#1)", "#define MAX_TOKENS 16", "#define MAX_TOKENS 32"),
                           header=header)
    (d,) = found
    assert (d.kind, d.before, d.after) == ("macro", "#define MAX_TOKENS 8; #define MAX_TOKENS 16",
                                           "#define MAX_TOKENS 8; #define MAX_TOKENS 32")
    assert d.culprit.commit == history.commits["linux"]


TYPES = HEADER + "#include <stdint.h>\ntypedef int32_t lib_pos;\nvoid seek(lib_pos p);\n"


def test_a_parameter_type_is_what_a_caller_s_value_meets(tmp_path):
    """Top-level const is no change; `std::size_t` is `size_t` (int → it converts); a typedef of a
    number is that number (lib_pos, int32_t → int64_t converts)."""
    history, found = drift(tmp_path, "    resize(n);\n    tokenize(text, n);\n    seek(n);\n",
                           (None, "lib : const (#1)", "int tokenize(const char * text, int n_max = 8);",
                            "int tokenize(const char * const text, const int n_max = 8);"),
                           ("size", "lib : std::size_t (#2)", "void resize(int n);", "void resize(std::size_t n);"),
                           ("pos", "lib : 64-bit positions (#3)", "void seek(lib_pos p);", "void seek(int64_t p);"),
                           header=TYPES)
    assert {(d.entity, d.before, d.after, d.culprit.commit) for d in found} == {
        ("resize", "int n", "std::size_t n", history.commits["size"]),
        ("seek", "lib_pos (int32_t) p", "int64_t p", history.commits["pos"])}


def test_a_braced_list_for_a_class_with_a_constructor_calls_the_constructor(tmp_path):
    header = HEADER + "struct span_t {\n    span_t(int b, int e) : begin(b), end(e) {}\n    int begin;\n    int end;\n};\n"
    _, found = drift(tmp_path, "    span_t s{1, 2};\n",
                     (None, "lib : members in another order (#1)", "    int begin;\n    int end;\n",
                      "    int end;\n    int begin;\n"), header=header)
    assert found == ()


def test_a_declaration_moved_to_another_header_then_changed_is_found_with_the_change(tmp_path):
    history, found = drift(tmp_path, "    tokenize(text);\n",
                           (None, "lib : tokenize in its own header (#1)", "", "#pragma once\nint tokenize(const char * text, int n_max = 8);\n",
                            "include/tokenize.h"),
                           (None, "lib : include it (#2)", "int tokenize(const char * text, int n_max = 8);", '#include "tokenize.h"'),
                           ("default", "tokenize : more by default (#3)", "int n_max = 8", "int n_max = 64", "include/tokenize.h"))
    (d,) = found
    assert (d.kind, d.declared_in, d.before, d.after) == ("default-argument", "include/tokenize.h", "n_max = 8", "n_max = 64")
    assert d.culprit.commit == history.commits["default"]


def test_a_struct_known_by_its_tag_and_its_typedef_is_one_finding(tmp_path):
    header = HEADER.replace("struct input_text {", "typedef struct input_text_s {").replace(
        "    bool parse_special;\n};", "    bool parse_special;\n} input_text_t;", 1)
    _, found = drift(tmp_path, "    input_text_t t = {text, add_special, parse_special};\n"
                               "    struct input_text_s u = {text, add_special, parse_special};\n",
                     ("members", "lib : the text's length (#1)", "    const char * text;\n",
                      "    const char * text;\n    size_t text_len;\n"), header=header)
    (d,) = found
    assert (d.entity, d.lines) == ("input_text_s", ("src/app.cpp:5", "src/app.cpp:6"))
