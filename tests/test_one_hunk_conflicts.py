"""A conflict is the one hunk's whose line upstream changed (issue 25): a patch of six sites in one
file, upstream moved them all by an insertion above and changed only the line one hunk removes.
The whole-file 3-way merge conflicts there; every other hunk's own merge is clean and agrees with
the line steps, so they are placed (as GNU patch places them), and only that hunk is refused.
Shaped like the real queue's patch on llama.cpp's server-context.cpp."""

from __future__ import annotations

from pathlib import Path

from patchkit.apply import Base, apply_file
from patchkit.queue import read_patch


def site(i: int, flags: str) -> list[str]:
    return [f"    if (use_ckpt_{i}) {{\n", f"        ckpt.update_{i}(ctx, slot.id, {flags});\n", "    }\n", "\n",
            f"    log_step({i});\n", "\n"]


def source(flags: list[str], top: list[str] = ()) -> str:
    lines = [*top, "struct server_slot {\n", "    int id;\n", "    common_prompt_checkpoint spec_ckpt;\n",
             "    bool spec_is_replay = false;\n", "};\n", "\n", "void server_update_slots(server_slot & slot) {\n"]
    for i, f in enumerate(flags):
        lines += site(i, f)
    return "".join(lines + ["}\n"])


OLD = "LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY"
NEW = "slot.spec_ckpt_flags"


def patch_text(before: str, after: str) -> str:
    """The unified diff of BEFORE -> AFTER with 1 line of context per hunk, as `git diff -U1` writes it."""
    import difflib
    body = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), "a/s.cpp", "b/s.cpp", n=1))
    return "From: A <a@b.invalid>\nSubject: [PATCH] flags\n\n---\n" + body


def test_only_the_hunk_whose_line_upstream_changed_conflicts(tmp_path):
    before = source([OLD] * 5)
    after = source([NEW] * 5).replace("    bool spec_is_replay", "    static constexpr int spec_ckpt_flags = 3;\n"
                                                                  "    bool spec_is_replay")
    (tmp_path / "p.patch").write_text(patch_text(before, after))
    (fc,) = read_patch(tmp_path / "p.patch").files
    assert len(fc.hunks) == 6
    changed = [OLD] * 5
    changed[2] = f"{OLD} | LLAMA_STATE_SEQ_FLAGS_NONE"  # upstream changed the line hunk 4 removes
    upstream = source(changed, top=["#include <vector>\n", "\n"])  # and every site moved down
    base = Base("the base", before.encode(), after.encode())
    verdicts, content = apply_file(fc, upstream.encode(), lambda f: base, 0)
    assert [v.verdict.value for v in verdicts] == ["offset", "offset", "offset", "conflict", "offset", "offset"]
    assert content is None  # nothing is written while a hunk conflicts
