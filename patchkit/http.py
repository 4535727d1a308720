"""HTTP calls that are retried and bounded: patch downloads (importing/fetch.py) and GitHub's API
(github.py).

A call is one or more attempts. What a retry can cure (no connection, no answer, a 5xx or 429, a
body that broke off) is tried again after a backoff that doubles, or after the wait the server
asked for (Retry-After). Every attempt, every wait and every body is inside one deadline for the
whole call: a server that sends a byte a second, never pausing long enough for a read timeout,
is stopped by it.
"""

from __future__ import annotations

import email.utils
import re
import time
from dataclasses import dataclass
from typing import Callable, TypeVar
from urllib.parse import urlsplit

import requests
import urllib3

from patchkit.errors import EnvironmentProblem, PatchkitError

T = TypeVar("T")
_CHUNK = 65536


@dataclass(frozen=True)
class Policy:
    timeout: float = 30.0  # seconds per connect or read
    deadline: float = 300.0  # seconds for the whole call: every attempt, body and wait
    retries: int = 2  # attempts after the first
    backoff: float = 1.0  # seconds before the first retry, doubling after
    max_backoff: float = 60.0


class Retry(Exception):
    """What a retry may cure; WAIT is what the server asked for (None: the backoff)."""

    def __init__(self, reason: str, wait: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait = wait


class DeadlinePassed(Retry):
    """The call's deadline passed during an attempt: a Retry that no retry follows."""


class GaveUp(Exception):
    """The retries or the deadline ran out; REASON is the last failure, TRIES the attempts made."""

    def __init__(self, reason: str, tries: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.tries = tries


class TooLarge(Exception):
    """A body over the cap: SIZE is what the server declared (DECLARED) or what came so far."""

    def __init__(self, size: int, cap: int, declared: bool) -> None:
        super().__init__(f"{size} bytes, over the {cap}-byte cap")
        self.size = size
        self.cap = cap
        self.declared = declared


class Deadline:
    """The end of one call, and the per-read timeout within what is left of it."""

    def __init__(self, policy: Policy) -> None:
        self.seconds = policy.deadline
        self.per_read = policy.timeout
        self._end = time.monotonic() + policy.deadline

    def left(self) -> float:
        return self._end - time.monotonic()

    def timeout(self) -> float:
        """For the next connect or read: the policy's, or less when the deadline is nearer."""
        return max(0.001, min(self.per_read, self.left()))

    def check(self) -> None:
        if self.left() <= 0:
            raise DeadlinePassed(f"no whole answer within the {self.seconds:g} s deadline")


def call(attempt: Callable[[Deadline], T], policy: Policy, *, sleep: Callable[[float], None] = time.sleep) -> T:
    """ATTEMPT's answer, attempting again on Retry while retries and the deadline last; GaveUp
    with the last reason when they run out. Any other error ends the call at once."""
    deadline = Deadline(policy)
    tries = 0
    while True:
        tries += 1
        try:
            return attempt(deadline)
        except Retry as exc:
            failure = exc
        if tries > policy.retries:
            raise GaveUp(failure.reason, tries)
        wait = failure.wait if failure.wait is not None else min(policy.max_backoff,
                                                                  policy.backoff * 2 ** (tries - 1))
        if wait >= deadline.left():  # sleeping only to give up after it helps nobody
            if isinstance(failure, DeadlinePassed):
                raise GaveUp(failure.reason, tries)
            raise GaveUp(f"{failure.reason}; no retry: waiting {wait:g} s would pass the "
                         f"{policy.deadline:g} s deadline", tries)
        sleep(wait)


def send(session: requests.Session, method: str, url: str, deadline: Deadline, **kwargs) -> requests.Response:
    """One request, its body left to `read`: the connect and first read within what the deadline
    leaves; no connection or no answer is a Retry, a certificate that fails is the environment's."""
    deadline.check()
    timeout = deadline.timeout()
    try:
        return session.request(method, url, stream=True, timeout=(timeout, timeout), **kwargs)
    except requests.exceptions.SSLError as exc:
        if "timed out" in str(exc):  # the handshake stalled: a timeout like any other
            raise Retry(f"no answer within {timeout:g} s") from None
        raise EnvironmentProblem(f"{url}: TLS failed ({short(exc)})",
                                 "check the system clock and CA certificates (REQUESTS_CA_BUNDLE "
                                 "names a CA file)") from None
    except requests.exceptions.Timeout:
        raise Retry(f"no answer within {timeout:g} s") from None
    except (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema,
            requests.exceptions.InvalidSchema) as exc:
        raise PatchkitError(f"{url}: invalid URL ({exc})", "give a full https:// URL") from None
    except requests.RequestException as exc:
        parts = urlsplit(url)
        raise Retry(f"cannot reach {parts.scheme}://{parts.netloc} ({short(exc)})") from None


def retry_for(response: requests.Response, who: str, now: Callable[[], float] = time.time) -> Retry | None:
    """A 5xx or 429 answer as a Retry, after the wait its Retry-After asks for; None otherwise."""
    status = response.status_code
    if status < 500 and status != 429:
        return None
    return Retry(f"{who} answered {status} {response.reason or ''}".rstrip(), retry_after(response, now))


def retry_after(response: requests.Response, now: Callable[[], float] = time.time) -> float | None:
    """The seconds the server asked to wait (Retry-After: seconds or an HTTP date), None if it did not."""
    value = response.headers.get("Retry-After", "").strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - now())


def read(response: requests.Response, deadline: Deadline, max_bytes: int | None = None) -> bytes:
    """RESPONSE's body, within the deadline and MAX_BYTES (TooLarge past them)."""
    declared = response.headers.get("Content-Length", "")
    if max_bytes is not None and declared.isdigit() and int(declared) > max_bytes:
        raise TooLarge(int(declared), max_bytes, declared=True)
    chunks: list[bytes] = []
    size = 0
    try:
        while True:
            deadline.check()
            # read1 returns what one read of the socket gives, however little: the deadline is
            # checked as often as bytes come (read(n) would wait for all n of them).
            chunk = response.raw.read1(_CHUNK, decode_content=True)
            if not chunk:
                break
            size += len(chunk)
            if max_bytes is not None and size > max_bytes:
                raise TooLarge(size, max_bytes, declared=False)
            chunks.append(chunk)
    except urllib3.exceptions.ReadTimeoutError:
        raise Retry(f"the answer stalled for {deadline.per_read:g} s") from None
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise Retry(f"the answer broke off ({short(exc)})") from None
    return b"".join(chunks)


def short(exc: Exception) -> str:
    """The innermost reason of a requests/urllib3 error, on one line."""
    text = str(exc)
    m = re.search(r"\(Caused by \w+\((.*)\)\)\s*$", text)
    reason = m.group(1) if m else text
    reason = re.sub(r"<urllib3[^>]*>:\s*", "", reason).strip("'\" ")
    return " ".join(reason.split())[:200]
