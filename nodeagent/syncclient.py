"""The agent's client for its syncs with the controller: HTTP/1.1 over kept-alive connections, with h11
for the protocol and asyncio streams for the I/O.

A node syncs several times for every job it runs (the job's start, its end, the next long-poll), and
the sync is most of what an agent does then: httpx's client stack was about a third of an agent's CPU
time during back-to-back jobs. This is the part of it the sync loop uses: a POST of a JSON body, signed
by the caller's `sign`, on a connection of a small pool. A request that is left to end (the sync loop
gives up a long-poll for a newer sync but does not cancel it) keeps its connection until its answer
comes; one that is cancelled closes its connection, which is never used again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import h11

from slurmlet.common.wire import STANDBY, controller_urls

_STANDBY = STANDBY.encode()  #: (h11 gives header names in lower case)


class SyncError(Exception):
    """No answer: the connection could not be made or was lost, it timed out, or the answer was not HTTP."""


class _Stale(Exception):
    """A kept-alive connection the controller had closed before it read the request: safe to send again."""


class Reply:
    """An answer: its status and body, and whether it is a controller in standby's refusal."""

    def __init__(self, status_code: int, content: bytes, standby: bool = False):
        self.status_code = status_code
        self.content = content
        self.standby = standby

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer
        self.h11 = h11.Connection(h11.CLIENT)

    def usable(self) -> bool:
        """Whether an idle connection may carry another request (the controller has not closed it)."""
        return not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


def address(base_url: str) -> tuple[str, int, str]:
    """(host, port, netloc) of an http://HOST[:PORT] address; ValueError for any other."""
    url = urlsplit(base_url)
    try:
        port = url.port or 80
    except ValueError:  # (not a number, or out of range)
        port = None
    if url.scheme != "http" or not url.hostname or port is None:
        raise ValueError(f"not an http://HOST[:PORT] address: {base_url!r}")
    return url.hostname, port, url.netloc


class _Target:
    """One controller: its address and its idle connections."""

    def __init__(self, base_url: str):
        self.url = base_url
        self.host, self.port, self.netloc = address(base_url)
        self.idle: list[_Conn] = []


class SyncClient:
    """POSTs of JSON bodies to the active one of the controllers `base_url` names (http://HOST:PORT, or
    several separated by commas, primary first: common/wire.controller_urls); `sign(method, target,
    body)` gives the headers that prove who asks. `connect` and `timeout` are seconds: to connect, and
    for the whole answer once the request is sent. A request goes on to the next controller past one
    that gives no answer or is in standby (common/wire.STANDBY), and the one that answered is tried
    first next time: a sync says where the node stands, and is sent again whole until answered."""

    def __init__(self, base_url: str, *, connect: float, timeout: float,
                 sign: Callable[[str, str, bytes], dict[str, str]] | None = None):
        self.targets = [_Target(u) for u in controller_urls(base_url)]
        if not self.targets:
            raise ValueError(f"not an http://HOST[:PORT] address: {base_url!r}")
        self.at = 0  #: the controller that answered last
        self.connect, self.timeout = connect, timeout
        self.sign = sign

    @property
    def url(self) -> str:
        """The controller that answered last (the first, before any answer)."""
        return self.targets[self.at].url

    async def post(self, target: str, body: object) -> Reply:
        data = json.dumps(body, separators=(",", ":")).encode()
        err: SyncError | None = None
        standby: SyncError | None = None  # (a controller in standby says more than one that is down)
        n = len(self.targets)
        for k in range(n):
            i = (self.at + k) % n
            try:
                reply = await self._post(self.targets[i], target, data)
            except SyncError as e:
                if n == 1:
                    raise
                err = e
                continue
            if reply.standby and n > 1:
                standby = SyncError(f"no controller is active: the one at {self.targets[i].netloc} is in standby")
                continue
            self.at = i
            return reply
        raise standby or err or SyncError("no controller")

    async def _post(self, t: _Target, target: str, data: bytes) -> Reply:
        while t.idle:
            conn = t.idle.pop()
            if not conn.usable():
                conn.close()
                continue
            try:
                return await self._exchange(t, conn, self._request(t, target, data), data, reused=True)
            except _Stale:  # (sent again with a credential of its own: the controller spends each once)
                continue
        try:
            async with asyncio.timeout(self.connect):
                reader, writer = await asyncio.open_connection(t.host, t.port)
        except (OSError, TimeoutError, ValueError) as e:  # (ValueError: a host name IDNA refuses)
            raise SyncError(f"cannot connect to {t.netloc}: {e or e.__class__.__name__}") from None
        return await self._exchange(t, _Conn(reader, writer), self._request(t, target, data), data, reused=False)

    def _request(self, t: _Target, target: str, data: bytes) -> h11.Request:
        headers = [("Host", t.netloc), ("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
        if self.sign is not None:
            headers += self.sign("POST", target, data).items()
        try:
            return h11.Request(method="POST", target=target, headers=headers)
        except (h11.ProtocolError, ValueError) as e:  # (a target that is no request's: not ASCII, a space)
            raise SyncError(f"cannot send POST {target!r}: {e}") from None

    async def _exchange(self, t: _Target, conn: _Conn, request: h11.Request, data: bytes, reused: bool) -> Reply:
        h = conn.h11
        got = False  # any byte of the answer
        status, chunks, standby = 0, [], False
        try:
            conn.writer.write(h.send(request) + h.send(h11.Data(data=data)) + h.send(h11.EndOfMessage()))
            async with asyncio.timeout(self.timeout):
                await conn.writer.drain()
                while True:
                    event = h.next_event()
                    if event is h11.NEED_DATA:
                        raw = await conn.reader.read(65536)
                        got = got or bool(raw)
                        h.receive_data(raw)  # (b"": the controller closed the connection)
                    elif isinstance(event, h11.Response):
                        status = event.status_code
                        standby = any(k == _STANDBY for k, _ in event.headers)
                    elif isinstance(event, h11.Data):
                        chunks.append(event.data)
                    elif isinstance(event, h11.EndOfMessage):
                        break
                    elif isinstance(event, h11.ConnectionClosed):
                        raise h11.RemoteProtocolError("connection closed before an answer")
        except (OSError, TimeoutError, h11.ProtocolError) as e:
            conn.close()
            if reused and not got and not isinstance(e, TimeoutError):
                raise _Stale from None
            raise SyncError(f"{e.__class__.__name__}: {e}" if str(e) else e.__class__.__name__) from None
        except BaseException:  # cancelled: what the connection holds is unknown
            conn.close()
            raise
        if h.our_state is h11.DONE and h.their_state is h11.DONE and not h.trailing_data[0]:
            h.start_next_cycle()  # (bytes after the answer would be taken for the next one's: not kept)
            t.idle.append(conn)
        else:
            conn.close()
        return Reply(status, b"".join(chunks), standby)

    async def aclose(self) -> None:
        for t in self.targets:
            while t.idle:
                t.idle.pop().close()
