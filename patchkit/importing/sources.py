"""Every SOURCE kind `patchkit import` takes, read into patch texts: one patch's text each, in order.

A file holds one patch (git format-patch, DEP-3, a plain diff) or an mbox of several; a folder is
a quilt/Debian `series` or a Gentoo `files/`; `--from-repo PATH A..B` is a local repository's
commits; an `https://` URL is downloaded. Nothing here parses a patch: `mail.py` does, one text
at a time, so that `--repair` can stand between the two.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from patchkit import git
from patchkit.errors import PatchkitError
from patchkit.importing import fetch
from patchkit.patchfile import series as quilt_series
from patchkit.patchfile.diff import diff_start
from patchkit.patchfile.format_patch import format_commit, join
from patchkit.patchfile.mail import split_mbox

PATCH_SUFFIXES = (".patch", ".diff")


@dataclass(frozen=True)
class PatchText:
    """One patch's text as a SOURCE holds it, before it is parsed (or repaired)."""

    text: str  # read as UTF-8; bytes that are not UTF-8 kept as surrogates
    source: str  # what the report and every message call it
    kind: str | None  # the SOURCE kind; None: a file, whose kind its content says
    origin: str | None = None  # a URL: the `Origin:` trailer, when the patch has none
    file_subject: str | None = None  # a patch from a folder: its file name's words
    repairable: bool = True  # --repair applies (not to what git wrote from a repository)


@dataclass(frozen=True)
class Gathered:
    pieces: tuple[PatchText, ...]
    warnings: tuple[str, ...] = field(default_factory=tuple)


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")


def gather(sources: list[str], *, from_repo: tuple[str, str] | None = None, ebuild: Path | None = None,
           sha256: list[str] | None = None, allow_http: bool = False) -> Gathered:
    """Every SOURCE's pieces in the order given, then those of --from-repo."""
    urls = [s for s in sources if fetch.has_url_scheme(s)]
    pins = [fetch.check_sha256(p) for p in sha256 or []]
    if pins and len(pins) != len(urls):
        raise PatchkitError(f"{len(pins)} --sha256 for {len(urls)} URL source(s)",
                            "give one --sha256 per URL, in the order of the URLs")
    for url in urls:  # every URL's form is checked before any download
        fetch.check_url(url, allow_http)
    folders = [s for s in sources if not fetch.has_url_scheme(s) and s != "-" and Path(s).is_dir()]
    if ebuild is not None:
        if not ebuild.is_file():
            raise PatchkitError(f"--ebuild {ebuild}: no such file", "give the .ebuild whose PATCHES orders the files")
        gentoo = [f for f in folders if _series_of(Path(f)) is None]
        if len(gentoo) != 1:
            raise PatchkitError(f"--ebuild needs exactly one Gentoo files/ folder among the sources, not {len(gentoo)}",
                                "give the ebuild's files/ folder as the SOURCE")
    pieces: list[PatchText] = []
    warnings: list[str] = []
    pin_of = dict(zip(urls, pins))
    seen_stdin = False
    for source in sources:
        if fetch.has_url_scheme(source):
            data = fetch.download(source, sha256=pin_of.get(source), allow_http=allow_http)
            pieces += _messages(decode(data), source, "url", warnings, origin=source)
        elif source == "-":
            if seen_stdin:
                raise PatchkitError("'-' (standard input) is given twice", "give it once")
            seen_stdin = True
            pieces += _messages(decode(sys.stdin.buffer.read()), "<stdin>", None, warnings)
        else:
            path = Path(source)
            if path.is_dir():
                found, said = _folder(path, source, ebuild)
                pieces += found
                warnings += said
            elif path.is_file():
                pieces += _messages(decode(_read(path)), source, None, warnings)
            elif path.exists():
                raise PatchkitError(f"{source}: not a file or a folder", "give a patch file, a folder or a URL")
            else:
                raise PatchkitError(f"{source}: no such file or folder", "check the path")
    if from_repo is not None:
        pieces += from_repository(*from_repo)
    if not pieces:
        raise PatchkitError("nothing to import",
                            "give a SOURCE (file, folder or https:// URL) or --from-repo PATH A..B")
    return Gathered(tuple(pieces), tuple(warnings))


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise PatchkitError(f"{path}: cannot read it ({exc.strerror})", "check the permissions") from None


