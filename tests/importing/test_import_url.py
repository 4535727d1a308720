"""`patchkit import https://...`: served by a local HTTPS server whose certificate authority exists
for this test only (trustme; the CLI trusts it through REQUESTS_CA_BUNDLE)."""

from __future__ import annotations

import hashlib
import json
import socket
import ssl
import threading
import time

import pytest
from conftest import assert_matches_schema, run_cli, seed_patch_path
from import_helpers import AT, fork, patches_state, series

SEED = seed_patch_path().name
SEED_BYTES = seed_patch_path().read_bytes()


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    cert.configure_cert(context)
    pem = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    return context, pem


@pytest.fixture
def https(tls):
    from pytest_httpserver import HTTPServer

    server = HTTPServer(host="localhost", port=0, ssl_context=tls[0])
    server.start()
    yield server
    server.clear()
    if server.is_running():
        server.stop()


@pytest.fixture
def env(tls):
    return {"REQUESTS_CA_BUNDLE": str(tls[1]), "NO_PROXY": "localhost,127.0.0.1", "no_proxy": "localhost,127.0.0.1",
            "PATCHKIT_HTTP_BACKOFF": "0.01"}


def run_import(root, *args, env, report=None):
    extra = ["--json", str(report)] if report else []
    return run_cli("import", *args, "--at", AT, *extra, cwd=root, env=env)


def test_a_pinned_url_is_imported_with_its_origin(tmp_path, upstream, https, env):
    https.expect_request("/pull/1.patch").respond_with_data(SEED_BYTES, content_type="text/x-patch")
    url = https.url_for("/pull/1.patch")
    assert url.startswith("https://localhost:")
    root = fork(tmp_path, upstream)
    report = tmp_path / "r.json"
    result = run_import(root, url, "--sha256", hashlib.sha256(SEED_BYTES).hexdigest().upper(), env=env, report=report)
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    assert_matches_schema(data)
    [entry] = data["entries"]
    assert (entry["name"], entry["source"], entry["kind"], entry["verdict"]) == (SEED, url, "url", "clean")
    stored = (root / "patches" / SEED).read_text()
    assert f"\nLast-Update: 2026-11-29\nOrigin: {url}\n---\n" not in stored  # the patch has its own Origin
    assert stored.count("\nOrigin: ") == 1


def test_origin_is_the_url_when_the_patch_has_none(tmp_path, upstream, https, env):
    plain = SEED_BYTES.replace(b"Origin: other, https://github.com/FireBurn/Overlay/tree/master/sci-misc/llama-cpp/files\n", b"")
    https.expect_request("/a.patch").respond_with_data(plain)
    url = https.url_for("/a.patch")
    root = fork(tmp_path, upstream)
    result = run_import(root, url, env=env)
    assert result.returncode == 0, result.stderr
    assert f"\nLast-Update: 2026-11-29\nOrigin: {url}\n---\n" in (root / "patches" / SEED).read_text()


def test_a_wrong_pin_a_404_and_http_are_refused_before_anything(tmp_path, upstream, https, env):
    https.expect_request("/a.patch").respond_with_data(SEED_BYTES)
    https.expect_request("/missing.patch").respond_with_data("Not Found", status=404)
    root = fork(tmp_path, upstream)
    before = patches_state(root)
    result = run_import(root, https.url_for("/a.patch"), "--sha256", "0" * 64, env=env)
    assert result.returncode == 2
    assert f"sha256 is {hashlib.sha256(SEED_BYTES).hexdigest()}, not the pinned {'0' * 64}" in result.stderr
    assert not (root / "cache" / "mirrors").exists()  # checked before upstream is even looked at
    result = run_import(root, https.url_for("/missing.patch"), env=env)
    assert result.returncode == 2 and "not found (HTTP 404)" in result.stderr
    result = run_import(root, "http://localhost:9/a.patch", env=env)
    assert result.returncode == 2 and "plain http is refused" in result.stderr and "--allow-http" in result.stderr
    assert patches_state(root) == before and series(root) == []


def test_an_https_page_redirecting_to_http_is_refused(tmp_path, upstream, https, env):
    https.expect_request("/r.patch").respond_with_data("", status=302, headers={"Location": "http://localhost:9/x.patch"})
    root = fork(tmp_path, upstream)
    result = run_import(root, https.url_for("/r.patch"), env=env)
    assert result.returncode == 2 and "http://localhost:9/x.patch: plain http is refused" in result.stderr


def test_plain_http_when_allowed(tmp_path, upstream, env):
    from pytest_httpserver import HTTPServer

    server = HTTPServer(host="localhost", port=0)
    server.start()
    try:
        server.expect_request("/a.patch").respond_with_data(SEED_BYTES)
        root = fork(tmp_path, upstream)
        result = run_import(root, server.url_for("/a.patch"), "--allow-http", env=env)
        assert result.returncode == 0, result.stderr
        assert series(root) == [SEED]
    finally:
        server.stop()


