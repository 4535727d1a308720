"""Downloading a patch from an `https://` URL: bounded in time and size, retried when the server
or the network fails (patchkit.http), pinned by `--sha256` when asked.

What goes wrong is sorted by whose it is: a 404, a wrong hash, a body over the cap or an
`http://` URL are the input's (exit 2); a server that keeps failing, a connection that cannot be
made or a certificate that cannot be verified are the environment's (exit 3).

The limits can be tuned through the environment (tests make them small):
`PATCHKIT_HTTP_TIMEOUT` (seconds per connect or read, default 30), `PATCHKIT_HTTP_DEADLINE`
(seconds for the whole download, retries and waits included, default 300),
`PATCHKIT_HTTP_MAX_BYTES` (default 32 MiB), `PATCHKIT_HTTP_RETRIES` (attempts after the first,
default 2) and `PATCHKIT_HTTP_BACKOFF` (seconds before the first retry, doubling after, default 1).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import urljoin, urlsplit

from patchkit import __version__, http
from patchkit.errors import EnvironmentProblem, PatchkitError

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_MAX_REDIRECTS = 5
_DEFAULT = http.Policy()


@dataclass(frozen=True)
class Limits:
    policy: http.Policy = field(default_factory=http.Policy)
    max_bytes: int = 32 << 20

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
                def shown(x: float) -> str:  # :g would write a byte count as 3.35544e+07
                    return str(int(x)) if kind is int else f"{x:g}"

                raise PatchkitError(f"{name}={raw!r} is not a number >= {shown(minimum)}",
                                    f"unset it or give a number (default {shown(default)})")
            return value

        policy = http.Policy(timeout=number("PATCHKIT_HTTP_TIMEOUT", _DEFAULT.timeout, float, 0.001),
                             deadline=number("PATCHKIT_HTTP_DEADLINE", _DEFAULT.deadline, float, 0.001),
                             retries=int(number("PATCHKIT_HTTP_RETRIES", _DEFAULT.retries, int, 0)),
                             backoff=number("PATCHKIT_HTTP_BACKOFF", _DEFAULT.backoff, float, 0))
        return cls(policy, int(number("PATCHKIT_HTTP_MAX_BYTES", cls.max_bytes, int, 1)))


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
    with requests.Session() as session:
        session.headers.update({"User-Agent": f"patchkit/{__version__}",
                                "Accept": "text/x-patch, text/x-diff, text/plain, */*;q=0.5"})
        try:
            data = http.call(lambda deadline: _get(session, url, allow_http, limits, deadline),
                             limits.policy, sleep=sleep)
        except http.GaveUp as exc:
            times = "once" if exc.tries == 1 else f"{exc.tries} times"
            raise EnvironmentProblem(f"{url}: {exc.reason} (tried {times})",
                                     "check the network and the URL, or download the file and "
                                     "import it from disk") from None
    if sha256 is not None:
        got = hashlib.sha256(data).hexdigest()
        if got != sha256:
            raise PatchkitError(f"{url}: sha256 is {got}, not the pinned {sha256}",
                                "the file changed or the pin is wrong: check it before importing")
    return data


def _get(session, url: str, allow_http: bool, limits: Limits, deadline: http.Deadline) -> bytes:
    """One attempt, following redirects by hand so that each hop's scheme is checked."""
    current = url
    for _ in range(_MAX_REDIRECTS + 1):
        with http.send(session, "GET", current, deadline, allow_redirects=False) as response:
            if response.is_redirect:
                nxt = urljoin(current, response.headers.get("Location", ""))
                check_url(nxt, allow_http)  # an https page redirecting to http is refused too
                current = nxt
                continue
            retry = http.retry_for(response, "the server")
            if retry is not None:
                raise retry
            status = response.status_code
            if status == 404:
                raise PatchkitError(f"{current}: not found (HTTP 404)", "check the URL")
            if status >= 400:
                reason = f"HTTP {status} {response.reason or ''}".rstrip()
                raise PatchkitError(f"{current}: the server refused it ({reason})",
                                    "check the URL and whether it needs a login")
            if status != 200:
                raise PatchkitError(f"{current}: unexpected HTTP {status}", "give the URL of the .patch file itself")
            try:
                return http.read(response, deadline, limits.max_bytes)
            except http.TooLarge as exc:
                over = (f"{exc.size} bytes, over the {exc.cap}-byte cap" if exc.declared
                        else f"more than {exc.cap} bytes, over the cap")
                raise PatchkitError(f"{current}: {over} (PATCHKIT_HTTP_MAX_BYTES)",
                                    "is this really a patch? download it and import the file if so") from None
    raise PatchkitError(f"{url}: more than {_MAX_REDIRECTS} redirects", "give the final URL of the .patch file")
