"""How the workflow installs patchkit (patchkit.ci.install): never PyPI's other `patchkit`.

A package index on 127.0.0.1 (PEP 503 pages and wheels made here) holds a stranger's `patchkit`
0.2.0, a `patchkit-queue` 99.0 somebody else uploaded, and a harmless wheel of every other name
asked for. The generated install commands run against it with pip, as the jobs run them: the
first installs the wheel in the fork and nothing from the index; the second resolves the
dependencies, none of which is either name.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from werkzeug import Request, Response

from conftest import REPO, run_cli
from patchkit import DISTRIBUTION, __version__
from patchkit.ci.install import BUNDLE_DIR, resolve

WORKFLOW = Path(".github/workflows/patchkit-nightly.yml")
STRANGER_MARK = "a stranger's patchkit"


def wheel(name: str, version: str, files: dict[str, str]) -> bytes:
    """A minimal wheel: FILES and its metadata."""
    stem = f"{name.replace('-', '_')}-{version}"
    files = {**files, f"{stem}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{stem}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files[f"{stem}.dist-info/RECORD"] = "".join(f"{path},,\n" for path in files) + f"{stem}.dist-info/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return buffer.getvalue()


class FakeIndex:
    """PEP 503 on 127.0.0.1: PROJECTS' wheels, and a harmless one of each other name asked for."""

    def __init__(self) -> None:
        stranger = {"patchkit/__init__.py": f"__version__ = '0.2.0'  # {STRANGER_MARK}\n"}
        self.projects = {"patchkit": {"0.2.0": wheel("patchkit", "0.2.0", stranger)},
                         "patchkit-queue": {"99.0": wheel("patchkit-queue", "99.0", stranger)}}
        self.asked: list[str] = []

    def handle(self, request: Request) -> Response:
        path = request.path
        if m := re.fullmatch(r"/simple/([^/]+)/", path):
            name = m.group(1)
            self.asked.append(name)
            versions = self.projects.setdefault(name, {v: wheel(name, v, {}) for v in ("0.12.0", "99.0")})
            links = "".join(f'<a href="/files/{self._file(name, v)}#sha256={hashlib.sha256(data).hexdigest()}">'
                            f"{self._file(name, v)}</a>\n" for v, data in versions.items())
            return Response(f"<!DOCTYPE html><html><body>\n{links}</body></html>", content_type="text/html")
        if m := re.fullmatch(r"/files/(.+)-(.+)-py3-none-any\.whl", path):
            name = next(n for n in self.projects if n.replace("-", "_") == m.group(1))
            return Response(self.projects[name][m.group(2)], content_type="application/octet-stream")
        return Response("not found", status=404)

    @staticmethod
    def _file(name: str, version: str) -> str:
        return f"{name.replace('-', '_')}-{version}-py3-none-any.whl"


@pytest.fixture
def index(httpserver):
    fake = FakeIndex()
    httpserver.expect_request(re.compile(".*")).respond_with_handler(fake.handle)
    fake.url = httpserver.url_for("/simple/")
    return fake


