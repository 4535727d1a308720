"""The files of each export format, in memory: the patch files in series order plus the
fragments a distribution's build recipe includes.

Layouts (OUT is the export folder; NAME each patch's file name as listed in patches/series):

- debian: `patches/series`, `patches/NAME` with DEP-3 headers, `patchkit.mk` (debian/rules).
- quilt:  `series`, `NAME` as regenerated (format-patch mail, no DEP-3 rewriting).
- rpm:    `NAME`, `patchkit-preamble.spec` (PatchNNNN: lines), `patchkit-prep.spec`
          (`%autosetup -p1`), `patchkit-build.spec` (`%cmake -DLLAMA_BUILD_NUMBER=...`).
- nix:    `NAME`, `patches.nix` (the list, for `patches = import ./patches.nix;`).
- arch:   `NAME`, `PKGBUILD.patchkit` (source+=, sha256sums+=, _patchkit_prepare, cmake flags).
- gentoo: `files/NAME`, `ebuild.patchkit` (PATCHES=( "${FILESDIR}"/NAME ... ), cmake args).
- mbox:   `patches.mbox`, every patch as one mail, for `git am`.

Every fragment names the version (`b<N>+pk<count>.<hash>`) and the upstream commit in a comment,
and nothing carries a date or the time: exporting the same queue twice gives the same bytes.
"""

from __future__ import annotations

import enum
import hashlib
import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from patchkit.errors import PatchkitError
from patchkit.export.dep3 import dep3_patch

if TYPE_CHECKING:  # the types only: every CLI start-up imports Format, and the apply need not come with it
    from patchkit.export.patched import ExportedPatch, PatchedQueue


class Format(str, enum.Enum):
    DEBIAN = "debian"
    QUILT = "quilt"
    RPM = "rpm"
    NIX = "nix"
    ARCH = "arch"
    GENTOO = "gentoo"
    MBOX = "mbox"


@dataclass(frozen=True)
class OutFile:
    path: str  # relative to OUT, with "/"
    data: bytes = field(repr=False)
    patch: str | None = None  # the queue's name, when this file is that patch

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


_NIX_PATH = re.compile(r"^[A-Za-z0-9._+-]+(/[A-Za-z0-9._+-]+)*$")
# rpm finds a patch by its file name in one folder, and %autosetup puts that name through macro
# expansion and then into an unquoted shell command: nothing there may mean anything.
_RPM_NAME = re.compile(r"[A-Za-z0-9._+,=@-]+")
# makepkg finds a source by its file name in one folder, and reads `NAME::URL` as a rename.
_ARCH_NAME = re.compile(r"(?!.*::)[^/]+")


def render(queue: PatchedQueue, fmt: Format) -> tuple[OutFile, ...]:
    """The files of FMT for QUEUE. Binary patches are the caller's to refuse (only mbox takes them)."""
    return tuple(_RENDERERS[fmt](queue))


def _patch_files(queue: PatchedQueue, folder: str = "",
                 data: Callable[[ExportedPatch], bytes] = lambda p: p.data) -> list[OutFile]:
    """Every format's common part: one file per patch under its queue name, in series order."""
    return [OutFile(folder + p.name, data(p), p.name) for p in queue.patches]


def _header(queue: PatchedQueue, fmt: Format, usage: list[str]) -> str:
    """The comment every fragment starts with: the version, the upstream commit, how to use it."""
    return _comment([f"patchkit export {fmt.value}: llama.cpp {queue.version}",
                     f"upstream commit {queue.upstream_commit} (LLAMA_BUILD_NUMBER {queue.build_number})",
                     *usage], fmt)


def _comment(lines: list[str], fmt: Format) -> str:
    if fmt is Format.RPM:  # rpm expands macros even in comments; %% is a plain %
        lines = [line.replace("%", "%%") for line in lines]
    return "".join(f"# {line}\n" for line in lines)


def _cmake_flags(queue: PatchedQueue) -> list[str]:
    return [f"-DLLAMA_BUILD_NUMBER={queue.build_number}", f"-DLLAMA_BUILD_COMMIT={queue.build_commit}"]


def _series(queue: PatchedQueue, fmt: Format) -> bytes:
    return (_header(queue, fmt, []) + "".join(f"{p.name}\n" for p in queue.patches)).encode()


def _require_names(queue: PatchedQueue, fmt: Format, allowed: re.Pattern[str], why: str) -> None:
    """Refuse, naming them, the patch names FMT's build would read as something else."""
    bad = [p.name for p in queue.patches if not allowed.fullmatch(p.name)]
    if bad:
        raise PatchkitError(f"{fmt.value} cannot carry {', '.join(bad)}: {why}",
                            "rename the patch files and their lines in patches/series")


def _debian(queue: PatchedQueue) -> list[OutFile]:
    usage = ["In debian/rules: `include debian/patchkit.mk`, then",
             "override_dh_auto_configure:",
             "\tdh_auto_configure -- $(PATCHKIT_CMAKE_FLAGS)"]
    mk = (_header(queue, Format.DEBIAN, usage)
          + f"PATCHKIT_VERSION := {queue.version}\n"
          + f"PATCHKIT_UPSTREAM_COMMIT := {queue.upstream_commit}\n"
          + f"PATCHKIT_CMAKE_FLAGS := {' '.join(_cmake_flags(queue))}\n")
    return [*_patch_files(queue, "patches/", dep3_patch),
            OutFile("patches/series", _series(queue, Format.DEBIAN)),
            OutFile("patchkit.mk", mk.encode())]


