"""The agent's sync client (nodeagent/syncclient.py) against a real HTTP server on a real socket: kept-alive
connections, one the server closed while idle, a request left to end beside a newer one, cancellation,
timeouts and answers that are not HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json

import h11
import pytest

from slurmlet.common import cred
from slurmlet.common.wire import STANDBY
from slurmlet.nodeagent.syncclient import SyncClient, SyncError


class Server:
    """An HTTP/1.1 server (h11) that answers each POST with its JSON body and what it saw; `hold` makes
    the answer to a body {"hold": NAME} wait for `release(NAME)`; `close_idle()` closes every connection
    that has no request in progress."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[tuple[int, dict, dict, bytes]] = []  # (connection number, headers, body, raw body)
        self.holds: dict[str, asyncio.Event] = {}
        self.idle: set[asyncio.StreamWriter] = set()
        self.raw: bytes | None = None  # answer this instead of HTTP, then close
        self.extra = b""  # sent once after the next answer (no request asked for it)
        self.standby = False  # answer as a controller in standby (503, common/wire.STANDBY)

    async def start(self) -> str:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        number = self.connections
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                self.idle.add(writer)
                head, body = None, b""
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        data = await reader.read(65536)
                        conn.receive_data(data)
                        continue
                    if isinstance(event, h11.ConnectionClosed):
                        return
                    self.idle.discard(writer)
                    if isinstance(event, h11.Request):
                        head = {k.decode(): v.decode() for k, v in event.headers}
                        target = event.target.decode()
                    elif isinstance(event, h11.Data):
                        body += event.data
                    elif isinstance(event, h11.EndOfMessage):
                        break
                doc = json.loads(body)
                self.requests.append((number, head, doc, body))
                if self.raw is not None:
                    writer.write(self.raw)
                    await writer.drain()
                    return
                if "hold" in doc:
                    await self.holds.setdefault(doc["hold"], asyncio.Event()).wait()
                out = json.dumps({"got": doc, "target": target, "connection": number}).encode()
                extra = [(STANDBY, "120")] if self.standby else []
                writer.write(conn.send(h11.Response(status_code=503 if self.standby else 200,
                                                    headers=[("Content-Length", str(len(out))),
                                                             ("Content-Type", "application/json"), *extra]))
                             + conn.send(h11.Data(data=out)) + conn.send(h11.EndOfMessage()) + self.extra)
                self.extra = b""
                await writer.drain()
                conn.start_next_cycle()
        except (ConnectionError, h11.ProtocolError):
            pass
        finally:
            self.idle.discard(writer)
            writer.close()

    def release(self, name: str) -> None:
        self.holds.setdefault(name, asyncio.Event()).set()

    async def close_idle(self) -> None:
        for w in list(self.idle):
            w.close()
        await asyncio.sleep(0)

    async def stop(self) -> None:
        self.server.close()
        await self.server.wait_closed()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


@contextlib.asynccontextmanager
async def serving(**kw):
    """A Server and a client of it (`kw`: SyncClient's own; connect 5 s, timeout 30 s by default)."""
    s = Server()
    c = SyncClient(await s.start(), **dict({"connect": 5, "timeout": 30}, **kw))
    try:
        yield s, c
    finally:
        for name in list(s.holds) + ["never"]:
            s.release(name)
        await c.aclose()
        await s.stop()


async def _until(pred, what: str) -> None:
    for _ in range(6000):
        if pred():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def test_requests_one_after_another_share_one_kept_alive_connection():
    async def go() -> None:
        async with serving() as (s, c):
            answers = [(await c.post("/api/v1/nodes/n1/sync", {"i": i})) for i in range(5)]
            assert [a.status_code for a in answers] == [200] * 5
            assert [a.json()["got"] for a in answers] == [{"i": i} for i in range(5)]
            assert {a.json()["connection"] for a in answers} == {1} and s.connections == 1
            assert answers[0].json()["target"] == "/api/v1/nodes/n1/sync"
    run(go())


def test_a_connection_the_server_closed_while_idle_is_replaced_without_an_error():
    async def go() -> None:
        async with serving() as (s, c):
            assert (await c.post("/x", {"i": 1})).json()["connection"] == 1
            await s.close_idle()  # (uvicorn closes a connection idle longer than its keep-alive limit)
            assert (await c.post("/x", {"i": 2})).json() == {"got": {"i": 2}, "target": "/x", "connection": 2}
            assert [r[2] for r in s.requests] == [{"i": 1}, {"i": 2}]  # each sent once
    run(go())


