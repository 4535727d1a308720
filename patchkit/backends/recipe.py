"""Recipes: one YAML file per backend, validated against one schema.

patchkit ships a recipe for each backend it knows (the repository's top-level `recipes/`, the
package `patchkit.recipes` once installed); a project's `recipes/NAME.yaml` overrides the shipped
one of that name or adds a backend. A bad recipe fails with the file and the key path (exit 2),
before anything is probed or built.

A recipe's optional `ci:` section says where the backend builds in CI (`patchkit ci github`): the
runner, a container image, packages and their package manager, setup commands, a script the build
step sources, environment. A project recipe without one takes the shipped recipe's of its name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Mapping, Sequence

from patchkit.errors import EnvironmentProblem, PatchkitError
from patchkit.project import read_yaml

if TYPE_CHECKING:
    from patchkit.project import Project

RequirementKind = Literal["command", "library", "header", "cmake-package", "platform"]
REQUIREMENT_KINDS: tuple[RequirementKind, ...] = ("command", "library", "header", "cmake-package",
                                                  "platform")
# Kinds with a version: a command's is in its output, a header's in its text.
VERSIONED_KINDS = ("command", "header")
RecipeSource = Literal["shipped", "project"]
DEFAULT_TARGETS = ("llama-server",)
# The version of a tool is its first dotted number unless a recipe says where to look.
DEFAULT_VERSION_PATTERN = r"(\d+(?:\.\d+)+)"
PLATFORMS = ("darwin", "linux", "win32")  # values of sys.platform
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_VERSION_RE = re.compile(r"^\d+(?:\.\d+)*$")
_SCALAR = {"type": ["string", "boolean", "integer", "number"]}
_STRINGS = {"type": "array", "items": {"type": "string", "minLength": 1}}
# Names go to os.environ and `-DNAME=VALUE`: an '=' or a NUL there cannot be passed on.
_NAME = {"type": "string", "minLength": 1, "pattern": "^[^=\\x00]+$"}
_NO_NUL = "^[^\\x00]*$"
_VALUES = {"type": "object", "propertyNames": _NAME,
           "additionalProperties": {**_SCALAR, "pattern": _NO_NUL}}  # pattern: strings only

PackageManager = Literal["apt", "brew"]
PACKAGE_MANAGERS: tuple[PackageManager, ...] = ("apt", "brew")
# A runner label or an image goes into the workflow's YAML as one plain word.
_LABEL = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$"}

_CI_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["runs-on"],
    "properties": {
        "runs-on": _LABEL,  # a GitHub-hosted runner label (a container needs a Linux one)
        "container": _LABEL,  # an image the job runs in: no sudo there, and git may be missing
        "packages": {"type": "array", "items": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9.+_-]*$"}},
        "package-manager": {"enum": list(PACKAGE_MANAGERS)},
        "setup": _STRINGS,  # shell commands, after the packages, before the build
        "source": {"type": "string", "minLength": 1},  # sourced in the build's own step (oneAPI's setvars.sh)
        "environment": _VALUES,
        "gpu-environment": _VALUES,  # in place of environment on a --runs-on runner, which has the GPU
        # The build runs anywhere, its binaries need the GPU: smoke-tested only on a runner --runs-on gives.
        "gpu": {"type": "boolean"},
        # docker options that hand the GPU to the container, on such a runner (`--gpus all` for CUDA).
        "gpu-options": {"type": "string", "minLength": 1, "pattern": "^[^\n\x00]+$"},
    },
    "dependentRequired": {"gpu-options": ["container", "gpu"], "gpu-environment": ["gpu"]},
}

_REQUIREMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        **{kind: {"type": "string", "minLength": 1} for kind in REQUIREMENT_KINDS},
        "name": {"type": "string", "minLength": 1},
        "args": _STRINGS,
        "version": {"type": "string", "minLength": 1},
        "minimum": {"type": ["string", "number"]},
        "paths": _STRINGS,
    },
}

RECIPE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["description"],
    "properties": {
        "description": {"type": "string", "minLength": 1},
        "build-type": {"enum": ["Release", "Debug", "RelWithDebInfo", "MinSizeRel"]},
        # Ninja only: its `[n/m]` lines are what the progress display reads.
        "generator": {"enum": ["Ninja"]},
        "targets": {**_STRINGS, "minItems": 1},
        "options": _VALUES,
        "environment": _VALUES,
        "requires": {"type": "array", "items": _REQUIREMENT_SCHEMA},
        # Relative to the tree: whose `find_package(... CONFIG REQUIRED)` lines are probed too.
        "cmake-lists": {"type": "string", "minLength": 1},
        "ci": _CI_SCHEMA,
    },
}


@dataclass(frozen=True)
class Requirement:
    """Something a backend needs on this machine, and how to probe for it."""

    kind: RequirementKind
    value: str  # the command, library, header path, CMake package name or platform name
    name: str  # what the reason calls it, e.g. "cuBLAS"
    args: tuple[str, ...] = ("--version",)
    # A regular expression whose first group is the version, searched in a command's output or
    # a header's text.
    version: str | None = None
    minimum: str | None = None
    paths: tuple[str, ...] = ()  # searched before the system's own places


@dataclass(frozen=True)
class CiEnvironment:
    """Where a backend builds in CI: see _CI_SCHEMA."""

    runs_on: str
    container: str | None = None
    packages: tuple[str, ...] = ()
    package_manager: PackageManager = "apt"
    setup: tuple[str, ...] = ()
    source: str | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    # On a runner --runs-on gives (with the GPU), in place of `environment` (CUDA: its own
    # architecture, and the real driver at link time).
    gpu_environment: Mapping[str, str] = field(default_factory=dict)
    gpu: bool = False
    gpu_options: str | None = None
    # Not of the ci: section: the OS its recipe requires (`requires: platform`), None where it
    # names none. It, not a runner's label, says whether the smoke test can run there.
    platform: str | None = None


@dataclass(frozen=True)
class Recipe:
    name: str
    path: Path
    description: str
    build_type: str = "Release"
    generator: str = "Ninja"
    targets: tuple[str, ...] = DEFAULT_TARGETS
    options: Mapping[str, str] = field(default_factory=dict)
    environment: Mapping[str, str] = field(default_factory=dict)
    requires: tuple[Requirement, ...] = ()
    cmake_lists: str | None = None  # see RECIPE_SCHEMA
    source: RecipeSource = "project"
    overrides: bool = False  # a project recipe that replaces the shipped one of its name
    ci: CiEnvironment | None = None  # None: no CI environment (`ci github` refuses it without --runs-on)

    @property
    def platform(self) -> str | None:
        """The OS the recipe requires (a value of sys.platform); None where it names none."""
        return next((r.value for r in self.requires if r.kind == "platform"), None)


def shipped_recipes_dir() -> Path:
    """The recipes patchkit ships: one copy, the repository's top-level `recipes/`.

    Installed from a wheel they are the package `patchkit.recipes` (patchkit/recipes/); run from
    a source checkout or an editable install, they are the `recipes/` beside the package.
    """
    package = Path(__file__).resolve().parents[1]
    for folder in (package / "recipes", package.parent / "recipes"):
        if (folder / "cpu.yaml").is_file():  # beside an installed package, any recipes/ may be there
            return folder
    raise EnvironmentProblem(f"patchkit's shipped recipes are missing (no {package / 'recipes'})",
                             "reinstall patchkit")


def default_recipes_dir(project: Project | None) -> Path:
    """The project's recipes folder; ./recipes where there is no project (a bare tree)."""
    return project.recipes_dir if project else Path.cwd() / "recipes"


