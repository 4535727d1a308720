"""scopes.py: git's funcname rule as git itself writes it after `@@`, and the C++ scope of a line
(namespaces, classes, functions; lambdas and blocks count as their host)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import git_identity

from patchkit.git import git_env
from patchkit.scopes import CppScopes, ScopeMemo, Sections, funcname_at, is_cpp, starts_function, written_as


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env=git_env(git_identity())).stdout


def git_sections(tmp_path: Path, lines: list[str], changed: list[int], driver: str = "") -> list[tuple[int, str]]:
    """(0-based line, section) of each hunk git writes when the lines CHANGED (0-based) are
    edited; -U0, so that each hunk starts at its changed line. DRIVER: a diff driver for the file."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "--quiet")
    if driver:
        (repo / ".gitattributes").write_text(f"f.txt diff={driver}\n")
    (repo / "f.txt").write_text("".join(lines))
    git(repo, "add", "f.txt")
    edited = [f"{ln.rstrip(chr(10))} // changed\n" if i in changed else ln for i, ln in enumerate(lines)]
    (repo / "f.txt").write_text("".join(edited))
    out = git(repo, "diff", "-U0", "f.txt")
    return [(int(m.group(1)) - 1, m.group(2).strip())
            for m in re.finditer(r"(?m)^@@ -(\d+)(?:,\d+)? \+\S+ @@ ?(.*)$", out)]


def test_funcname_agrees_with_git(tmp_path):
    long_name = "static int64_t " + "a_very_long_helper_name_" * 3 + "that_runs_on(int x) {"
    cut_in_ascii = "void " + "x" * 71 + "ééé() {"  # 80 bytes end after the second é
    lines = [
        "// file header comment\n",
        "#include <vector>\n",
        "\n",
        "int first(int x) {\n",
        "    int y = x;\n",                   # 4: change -> section "int first(int x) {"
        "    return y;\n",
        "}\n",
        "\n",
        "_private_thing:\n",
        "    stay();\n",                       # 9: '_' starts a section
        "$dollar:\n",
        "    here();\n",                       # 11: so does '$'
        "\tint tabbed;\n",
        "{\n",
        "    inner();\n",                      # 14: '\t', '{' and spaces never do
        "é_not_ascii(void) {\n",
        "    more();\n",                       # 16: a non-ASCII letter does not either
        f"{long_name}\n",
        "    body();\n",                       # 18: cut at 80 bytes
        f"{cut_in_ascii}\n",
        "    tail();\n",                       # 20: cut at 80 bytes, after a whole character
        "label_with_trailing_space    \n",
        "    last();\n",                       # 22: trailing blanks trimmed
    ]
    changed = [4, 9, 11, 14, 16, 18, 20, 22]
    sections = git_sections(tmp_path, lines, changed)
    assert len(sections) == len(changed)
    for start, section in sections:
        assert funcname_at(lines, start) == section, (start, section)
    assert [start for start, _ in sections] == changed
    got = dict(sections)
    assert got[4] == "int first(int x) {" and got[9] == "_private_thing:" and got[11] == "$dollar:"
    assert got[14] == "$dollar:" and got[16] == "$dollar:"
    assert len(got[18].encode()) == 80 and got[20] == "void " + "x" * 71 + "éé"
    assert got[22] == "label_with_trailing_space"


def test_funcname_cut_inside_a_character_agrees_with_git(tmp_path):
    lines = ["void " + "x" * 74 + "ééé() {\n", "    tail();\n"]  # byte 80 is inside the first é
    [(start, section)] = git_sections(tmp_path, lines, [1])
    assert section == "void " + "x" * 74
    assert funcname_at(lines, start) == section


@pytest.mark.parametrize("driver, lines, changed", [
    ("cpp", ["namespace ns {\n", "struct S {\n", "public:\n", "    void f() {\n", "        a();\n",
             "again:\n", "        b();\n", "    }\n", "};\n", "::std::size_t g() {\n", "    c();\n",
             "$odd\n", "    d();\n"], [4, 6, 10, 12]),
    ("python", ["import os\n", "class A:\n", "    x = 1\n", "    def f(self):\n", "        a()\n",
                "    async def g(self):\n", "        b()\n", "def h():\n", "    c()\n"], [2, 4, 6, 8]),
])
def test_the_section_rules_cover_gits_drivers(tmp_path, driver, lines, changed):
    """Whatever git writes with a diff driver is among the sections a hunk there may carry."""
    sections = git_sections(tmp_path, lines, changed, driver)
    assert [start for start, _ in sections] == changed
    for start, section in sections:
        assert Sections(lines).named(section, start) is not None, (start, section)
    assert any(funcname_at(lines, start) != section for start, section in sections)  # not the default rule's


