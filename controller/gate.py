"""The gate: the one layer every request passes, whichever way it came (TCP through uvicorn, or this
host's spool, spool.py), before any route sees it. In this order:

1. framing: a request with both Content-Length and Transfer-Encoding is refused (400; RFC 9112
   section 6.3 allows it), its connection closed;
2. a controller in standby (failover.py: another one holds the database's lease) answers a ping and
   refuses every request but a takeover (503, Slurm's standby error); a takeover passes the steps
   below, its caller and credential checked as every request's, and the failover carries it out;
3. `identify()`: who asks, once: the kernel's uid for a spooled request (spool.LOCAL in its scope);
   over TCP a credential (common/cred.py: its signature and age, before the body is read) or a token
   (auth.token_caller); else nobody. A change by nobody is refused (401) before its body is read;
4. `read_body()`: the body bounded by the bytes actually read (chunked or not) against its route's
   limit (limits.body_limit): 413 for a Content-Length over it at once, and for a body that grows
   past it as soon as it does;
5. a credential bound to its request (method, target, body: cred.bind) and spent once;
6. `decode()`: the body read as JSON (415 for another type, 400 for no JSON), handed to the routes
   as their body (GateRoute, GateRequest: FastAPI's custom request class);
7. the answer in marshal where a spooled client lists it in its Accept (`marshal_wanted`);
8. the request timed for /metrics (metrics.Latency), from its arrival to its answer's end.

Routes are plain FastAPI routes with dependencies; they read the caller (deps.caller) and the body
the gate decoded. A middleware or an authentication rule is one edit here."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import marshal
import time
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.datastructures import Headers

from slurmlet.common import cred, wire

from . import auth, metrics
from .api import limits
from .errors import DomainError, InvalidRequest
from .failover import Failover, answer_json

if TYPE_CHECKING:
    from .runtime import Controller

log = logging.getLogger("slurmlet.controller")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: a spooled request's scope key: the uid the kernel names as its sender (spool.py sets it; no
#: client can: uvicorn builds a TCP request's scope from the connection alone)
LOCAL = "slurmlet.local"
#: a spooled request's scope key: its place among its user's work in flight (spool.Work)
WORK = "slurmlet.work"
#: the scope key of what the gate found: a Passed
PASSED = "slurmlet.passed"
READS = frozenset({"GET", "HEAD", "OPTIONS"})
_MARSHAL = wire.MARSHAL.encode()
_NOBODY = auth.Caller(None, None, 0)


class Unsupported(DomainError):
    """Unsupported Media Type"""

    status = 415


@dataclass
class Passed:
    """What the gate found of a request: its caller, its body decoded (None: none) and as read, whether
    its answer goes in marshal, and the spool's hold on its user's work in flight (None over TCP)."""

    caller: auth.Caller
    body: Any = None
    raw: bytes = b""
    marshal: bool = False
    work: Any = None


@dataclass(frozen=True)
class Pending:
    """A credential found good but for its binding to the body (not read yet) and its single use."""

    binding: str
    nonce: str
    made: int


def identify(key: bytes | None, now: float, level_of: Callable[[str], int], scope: Scope,
             headers: Headers) -> tuple[auth.Caller | None, Pending | None]:
    """Who sends a request (None: nobody proves anyone), and the credential still to bind and spend;
    `level_of(user)` is a user's sacctmgr AdminLevel (0, 1 or 2)."""
    uid = scope.get(LOCAL)
    if key is None:  # (without a key every request is trusted as the user it names)
        return auth.OPEN, None
    if uid is not None:
        return auth.local_caller(uid, level_of), None
    value = headers.get(cred.HEADER)
    if value:
        got = cred.unseal(key, value, now)
        if got is None:
            return None, None
        uid, user, nonce, made, binding = got
        return auth.Caller(uid, user, 2 if uid == 0 else level_of(user)), Pending(binding, nonce, made)
    return auth.token_caller(key, headers, now, level_of), None


def _no_level(_user: str) -> int:
    """A controller in standby reads no accounting: only root (its credential) is an administrator."""
    return 0


@dataclass(frozen=True)
class Overflow:
    """A body that went past its limit: the bytes read, and whether the client was still sending."""

    size: int
    more: bool