def test_a_request_left_to_end_keeps_its_connection_and_a_newer_one_takes_another():
    """The sync loop gives up a long-poll for a newer sync without cancelling it: both are answered,
    each on its own connection, and both connections are kept for the next requests."""
    async def go() -> None:
        async with serving() as (s, c):
            poll = asyncio.create_task(c.post("/x", {"hold": "poll"}))
            await _until(lambda: s.requests, "the long-poll to arrive")
            newer = await c.post("/x", {"i": 2})
            assert newer.json()["connection"] == 2 and not poll.done()
            s.release("poll")
            assert (await poll).json()["connection"] == 1
            later = [(await c.post("/x", {"i": i})).json()["connection"] for i in range(4)]
            assert set(later) <= {1, 2} and s.connections == 2
    run(go())


def test_a_cancelled_request_closes_its_connection_and_the_next_one_is_served():
    async def go() -> None:
        async with serving() as (s, c):
            poll = asyncio.create_task(c.post("/x", {"hold": "never"}))
            await _until(lambda: s.requests, "the request to arrive")
            poll.cancel()
            with pytest.raises(asyncio.CancelledError):
                await poll
            assert (await c.post("/x", {"i": 1})).json()["connection"] == 2  # (not the cancelled one's)
    run(go())


def test_no_answer_in_time_no_server_and_an_answer_that_is_not_http_are_sync_errors():
    async def go() -> None:
        async with serving(timeout=0.3) as (s, c):
            with pytest.raises(SyncError):
                await c.post("/x", {"hold": "never"})
            url = c.url
            s.raw = b"SSH-2.0-OpenSSH\r\n"
            with pytest.raises(SyncError):
                await SyncClient(url, connect=5, timeout=30).post("/x", {"i": 1})
        with pytest.raises(SyncError, match="cannot connect"):
            await SyncClient(url, connect=5, timeout=30).post("/x", {"i": 1})
    run(go())


def test_each_request_carries_the_credential_its_signer_makes_for_its_own_body():
    key = b"k" * 32

    def sign(method: str, target: str, body: bytes) -> dict[str, str]:
        return {cred.HEADER: cred.sign(key, 0, "root", cred.bind(method, target, body))}

    async def go() -> None:
        async with serving(sign=sign) as (s, c):
            for i in range(2):
                await c.post("/api/v1/nodes/n1/sync", {"i": i, "text": "é\u2028"})
            assert len(s.requests) == 2
            for _, head, _, body in s.requests:
                assert cred.verify(key, head[cred.HEADER.lower()], cred.bind("POST", "/api/v1/nodes/n1/sync", body))
    run(go())


@pytest.mark.parametrize("url", ["https://ctl:6817", "http://ctl:99999", "ftp://ctl", "http://:6817"])
def test_only_plain_http_addresses_are_taken(url: str):
    with pytest.raises(ValueError):
        SyncClient(url, connect=5, timeout=30)


def test_bytes_after_an_answer_are_not_taken_for_the_next_answer():
    async def go() -> None:
        async with serving() as (s, c):
            s.extra = b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            assert (await c.post("/x", {"i": 1})).json()["connection"] == 1
            second = await c.post("/x", {"i": 2})
            assert (second.status_code, second.json()["connection"]) == (200, 2)
    run(go())


def test_a_target_or_a_host_that_cannot_be_sent_is_a_sync_error():
    async def go() -> None:
        async with serving() as (s, c):
            for target in ("/api/v1/nodes/a b/sync", "/api/v1/nodes/n\u00e9/sync"):
                with pytest.raises(SyncError):
                    await c.post(target, {})
            assert (await c.post("/x", {"i": 1})).status_code == 200 and len(s.requests) == 1
        with pytest.raises(SyncError):
            await SyncClient("http://a..b:6817", connect=5, timeout=30).post("/x", {})
    run(go())


def test_a_sync_goes_to_the_active_controller_past_one_down_and_one_in_standby():
    async def go() -> None:
        standby, active = Server(), Server()
        standby.standby = True
        a, b = await standby.start(), await active.start()
        down = Server()
        gone = await down.start()
        await down.stop()  # (its port refuses connections now)
        c = SyncClient(f"{gone},{a},{b.removeprefix('http://')}", connect=5, timeout=30)
        try:
            r = await c.post("/x", {"i": 1})
            assert r.status_code == 200 and r.json()["got"] == {"i": 1}
            assert c.url == b and len(standby.requests) == 1 and len(active.requests) == 1
            await c.post("/x", {"i": 2})  # (the active one first now)
            assert len(standby.requests) == 1 and len(active.requests) == 2
            active.standby, standby.standby = True, False  # (the other took over)
            r = await c.post("/x", {"i": 3})
            assert r.status_code == 200 and c.url == a and standby.requests[-1][2] == {"i": 3}
            standby.standby = True  # nobody active: the last refusal, marked
            with pytest.raises(SyncError, match="in standby"):
                await c.post("/x", {"i": 4})
        finally:
            await c.aclose()
            await standby.stop()
            await active.stop()
    run(go())