def load_recipes(project_dir: Path | None = None) -> dict[str, Recipe]:
    """The shipped recipes, overridden or extended by PROJECT_DIR's `*.yaml` (by backend name,
    the file's stem), sorted by name. A PROJECT_DIR that does not exist adds nothing."""
    shipped_dir = shipped_recipes_dir()
    recipes = {p.stem: load_recipe(p, "shipped") for p in shipped_dir.glob("*.yaml")}
    # Run inside patchkit's own repository, the project's recipes are the shipped ones.
    if project_dir is not None and project_dir.is_dir() and not _same(project_dir, shipped_dir):
        for path in project_dir.glob("*.yaml"):
            recipe, shipped = load_recipe(path), recipes.get(path.stem)
            # Where a backend builds in CI rarely changes with its options: kept unless replaced.
            ci = recipe.ci if recipe.ci is not None or shipped is None or shipped.ci is None else \
                replace(shipped.ci, platform=recipe.platform)
            recipes[path.stem] = replace(recipe, overrides=shipped is not None, ci=ci)
    return dict(sorted(recipes.items()))


def load_recipe(path: Path, source: RecipeSource = "project") -> Recipe:
    if not _NAME_RE.match(path.stem):
        raise PatchkitError(f"{path}: recipe names are lower-case letters, digits, '-' and '_'",
                            "rename the file")
    data = read_yaml(path) or {}
    _validate(path, data)
    recipe = Recipe(
        name=path.stem,
        path=path,
        description=data["description"],
        build_type=data.get("build-type", "Release"),
        generator=data.get("generator", "Ninja"),
        targets=tuple(data.get("targets", DEFAULT_TARGETS)),
        options={k: cmake_value(v) for k, v in (data.get("options") or {}).items()},
        environment={k: cmake_value(v) for k, v in (data.get("environment") or {}).items()},
        requires=tuple(_requirement(path, i, r) for i, r in enumerate(data.get("requires") or [])),
        cmake_lists=data.get("cmake-lists"),
        source=source,
    )
    return replace(recipe, ci=_ci(data["ci"], recipe.platform)) if "ci" in data else recipe