def pip(args: list[str], index_url: str, cwd: Path) -> subprocess.CompletedProcess:
    """pip as a job runs it, with the fake index as the only one: no config file (its extra
    indexes and find-links), no cache."""
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PIP_CONSTRAINT", None)
    return subprocess.run([sys.executable, "-m", "pip", *args, "--index-url", index_url], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def fork(tmp_path: Path) -> Path:
    root = tmp_path / "fork"
    root.mkdir(parents=True)
    (root / "patchkit.yaml").write_text("upstream:\n  url: /nowhere\n")
    return root


def install_lines(root: Path) -> list[str]:
    """Every pip line of every job's "Install patchkit" step."""
    jobs = yaml.safe_load((root / WORKFLOW).read_text())["jobs"]
    return [line for job in jobs.values() for step in job["steps"] if step.get("name") == "Install patchkit"
            for line in step["run"].splitlines() if " -m pip install " in line]


def test_no_generated_install_step_resolves_to_a_stranger_on_the_index(tmp_path, index, as_installed):
    root = fork(tmp_path)
    result = run_cli("ci", "github", "--backend", "cpu", "--backend", "cuda", cwd=root)
    assert result.returncode == 0, result.stderr
    wheels = list((root / BUNDLE_DIR).glob("*.whl"))
    assert [w.name for w in wheels] == [f"patchkit_queue-{__version__}-py3-none-any.whl"]
    lines = install_lines(root)
    assert len(lines) == 8 and not any("$PATCHKIT" in line for line in lines)  # four jobs, two lines each
    first, second = (sorted({line.split(" -m pip install ", 1)[1] for line in lines if marker in line})
                     for marker in ("--require-hashes", "dependencies.txt"))
    assert first == ["-q --no-deps --require-hashes -r .github/patchkit/requirements.txt"]

    # The wheel in the fork, by its hash, and nothing from the index.
    site = tmp_path / "site"
    installed = pip(["install", *first[0].split(), "--target", str(site)], index.url, root)
    assert installed.returncode == 0, installed.stderr
    assert index.asked == []
    (dist_info,) = site.glob("*.dist-info")
    assert dist_info.name == f"patchkit_queue-{__version__}.dist-info"
    for name in ("__init__.py", "ci/install.py", "recipes/cuda.yaml"):
        source = REPO / ("recipes/cuda.yaml" if name.startswith("recipes/") else f"patchkit/{name}")
        assert (site / "patchkit" / name).read_bytes() == source.read_bytes()
    assert STRANGER_MARK not in (site / "patchkit/__init__.py").read_text()
    assert (dist_info / "entry_points.txt").read_text().count("patchkit = patchkit.cli:main") == 1

    # A wheel changed in the fork no longer matches its hash: refused, not installed.
    (wheel_file,) = wheels
    original = wheel_file.read_bytes()
    wheel_file.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    tampered = pip(["install", *first[0].split(), "--target", str(tmp_path / "other")], index.url, root)
    assert tampered.returncode != 0 and "hash" in tampered.stderr.lower()
    wheel_file.write_bytes(original)

    # The dependencies: other projects' names, resolved from the index; neither of the two.
    report = tmp_path / "report.json"
    for args in second:
        resolved = pip(["install", "--dry-run", "--ignore-installed", "--report", str(report), *args.split()],
                       index.url, root)
        assert resolved.returncode == 0, resolved.stderr
        names = {item["metadata"]["name"] for item in json.loads(report.read_text())["install"]}
        assert names and not names & {"patchkit", "patchkit-queue"}, names
    assert "patchkit" not in index.asked and "patchkit-queue" not in index.asked

    # The control: a bare name does resolve to the stranger on this index.
    control = pip(["install", "--dry-run", "--ignore-installed", "--report", str(report), "patchkit"], index.url, root)
    assert control.returncode == 0 and json.loads(report.read_text())["install"][0]["metadata"]["version"] == "0.2.0"


def test_the_wheel_is_the_same_bytes_every_time_and_a_changed_install_is_refused(tmp_path, installed_patchkit,
                                                                                monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(installed_patchkit))
    first, second = fork(tmp_path / "a"), fork(tmp_path / "b")
    for root in (first, second):
        assert run_cli("ci", "github", cwd=root).returncode == 0
    files = sorted(p.relative_to(first) for p in (first / BUNDLE_DIR).iterdir())
    assert [f.name for f in files][0] == "dependencies.txt" and len(files) == 3
    assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)
    again = run_cli("ci", "github", cwd=first)
    assert again.returncode == 0 and "up to date" in again.stdout
    requirements = (first / BUNDLE_DIR / "requirements.txt").read_text()
    (wheel_file,) = (first / BUNDLE_DIR).glob("*.whl")
    assert f"--hash=sha256:{hashlib.sha256(wheel_file.read_bytes()).hexdigest()}" in requirements

    # An installed file changed since pip wrote it (RECORD's hash): not shipped to the runners.
    changed = tmp_path / "changed"
    shutil.copytree(installed_patchkit, changed)
    schema = changed / "patchkit/schemas/demo.schema.json"
    schema.write_text(schema.read_text() + " ")
    monkeypatch.setenv("PYTHONPATH", str(changed))
    refused = run_cli("ci", "github", "--force", cwd=fork(tmp_path / "c"))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "demo.schema.json differs from what pip installed" in refused.stderr
    assert not (tmp_path / "c/fork/.github").exists()


def test_an_editable_install_and_the_other_projects_name_are_refused(tmp_path):
    root = fork(tmp_path)
    editable = run_cli("ci", "github", cwd=root)  # the tests' own install is editable
    assert editable.returncode == 2 and editable.stderr.count("\n") == 1
    assert "editable install" in editable.stderr and "pip install ." in editable.stderr
    for requirement in ("patchkit", "patchkit==0.1.0", "PatchKit>=0.1"):
        bare = run_cli("ci", "github", "--patchkit", requirement, cwd=root)
        assert bare.returncode == 2 and bare.stderr.count("\n") == 1, bare.stderr
        assert "another project" in bare.stderr and f"{DISTRIBUTION}==" in bare.stderr
    garbled = run_cli("ci", "github", "--patchkit", "not a requirement!", cwd=root)
    assert garbled.returncode == 2 and "is not a pip requirement" in garbled.stderr
    assert not (root / ".github").exists()
    # The user's own choice stays theirs, in the step's env (never in the script's text).
    chosen = run_cli("ci", "github", "--patchkit", f"{DISTRIBUTION}=={__version__}", cwd=root)
    assert chosen.returncode == 0, chosen.stderr
    assert not (root / BUNDLE_DIR).exists()
    assert install_lines(root) == ['python -m pip install -q "$PATCHKIT"',  # nightly, build-cpu, summary
                                   'python -m pip install -q "$PATCHKIT" cmake ninja',
                                   'python -m pip install -q "$PATCHKIT"']


def test_a_vcs_install_is_installed_from_its_commit(tmp_path, installed_patchkit):
    """PEP 610: pip records the URL and the commit it installed from; the jobs install exactly that."""
    (dist_info,) = installed_patchkit.glob("*.dist-info")
    copy = tmp_path / dist_info.name
    shutil.copytree(dist_info, copy)
    commit = "0123456789abcdef0123456789abcdef01234567"
    (copy / "direct_url.json").write_text(json.dumps(
        {"url": "https://example.invalid/patchkit.git", "vcs_info": {"vcs": "git", "commit_id": commit,
                                                                     "requested_revision": "main"}}))
    install = resolve(None, metadata.PathDistribution(copy))
    assert (install.kind, install.files) == ("vcs", {})
    assert install.env == {"PATCHKIT": f"{DISTRIBUTION} @ git+https://example.invalid/patchkit.git@{commit}"}
