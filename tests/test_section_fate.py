"""What became of the section a hunk's `@@` names decides what it may veto (issue 25, item 1): a
section no version of the file ever had (hand-written, another tool's rule) says nothing, and the
one place of the pre-image in the whole file is taken, as git am -3 and GNU patch take it; a
section the file's history had (its function deleted or still standing elsewhere) still refuses
that place, and twins stay refused."""

from __future__ import annotations

from pathlib import Path

from test_own_base import FUNCTIONS
from test_own_base import PATCH as OWN_BASE_PATCH

from patchkit.apply import apply_file
from patchkit.queue import read_patch

# the hand-written patch of test_own_base, its section left to each test
PATCH = OWN_BASE_PATCH.replace("@@ -13,3 +13,3 @@ static int f4(int x)\n", "@@ -13,3 +13,3 @@ SECTION\n")
MOVED = "#include <stdio.h>\n#include <stdlib.h>\n\n" + FUNCTIONS  # the place moved 3 lines down


def run(tmp: Path, upstream: str, section: str, ever_had: bool):
    (tmp / "p.patch").write_text(PATCH.replace("SECTION", section))
    (fc,) = read_patch(tmp / "p.patch").files
    asked = []

    def history(text: str) -> bool:
        asked.append(text)
        return ever_had

    verdicts, content = apply_file(fc, upstream.encode(), lambda f: None, 0, ever_had=history)
    return [v.verdict.value for v in verdicts], content, asked


def test_an_invented_section_says_nothing_and_the_one_place_is_taken(tmp_path):
    verdicts, content, asked = run(tmp_path, MOVED, "vk_fix_queue_family(void)", ever_had=False)
    assert verdicts == ["offset"] and content == MOVED.replace("a += 2;", "a += 22;").encode()
    assert asked == ["vk_fix_queue_family(void)"]
    verdicts, _, _ = run(tmp_path, FUNCTIONS, "vk_fix_queue_family(void)", ever_had=False)
    assert verdicts == ["clean"]  # at its recorded line too


def test_a_section_the_history_had_still_refuses(tmp_path):
    verdicts, content, _ = run(tmp_path, MOVED, "static int f_gone(int x)", ever_had=True)  # its function deleted
    assert verdicts == ["conflict"] and content is None
    verdicts, _, asked = run(tmp_path, MOVED, "static int f4(int x)", ever_had=False)  # stands elsewhere
    assert verdicts == ["conflict"] and asked == []  # the file names it: no history needed


def test_twins_under_an_invented_section_stay_refused(tmp_path):
    twins = MOVED + FUNCTIONS.replace("static int f", "static int g").replace("static int g2(", "static int f2(")
    verdicts, content, _ = run(tmp_path, twins, "vk_fix_queue_family(void)", ever_had=False)
    assert verdicts != ["offset"] and verdicts != ["clean"] and content is None
