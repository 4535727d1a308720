"""Reading sources, without an upstream: folders, ebuilds, names. (The mbox split is
tests/patchfile/test_mail.py's, a patch text's parsing tests/importing/test_import_mail.py's.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from patchkit.errors import PatchkitError
from patchkit.importing import sources
from patch_samples import README_DIFF as DIFF, message
from patchkit.importing.run import check_name, slug

def test_a_cover_letter_is_left_out_with_a_warning(tmp_path):
    cover = ("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nFrom: Ada <ada@example.org>\n"
             "Subject: [PATCH 0/3] three changes\n\nThe series.\n\n")
    mbox = tmp_path / "series.mbox"
    mbox.write_text(cover + message(1) + message(2) + message(3))
    got = sources.gather([str(mbox)])
    assert [p.source for p in got.pieces] == [f"{mbox} (message {i} of 4)" for i in (2, 3, 4)]
    assert got.warnings == (f"{mbox} (message 1 of 4): no diff (a cover letter or a reply?), not imported: "
                            "'[PATCH 0/3] three changes'",)
    mbox.write_text(cover + cover)
    with pytest.raises(PatchkitError, match="none of its 2 messages holds a diff"):
        sources.gather([str(mbox)])


def test_slugs_and_names():
    assert slug("server : keep speculative checkpoints on device") == "server-keep-speculative-checkpoints-on-device"
    assert slug("Fix: Ünïcode & <stuff>!") == "fix-unicode-stuff"
    assert slug("!!!") == "patch"
    long = slug("word " * 40)
    assert len(long) <= 64 and not long.endswith("-")
    assert check_name("fix") == "fix.patch" and check_name("fix.diff") == "fix.diff"
    for bad in ("a/b.patch", ".hidden", "-x", "with space", "x#y"):
        with pytest.raises(PatchkitError):
            check_name(bad)


def test_a_quilt_series_folder(tmp_path):
    folder = tmp_path / "debian" / "patches"
    (folder / "upstream").mkdir(parents=True)
    (folder / "series").write_text("# order matters\nb.patch -p1\n\nupstream/a.patch  # from upstream\n")
    (folder / "b.patch").write_text(DIFF)
    (folder / "upstream" / "a.patch").write_text(DIFF)
    got = sources.gather([str(tmp_path / "debian")])
    assert [p.source for p in got.pieces] == [f"{tmp_path}/debian/patches/b.patch",
                                              f"{tmp_path}/debian/patches/upstream/a.patch"]
    assert [p.kind for p in got.pieces] == ["quilt", "quilt"]
    assert [p.file_subject for p in got.pieces] == ["b", "a"]
    (folder / "series").write_text("b.patch -p0\n")
    with pytest.raises(PatchkitError, match="-p0"):
        sources.gather([str(folder)])
    (folder / "series").write_text("b.patch\nmissing.patch\n")
    with pytest.raises(PatchkitError, match=r"series:2: missing.patch is listed but does not exist"):
        sources.gather([str(folder)])


def test_a_gentoo_folder_by_name_and_by_ebuild(tmp_path):
    files = tmp_path / "llama-cpp" / "files"
    (files / "extra").mkdir(parents=True)
    for name in ("llama-cpp-9999-b.patch", "llama-cpp-a.patch", "unused.patch", "extra/z.diff"):
        (files / name).write_text(DIFF)
    (files / "llama-cpp.initd").write_text("#!/sbin/openrc-run\n")
    got = sources.gather([str(files)])
    assert [Path(p.source).name for p in got.pieces] == ["llama-cpp-9999-b.patch", "llama-cpp-a.patch", "unused.patch"]
    assert any("file-name order" in w for w in got.warnings)
    ebuild = tmp_path / "llama-cpp" / "llama-cpp-9999-r1.ebuild"
    ebuild.write_text('EAPI=8\nMY_EXTRA="extra"\n\nPATCHES=(\n\t"${FILESDIR}"/${P}-b.patch  # first\n'
                      '\t"${FILESDIR}/${PN}-a.patch"\n)\n\nsrc_prepare() {\n\tPATCHES+=( "${FILESDIR}"/${MY_EXTRA} )\n'
                      '\tcmake_src_prepare\n}\n')
    got = sources.gather([str(files)], ebuild=ebuild)
    assert [p.source.removeprefix(str(files) + "/") for p in got.pieces] == [
        "llama-cpp-9999-b.patch", "llama-cpp-a.patch", "extra/z.diff"]
    assert [p.file_subject for p in got.pieces] == ["b", "a", "z"]
    assert got.warnings == (f"{files}: not in the PATCHES of {ebuild.name}, so not imported: unused.patch",)
    ebuild.write_text('PATCHES=( "${FILESDIR}"/${P}-missing.patch )\n')
    with pytest.raises(PatchkitError, match="does not exist"):
        sources.gather([str(files)], ebuild=ebuild)
    ebuild.write_text('PATCHES=( "${FILESDIR}"/${UNKNOWN}.patch )\n')
    with pytest.raises(PatchkitError, match="UNKNOWN"):
        sources.gather([str(files)], ebuild=ebuild)
    ebuild.write_text('PATCHES=( "${DISTDIR}"/x.patch )\n')
    with pytest.raises(PatchkitError, match="DISTDIR"):
        sources.gather([str(files)], ebuild=ebuild)


def test_source_errors(tmp_path):
    with pytest.raises(PatchkitError, match="no such file or folder"):
        sources.gather([str(tmp_path / "nope.patch")])
    with pytest.raises(PatchkitError, match="plain http is refused"):
        sources.gather(["http://example.org/x.patch"])
    with pytest.raises(PatchkitError, match="unsupported URL scheme"):
        sources.gather(["ftp://example.org/x.patch"])
    with pytest.raises(PatchkitError, match="one --sha256 per URL"):
        sources.gather([str(tmp_path)], sha256=["0" * 64])
    with pytest.raises(PatchkitError, match="not a SHA-256"):
        sources.gather(["https://example.org/x.patch"], sha256=["abc"])