def select(recipes: Mapping[str, Recipe], names: Sequence[str]) -> list[Recipe]:
    """The recipes named, in the order given; an unknown name is a usage error."""
    unknown = [n for n in names if n not in recipes]
    if unknown:
        raise PatchkitError(f"no recipe for backend {', '.join(unknown)}",
                            f"known backends: {', '.join(recipes) or 'none'}")
    return [recipes[n] for n in dict.fromkeys(names)]


def cmake_value(value: object) -> str:
    """YAML reads `ON`/`OFF` as booleans; CMake wants them back as words."""
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return str(value)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def _validate(path: Path, data: object) -> None:
    from jsonschema import Draft202012Validator

    errors = sorted(Draft202012Validator(RECIPE_SCHEMA).iter_errors(data),
                    key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        return
    err = errors[0]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
    key = where.lstrip(".") or "(top level)"
    if "propertyNames" in err.schema_path:
        raise PatchkitError(f"{path}: key '{key}': name {err.instance!r} cannot be passed on",
                            "a name is a non-empty string with no '=' and no NUL")
    if err.validator == "pattern" and err.validator_value == _NO_NUL:
        raise PatchkitError(f"{path}: key '{key}': a value with a NUL character cannot be passed on",
                            "remove the NUL")
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = set(err.schema.get("properties", {}))
        extra = next(k for k in err.instance if k not in known)
        unknown = f"{where}.{extra}".lstrip(".")
        in_requirement = [str(p) for p in err.absolute_path][:1] == ["requires"]
        if in_requirement and not any(k in err.instance for k in REQUIREMENT_KINDS):
            raise PatchkitError(f"{path}: unknown requirement '{extra}' at '{key}'",
                                f"a requirement is one of: {', '.join(REQUIREMENT_KINDS)}")
        raise PatchkitError(f"{path}: unknown key '{unknown}'",
                            f"known keys here: {', '.join(sorted(known))}")
    raise PatchkitError(f"{path}: key '{key}': {err.message}")


def _ci(data: dict[str, Any], platform: str | None) -> CiEnvironment:
    return CiEnvironment(
        runs_on=data["runs-on"],
        container=data.get("container"),
        packages=tuple(data.get("packages", ())),
        package_manager=data.get("package-manager", "apt"),
        setup=tuple(data.get("setup", ())),
        source=data.get("source"),
        environment={k: cmake_value(v) for k, v in (data.get("environment") or {}).items()},
        gpu_environment={k: cmake_value(v) for k, v in (data.get("gpu-environment") or {}).items()},
        gpu=data.get("gpu", False),
        gpu_options=data.get("gpu-options"),
        platform=platform,
    )


def _requirement(path: Path, index: int, data: dict[str, Any]) -> Requirement:
    kinds = [k for k in REQUIREMENT_KINDS if k in data]
    if len(kinds) != 1:
        raise PatchkitError(f"{path}: key 'requires[{index}]' needs exactly one of "
                            f"{', '.join(REQUIREMENT_KINDS)}, found {len(kinds)}")
    kind = kinds[0]
    version = data.get("version")
    minimum = None if data.get("minimum") is None else str(data["minimum"])
    if kind == "platform" and data[kind] not in PLATFORMS:
        raise PatchkitError(f"{path}: key 'requires[{index}].platform': unknown platform "
                            f"{data[kind]!r}", f"one of: {', '.join(PLATFORMS)}")
    if minimum is not None and not _VERSION_RE.match(minimum):
        raise PatchkitError(f"{path}: key 'requires[{index}].minimum': {minimum!r} is not a "
                            "version like 12 or 6.1")
    if version is not None:
        try:
            if re.compile(version).groups < 1:
                raise re.error("needs a group around the version")
        except re.error as exc:
            raise PatchkitError(f"{path}: key 'requires[{index}].version': {exc}") from None
    if (version or minimum is not None) and kind not in VERSIONED_KINDS:
        raise PatchkitError(f"{path}: key 'requires[{index}]': only a command or a header has a "
                            "version", "drop 'version' and 'minimum' here")
    if kind == "header" and minimum is not None and version is None:
        raise PatchkitError(f"{path}: key 'requires[{index}].version': a header's minimum needs "
                            "the pattern that finds its version",
                            "for example version: '#define VK_HEADER_VERSION (\\d+)'")
    return Requirement(
        kind=kind,
        value=data[kind],
        name=data.get("name", data[kind]),
        args=tuple(data.get("args", ("--version",))),
        version=version or (DEFAULT_VERSION_PATTERN if minimum is not None else None),
        minimum=minimum,
        paths=tuple(data.get("paths", ())),
    )