def test_diff_p_cuts_at_40_and_git_at_80():
    line = "static int a_really_long_function_name_that_goes_on_and_on_0(int x) {" + " " * 3 + "// " + "x" * 40
    cuts = written_as(line)
    assert "static int a_really_long_function_name_t" in cuts and line[:80].rstrip() in cuts
    assert "static int a_really_long" not in cuts  # no other cut


def test_funcname_at_the_top_of_the_file_is_empty():
    assert funcname_at(["int f() {\n", "}\n"], 0) == ""
    assert funcname_at(["  indented\n", "x\n"], 1) == ""


def test_starts_function_and_is_cpp():
    assert starts_function("void f() {") and starts_function("_x") and starts_function("$y")
    assert not any(starts_function(s) for s in ("", " f()", "\tf()", "{", "#define X", "é()", "1x"))
    assert all(is_cpp(p) for p in ("a/b.cpp", "x.H", "k.cu", "k.cuh", "a.c++", "t.TPP", "x.inl"))
    assert not any(is_cpp(p) for p in ("CMakeLists.txt", "a.py", "cpp", "notes.cpp.txt", "x.cs"))


CPP = """\
#include <vector>

namespace llama {
namespace server {

struct slot {
    int id = 0;

    void reset() {
        id = 0;
        auto f = [&](int n) {
            return n + id;
        };
        f(1);
    }

    int & ref() {
        return id;
    }

    int * ptr() {
        return &id;
    }
};

class pool;

void slot_free(slot & s) {
    {
        s.reset();
    }
}

}  // namespace server

namespace {
int hidden() {
    return 1;
}
}

int slot::*member = nullptr;
}  // namespace llama

void llama::server::slot_free2(llama::server::slot & s) {
    s.id = 2;
}

template <typename T>
T pick(T a) {
    return a;
}

int top = 0;
"""


def scope_of(text: str) -> dict[str, str]:
    lines = text.splitlines(keepends=True)
    scopes = CppScopes(lines)
    return {line.strip(): scopes.scope_at(i) for i, line in enumerate(lines) if line.strip()}


def test_cpp_scopes_name_namespaces_classes_and_functions():
    scope = scope_of(CPP)
    assert scope["#include <vector>"] == ""
    assert scope["int id = 0;"] == "llama::server::slot"
    assert scope["void reset() {"] == "llama::server::slot::reset"  # the signature is the function's
    assert scope["id = 0;"] == "llama::server::slot::reset"
    assert scope["return n + id;"] == "llama::server::slot::reset"  # a lambda counts as its host
    assert scope["return &id;"] == "llama::server::slot::ptr"  # a pointer return
    assert scope["class pool;"] == "llama::server"  # a declaration opens no scope
    assert scope["s.reset();"] == "llama::server::slot_free"  # blocks count as their host
    assert scope["return 1;"] == "llama::hidden"  # an anonymous namespace adds no name
    assert scope["T pick(T a) {"] == "pick" and scope["return a;"] == "pick"
    assert scope["int top = 0;"] == ""
    assert CppScopes(["int x;\n"]).scope_at(5) == ""  # past the end: file scope


def test_an_out_of_class_definition_is_named_as_written():
    lines = CPP.splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.startswith("void llama::server::slot_free2"))
    assert CppScopes(lines).scope_at(at + 1) == "llama::server::slot_free2"


def test_a_function_returning_a_reference_is_named():
    assert scope_of(CPP)["return id;"] == "llama::server::slot::ref"


def test_scopes_of_twins_in_two_functions_differ():
    """What the apply ladder relies on: the same lines in two methods are told apart."""
    text = "struct s {\n  void a() {\n    x();\n  }\n  void b() {\n    x();\n  }\n};\n"
    lines = text.splitlines(keepends=True)
    scopes = CppScopes(lines)
    assert (scopes.scope_at(2), scopes.scope_at(5)) == ("s::a", "s::b")
    # git's rule cannot: both twins get the class's line
    assert funcname_at(lines, 2) == funcname_at(lines, 5) == "struct s {"


