"""The declarations reader against the compiler's reading (libclang, tests/drift/oracle.py), one
fixture per construct real library headers use: an `extern "C" {` split over two
`#ifdef __cplusplus` blocks, export and deprecation macros, `typedef struct X X;` beside the
struct, nested and anonymous structs, members in `#if` branches, enumerators counted on, or valued
by macros and by an included header's, `f(void)`, parameters whose name sits inside the declarator.
Each file is read as drift reads it: from a commit of a real git repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import git_identity

oracle = pytest.importorskip("oracle")

from patchkit import git  # noqa: E402
from patchkit.drift.declarations import value  # noqa: E402
from patchkit.drift.tree import Files  # noqa: E402

EXPORT = """\
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef LIB_SHARED
#    define LIB_API __attribute__ ((visibility ("default")))
#else
#    define LIB_API
#endif
#define DEPRECATED(func, hint) func __attribute__((deprecated(hint)))

#ifdef __cplusplus
extern "C" {
#endif

    struct lib_text {
        const char * text;
        size_t text_len;
        bool add_special;
    };

    LIB_API struct lib_text lib_text_default(void);
    LIB_API int32_t lib_count(const struct lib_text * t, int32_t n_max) __attribute__((pure));
    DEPRECATED(LIB_API int32_t lib_old_count(const struct lib_text * t), "use lib_count instead");

#ifdef __cplusplus
} // extern "C"
#endif
"""

TYPEDEF_AND_NESTED = """\
#pragma once
typedef struct lib_ctx lib_ctx;
struct lib_ctx {
    int n_ctx;
    struct lib_inner {
        float scale;
        int   bias;
    } inner;
    union {
        int   i;
        float f;
    };
    struct {
        int lo, hi;
    } range;
    int (*callback)(void * user_data, int step);
};
typedef struct {
    char tag;
    long value;
} lib_pair;
"""

VARIANTS = """\
#pragma once
struct lib_opts {
    int threads;
#ifdef LIB_GPU
    int gpu_layers;
#else
    int cpu_mask;
#endif
    bool verbose;
};
"""

ENUMS = """\
#pragma once
#include "base.h"
#define LIB_FLAG_SHIFT 4
enum lib_mode {
    LIB_MODE_NONE,
    LIB_MODE_FAST = 3,
    LIB_MODE_SLOW,
    LIB_MODE_FLAGGED = 1 << LIB_FLAG_SHIFT,
    LIB_MODE_BASE = BASE_MODE,
    LIB_MODE_AFTER_BASE,
    LIB_MODE_MIXED = LIB_MODE_SLOW | BASE_MODE,
};
namespace lib {
enum class level : int { low = -1, mid, high = BASE_MODE * 2 };
}
"""
BASE = """\
#pragma once
#define BASE_MODE 0x20
"""

PARAMETERS = """\
#pragma once
#include <stddef.h>
#define LIB_MAX 8
struct lib_t;
extern "C" int  lib_none(void);
extern "C" void lib_mask(bool (&mask)[LIB_MAX], float dims[2]);
void lib_nodes(const struct lib_t * const * nodes, size_t n = 4, int (*cb)(int) = nullptr);
namespace lib {
struct runner {
    int run(int steps, const char * name = "x") const;
};
}
"""


def _commit(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root), **git_identity()}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "fixture"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)
    return root


def _check(tmp_path: Path, files: dict[str, str], main: str, defines: tuple[str, ...] = ()):
    """MAIN of FILES read by the reader (at a commit) and by the compiler: no mismatch; both."""
    repo = _commit(tmp_path / "repo", files)
    with git.ObjectReader(repo) as reader:
        found = Files(repo, reader).declarations("HEAD", main)
    seen = oracle.read(repo / main, [repo], defines)
    assert oracle.mismatches(seen, found, lambda name: value(found, name)) == []
    return seen, found


def test_a_split_extern_c_block_with_export_and_deprecation_macros_reads_as_plain_declarations(tmp_path):
    seen, found = _check(tmp_path, {"lib.h": EXPORT}, "lib.h")
    assert seen.structs == {"lib_text": ["text", "text_len", "add_special"]}
    assert set(seen.functions) == set(found.functions) == {"lib_text_default", "lib_count", "lib_old_count"}
    assert found.functions["lib_text_default"] == ((),)
    seen, _ = _check(tmp_path / "shared", {"lib.h": EXPORT}, "lib.h", ("-DLIB_SHARED",))
    assert "lib_count" in seen.functions


def test_a_typedef_beside_its_struct_nested_and_anonymous_structs(tmp_path):
    seen, found = _check(tmp_path, {"lib.h": TYPEDEF_AND_NESTED}, "lib.h")
    assert seen.structs["lib_ctx"] == ["n_ctx", "inner", "", "range", "callback"]
    assert seen.structs["lib_ctx::lib_inner"] == ["scale", "bias"]
    assert found.members["lib_pair"] == (("char", "tag"), ("long", "value"))


@pytest.mark.parametrize("defines", [(), ("-DLIB_GPU",)])
def test_members_in_preprocessor_branches_are_read_in_every_variant(tmp_path, defines):
    seen, found = _check(tmp_path, {"lib.h": VARIANTS}, "lib.h", defines)
    assert [[name for _, name in v] for v in found.variants["lib_opts"]] == [
        ["threads", "gpu_layers", "verbose"], ["threads", "cpu_mask", "verbose"]]
    assert seen.structs["lib_opts"][1] == ("gpu_layers" if defines else "cpu_mask")


def test_enumerators_count_on_and_take_values_from_macros_here_and_in_an_included_header(tmp_path):
    seen, found = _check(tmp_path, {"lib.h": ENUMS, "base.h": BASE}, "lib.h")
    assert seen.enumerators["LIB_MODE_AFTER_BASE"] == 0x21
    assert seen.enumerators["lib::level::high"] == 0x40
    assert found.enumerators["LIB_MODE_MIXED"][2] == 4 | 0x20


def test_void_parameters_names_inside_declarators_and_default_arguments(tmp_path):
    seen, found = _check(tmp_path, {"lib.h": PARAMETERS}, "lib.h")
    assert found.functions["lib_none"] == ((),)
    assert [p.type for p in found.functions["lib_mask"][0]] == ["bool(&)[LIB_MAX]", "float[2]"]
    assert [p.name for p in found.functions["lib_mask"][0]] == ["mask", "dims"]
    assert "lib::runner::run" in seen.functions


def test_a_float_parameter_that_becomes_long_double_still_converts_silently():
    """The census's finding: `long double` is a number type a caller's value converts to unseen."""
    from patchkit.drift.compare import differs, entities, state
    from patchkit.drift.declarations import read
    from patchkit.drift.relies import Reliance

    old, new = read(b"void lib_temp(float t);\n"), read(b"void lib_temp(long double t);\n")
    (entity,) = entities(Reliance("call", "lib_temp", "", 1, 1), old)
    assert differs(entity, state(entity, old), state(entity, new))
