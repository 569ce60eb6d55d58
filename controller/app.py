"""create_app(settings) -> FastAPI: the controller's assembly. The lifespan makes the Controller
(runtime.py) and runs the loops (loops/), the middleware authenticates, limits bodies and times
requests, and the routers (api/) do the rest."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import marshal
import time

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from sqlalchemy.exc import OperationalError
from starlette.datastructures import Headers

from slurmlet.common import cred, wire

from . import auth, literal, localsock, metrics
from .api import accounting, admin, deps, jobs, limits, nodes, runs, secrets, steps, web
from .api.deps import MARSHAL_WANTED, json_safe, nodes_of
from .api.runs import MAX_CODE
from .api.schemas import MAX_ID, CompleteRequest, JobSubmit, NodeSync, StepCreate
from .errors import Conflict, DomainError, InvalidRequest, NotFound, Unavailable
from .loops.reaper import reaper_loop
from .loops.scheduler import scheduler_loop
from .runtime import VERSION, Controller, Settings
from .store.guard import describe

log = logging.getLogger("slurmlet.controller")


class _Authenticate:
    """Who sends the request (auth.Caller in request.state.caller): changes need a valid
    credential or token once the cluster has a key; reads do not. A pure ASGI middleware:
    Starlette's BaseHTTPMiddleware costs a task and a stream per request."""

    def __init__(self, app) -> None:  # noqa: ANN001
        self.app = app

    async def __call__(self, scope, receive, send) -> None:  # noqa: ANN001
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        c = scope["app"].state.ctl
        headers = Headers(scope=scope)
        binding = ""
        if c.settings.key is not None and cred.HEADER in headers:  # bound to the body too: read it first
            body, receive = await _read_whole(receive)
            if body is None:
                return  # the client went away
            binding = _binding(scope, body)
        local = headers.get(localsock.HEADER)
        if local is not None:
            uid = c.local.take(local) if c.local is not None else None
            if uid is not None and not c.local.serves(headers.get("host", "")):
                # meant for another controller ($SLURMLET_SOCKET left from another cluster): the CLI asks there
                await JSONResponse(status_code=421, content={"detail": InvalidRequest(
                    "this socket serves another controller").to_json()})(scope, receive, send)
                return
            if c.settings.key is None:  # (without a key every request is trusted as the user it names)
                who = auth.OPEN
            else:
                who = None if uid is None else auth.local_caller(uid, c.store.admin_level)
        else:
            who = auth.authenticate(c.settings.key, headers, c.clock(), c.store.admin_level, binding, c.nonces)
        if who is None:
            if scope["method"] not in ("GET", "HEAD", "OPTIONS"):
                await JSONResponse(status_code=401, content={"detail": auth.Unauthenticated().to_json()})(
                    scope, receive, send)
                return
            who = auth.Caller(None, None, 0)
        scope.setdefault("state", {})["caller"] = who
        await self.app(scope, receive, send)


class _LiteralBodies:
    """Request bodies sent as Python literals (common/wire.py: the CLI's) become JSON before the
    routes read them (literal.py: what `ast.literal_eval` reads, which evaluates literals only); a body
    that is none, or holds what JSON cannot (bytes, complex numbers, sets, infinities), or is over
    LITERAL_MAX, is a 400. Only
    the bodies of changes by an authenticated caller are read so (parsing a literal costs more than
    JSON: nobody may make the controller do it for nothing); other requests pass as they came."""

    def __init__(self, app) -> None:  # noqa: ANN001
        self.app = app

    async def __call__(self, scope, receive, send) -> None:  # noqa: ANN001
        headers = Headers(scope=scope) if scope["type"] == "http" else None
        if headers is None or headers.get("content-type") != wire.LITERAL or \
                scope["method"] not in ("POST", "PUT", "PATCH", "DELETE"):
            await self.app(scope, receive, send)
            return
        caller = scope.get("state", {}).get("caller")
        if caller is None or not (caller.known or scope["app"].state.ctl.settings.key is None):
            await JSONResponse(status_code=401, content={"detail": auth.Unauthenticated().to_json()})(
                scope, receive, send)
            return
        size = headers.get("content-length", "")
        if not size.isdigit() or int(size) > wire.LITERAL_MAX:  # refused before it is read
            err = InvalidRequest(f"a body sent as {wire.LITERAL} needs a Content-Length of at most "
                                 f"{wire.LITERAL_MAX} bytes; send JSON")
            await JSONResponse(status_code=400, content={"detail": err.to_json()})(scope, receive, send)
            return
        body, receive = await _read_whole(receive)
        if body is None:
            return  # the client went away
        try:
            data = literal.to_json(body)
        except InvalidRequest as e:
            await JSONResponse(status_code=400, content={"detail": e.to_json()})(scope, receive, send)
            return
        headers = [(k, v) for k, v in scope["headers"] if k not in (b"content-type", b"content-length")]
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
        scope["headers"] = headers  # (in place: the outer middleware reads what the router adds to it)
        await self.app(scope, limits.replaying(data, receive), send)


