"""The fork-carrying repository: `patchkit.yaml`, its paths, and `patchkit.lock`."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from patchkit import __version__
from patchkit.errors import PatchkitError
from patchkit.fileio import atomic_write

CONFIG_NAME = "patchkit.yaml"
LOCK_NAME = "patchkit.lock"
STATE_DIR = ".patchkit"
LAST_REPORT = "last-apply.json"
DEFAULT_UPSTREAM = "https://github.com/ggml-org/llama.cpp.git"
DEFAULT_BRANCH = "master"
DEFAULT_OUTPUT = "llama.cpp"

_OBJECT_ID = re.compile(r"^[0-9a-f]{40}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_LOCK_HINT = ("restore it from git (`git checkout -- patchkit.lock`), or remove it and run "
              "`patchkit apply upstream@REF --update-lock` on a good commit")
_TOP_KEYS = {"upstream", "patches", "recipes", "cache", "output", "checks"}
_UPSTREAM_KEYS = {"url", "branch"}


def default_cache_dir() -> Path:
    # The XDG spec: a relative XDG_CACHE_HOME is invalid and is ignored (as an empty one).
    base = os.environ.get("XDG_CACHE_HOME", "")
    return Path(base if os.path.isabs(base) else Path.home() / ".cache") / "patchkit"


@dataclass(frozen=True)
class Lock:
    """The last known good state: what `upstream@locked` means and what CI compares against."""

    upstream_url: str
    upstream_commit: str
    patches: dict[str, str]  # patch file name -> sha256 of its bytes
    tree: str  # id of the patched tree
    tool_version: str = __version__

    @classmethod
    def read(cls, path: Path) -> Lock | None:
        """The lock at PATH, None when there is none; anything malformed is refused in one line
        naming the file and the field, before any command relies on it."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise PatchkitError(f"{path}: cannot read it ({exc.strerror})", _LOCK_HINT) from None
        try:
            fields = json.loads(_utf8(path, data, _LOCK_HINT))
        except ValueError as exc:
            raise PatchkitError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})", _LOCK_HINT) from None

        def invalid(name: str, expected: str, value: Any) -> PatchkitError:
            return PatchkitError(f"{path}: not a valid lock file: {name} must be {expected}, not {_shown(value)}",
                                 _LOCK_HINT)

        def field(container: dict[str, Any], key: str, name: str, valid: Callable[[Any], bool],
                  expected: str) -> Any:
            if key not in container:
                raise PatchkitError(f"{path}: not a valid lock file: {name} is missing", _LOCK_HINT)
            if not valid(container[key]):
                raise invalid(name, expected, container[key])
            return container[key]

        def is_object(value: Any) -> bool:
            return isinstance(value, dict)

        def object_id(value: Any) -> bool:
            return isinstance(value, str) and bool(_OBJECT_ID.match(value))

        if not is_object(fields):
            raise invalid("it", "a JSON object", fields)
        upstream = field(fields, "upstream", "upstream", is_object, "an object with url and commit")
        url = field(upstream, "url", "upstream.url", lambda v: isinstance(v, str) and bool(v), "a non-empty string")
        commit = field(upstream, "commit", "upstream.commit", object_id, "a full commit id (40 hex digits)")
        patches = field(fields, "patches", "patches", is_object, "an object of patch name to sha256")
        for name, sha256 in patches.items():
            if not (isinstance(sha256, str) and _SHA256.match(sha256)):
                raise invalid(f"patches[{json.dumps(name)}]", "a sha256 (64 hex digits)", sha256)
        tree = field(fields, "tree", "tree", object_id, "a full tree id (40 hex digits)")
        version = fields.get("tool-version", "")  # a lock older than the field has none
        if not isinstance(version, str):
            raise invalid("tool-version", "a string", version)
        return cls(url, commit, dict(patches), tree, version)

    def write(self, path: Path) -> None:
        atomic_write(path, self.encode())

    def encode(self) -> bytes:
        data = {"upstream": {"url": self.upstream_url, "commit": self.upstream_commit},
                "patches": self.patches, "tree": self.tree, "tool-version": self.tool_version}
        return (json.dumps(data, indent=2) + "\n").encode()