@pytest.mark.parametrize("edit", [
    lambda ls: ls[:3] + ["namespace extra {\n"] + ls[3:],  # an opener that shifts every scope below
    lambda ls: [ln.replace("slot_free(", "slot_release(") for ln in ls],  # a rename
    lambda ls: ls[:10] + ls[20:] + ["// é, a multibyte comment\n"] * 3,  # lines gone, lines added
    lambda ls: ["// ünïcode above\n"] + ls[:-5] + ["}\n"],  # a closer more, at the end
])
def test_a_parse_from_another_versions_tree_names_what_a_fresh_parse_names(edit):
    """The ladder parses upstream's file starting from its base's tree, told the line
    differences: every line's scope must be the one a parse from nothing gives."""
    from patchkit.apply import _differences

    old = CPP.splitlines(keepends=True)
    new = edit(old)
    base = CppScopes(old)
    base.scope_at(0)  # parsed: the next parse starts from its tree
    edited = CppScopes(new, (base, lambda: _differences(old, new)))
    fresh = CppScopes(new)
    assert [edited.scope_at(i) for i in range(len(new))] == [fresh.scope_at(i) for i in range(len(new))]
    assert [base.scope_at(i) for i in range(len(old))] == [CppScopes(old).scope_at(i) for i in range(len(old))]


MEMO_SOURCE = ["namespace ns {\n", "struct S {\n", "    int f() {\n", "        return 1;\n", "    }\n",
               "};\n", "}\n", "static int g(void) {\n", "    return 2;\n", "}\n"]


def test_a_memo_answers_a_rerun_without_a_parse_and_as_the_parse_did(tmp_path):
    path = tmp_path / "scopes.json"
    first = ScopeMemo(path)
    parsed = CppScopes(MEMO_SOURCE, memo=first)
    asked = {line: parsed.scope_at(line) for line in (3, 8)}
    assert asked == {3: "ns::S::f", 8: "g"} and parsed.parsed
    first.save()

    again = CppScopes(list(MEMO_SOURCE), memo=ScopeMemo(path))
    assert {line: again.scope_at(line) for line in (3, 8)} == asked
    assert not again.parsed  # read from the memo
    assert again.scope_at(0) == "ns" and again.parsed  # a line never asked is parsed


def test_a_memo_answers_only_for_the_same_content_and_keeps_answers_runs_still_ask(tmp_path):
    path = tmp_path / "scopes.json"
    memo = ScopeMemo(path)
    CppScopes(MEMO_SOURCE, memo=memo).scope_at(8)
    memo.save()
    edited = MEMO_SOURCE[:7] + ["static int h(void) {\n"] + MEMO_SOURCE[8:]
    memo = ScopeMemo(path)
    other = CppScopes(edited, memo=memo)
    assert other.scope_at(8) == "h" and other.parsed
    memo.save()
    files = json.loads(path.read_text())["files"]
    assert len(files) == 2  # both contents kept: another run (the nightly's bisect, drift) may ask again
    for kept in files.values():
        kept["day"] -= ScopeMemo.KEPT_DAYS
    path.write_text(json.dumps({**json.loads(path.read_text()), "files": files}))
    memo = ScopeMemo(path)
    CppScopes(edited, memo=memo).scope_at(8)
    memo.save()
    assert len(json.loads(path.read_text())["files"]) == 1  # the first content, asked by no run for two weeks: gone


def test_a_memo_of_another_parser_or_patchkit_is_not_read(tmp_path):
    path = tmp_path / "scopes.json"
    memo = ScopeMemo(path)
    CppScopes(MEMO_SOURCE, memo=memo).scope_at(8)
    memo.save()
    written = json.loads(path.read_text())
    digest = next(iter(written["files"]))
    written["files"][digest]["answers"]["8"] = "stale::name"
    path.write_text(json.dumps(written))
    assert CppScopes(MEMO_SOURCE, memo=ScopeMemo(path)).scope_at(8) == "stale::name"  # the same parser: read
    path.write_text(json.dumps({**written, "for": "patchkit 0.0.1, tree-sitter 0.1, tree-sitter-cpp 0.1"}))
    fresh = CppScopes(MEMO_SOURCE, memo=ScopeMemo(path))
    assert fresh.scope_at(8) == "g" and fresh.parsed
    written["files"][digest]["answers"]["8"] = 5  # not a scope: the file's answers are not read
    path.write_text(json.dumps(written))
    fresh = CppScopes(MEMO_SOURCE, memo=ScopeMemo(path))
    assert fresh.scope_at(8) == "g" and fresh.parsed


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b'{"x": [1]}', b'{"for": 1, "files": 2}'])
def test_a_memo_file_that_cannot_be_read_is_no_cache(tmp_path, content):
    path = tmp_path / "scopes.json"
    path.write_bytes(content)
    scopes = CppScopes(MEMO_SOURCE, memo=ScopeMemo(path))
    assert scopes.scope_at(8) == "g"


def test_a_memo_that_cannot_be_written_is_no_error(tmp_path):
    (tmp_path / "a-file").write_text("")
    memo = ScopeMemo(tmp_path / "a-file" / "scopes.json")  # its folder is a file: nothing can be written
    assert CppScopes(MEMO_SOURCE, memo=memo).scope_at(8) == "g"
    memo.save()