MARSHAL = deps.MARSHAL.encode()


class _MarshalAnswers:
    """JSON answers in Python's `marshal` format for a client on this host (its request came through
    the controller's socket or spool: a live token) that lists `application/x-marshal` in its
    Accept: the CLI (cli/http.py), which then loads no JSON decoder (`json` brings `re` and `enum`:
    milliseconds of every command). Not for others: converting costs the controller time and
    memory. The same values: the JSON the routes made, read back (JSON's types only, so a client on
    another Python version reads it too: marshal's format 4, Python 3.4 on). Other answers
    (streams, pages, an answer too deep for marshal) pass as they are."""

    def __init__(self, app) -> None:  # noqa: ANN001
        self.app = app

    async def __call__(self, scope, receive, send) -> None:  # noqa: ANN001
        if scope["type"] != "http" or not any(k == b"accept" and MARSHAL in v for k, v in scope["headers"]) or \
                not _local(scope):
            await self.app(scope, receive, send)
            return
        wanted = MARSHAL_WANTED.set(True)  # (routes whose answers are plain JSON types send marshal: as_json)
        start = None
        parts: list[bytes] = []

        async def convert(msg) -> None:  # noqa: ANN001
            nonlocal start
            if msg["type"] == "http.response.start" and any(
                    k == b"content-type" and v.startswith(b"application/json") for k, v in msg.get("headers", ())):
                start = msg
                return
            if msg["type"] != "http.response.body" or start is None:
                await send(msg)
                return
            parts.append(msg.get("body", b""))
            if msg.get("more_body"):
                return
            headers, body = _as_marshal(start["headers"], b"".join(parts))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        try:
            await self.app(scope, receive, convert)
        finally:
            MARSHAL_WANTED.reset(wanted)


def _as_marshal(headers: list, body: bytes) -> tuple[list, bytes]:
    """A JSON answer's header lines and body in marshal (the same values); as they were, with its
    length, when it cannot be (too deep for marshal)."""
    ctype = None
    try:
        body, ctype = marshal.dumps(json.loads(body), 4), MARSHAL
    except (ValueError, RecursionError):
        pass
    headers = [(k, v) for k, v in headers if k != b"content-length" and (ctype is None or k != b"content-type")]
    headers.append((b"content-length", str(len(body)).encode()))
    if ctype is not None:
        headers.append((b"content-type", ctype))
    return headers, body


def _binding(scope: dict, body: bytes) -> str:
    """What a request's credential is bound to (cred.bind): its method, target and body."""
    target = scope.get("raw_path") or scope["path"].encode()
    if scope.get("query_string"):
        target += b"?" + scope["query_string"]
    return cred.bind(scope["method"], target.decode("utf-8", "surrogateescape"), body)


def _local(scope) -> bool:  # noqa: ANN001
    """Whether a request came through the controller's socket or spool (its first X-Slurmlet-Local
    header, the one authentication reads, names a live token)."""
    local = scope["app"].state.ctl.local
    mark = localsock.HEADER.lower().encode()
    token = next((v for k, v in scope["headers"] if k == mark), None)
    return local is not None and token is not None and token.decode("latin-1") in local.uids


