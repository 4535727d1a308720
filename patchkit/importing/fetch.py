"""Downloading a patch from an `https://` URL: bounded in time and size, retried when the server
or the network fails, pinned by `--sha256` when asked.

What goes wrong is sorted by whose it is: a 404, a wrong hash, a body over the cap or an
`http://` URL are the input's (exit 2); a server that keeps failing, a connection that cannot be
made or a certificate that cannot be verified are the environment's (exit 3).

The limits can be tuned through the environment (tests make them small):
`PATCHKIT_HTTP_TIMEOUT` (seconds per connect or read, default 30), `PATCHKIT_HTTP_MAX_BYTES`
(default 32 MiB), `PATCHKIT_HTTP_RETRIES` (attempts after the first, default 2) and
`PATCHKIT_HTTP_BACKOFF` (seconds before the first retry, doubling after, default 1).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urljoin, urlsplit

from patchkit import __version__
from patchkit.errors import EnvironmentProblem, PatchkitError

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_MAX_REDIRECTS = 5


@dataclass(frozen=True)
class Limits:
    timeout: float = 30.0
    max_bytes: int = 32 << 20
    retries: int = 2
    backoff: float = 1.0

    @classmethod
    def from_environment(cls) -> Limits:
        def number(name: str, default: float, kind: type, minimum: float) -> float:
            raw = os.environ.get(name)
            if raw is None or raw == "":
                return default
            try:
                value = kind(raw)
            except ValueError:
                value = None
            if value is None or value < minimum:
                raise PatchkitError(f"{name}={raw!r} is not a number >= {minimum:g}",
                                    f"unset it or give a number (default {default:g})")
            return value

        return cls(timeout=number("PATCHKIT_HTTP_TIMEOUT", cls.timeout, float, 0.001),
                   max_bytes=int(number("PATCHKIT_HTTP_MAX_BYTES", cls.max_bytes, int, 1)),
                   retries=int(number("PATCHKIT_HTTP_RETRIES", cls.retries, int, 0)),
                   backoff=number("PATCHKIT_HTTP_BACKOFF", cls.backoff, float, 0))


def has_url_scheme(source: str) -> bool:
    """A SOURCE written as a URL (any scheme: check_url then refuses all but https and http), not a
    path. Not git.is_url, which also takes scp-like `user@host:path`: a patch is never fetched so."""
    return bool(re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", source))


def check_url(url: str, allow_http: bool) -> None:
    """An https URL (http only when allowed); anything else is bad input."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "http" and not allow_http:
        raise PatchkitError(f"{url}: plain http is refused (anyone on the way can change the patch)",
                            "use the https:// URL, or pass --allow-http (better with --sha256)")
    if scheme not in ("https", "http"):
        raise PatchkitError(f"{url}: unsupported URL scheme {scheme!r}",
                            "give an https:// URL, or a local path for a file")
    if not parts.hostname:
        raise PatchkitError(f"{url}: no host in the URL", "give a full https:// URL")


def check_sha256(value: str) -> str:
    pin = value.strip().lower()
    if not _SHA256.match(pin):
        raise PatchkitError(f"--sha256 {value!r} is not a SHA-256 (64 hexadecimal digits)",
                            "copy it from `sha256sum FILE`")
    return pin


def download(url: str, *, sha256: str | None = None, allow_http: bool = False,
             limits: Limits | None = None, sleep: Callable[[float], None] = time.sleep) -> bytes:
    """The body at URL, checked against SHA256 when given, before anything else uses it."""
    import requests

    limits = limits or Limits.from_environment()
    check_url(url, allow_http)
    session = requests.Session()
    session.headers.update({"User-Agent": f"patchkit/{__version__}",
                            "Accept": "text/x-patch, text/x-diff, text/plain, */*;q=0.5"})
    attempt = 0
    try:
        while True:
            try:
                data = _get(session, url, allow_http, limits)
                break
            except _Retryable as exc:
                if attempt >= limits.retries:
                    raise EnvironmentProblem(f"{url}: {exc.reason} (tried {attempt + 1} times)",
                                             "check the network and the URL, or download the file and "
                                             "import it from disk") from None
                sleep(limits.backoff * (2 ** attempt))
                attempt += 1
    finally:
        session.close()
    if sha256 is not None:
        got = hashlib.sha256(data).hexdigest()
        if got != sha256:
            raise PatchkitError(f"{url}: sha256 is {got}, not the pinned {sha256}",
                                "the file changed or the pin is wrong: check it before importing")
    return data