def _quilt(queue: PatchedQueue) -> list[OutFile]:
    return [*_patch_files(queue), OutFile("series", _series(queue, Format.QUILT))]


def _rpm(queue: PatchedQueue) -> list[OutFile]:
    _require_names(queue, Format.RPM, _RPM_NAME, "rpm's %autosetup takes plain file names only "
                   "(letters, digits and . _ + , = @ -, no folders)")
    flags = " ".join(_cmake_flags(queue))

    def header(usage: str) -> str:
        return _header(queue, Format.RPM, [usage])

    patches = "".join(_comment([p.patch.subject], Format.RPM) + f"Patch{i:04d}: {p.name}\n"
                      for i, p in enumerate(queue.patches, 1))
    preamble = (header("In the preamble: %include %{_sourcedir}/patchkit-preamble.spec")
                + f"%global patchkit_version {queue.version}\n"
                + f"%global patchkit_cmake_flags {flags}\n" + patches)
    prep = header("In %prep: %include %{_sourcedir}/patchkit-prep.spec") + "%autosetup -p1\n"
    build = (header("In %build: %include %{_sourcedir}/patchkit-build.spec, "
                    "or pass %{patchkit_cmake_flags} to your own %cmake")
             + f"%cmake {flags}\n")
    return [*_patch_files(queue), OutFile("patchkit-preamble.spec", preamble.encode()),
            OutFile("patchkit-prep.spec", prep.encode()), OutFile("patchkit-build.spec", build.encode())]


def _nix(queue: PatchedQueue) -> list[OutFile]:
    def path(name: str) -> str:
        if _NIX_PATH.match(name):
            return f"./{name}"
        quoted = name.replace("\\", "\\\\").replace('"', '\\"').replace("${", "\\${")
        return f'(./. + "/{quoted}")'

    text = (_header(queue, Format.NIX, ["In a derivation: patches = import ./patches.nix;",
                                        f"and -DLLAMA_BUILD_NUMBER={queue.build_number} "
                                        f"-DLLAMA_BUILD_COMMIT={queue.build_commit} in cmakeFlags"])
            + "[\n" + "".join(f"  {path(p.name)}\n" for p in queue.patches) + "]\n")
    return [*_patch_files(queue), OutFile("patches.nix", text.encode())]


def _arch(queue: PatchedQueue) -> list[OutFile]:
    _require_names(queue, Format.ARCH, _ARCH_NAME, "makepkg takes file names without folders or `::`")
    files = _patch_files(queue)
    usage = ['In the PKGBUILD, after source=() and sha256sums=(): . "$startdir/PKGBUILD.patchkit"',
             "in prepare(), in the source folder: _patchkit_prepare",
             'in build(): cmake ... "${_patchkit_cmake_flags[@]}"']
    text = (_header(queue, Format.ARCH, usage)
            + f"_patchkit_version={shlex.quote(queue.version)}\n"
            + f"_patchkit_cmake_flags=({' '.join(_cmake_flags(queue))})\n"
            + "source+=(\n" + "".join(f"  {shlex.quote(f.path)}\n" for f in files) + ")\n"
            + "sha256sums+=(\n" + "".join(f"  '{f.sha256}'\n" for f in files) + ")\n"
            + "_patchkit_prepare() {\n"
            # `:` keeps the function valid bash when the queue is empty
            + ("".join(f'  patch -Np1 -F0 -i "$srcdir"/{shlex.quote(f.path)}\n' for f in files) or "  :\n")
            + "}\n")
    return [*files, OutFile("PKGBUILD.patchkit", text.encode())]


def _gentoo(queue: PatchedQueue) -> list[OutFile]:
    usage = ["Copy files/ beside the ebuild and paste this into it (PATCHES at global scope);",
             "in src_configure, after `local mycmakeargs=( ... )`: patchkit_cmake_args"]
    text = (_header(queue, Format.GENTOO, usage)
            + "PATCHES=(\n" + "".join(f'\t"${{FILESDIR}}"/{shlex.quote(p.name)}\n' for p in queue.patches) + ")\n"
            + "patchkit_cmake_args() {\n"
            + f"\tmycmakeargs+=( {' '.join(_cmake_flags(queue))} )\n}}\n")
    return [*_patch_files(queue, "files/"), OutFile("ebuild.patchkit", text.encode())]


def _mbox(queue: PatchedQueue) -> list[OutFile]:
    # Each regenerated patch is a whole mail starting with its mbox `From` line.
    return [OutFile("patches.mbox", b"".join(p.data for p in queue.patches))]


_RENDERERS: dict[Format, Callable[[PatchedQueue], list[OutFile]]] = {
    Format.DEBIAN: _debian, Format.QUILT: _quilt, Format.RPM: _rpm, Format.NIX: _nix,
    Format.ARCH: _arch, Format.GENTOO: _gentoo, Format.MBOX: _mbox,
}