async def _read_whole(receive):  # noqa: ANN001, ANN202
    """The request's body (bounded by limits.BodyLimit, outside) and a `receive` that hands it on;
    (None, receive) when the client went away first."""
    parts = []
    while True:
        msg = await receive()
        if msg["type"] != "http.request":
            return None, receive
        parts.append(msg.get("body", b""))
        if not msg.get("more_body"):
            break
    body = b"".join(parts)
    return body, limits.replaying(body, receive)


def create_app(settings: Settings) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        ctl = Controller(settings)
        app.state.ctl = ctl
        ctl.store.reset_controller_scripts()
        gone = ctl.store.forget_unconfigured_nodes()
        if gone:
            log.warning("slurm.conf names these nodes no more: forgotten: %s", ", ".join(gone))
        for w in settings.config.warnings:
            log.warning("slurm.conf: %s (ignored)", w)
        task = asyncio.create_task(scheduler_loop(ctl))
        task.add_done_callback(_crash_on_failure)
        reaper = asyncio.create_task(reaper_loop(ctl))  # silent nodes: their jobs NODE_FAIL or requeued
        if settings.socket:
            host, _, port = settings.listen.rpartition(":")
            ctl.local = localsock.Local(settings.socket, (host.strip("[]"), int(port)), app)
            ctl.local.fast = fast.spooled
            await ctl.local.start()
        try:
            yield
        finally:
            if ctl.local is not None:
                await ctl.local.stop()
            task.cancel()
            for t in [task, reaper, *ctl.script_tasks]:
                t.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await t
            ctl.store.engine.dispose()

    app = FastAPI(title="slurmlet controller", version="0.1.0", lifespan=lifespan)

    def ctl() -> Controller:
        return app.state.ctl

    app.include_router(accounting.router)

    @app.exception_handler(DomainError)
    async def _domain_error(_request: Request, exc: DomainError) -> JSONResponse:
        return domain_error(exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        """FastAPI's 422 naming the fields; an Infinity, NaN or lone surrogate the request held is shown
        as text (JSON cannot carry it back: FastAPI's own handler failed with a 500)."""
        return JSONResponse(status_code=422, content={"detail": json_safe(jsonable_encoder(exc.errors()))})

    @app.exception_handler(OperationalError)
    async def _db_refused(_request: Request, exc: OperationalError) -> JSONResponse:
        return db_refused(ctl(), exc)

    @app.exception_handler(RecursionError)
    async def _too_deep(_request: Request, _exc: RecursionError) -> JSONResponse:
        return too_deep()

    # middleware, innermost first: Python-literal bodies made JSON (after authentication, which binds
    # the body as sent), authentication, answers as marshal where asked, then the body limit (an
    # oversized request is refused with 413 before 401), then the latency timing of metrics.install
    # (outermost: it times everything)
    app.add_middleware(_LiteralBodies)
    app.add_middleware(_Authenticate)
    app.add_middleware(_MarshalAnswers)  # (outside authentication: its refusals are answers too)
    for r in (jobs, runs, secrets, steps, nodes, admin, web):
        app.include_router(r.router)
    app.add_middleware(limits.BodyLimit, max_code=MAX_CODE)  # 413 before an oversized body is read
    metrics.install(app, ctl, nodes_of)  # GET /metrics; its latency middleware times all the others
    fast = _Fast(app)
    app.add_middleware(_FastTCP, fast=fast)  # (outermost: it times what it serves itself)
    return app


def domain_error(exc: DomainError) -> JSONResponse:
    return JSONResponse(status_code=exc.status, content={"detail": exc.to_json()})


def db_refused(c: Controller, exc: OperationalError) -> JSONResponse:
    """The database refused the request for its own sake (locked, read-only, unreachable): 503
    naming it, not a 500; nothing of the request was recorded."""
    err = Unavailable(f"the database {describe(c.store.engine)} refused the request: {exc.orig}")
    return JSONResponse(status_code=err.status, content={"detail": err.to_json()})


def too_deep() -> JSONResponse:
    """A JSON body nested deeper than the parser goes: refused, not a 500."""
    return JSONResponse(status_code=400, content={"detail": InvalidRequest("the JSON body nests too deeply").to_json()})


class _Fast:
    """The requests every job makes, served without the middleware and the router (`route`: a
    submission, an agent's sync, srun's step, an allocation's release). FastAPI's middleware,
    routing and dependencies are about half of what the controller spends on each, and they are what
    tools run back to back and what every job's start and end costs. The same steps as the ordinary
    way: the route's own validation (its body model) and function, the caller as _Authenticate finds
    them (the kernel's uid through the spool, localsock.py; a credential or token over TCP, proved
    before the body is parsed and spent after it validates, so that a body handed on to the ordinary
    way still has its credential unused), Python-literal bodies through the spool as _LiteralBodies
    reads them, errors answered as the app's handlers answer them, marshal where asked
    (_MarshalAnswers), the request timed and counted (metrics). A request that does not take these steps without a refusal (a body that does
    not validate, a caller nobody proves, a Host or header the ordinary way refuses, an oversized or
    chunked body) goes the ordinary way with its body, and gets the ordinary way's answer."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    @staticmethod
    def route(method: str, path: str, query: bytes):  # noqa: ANN205 - (template, model, call) or None
        """The route a request of these goes to: its path's template (for metrics), its body's model,
        and a call (controller, body, request); None for any other (a path parameter the route
        would not take, e.g. a job id beyond MAX_ID, is for the ordinary way to refuse)."""
        if method != "POST" or query:
            return None
        if path == "/api/v1/jobs":
            return "/api/v1/jobs", JobSubmit, jobs.submit
        parts = path.split("/")
        if len(parts) != 6 or parts[:3] != ["", "api", "v1"] or not parts[4]:
            return None
        kind, key, leaf = parts[3:]
        if kind == "nodes" and leaf == "sync":
            return "/api/v1/nodes/{name}/sync", NodeSync, functools.partial(_call, nodes.node_sync, key)
        if kind != "jobs" or not (key.isascii() and key.isdigit() and len(key) <= 12) or int(key) > MAX_ID:
            return None
        if leaf == "steps":
            return "/api/v1/jobs/{job_id}/steps", StepCreate, functools.partial(_call, steps.create_step, int(key))
        if leaf == "complete":
            return "/api/v1/jobs/{job_id}/complete", CompleteRequest, functools.partial(_call, jobs.complete, int(key))
        return None

    async def spooled(self, scope: dict, body: bytes, send) -> bool:  # noqa: ANN001
        """A request through the spool (localsock.Local.fast): served (True), or left to the app."""
        t0 = time.perf_counter()
        found = self.route(scope["method"], scope["path"], scope["query_string"])
        if found is None:
            return False
        headers = Headers(scope=scope)
        c = self.app.state.ctl
        size = headers.get("content-length", "")
        if not size.isdigit() or int(size) != len(body) or c.local is None or \
                not c.local.serves(headers.get("host", "")):
            return False
        uid = c.local.uids.get(headers.get(localsock.HEADER, ""))
        if uid is None:
            return False
        ctype = headers.get("content-type")
        try:
            if ctype == wire.LITERAL and len(body) <= wire.LITERAL_MAX:
                value = literal.read(body)
            elif ctype == "application/json" and len(body) <= limits.body_limit("POST", scope["path"], MAX_CODE):
                value = json.loads(body)
            else:
                return False
            model = found[1].model_validate(value)
        except (InvalidRequest, ValueError, RecursionError):  # (pydantic's ValidationError is a ValueError)
            return False
        who = auth.OPEN if c.settings.key is None else auth.local_caller(uid, c.store.admin_level)
        await self.serve(scope, found, model, who, send, t0)
        return True

    async def serve(self, scope: dict, found: tuple, model: object, who: auth.Caller, send,  # noqa: ANN001
                    t0: float) -> None:
        """Call the route with the validated body and the caller; send its answer (timed from `t0`, the
        request's arrival). What the app's handlers do not answer is a 500, as Starlette's
        ServerErrorMiddleware answers it: never no answer (a spooled request answered with nothing
        is sent again by the socket)."""
        template, _, call = found
        c = self.app.state.ctl
        status = 500
        scope = {**scope, "app": self.app, "state": {**scope.get("state", {}), "caller": who}}
        wanted = MARSHAL_WANTED.set(_local(scope) and any(k == b"accept" and MARSHAL in v for k, v in scope["headers"]))
        started = False
        try:
            request = Request(scope)
            try:
                res = await call(c, model, request)
            except DomainError as e:
                res = domain_error(e)
            except OperationalError as e:
                res = db_refused(c, e)
            except RecursionError:
                res = too_deep()
            status = res.status_code
            heads, out = res.raw_headers, res.body
            if MARSHAL_WANTED.get() and res.media_type == "application/json":
                heads, out = _as_marshal(heads, out)
            started = True
            await send({"type": "http.response.start", "status": status, "headers": heads})
            await send({"type": "http.response.body", "body": out})
        except Exception:  # noqa: BLE001 - answered, logged; the controller goes on
            status = 500
            log.exception("%s %s failed", scope["method"], scope["path"])
            if not started:
                err = PlainTextResponse("Internal Server Error", status_code=500)
                await send({"type": "http.response.start", "status": 500, "headers": err.raw_headers})
                await send({"type": "http.response.body", "body": err.body})
        finally:
            MARSHAL_WANTED.reset(wanted)
            self.app.state.latency.observe("POST", template, status, time.perf_counter() - t0)


async def _call(route, key: object, c: Controller, model: object, request: Request) -> Response:  # noqa: ANN001
    """A route whose path names a node or a job: route(c, key, body, request), its answer as a Response
    (a plain value as FastAPI's serialization makes it)."""
    res = await route(c, key, model, request)
    return res if isinstance(res, Response) else JSONResponse(jsonable_encoder(res))


class _FastTCP:
    """_Fast for requests over TCP (the agents' syncs, remote sbatch): the outermost middleware."""

    def __init__(self, app, fast: _Fast) -> None:  # noqa: ANN001
        self.app = app
        self.fast = fast

    async def __call__(self, scope, receive, send) -> None:  # noqa: ANN001
        t0 = time.perf_counter()
        found = None if scope["type"] != "http" else self.fast.route(scope["method"], scope["path"],
                                                                     scope["query_string"])
        if found is None:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        size = headers.get("content-length", "")
        if headers.get("content-type") != "application/json" or not size.isdigit() or \
                int(size) > limits.body_limit("POST", scope["path"], MAX_CODE) or localsock.HEADER in headers:
            await self.app(scope, receive, send)
            return
        body, receive = await _read_whole(receive)
        if body is None:
            return  # the client went away
        c = self.fast.app.state.ctl
        binding = ""
        if c.settings.key is not None and cred.HEADER in headers:
            binding = _binding(scope, body)
        # the caller proved before the body is parsed (nobody makes the controller parse for nothing),
        # the credential spent after it validates (one handed on must still be unused)
        now = c.clock()
        who = auth.authenticate(c.settings.key, headers, now, c.store.admin_level, binding)
        if who is None:  # (refused the ordinary way: 401)
            await self.app(scope, receive, send)
            return
        try:
            model = found[1].model_validate(json.loads(body))
        except (ValueError, RecursionError):
            await self.app(scope, receive, send)
            return
        if not auth.spend(c.settings.key, headers, now, binding, c.nonces):  # used before: the 401
            await self.app(scope, receive, send)
            return
        await self.fast.serve(scope, found, model, who, send, t0)


def _crash_on_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.critical("scheduler loop died: %r", task.exception())
        import os
        import signal
        os.kill(os.getpid(), signal.SIGTERM)


__all__ = ["create_app", "Settings", "Controller", "Conflict", "NotFound", "MAX_CODE", "VERSION"]
