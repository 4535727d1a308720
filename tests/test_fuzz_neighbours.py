"""Under --fuzz, the patch's other hunks corroborate one of several candidates (issue 25, shape 6):
every other hunk in the file sits at one offset, one candidate is a line from the recorded line
moved by it, and every other is far away; GNU patch -F2 takes that one, and so does patchkit. Where
the candidate near the recorded line is gone (its site rewritten), the far ones stay refused."""

from __future__ import annotations

import difflib
from pathlib import Path

from patchkit.apply import apply_file
from patchkit.queue import read_patch


def unary(i: int, op: str = "src[j]") -> str:
    return (f"static void unary_{i}(const float * src, float * dst, int n) {{\n    const int tag_{i} = {i};\n"
            f"    for (int j = 0; j < n; ++j) {{\n        dst[j] = {op};\n    }}\n    log_{i}(tag_{i});\n"
            + "".join(f"    note_{i}_{k}(dst, n);\n" for k in range(24)) + "}\n\n")  # twins 30 lines apart


BASE = "".join(unary(i) for i in range(12))
# the patch changes three unary functions; the middle hunk's context is the one every function shares
PATCHED = BASE.replace(unary(3), unary(3, "src[j] * 3")).replace(unary(5), unary(5, "src[j] * 5")) \
    .replace(unary(7), unary(7, "src[j] * 7"))


def fuzzed(tmp: Path, upstream: str):
    diff = "".join(difflib.unified_diff(BASE.splitlines(True), PATCHED.splitlines(True), "a/ops.c", "b/ops.c"))
    (tmp / "p.patch").write_text("From: A <a@b.invalid>\nSubject: [PATCH] ops\n\n---\n" + diff)
    (fc,) = read_patch(tmp / "p.patch").files
    assert len(fc.hunks) == 3
    return apply_file(fc, upstream.encode(), lambda f: None, 2)


def test_the_candidate_the_neighbours_offset_points_at_is_taken(tmp_path):
    # upstream: a line on top, and the middle site's second line rewritten (fuzz 2 ignores it, and
    # then the loop of every function matches)
    site = unary(5).replace("const int tag_5 = 5;", "const int tag_5 = 4 + 1;")
    upstream = "#include <math.h>\n" + BASE.replace(unary(5), site)
    verdicts, content = fuzzed(tmp_path, upstream)
    assert [v.verdict.value for v in verdicts] == ["offset", "fuzzed", "offset"]
    assert "the offset of the patch's other hunks in the file (+1)" in verdicts[1].detail
    assert content == ("#include <math.h>\n" + PATCHED.replace(unary(5, "src[j] * 5"), site.replace(
        "dst[j] = src[j];", "dst[j] = src[j] * 5;"))).encode()


def test_far_candidates_alone_stay_refused(tmp_path):
    site = unary(5).replace("const int tag_5 = 5;", "const int tag_5 = 4 + 1;").replace("dst[j] = src[j];",
                                                                                              "dst[j] = fabsf(src[j]);")
    verdicts, content = fuzzed(tmp_path, "#include <math.h>\n" + BASE.replace(unary(5), site))
    assert verdicts[1].verdict.value in ("ambiguous", "conflict") and content is None