class _Retryable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _get(session, url: str, allow_http: bool, limits: Limits) -> bytes:
    """One attempt, following redirects by hand so that each hop's scheme is checked."""
    import requests

    current = url
    deadline = time.monotonic() + limits.timeout * 10  # a server dripping bytes cannot hold us
    for _ in range(_MAX_REDIRECTS + 1):
        try:
            response = session.get(current, stream=True, allow_redirects=False,
                                   timeout=(limits.timeout, limits.timeout))
        except requests.exceptions.SSLError as exc:
            if "timed out" in str(exc):  # the handshake stalled: a timeout like any other
                raise _Retryable(f"no answer within {limits.timeout:g} s") from None
            raise EnvironmentProblem(f"{current}: TLS failed ({_short(exc)})",
                                     "check the system clock and CA certificates (REQUESTS_CA_BUNDLE "
                                     "names a CA file)") from None
        except requests.exceptions.Timeout:
            raise _Retryable(f"no answer within {limits.timeout:g} s") from None
        except requests.exceptions.ConnectionError as exc:
            raise _Retryable(f"cannot connect ({_short(exc)})") from None
        except requests.exceptions.InvalidURL as exc:
            raise PatchkitError(f"{current}: invalid URL ({exc})", "give a full https:// URL") from None
        with response:
            if response.is_redirect:
                location = response.headers.get("Location", "")
                nxt = urljoin(current, location)
                check_url(nxt, allow_http)  # an https page redirecting to http is refused too
                current = nxt
                continue
            status = response.status_code
            if status >= 500:
                raise _Retryable(f"the server answered {status} {response.reason or ''}".rstrip())
            if status == 404:
                raise PatchkitError(f"{current}: not found (HTTP 404)", "check the URL")
            if status >= 400:
                reason = f"HTTP {status} {response.reason or ''}".rstrip()
                raise PatchkitError(f"{current}: the server refused it ({reason})",
                                    "check the URL and whether it needs a login")
            if status != 200:
                raise PatchkitError(f"{current}: unexpected HTTP {status}", "give the URL of the .patch file itself")
            return _body(response, current, limits, deadline)
    raise PatchkitError(f"{url}: more than {_MAX_REDIRECTS} redirects", "give the final URL of the .patch file")


def _body(response, url: str, limits: Limits, deadline: float) -> bytes:
    import requests

    cap = limits.max_bytes
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > cap:
        raise PatchkitError(f"{url}: {int(declared)} bytes, over the {cap}-byte cap (PATCHKIT_HTTP_MAX_BYTES)",
                            "is this really a patch? download it and import the file if so")
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_content(chunk_size=65536):
            size += len(chunk)
            if size > cap:
                raise PatchkitError(f"{url}: more than {cap} bytes, over the cap (PATCHKIT_HTTP_MAX_BYTES)",
                                    "is this really a patch? download it and import the file if so")
            chunks.append(chunk)
            if time.monotonic() > deadline:
                raise _Retryable(f"the download took longer than {limits.timeout * 10:g} s")
    except requests.exceptions.Timeout:
        raise _Retryable(f"the download stalled for {limits.timeout:g} s") from None
    except (requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError,
            requests.exceptions.ContentDecodingError) as exc:
        raise _Retryable(f"the download broke off ({_short(exc)})") from None
    return b"".join(chunks)


def _short(exc: Exception) -> str:
    """The innermost reason of a requests/urllib3 error, on one line."""
    text = str(exc)
    m = re.search(r"\(Caused by \w+\((.*)\)\)\s*$", text)
    reason = m.group(1) if m else text
    reason = re.sub(r"<urllib3[^>]*>:\s*", "", reason).strip("'\" ")
    return " ".join(reason.split())[:200]