def test_an_oversized_body_is_cut_off(tmp_path, upstream, https, env):
    from werkzeug import Response

    def endless():
        while True:
            yield b"x" * 4096

    https.expect_request("/big.patch").respond_with_response(Response(endless(), mimetype="text/plain"))
    https.expect_request("/declared.patch").respond_with_data(b"y" * 5000)
    root = fork(tmp_path, upstream)
    capped = {**env, "PATCHKIT_HTTP_MAX_BYTES": "1000"}
    result = run_import(root, https.url_for("/big.patch"), env=capped)
    assert result.returncode == 2 and "more than 1000 bytes, over the cap" in result.stderr
    result = run_import(root, https.url_for("/declared.patch"), env=capped)
    assert result.returncode == 2 and "5000 bytes, over the 1000-byte cap" in result.stderr
    assert series(root) == []


def test_server_errors_are_retried(tmp_path, upstream, https, env):
    for _ in range(2):
        https.expect_ordered_request("/flaky.patch").respond_with_data("busy", status=503)
    https.expect_ordered_request("/flaky.patch").respond_with_data(SEED_BYTES)
    root = fork(tmp_path, upstream)
    result = run_import(root, https.url_for("/flaky.patch"), env=env)
    assert result.returncode == 0, result.stderr
    assert len(https.log) == 3
    https.clear()
    https.expect_request("/down.patch").respond_with_data("down", status=502)
    result = run_import(root, https.url_for("/down.patch"), env={**env, "PATCHKIT_HTTP_RETRIES": "1"})
    assert result.returncode == 3
    assert "the server answered 502" in result.stderr and "tried 2 times" in result.stderr


def test_a_server_dripping_bytes_is_stopped_by_the_deadline(tmp_path, upstream, https, env):
    from werkzeug import Response

    def drip():
        for _ in range(400):  # 20 s unless stopped; no pause is long enough for the read timeout
            yield b"x"
            time.sleep(0.05)

    https.expect_request("/drip.patch").respond_with_handler(lambda request: Response(drip()))
    root = fork(tmp_path, upstream)
    started = time.monotonic()
    result = run_import(root, https.url_for("/drip.patch"), env={**env, "PATCHKIT_HTTP_DEADLINE": "1"})
    assert time.monotonic() - started < 15
    assert result.returncode == 3, result.stderr
    assert "no whole answer within the 1 s deadline (tried once)" in result.stderr
    assert series(root) == []


class SilentServer:
    """Accepts TLS connections, completes the handshake, reads the request, never answers."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self._context = context
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)
        self.port = self._sock.getsockname()[1]
        self.connections = 0
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            self.connections += 1
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(5)
            tls = self._context.wrap_socket(conn, server_side=True)
            self._held.append(tls)
            tls.recv(65536)  # the request; no answer comes
        except OSError:
            pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for conn in self._held:
            conn.close()
        self._sock.close()


def test_a_server_that_never_answers_times_out(tmp_path, upstream, tls, env):
    server = SilentServer(tls[0])
    try:
        root = fork(tmp_path, upstream)
        started = time.monotonic()
        result = run_import(root, f"https://localhost:{server.port}/slow.patch",
                            env={**env, "PATCHKIT_HTTP_TIMEOUT": "0.5", "PATCHKIT_HTTP_RETRIES": "1"})
        assert time.monotonic() - started < 20
        assert result.returncode == 3, result.stderr
        assert "no answer within 0.5 s (tried 2 times)" in result.stderr
        assert server.connections == 2
        assert series(root) == []
    finally:
        server.close()


def test_an_mbox_url_gives_one_entry_per_mail(tmp_path, upstream, https, env):
    import subprocess

    from import_helpers import three_commits, work_clone

    repo = work_clone(tmp_path, upstream)
    three_commits(repo)
    mbox = subprocess.run(["git", "format-patch", "--stdout", "b1000..work"], cwd=repo, capture_output=True,
                          check=True).stdout
    https.expect_request("/series.mbox").respond_with_data(mbox)
    url = https.url_for("/series.mbox")
    root = fork(tmp_path, upstream)
    report = tmp_path / "r.json"
    result = run_import(root, url, "--sha256", hashlib.sha256(mbox).hexdigest(), env=env, report=report)
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    assert [e["source"] for e in data["entries"]] == [f"{url} (message {i} of 3)" for i in (1, 2, 3)]
    assert all(f"\nOrigin: {url}\n---\n" in (root / "patches" / e["name"]).read_text() for e in data["entries"])


def test_bad_limits_are_bad_input(tmp_path, upstream, https, env):
    root = fork(tmp_path, upstream)
    result = run_import(root, https.url_for("/a.patch"), env={**env, "PATCHKIT_HTTP_TIMEOUT": "soon"})
    assert result.returncode == 2 and "PATCHKIT_HTTP_TIMEOUT='soon'" in result.stderr
