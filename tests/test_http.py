"""patchkit.http against servers on 127.0.0.1: retries with a doubling backoff, Retry-After, the
body cap, and the one deadline that stops a server dripping a byte at a time."""

from __future__ import annotations

import email.utils
import socket
import threading
import time

import pytest
import requests
from werkzeug import Response

from patchkit import http


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def get(url: str, policy: http.Policy, sleep=None, max_bytes: int | None = None) -> bytes:
    """What a caller does: send, let a 5xx or 429 be retried, read the body."""
    def attempt(deadline: http.Deadline) -> bytes:
        with requests.Session() as session, http.send(session, "GET", url, deadline) as response:
            retry = http.retry_for(response, "the server")
            if retry is not None:
                raise retry
            return http.read(response, deadline, max_bytes)

    return http.call(attempt, policy, sleep=sleep if sleep is not None else Sleeps())


def test_server_errors_are_retried_with_a_doubling_backoff(httpserver):
    for status in (500, 502, 503):
        httpserver.expect_ordered_request("/x").respond_with_data("busy", status=status)
    httpserver.expect_ordered_request("/x").respond_with_data("whole")
    sleeps = Sleeps()
    assert get(httpserver.url_for("/x"), http.Policy(retries=3, backoff=0.5), sleeps) == b"whole"
    assert sleeps == [0.5, 1.0, 2.0]


def test_the_backoff_stops_growing_at_its_ceiling(httpserver):
    httpserver.expect_request("/x").respond_with_data("down", status=503)
    sleeps = Sleeps()
    with pytest.raises(http.GaveUp) as gave_up:
        get(httpserver.url_for("/x"), http.Policy(retries=4, backoff=2, max_backoff=5), sleeps)
    assert sleeps == [2, 4, 5, 5]
    assert (gave_up.value.reason, gave_up.value.tries) == ("the server answered 503 SERVICE UNAVAILABLE", 5)


def test_retry_after_is_honoured_in_seconds_and_as_a_date(httpserver):
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    httpserver.expect_ordered_request("/x").respond_with_data("slow down", status=429, headers={"Retry-After": "7"})
    httpserver.expect_ordered_request("/x").respond_with_data("busy", status=503, headers={"Retry-After": later})
    httpserver.expect_ordered_request("/x").respond_with_data("whole")
    sleeps = Sleeps()
    assert get(httpserver.url_for("/x"), http.Policy(retries=2, backoff=1), sleeps) == b"whole"
    assert sleeps[0] == 7 and 25 < sleeps[1] <= 30


def test_a_wait_past_the_deadline_gives_up_at_once(httpserver):
    httpserver.expect_request("/x").respond_with_data("later", status=503, headers={"Retry-After": "3600"})
    sleeps = Sleeps()
    with pytest.raises(http.GaveUp, match="answered 503 SERVICE UNAVAILABLE; no retry: waiting 3600 s would pass the 60 s deadline") as gave_up:
        get(httpserver.url_for("/x"), http.Policy(retries=5, deadline=60), sleeps)
    assert sleeps == [] and gave_up.value.tries == 1


def test_a_server_dripping_one_byte_at_a_time_is_stopped_by_the_deadline(httpserver):
    def drip():
        for _ in range(400):  # 20 s if nobody stops it; each pause well under the read timeout
            yield b"x"
            time.sleep(0.05)

    httpserver.expect_request("/drip").respond_with_handler(lambda request: Response(drip()))
    started = time.monotonic()
    with pytest.raises(http.GaveUp, match="no whole answer within the 1 s deadline") as gave_up:
        get(httpserver.url_for("/drip"), http.Policy(timeout=5, deadline=1, retries=3, backoff=0), time.sleep)
    assert time.monotonic() - started < 3
    assert gave_up.value.tries == 1  # no attempt is started once the deadline has passed


def test_a_body_that_stalls_is_retried_after_the_read_timeout():
    with socket.create_server(("127.0.0.1", 0)) as server:
        held = []

        def serve():
            for _ in range(2):
                conn, _ = server.accept()
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")  # then nothing
                held.append(conn)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{server.getsockname()[1]}/x"
        sleeps = Sleeps()
        with pytest.raises(http.GaveUp) as gave_up:
            get(url, http.Policy(timeout=0.3, retries=1), sleeps)
        thread.join(5)
        for conn in held:
            conn.close()
    assert (gave_up.value.reason, gave_up.value.tries, sleeps) == ("the answer stalled for 0.3 s", 2, [1.0])


def test_no_connection_is_retried_then_named():
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sleeps = Sleeps()
    with pytest.raises(http.GaveUp, match=f"^cannot reach http://127.0.0.1:{port} ") as gave_up:
        get(f"http://127.0.0.1:{port}/x", http.Policy(retries=2), sleeps)
    assert gave_up.value.tries == 3 and sleeps == [1.0, 2.0]


def test_a_body_over_the_cap_is_refused_whether_declared_or_not(httpserver):
    def endless():
        while True:
            yield b"y" * 4096

    httpserver.expect_request("/declared").respond_with_data(b"x" * 5000)
    httpserver.expect_request("/endless").respond_with_handler(lambda request: Response(endless()))
    with pytest.raises(http.TooLarge) as declared:
        get(httpserver.url_for("/declared"), http.Policy(), max_bytes=1000)
    assert (declared.value.size, declared.value.declared) == (5000, True)
    with pytest.raises(http.TooLarge) as streamed:
        get(httpserver.url_for("/endless"), http.Policy(), max_bytes=1000)
    assert streamed.value.size > 1000 and not streamed.value.declared
    assert get(httpserver.url_for("/declared"), http.Policy(), max_bytes=5000) == b"x" * 5000