# -- mailboxes ------------------------------------------------------------------------------------

def _messages(text: str, source: str, kind: str | None, warnings: list[str],
              origin: str | None = None) -> list[PatchText]:
    """The pieces of one file or download: one per message of an mbox that holds a diff (a
    cover letter or a reply in a thread holds none, and is left out, saying so)."""
    messages = split_mbox(text)
    if len(messages) == 1:
        return [PatchText(text, source, kind, origin=origin)]
    pieces = []
    for i, m in enumerate(messages, 1):
        where = f"{source} (message {i} of {len(messages)})"
        if diff_start(m.splitlines()) is not None:
            pieces.append(PatchText(m, where, kind or "mbox", origin=origin))
        else:
            subject = re.search(r"(?mi)^Subject: *(.*)$", m)
            warnings.append(f"{where}: no diff (a cover letter or a reply?), not imported"
                            + (f": {subject.group(1).strip()!r}" if subject else ""))
    if not pieces:
        raise PatchkitError(f"{source}: none of its {len(messages)} messages holds a diff",
                            "is it a mailbox of patches?")
    return pieces


# -- folders --------------------------------------------------------------------------------------

def _series_of(folder: Path) -> Path | None:
    """A quilt `series` in FOLDER, or in FOLDER/patches (a Debian `debian/` folder)."""
    for series in (folder / "series", folder / "patches" / "series"):
        if series.is_file():
            return series
    return None


def _folder(folder: Path, shown: str, ebuild: Path | None) -> tuple[list[PatchText], list[str]]:
    series = _series_of(folder)
    if series is not None:
        prefix = shown.rstrip("/") + ("" if series.parent == folder else "/patches")
        return _quilt(series, prefix), []
    return _gentoo(folder, shown, ebuild)


def _quilt(series_path: Path, prefix: str) -> list[PatchText]:
    """The patches a quilt/Debian series lists, in its order."""
    pieces = []
    for entry in quilt_series.entries(quilt_series.read_text(series_path)):
        name, norm = entry.name, entry.path
        where = f"{series_path}:{entry.lineno}"
        if entry.options not in ((), ("-p1",)):
            raise PatchkitError(f"{where}: series option {' '.join(entry.options)!r} is not supported",
                                "only -p1 patches (a/ and b/ prefixes, quilt's default) can be imported")
        if norm.startswith(("/", "../")) or norm == "..":
            raise PatchkitError(f"{where}: {name} is outside the series folder", "list patches inside it")
        path = series_path.parent / norm
        if not path.is_file():
            raise PatchkitError(f"{where}: {name} is listed but does not exist",
                                "fix the series or add the file")
        pieces.append(PatchText(decode(_read(path)), f"{prefix}/{norm}", "quilt",
                            file_subject=subject_from_filename(norm)))
    if not pieces:
        raise PatchkitError(f"{series_path}: lists no patches", "nothing to import")
    return pieces


def _gentoo(folder: Path, shown: str, ebuild: Path | None) -> tuple[list[PatchText], list[str]]:
    """A Gentoo files/ folder: in the ebuild's PATCHES order, else by file name (with a warning)."""
    files = sorted((p for p in folder.iterdir() if p.is_file() and p.name.endswith(PATCH_SUFFIXES)),
                   key=lambda p: p.name.encode("utf-8", errors="surrogateescape"))
    warnings = []
    names: dict[str, str] = {}
    if ebuild is None:
        if not files:
            raise PatchkitError(f"{shown}: no series file and no .patch or .diff files",
                                "give a quilt/Debian patches folder, a Gentoo files/ folder or a patch file")
        ordered = files
        warnings.append(f"{shown}: no series file, so the patches are taken in file-name order; "
                        "give --ebuild FILE to take the order of its PATCHES")
    else:
        ordered, names = ebuild_patches(ebuild, folder)
        left = [p.name for p in files if p not in ordered]
        if left:
            warnings.append(f"{shown}: not in the PATCHES of {ebuild.name}, so not imported: {', '.join(left)}")
    strip = tuple(f"{v}-" for v in (names.get("P"), names.get("PN")) if v)
    pieces = [PatchText(decode(_read(p)), f"{shown.rstrip('/')}/{p.relative_to(folder).as_posix()}", "gentoo",
                    file_subject=subject_from_filename(p.name, strip)) for p in ordered]
    return pieces, warnings