@dataclass(frozen=True)
class Project:
    root: Path
    upstream_url: str = DEFAULT_UPSTREAM
    upstream_branch: str = DEFAULT_BRANCH
    patches_dir: Path = Path("patches")
    recipes_dir: Path = Path("recipes")
    cache_dir: Path = field(default_factory=default_cache_dir)
    output_dir: Path = Path(DEFAULT_OUTPUT)
    checks: list[dict[str, Any]] = field(default_factory=list)  # raw rules; checks/ validates

    @property
    def config_path(self) -> Path:
        return self.root / CONFIG_NAME

    @property
    def lock_path(self) -> Path:
        return self.root / LOCK_NAME

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def series_path(self) -> Path:
        return self.patches_dir / "series"

    def lock(self) -> Lock | None:
        return Lock.read(self.lock_path)

    @property
    def key(self) -> str:
        """Names this project's refs in a mirror that other projects may share."""
        return hashlib.sha256(str(self.root.resolve()).encode()).hexdigest()[:12]

    def save_last_report(self, data: dict[str, Any]) -> None:
        """The last apply's result, for `patchkit status`: local state, never committed."""
        atomic_write(self.state_dir / LAST_REPORT, (json.dumps(data, indent=2) + "\n").encode())

    def last_report(self) -> dict[str, Any] | None:
        try:
            return json.loads((self.state_dir / LAST_REPORT).read_text())
        except (OSError, ValueError):
            return None

    @classmethod
    def find(cls, start: Path | None = None) -> Project:
        """The project whose patchkit.yaml is in START or the nearest folder above it."""
        project = cls.find_optional(start)
        if project is None:
            raise PatchkitError(f"no {CONFIG_NAME} in {(start or Path.cwd()).resolve()} or any folder above it",
                                "run `patchkit init` in your fork repository first")
        return project

    @classmethod
    def find_optional(cls, start: Path | None = None) -> Project | None:
        """Like find, for commands that also work outside a project (builds)."""
        here = (start or Path.cwd()).resolve()
        for folder in (here, *here.parents):
            if (folder / CONFIG_NAME).is_file():
                return cls.load(folder)
        return None

    @classmethod
    def load(cls, root: Path) -> Project:
        path = root / CONFIG_NAME
        data = read_yaml(path) or {}
        if not isinstance(data, dict):
            raise PatchkitError(f"{path}: expected a mapping at the top level")
        _reject_unknown(path, data, _TOP_KEYS, "")
        upstream = data.get("upstream") or {}
        if not isinstance(upstream, dict):
            raise PatchkitError(f"{path}: key 'upstream' must be a mapping with url and branch")
        _reject_unknown(path, upstream, _UPSTREAM_KEYS, "upstream.")
        checks = data.get("checks") or []
        if not isinstance(checks, list):
            raise PatchkitError(f"{path}: key 'checks' must be a list of rules")

        def folder(key: str, default: Path) -> Path:
            value = data.get(key)
            if value is not None and not isinstance(value, str):
                raise PatchkitError(f"{path}: key '{key}' must be a path string")
            p = Path(os.path.expanduser(value)) if value else default
            return p if p.is_absolute() else root / p

        cache_dir = folder("cache", default_cache_dir())
        if cache_dir.exists() and not cache_dir.is_dir():
            raise PatchkitError(f"{path}: key 'cache' names {cache_dir}, which is not a folder",
                                "point it at a folder (it is created if missing)")
        return cls(
            root=root,
            upstream_url=_string(path, upstream, "url", DEFAULT_UPSTREAM),
            upstream_branch=_string(path, upstream, "branch", DEFAULT_BRANCH),
            patches_dir=folder("patches", Path("patches")),
            recipes_dir=folder("recipes", Path("recipes")),
            cache_dir=cache_dir,
            output_dir=folder("output", Path(DEFAULT_OUTPUT)),
            checks=checks,
        )


def read_yaml(path: Path) -> Any:
    """A YAML file's data; a read, encoding or syntax error is one line naming the file (and line)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PatchkitError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        return yaml.safe_load(_utf8(path, data, "save the file as UTF-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise PatchkitError(f"{path}{where}: not valid YAML", "fix the syntax") from None


def _utf8(path: Path, data: bytes, hint: str) -> str:
    """DATA, read from PATH, as text; bytes that are not UTF-8 are one line naming the line and byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise PatchkitError(f"{path}:{line}: not UTF-8 (byte {exc.start} is 0x{data[exc.start]:02x})", hint) from None


def _shown(value: Any) -> str:
    """A JSON value as an error message names it: scalars as written, containers by kind."""
    if isinstance(value, (list, dict)):
        return "a list" if isinstance(value, list) else "an object"
    text = json.dumps(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _string(path: Path, data: dict[str, Any], key: str, default: str) -> str:
    value = data.get(key, default)
    if not isinstance(value, str) or not value:
        raise PatchkitError(f"{path}: key 'upstream.{key}' must be a non-empty string")
    return value


def _reject_unknown(path: Path, data: dict[str, Any], known: set[str], prefix: str) -> None:
    for key in data:
        if key not in known:
            raise PatchkitError(f"{path}: unknown key '{prefix}{key}'",
                                f"known keys: {', '.join(sorted(known))}")
