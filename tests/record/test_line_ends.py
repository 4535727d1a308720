"""`record`, `import` and `absorb` read line ends as git does: an upstream CRLF file, a lone CR
inside a line, `* text eol=crlf` in .git/info/attributes; a diff config of the checkout's changes
nothing; a path patchkit refuses is named with the commit, not a temporary file."""

from __future__ import annotations

import pytest

from record_helpers import cli, edit, fork, git, run

CRLF = b"".join(b"int w%d = %d;\r\n" % (i, i) for i in range(1, 11))
LONE_CR = b"int x1;\nchar *s = \"a\rb\";\nint x3;\n"


@pytest.fixture
def project(tmp_path):
    return fork(tmp_path, extra={"src/w.c": CRLF, "src/x.c": LONE_CR, "-dash.c": b"int d;\n"})


def commit_bytes(project, path: str, data: bytes, subject: str) -> None:
    (project.output_dir / path).write_bytes(data)
    git("commit", "-q", "-am", subject, cwd=project.output_dir)


def test_an_edit_of_an_upstream_crlf_file_is_recorded_and_applies_back(project, tmp_path):
    commit_bytes(project, "src/w.c", CRLF.replace(b"int w3 = 3;", b"int w3 = 30;"), "w : w3")
    run(project, "record")
    data = (project.patches_dir / "w-w3.patch").read_bytes()
    assert b"+int w3 = 30;\r\n" in data and b"-int w3 = 3;\r\n" in data
    # and import takes the file record wrote, as it is
    other = fork(tmp_path / "other", extra={"src/w.c": CRLF})
    (tmp_path / "w-w3.patch").write_bytes(data)
    run(other, "import", str(tmp_path / "w-w3.patch"))
    assert (other.patches_dir / "w-w3.patch").read_bytes() == data


def test_a_leading_dash_path_is_refused_naming_the_commit_and_why(project):
    commit_bytes(project, "-dash.c", b"int d = 1;\n", "d : dash")
    message = run(project, "record", code=2).stderr
    assert "commit" in message and "(d : dash)" in message and "starts with '-'" in message
    assert "/tmp/patchkit-record-" not in message and "dos2unix" not in message


def test_absorb_reads_a_lone_cr_inside_a_line_as_git_does(project):
    commit_bytes(project, "src/x.c", LONE_CR.replace(b"int x1;", b"int x1 = 1;"), "x : x1")
    run(project, "record")
    (project.output_dir / "src/x.c").write_bytes(b"int x1 = 1;\nchar *s = \"a\rc\";\nint x3;\n")  # next to x1
    run(project, "absorb")
    assert b'+char *s = "a\rc";\n' in (project.patches_dir / "x-x1.patch").read_bytes()


def test_absorb_with_eol_crlf_attributes(tmp_path):
    project = fork(tmp_path)
    out = project.output_dir
    (out / ".git" / "info").mkdir(exist_ok=True)
    (out / ".git" / "info" / "attributes").write_text("* text eol=crlf\n")
    text = (out / "src/a.c").read_bytes().replace(b"int a5 = 500;", b"int a5 = 501;").replace(b"\n", b"\r\n")
    (out / "src/a.c").write_bytes(text)
    run(project, "absorb")
    one = (project.patches_dir / "one.patch").read_text()
    assert "+int a5 = 501;\n" in one and "\r" not in one


def test_absorb_is_not_moved_by_the_checkouts_diff_config(project):
    out = project.output_dir
    git("config", "diff.interHunkContext", "40", cwd=out)
    edit(out, "src/a.c", 5, "int a5 = 501;\n")  # one.patch's line
    edit(out, "src/a.c", 30, "int a30 = 3001;\n")  # three.patch's, 25 lines down
    run(project, "absorb")
    assert "+int a5 = 501;" in (project.patches_dir / "one.patch").read_text()
    assert "+int a30 = 3001;" in (project.patches_dir / "three.patch").read_text()