def subject_from_filename(name: str, strip: tuple[str, ...] = ()) -> str:
    """'debian/0003-fix_the-build.patch' -> 'fix the build' (the subject of last resort)."""
    stem = posixpath.basename(name)
    for suffix in PATCH_SUFFIXES:
        stem = stem.removesuffix(suffix)
    for prefix in strip:
        if stem.startswith(prefix) and len(stem) > len(prefix):
            stem = stem[len(prefix):]
            break
    stem = re.sub(r"^\d+[-_.]+(?=\D)", "", stem)
    return " ".join(re.split(r"[-_]+", stem)).strip() or stem


# -- Gentoo ebuilds -------------------------------------------------------------------------------

_EBUILD_NAME = re.compile(r"^(?P<pn>.+?)-(?P<pv>\d+(?:\.\d+)*[a-z]?(?:_(?:alpha|beta|pre|rc|p)\d*)*)"
                          r"(?:-r(?P<pr>\d+))?\.ebuild$")
_ASSIGNMENT = re.compile(r"^[ \t]*(?:local[ \t]+|export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)=(?!\()(.*)$", re.M)
_PATCHES = re.compile(r"^[ \t]*(?:local[ \t]+)?PATCHES\+?=\(", re.M)
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def ebuild_patches(ebuild: Path, filesdir: Path) -> tuple[list[Path], dict[str, str]]:
    """The files of the ebuild's PATCHES array(s), in order, as paths in FILESDIR; and the
    variables known from the ebuild's name (P, PN, PV, PR, PVR, PF)."""
    m = _EBUILD_NAME.match(ebuild.name)
    if not m:
        raise PatchkitError(f"--ebuild {ebuild}: not an ebuild file name (NAME-VERSION[-rN].ebuild)",
                            "give the package's .ebuild file")
    pn, pv, pr = m.group("pn"), m.group("pv"), m.group("pr")
    pvr = f"{pv}-r{pr}" if pr else pv
    known = {"PN": pn, "PV": pv, "P": f"{pn}-{pv}", "PR": f"r{pr or 0}", "PVR": pvr, "PF": f"{pn}-{pvr}",
             "FILESDIR": str(filesdir), "CATEGORY": ebuild.resolve().parent.parent.name}
    try:
        text = ebuild.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PatchkitError(f"--ebuild {ebuild}: cannot read it ({exc})", "give a readable UTF-8 file") from None
    assigned: dict[str, str] = {}
    for name, value in _ASSIGNMENT.findall(text):
        if name in known or name in assigned:
            continue
        try:
            words = shlex.split(value, comments=True)
        except ValueError:
            continue
        if len(words) == 1:
            assigned[name] = words[0]
    entries: list[str] = []
    for start in _PATCHES.finditer(text):
        entries += _array(text, start.end(), ebuild)
    if not entries:
        raise PatchkitError(f"--ebuild {ebuild}: no PATCHES=( ... ) array", "give the ebuild that lists the patches, "
                            "or leave --ebuild out to import in file-name order")
    ordered: list[Path] = []
    base = filesdir.resolve()
    for entry in entries:
        value = _expand(entry, known, assigned, ebuild)
        path = Path(value).resolve() if Path(value).is_absolute() else (base / value).resolve()
        if path != base and base not in path.parents:
            raise PatchkitError(f"--ebuild {ebuild.name}: PATCHES entry {entry!r} is not in the files/ folder "
                                f"{filesdir}", "import only what files/ holds; give other patches as their own SOURCE")
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(PATCH_SUFFIXES))
        elif path.is_file():
            found = [path]
        else:
            raise PatchkitError(f"--ebuild {ebuild.name}: PATCHES entry {entry!r} ({path.relative_to(base)}) "
                                f"does not exist in {filesdir}", "fix the ebuild or add the file")
        ordered += [filesdir / p.relative_to(base) for p in found if filesdir / p.relative_to(base) not in ordered]
    return ordered, known