async def read_body(receive: Receive, limit: int) -> bytes | Overflow | None:
    """The request's body, read while it stays within `limit` bytes: the bytes; an Overflow when it
    went past (nothing more is read); None when the client went away."""
    parts = []
    size = 0
    while True:
        msg = await receive()
        if msg["type"] != "http.request":
            return None
        chunk = msg.get("body", b"")
        size += len(chunk)
        if size > limit:
            return Overflow(size, bool(msg.get("more_body")))
        parts.append(chunk)
        if not msg.get("more_body"):
            return b"".join(parts)


def decode(body: bytes, ctype: str | None) -> Any:
    """A request body as the routes take it: JSON's values (None for no body)."""
    if not body:
        return None
    if ctype is None or ctype.split(";", 1)[0].strip().lower() != wire.JSON:
        raise Unsupported(f"a request body is {wire.JSON}, not {ctype or 'untyped'}")
    try:
        return json.loads(body)
    except ValueError:  # (JSONDecodeError, UnicodeDecodeError)
        raise InvalidRequest("expected a JSON body") from None
    except RecursionError:
        raise InvalidRequest("the JSON body nests too deeply") from None


#: whether the request being served takes its answer in marshal (what the gate found: deps.as_json
#: writes a route's plain JSON answer in marshal straight)
MARSHAL_WANTED: ContextVar[bool] = ContextVar("marshal_wanted", default=False)


@contextlib.asynccontextmanager
async def parked(request: Request):  # noqa: ANN201
    """Around a long wait in a route (a long-poll, an answer awaited from a node): the request does not
    count as its user's work in flight meanwhile (spool.Work), so that waiting commands of a user
    do not hold back their next one."""
    passed = request.scope.get(PASSED)
    work = passed.work if passed is not None else None
    if work is not None:
        work.park()
    try:
        yield
    finally:
        if work is not None:
            work.resume()


class GateRequest(Request):
    """The request the routes get: its JSON is what the gate decoded (read once, bounded)."""

    async def json(self) -> Any:
        passed = self.scope.get(PASSED)
        return None if passed is None else passed.body

    async def body(self) -> bytes:
        passed = self.scope.get(PASSED)
        return b"" if passed is None else passed.raw


