"""The CLI and several controllers (SLURMLET_CONTROLLER=A,B): a request goes past a controller that
cannot be reached and one in standby to the active one; while none is active it waits, up to 1.5
SlurmctldTimeout, for a backup to take over; a change that reached a controller and got no answer
is not sent again, but the retry of it goes to the next controller first. Real sockets, real
answers."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import pytest

from slurmlet.cli import http
from slurmlet.common.wire import STANDBY

OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}'


def standby(ttl: str = "2") -> bytes:
    body = b'{"detail":{"error":"Slurm backup controller in standby mode","pre":[],"code":1}}'
    return (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n{STANDBY}: {ttl}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


class Ctl:
    """A listener that answers each request with `answer()` (None: reads it and never answers)."""

    def __init__(self, answer: Callable[[], bytes | None]):
        self.answer = answer
        self.requests = 0
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(16)
        self.url = f"http://127.0.0.1:{self.srv.getsockname()[1]}"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.srv.accept()
            except OSError:
                return
            conn.recv(65536)
            self.requests += 1
            out = self.answer()
            if out is None:
                self.held.append(conn)
                continue
            with conn:
                conn.sendall(out)

    def close(self) -> None:
        self.srv.close()
        for c in self.held:
            c.close()


def down() -> str:
    """An address nobody listens on."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()
    return url


@pytest.fixture(autouse=True)
def fresh():
    http._ACTIVE.clear()
    yield
    http._ACTIVE.clear()


def test_a_request_goes_past_a_controller_down_and_one_in_standby_to_the_active_one():
    back, act = Ctl(lambda: standby()), Ctl(lambda: OK)
    try:
        assert http.request("POST", "/api/v1/x", {}, url=f"{down()},{back.url},{act.url}") == {"ok": True}
        assert (back.requests, act.requests) == (1, 1)
        # the one that answered is tried first next time
        assert http.request("GET", "/api/v1/x", url=f"{down()},{back.url},{act.url}") == {"ok": True}
        assert (back.requests, act.requests) == (1, 2)
    finally:
        back.close()
        act.close()


def test_while_none_is_active_a_request_waits_for_the_backup_to_take_over():
    took = time.monotonic() + 1.5
    back = Ctl(lambda: OK if time.monotonic() > took else standby("2"))  # (takes over after 1.5 s)
    try:
        assert http.request("POST", "/api/v1/x", {}, url=f"{down()},{back.url}") == {"ok": True}
        assert back.requests >= 2
    finally:
        back.close()


def test_the_wait_ends_after_one_and_a_half_slurmctld_timeouts_with_the_standby_error():
    back = Ctl(lambda: standby("1"))
    try:
        t0 = time.monotonic()
        with pytest.raises(http.Unreachable, match="Slurm backup controller in standby mode"):
            http.request("GET", "/api/v1/x", url=f"{down()},{back.url}")
        assert back.requests >= 2 and time.monotonic() - t0 < 30
    finally:
        back.close()


def test_a_change_that_got_no_answer_is_not_sent_again_but_its_retry_goes_to_the_next_first():
    hung, act = Ctl(lambda: None), Ctl(lambda: OK)
    urls = f"{hung.url},{act.url}"
    try:
        with pytest.raises(http.Unreachable):
            http.request("POST", "/api/v1/x", {}, url=urls, timeout=0.5)
        assert (hung.requests, act.requests) == (1, 0)
        assert http.request("POST", "/api/v1/x", {}, url=urls, timeout=0.5) == {"ok": True}
        assert (hung.requests, act.requests) == (1, 1)
        http._ACTIVE.clear()  # a read goes on past it at once
        assert http.request("GET", "/api/v1/x", url=urls, timeout=0.5) == {"ok": True}
        assert (hung.requests, act.requests) == (2, 2)
    finally:
        hung.close()
        act.close()