def _array(text: str, start: int, ebuild: Path) -> list[str]:
    """The words of a bash array whose '(' ends just before START."""
    depth_quote = None
    i = start
    while i < len(text):
        c = text[i]
        if depth_quote:
            if c == "\\" and depth_quote == '"':
                i += 1
            elif c == depth_quote:
                depth_quote = None
        elif c in "\"'":
            depth_quote = c
        elif c == "#" and (i == start or text[i - 1] in " \t\n"):
            i = text.find("\n", i)
            if i < 0:
                break
        elif c == "\\":
            i += 1
        elif c == ")":
            try:
                return shlex.split(text[start:i], comments=True)
            except ValueError as exc:
                raise PatchkitError(f"--ebuild {ebuild.name}: cannot read PATCHES ({exc})", "fix the ebuild") from None
        i += 1
    raise PatchkitError(f"--ebuild {ebuild.name}: PATCHES=( is never closed", "fix the ebuild")


def _expand(word: str, known: dict[str, str], assigned: dict[str, str], ebuild: Path, depth: int = 0) -> str:
    if "$(" in word or "`" in word:
        raise PatchkitError(f"--ebuild {ebuild.name}: PATCHES entry {word!r} runs a command, which patchkit "
                            "does not evaluate", "import the files as SOURCEs in the order you want")

    def value(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        if name in known:
            return known[name]
        if name in assigned and depth < 8:
            return _expand(assigned[name], known, assigned, ebuild, depth + 1)
        raise PatchkitError(f"--ebuild {ebuild.name}: PATCHES entry {word!r} uses ${{{name}}}, which patchkit "
                            "cannot know", "import the files as SOURCEs in the order you want")

    if re.search(r"\$\{[^}]*[^A-Za-z0-9_}][^}]*\}", word):
        raise PatchkitError(f"--ebuild {ebuild.name}: PATCHES entry {word!r} uses a parameter expansion "
                            "patchkit does not evaluate", "import the files as SOURCEs in the order you want")
    return _VARIABLE.sub(value, word)


# -- a local repository's commits ----------------------------------------------------------------

def from_repository(path: str, revisions: str) -> list[PatchText]:
    """One piece per first-parent commit of REVISIONS (A..B) in the repository at PATH, as git
    format-patch writes it; a merge anywhere in the range is refused."""
    repo = Path(path).expanduser()
    if not repo.is_dir():
        raise PatchkitError(f"--from-repo {path}: no such folder", "give a local git repository")
    try:
        git.run(["rev-parse", "--git-dir"], cwd=repo)
    except git.GitFailed:
        raise PatchkitError(f"--from-repo {path}: not a git repository", "give a local git repository") from None
    start, dots, end = revisions.partition("..")
    if not dots or end.startswith("."):
        raise PatchkitError(f"--from-repo range {revisions!r}: expected A..B",
                            "give the commits after A up to B, as in `git log A..B`")
    commits = {}
    for ref in (start, end or "HEAD"):
        git.validate_ref(ref, "--from-repo ref")
        commit = git.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
                         cwd=repo, check=False)
        if not commit:
            raise PatchkitError(f"--from-repo {path}: unknown ref {ref!r}",
                                "name a branch, tag or commit of that repository")
        commits[ref] = commit
    a, b = commits[start], commits[end or "HEAD"]
    merges = git.run(["rev-list", "--merges", f"{a}..{b}"], cwd=repo).split()
    if merges:
        subject = git.run(["show", "-s", "--format=%s", merges[-1]], cwd=repo)
        raise PatchkitError(f"--from-repo {revisions}: the range holds {len(merges)} merge commit(s), "
                            f"the first {merges[-1][:12]} ({subject!r})",
                            "a merge is no patch: give a range without merges, or import each side's commits")
    listed = git.run(["rev-list", "--reverse", "--first-parent", f"{a}..{b}"], cwd=repo).split()
    if not listed:
        raise PatchkitError(f"--from-repo {revisions}: no commits in the range", "check the order: A..B is "
                            "what B has and A has not")
    pieces = []
    for commit in listed:
        message, diff = format_commit(repo, commit)
        where = f"{path}@{commit[:12]}"
        if not diff:
            raise PatchkitError(f"--from-repo {where}: the commit changes nothing", "leave it out of the range")
        pieces.append(PatchText(join(message, diff), where, "git", repairable=False))
    return pieces