class GateRoute(APIRoute):
    """Every route's class: its handler takes a GateRequest."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def gated(request: Request) -> Response:
            return await handler(GateRequest(request.scope, request.receive))

        return gated


class Gate:
    """The ASGI layer (outermost): see the module's text."""

    def __init__(self, app: Any, ctl: Callable[[], Controller], failover: Callable[[], Failover],
                 latency: metrics.Latency) -> None:
        self.app = app
        self.ctl = ctl
        self.failover = failover
        self.latency = latency

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = 500  # (what the client gets when nothing answers)

        async def answer(msg: Message) -> None:
            nonlocal status
            if msg["type"] == "http.response.start":
                status = msg["status"]
            await send(msg)

        try:
            await self._pass(scope, receive, answer)
        finally:
            route = scope.get("route")  # (set by the router when a route matched)
            method = scope["method"]
            self.latency.observe(method if method in metrics.METHODS else "other",
                                 getattr(route, "path", metrics.UNMATCHED), status, time.perf_counter() - t0)

    async def _pass(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        method, path = scope["method"], scope["path"]
        length = headers.get("content-length")
        chunked = "transfer-encoding" in headers
        if length is not None and chunked:
            await _refuse(send, InvalidRequest("a request with both Content-Length and Transfer-Encoding"))
            return
        fo = self.failover()
        c = self.ctl()
        standby = c is None or not fo.active()  # (another controller holds the lease: failover.py)
        level_of: Callable[[str], int]
        if c is None or standby:
            if not fo.takeover_request(method, path):  # (a ping, or the standby's refusal)
                await fo.serve_standby(scope, send)
                return
            key, clock, level_of, nonces = fo.key, time.time, _no_level, fo.nonces
        else:
            key, clock, level_of, nonces = c.settings.key, c.clock, c.store.admin_level, c.nonces
        who, pending = identify(key, clock(), level_of, scope, headers)
        if who is None:
            if method not in READS:
                await _refuse(send, auth.Unauthenticated())
                return
            who = _NOBODY
        limit = limits.body_limit(method, path)
        if length is not None and length.isdigit() and int(length) > limit:
            await _too_large(receive, send, limits.refusal(method, path, limit, int(length)), who.known)
            return
        body = b""
        if chunked or (length is not None and length != "0"):
            got = await read_body(receive, limit)
            if got is None:
                return  # (the client went away)
            if isinstance(got, Overflow):  # (what the client still sends is dropped for a known caller)
                await _too_large(receive, send, limits.refusal(method, path, limit, got.size), who.known and got.more)
                return
            body = got
        if pending is not None:
            target = scope.get("raw_path") or path.encode()
            if scope.get("query_string"):
                target += b"?" + scope["query_string"]
            if pending.binding != cred.bind(method, target.decode("utf-8", "surrogateescape"), body) or \
                    not nonces.first_use(pending.nonce, clock(), pending.made):
                await _refuse(send, auth.Unauthenticated())
                return
        try:
            value = decode(body, headers.get("content-type"))
        except DomainError as e:
            await _refuse(send, e)
            return
        if standby:  # (`scontrol takeover`, its caller known)
            try:
                done = await fo.take_over(who, scope.get("query_string", b""))
            except DomainError as e:
                await _refuse(send, e)
                return
            await answer_json(send, 200, done)
            return
        local = scope.get(LOCAL) is not None
        passed = Passed(who, value, body, local and any(k == b"accept" and _MARSHAL in v for k, v in scope["headers"]),
                        scope.get(WORK))
        scope[PASSED] = passed
        scope.setdefault("state", {})["caller"] = who
        if passed.work is not None:  # (the answer's start ends the request's work: its user may send more)
            send = _releasing(send, passed.work)
        # (the routes read the body the gate decoded: what they may still receive is the client's leaving,
        # which a streamed answer listens for)
        if not passed.marshal:
            await self.app(scope, receive, send)
            return
        wanted = MARSHAL_WANTED.set(True)
        try:
            await self.app(scope, receive, _marshalling(send))
        finally:
            MARSHAL_WANTED.reset(wanted)


def _releasing(send: Send, work: Any) -> Send:
    async def releasing(msg: Message) -> None:
        if msg["type"] == "http.response.start":
            work.done()
        await send(msg)
    return releasing


def _marshalling(send: Send) -> Send:
    """`send` of an answer in marshal: a JSON answer read back (the same values) and written in
    marshal's format 4 (a client on another Python reads it too); other answers as they are."""
    start: Message | None = None
    parts: list[bytes] = []

    async def convert(msg: Message) -> None:
        nonlocal start
        if msg["type"] == "http.response.start" and any(
                k == b"content-type" and v.startswith(wire.JSON.encode()) for k, v in msg.get("headers", ())):
            start = msg
            return
        if msg["type"] != "http.response.body" or start is None:
            await send(msg)
            return
        parts.append(msg.get("body", b""))
        if msg.get("more_body"):
            return
        heads, body = as_marshal(list(start["headers"]), b"".join(parts))
        await send({**start, "headers": heads})
        await send({"type": "http.response.body", "body": body})

    return convert


def as_marshal(headers: list, body: bytes) -> tuple[list, bytes]:
    """A JSON answer's header lines and body in marshal; as they were, with its length, when it cannot
    be (too deep for marshal)."""
    ctype = None
    try:
        body, ctype = marshal.dumps(json.loads(body), 4), _MARSHAL
    except (ValueError, RecursionError):
        pass
    headers = [(k, v) for k, v in headers if k != b"content-length" and (ctype is None or k != b"content-type")]
    headers.append((b"content-length", str(len(body)).encode()))
    if ctype is not None:
        headers.append((b"content-type", ctype))
    return headers, body


async def _refuse(send: Send, err: DomainError) -> None:
    """The gate's refusal: the error as the routes' are answered, and the connection closed (what is
    left of the request is never read)."""
    body = json.dumps({"detail": err.to_json()}).encode()
    await send({"type": "http.response.start", "status": err.status,
                "headers": [(b"content-type", wire.JSON.encode()), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


async def _too_large(receive: Receive, send: Send, err: DomainError, linger: bool) -> None:
    """413. With `linger` (a caller the gate identified whose body is not all read), what the client
    still sends is read and dropped for at most limits.LINGER seconds first (nginx's lingering close),
    so that it reads the answer rather than a reset connection; nobody's is not read at all."""
    if linger:
        with contextlib.suppress(asyncio.TimeoutError):
            async with asyncio.timeout(limits.LINGER):
                while True:
                    msg = await receive()
                    if msg["type"] != "http.request" or not msg.get("more_body"):
                        break
    await _refuse(send, err)
