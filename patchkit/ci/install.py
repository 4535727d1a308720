"""How the workflow's jobs install patchkit: exactly the patchkit that writes the workflow.

PyPI's `patchkit` is somebody else's project, so no job ever installs a name alone. In order:

- `--patchkit REQUIREMENT`: the user's choice, as given (except the other project's name).
- Installed from a VCS URL at a commit (PEP 610's `direct_url.json` says so): that URL at that commit.
- Else (an index or a local folder, `pip install .`, which records no usable source): this
  patchkit repacked as a wheel from its installed files, each checked against its RECORD, written
  into the fork at `.github/patchkit/` with a requirements file holding its sha256 (as Gradle's
  wrapper keeps its jar in the repository). The jobs install it with `--no-deps --require-hashes`,
  then its dependencies, which are other projects' names. The wheel is reproducible (fixed order
  and timestamps): rerunning `ci github` writes the same bytes.

An editable install is refused: its files are a working tree, not a release anybody can verify.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Literal, Mapping

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from patchkit import DISTRIBUTION, __version__
from patchkit.errors import PatchkitError

BUNDLE_DIR = ".github/patchkit"  # in the fork, beside the workflow
REQUIREMENTS = f"{BUNDLE_DIR}/requirements.txt"
DEPENDENCIES = f"{BUNDLE_DIR}/dependencies.txt"
# The other project on PyPI: its name never reaches pip from here.
STRANGER = "patchkit"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can hold: reproducible wheels use it
# Installer's files, not the release's: a wheel does not carry them.
_INSTALLER_FILES = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}

SourceKind = Literal["requirement", "vcs", "wheel"]


@dataclass(frozen=True)
class Install:
    """What the jobs install as patchkit, and the files that go into the fork with the workflow."""

    kind: SourceKind
    requirement: str | None  # "requirement", "vcs": what pip installs, in the step's env
    files: Mapping[str, bytes]  # "wheel": path in the fork -> bytes

    def commands(self, python: str = "python", extra: str = "") -> list[str]:
        """The step's pip lines, run by PYTHON; EXTRA: more packages for the same job (`cmake ninja`)."""
        more = f" {extra}" if extra else ""
        if self.kind == "wheel":
            return [f"{python} -m pip install -q --no-deps --require-hashes -r {REQUIREMENTS}",
                    f"{python} -m pip install -q -r {DEPENDENCIES}{more}"]
        return [f'{python} -m pip install -q "$PATCHKIT"{more}']

    @property
    def env(self) -> dict[str, str]:
        return {} if self.requirement is None else {"PATCHKIT": self.requirement}


def resolve(requirement: str | None, dist: metadata.Distribution | None = None) -> Install:
    """The Install for REQUIREMENT (--patchkit) or, without one, for DIST (default: this installed
    patchkit)."""
    if requirement is not None:
        return Install("requirement", _checked(requirement), {})
    dist = dist or _distribution()
    direct = _direct_url(dist)
    if direct.get("dir_info", {}).get("editable"):
        raise PatchkitError(f"this patchkit is an editable install ({direct.get('url', '?')}), which the "
                            "workflow cannot install as it is",
                            "pip install . (not -e), or give --patchkit REQUIREMENT")
    vcs = direct.get("vcs_info")
    if vcs and vcs.get("vcs") == "git" and vcs.get("commit_id"):
        url = f"git+{direct['url']}@{vcs['commit_id']}"
        if direct.get("subdirectory"):
            url += f"#subdirectory={direct['subdirectory']}"
        return Install("vcs", f"{DISTRIBUTION} @ {url}", {})
    return Install("wheel", None, bundle(dist))


def _checked(requirement: str) -> str:
    try:
        parsed = Requirement(requirement)
    except InvalidRequirement:
        raise PatchkitError(f"--patchkit {requirement!r} is not a pip requirement",
                            f"e.g. --patchkit '{DISTRIBUTION}=={__version__}' or "
                            f"'{DISTRIBUTION} @ git+https://...@COMMIT'") from None
    if canonicalize_name(parsed.name) == STRANGER:
        raise PatchkitError(f"--patchkit {requirement!r} names PyPI's `{STRANGER}`, another project",
                            f"this one is {DISTRIBUTION} (e.g. --patchkit '{DISTRIBUTION}=={__version__}')")
    return requirement


def _distribution() -> metadata.Distribution:
    try:
        return metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise PatchkitError(f"patchkit runs without its installed metadata ({DISTRIBUTION} is not installed)",
                            "pip install . in patchkit's checkout, or give --patchkit REQUIREMENT") from None


def _direct_url(dist: metadata.Distribution) -> dict:
    text = dist.read_text("direct_url.json")
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        data = {}
    return data if isinstance(data, dict) else {}


def bundle(dist: metadata.Distribution) -> dict[str, bytes]:
    """The files `.github/patchkit/` holds: DIST repacked as a wheel, a requirements file pinning
    its sha256, and its dependencies (without extras) for the second install."""
    wheel_name = f"{canonicalize_name(dist.metadata['Name']).replace('-', '_')}-{dist.version}-py3-none-any.whl"
    wheel = _repack(dist)
    digest = hashlib.sha256(wheel).hexdigest()
    requirements = f"./{BUNDLE_DIR}/{wheel_name} --hash=sha256:{digest}\n"
    dependencies = [req for req in dist.requires or [] if "extra ==" not in req.replace('"', "").replace("'", "")]
    header = f"# Written by `patchkit ci github` ({DISTRIBUTION} {dist.version}); regenerate rather than edit.\n"
    return {f"{BUNDLE_DIR}/{wheel_name}": wheel,
            REQUIREMENTS: (header + requirements).encode(),
            DEPENDENCIES: (header + "".join(f"{req}\n" for req in dependencies)).encode()}


def _repack(dist: metadata.Distribution) -> bytes:
    """DIST's installed files as a wheel. Every file is checked against RECORD's hash: a file
    changed since it was installed is refused, not shipped to the runners."""
    files = dist.files or []
    dist_info = next((f.parts[0] for f in files if f.parts[0].endswith(".dist-info")), None)
    if dist_info is None:
        raise PatchkitError(f"{DISTRIBUTION}'s installed files have no RECORD to check them by",
                            "reinstall it with pip (pip install .), or give --patchkit REQUIREMENT")
    entries: list[tuple[str, bytes]] = []
    for file in files:
        posix = PurePosixPath(*file.parts)
        # Scripts (../../bin/patchkit) are made again from entry_points.txt; bytecode by the installer.
        if ".." in posix.parts or posix.suffix == ".pyc" or \
                (posix.parts[0] == dist_info and posix.name in _INSTALLER_FILES):
            continue
        data = Path(file.locate()).read_bytes()
        if file.hash is None or file.hash.mode != "sha256" or _urlsafe(hashlib.sha256(data).digest()) != file.hash.value:
            raise PatchkitError(f"{file.locate()} differs from what pip installed (RECORD)",
                                "reinstall patchkit (pip install --force-reinstall .), then rerun")
        entries.append((str(posix), data))
    entries.sort()
    record = "".join(f"{name},sha256={_urlsafe(hashlib.sha256(data).digest())},{len(data)}\n"
                     for name, data in entries) + f"{dist_info}/RECORD,,\n"
    entries.append((f"{dist_info}/RECORD", record.encode()))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(name, _EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


def _urlsafe(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
