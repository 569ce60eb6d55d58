"""The gate (controller/gate.py) on its own, with the controller's real state behind it: the order in
which it refuses (framing, caller, size, credential, format) and how much of a refused body it reads;
and the app as assembled: every route behind it."""

from __future__ import annotations

import asyncio
import json
import warnings

import pytest

from slurmlet.common import cred, wire
from slurmlet.controller import gate, metrics
from slurmlet.controller.api import limits
from slurmlet.controller.app import create_app
from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.runtime import Settings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's note about httpx
    from fastapi.testclient import TestClient

CONF = "ClusterName=g\nNodeName=node1 CPUs=4 RealMemory=8000\nPartitionName=debug Nodes=ALL Default=YES\n"
KEY = b"k" * 32
BODY = json.dumps({"script": "#!/bin/sh\ntrue\n", "hold": True}).encode()


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("gate")
    a = create_app(Settings(db_url=f"sqlite:///{tmp / 'db.sqlite'}", config=parse_slurm_conf(CONF), key=KEY))
    with TestClient(a) as client:
        yield a, client


class Run:
    """One request through a Gate in front of a recording app: what the client sent that the gate
    read, what it answered, and what reached the app."""

    def __init__(self, app, method: str, path: str, headers: list[tuple[bytes, bytes]],
                 chunks: list[bytes], local: int | None = None, stays: bool = False) -> None:
        self.read = 0
        self.reached: list[dict] = []
        self.sent: list[dict] = []
        ctl = app.state.ctl
        latency = metrics.Latency()

        async def inner(scope, receive, send) -> None:
            self.reached.append({"caller": scope["state"]["caller"], "body": scope[gate.PASSED].body})
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": b"{}"})

        left = list(chunks)

        async def receive() -> dict:
            if not left:
                if stays:  # (a client that sent its whole body and waits for the answer, as a server's receive)
                    await asyncio.Event().wait()
                return {"type": "http.disconnect"}
            chunk = left.pop(0)
            self.read += len(chunk)
            return {"type": "http.request", "body": chunk, "more_body": bool(left)}

        async def send(msg: dict) -> None:
            self.sent.append(msg)

        scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": b"",
                 "headers": headers}
        if local is not None:
            scope[gate.LOCAL] = local
        asyncio.run(asyncio.wait_for(gate.Gate(inner, lambda: ctl, lambda: app.state.failover, latency)(scope, receive, send), 60))
        self.latency = latency

    @property
    def status(self) -> int:
        return self.sent[0]["status"]

    @property
    def error(self) -> str:
        return json.loads(self.sent[1]["body"])["detail"]["error"]

    @property
    def closes(self) -> bool:
        return (b"connection", b"close") in self.sent[0]["headers"]


MIB = 1 << 20
HOSTILE = [b"x" * MIB] * 400  # 400 MiB, if anyone read it all


def _signed(method: str, path: str, body: bytes, key: bytes = KEY) -> bytes:
    return cred.sign(key, 0, "root", cred.bind(method, path, body)).encode()


@pytest.mark.parametrize("credential", [None, b"v2:bogus", "signed"])
def test_both_framing_headers_are_refused_before_anything_is_read(app, credential) -> None:
    headers = [(b"content-length", b"5"), (b"transfer-encoding", b"chunked"), (b"content-type", b"application/json")]
    if credential is not None:
        headers.append((cred.HEADER.lower().encode(), _signed("POST", "/api/v1/jobs", BODY)
                        if credential == "signed" else credential))
    r = Run(app[0], "POST", "/api/v1/jobs", headers, HOSTILE)
    assert (r.status, r.read, r.reached, r.closes) == (400, 0, [], True)
    assert "Content-Length and Transfer-Encoding" in r.error


@pytest.mark.parametrize("length", [None, str(400 * MIB).encode(), b"5"])
def test_a_change_by_nobody_is_refused_before_its_body_is_read(app, length) -> None:
    headers = [(b"content-type", b"application/json"), (cred.HEADER.lower().encode(), b"v2:1:a:2:n:b:forged")]
    headers.append((b"transfer-encoding", b"chunked") if length is None else (b"content-length", length))
    r = Run(app[0], "POST", "/api/v1/jobs", headers, HOSTILE)
    assert (r.status, r.read, r.reached, r.closes) == (401, 0, [], True)
    assert r.latency.codes == {("POST", metrics.UNMATCHED, 401): 1}  # (timed like every request)


def test_a_body_is_bounded_by_the_bytes_read_chunked_or_not(app, monkeypatch) -> None:
    """A known caller's oversized body: refused at its Content-Length without a read, or, chunked,
    as soon as it passes the limit (what follows is read and dropped for LINGER seconds at most, here
    until the client stops)."""
    limit = limits.body_limit("POST", "/api/v1/jobs")
    signed = (cred.HEADER.lower().encode(), _signed("POST", "/api/v1/jobs", b"x"))
    r = Run(app[0], "POST", "/api/v1/jobs", [(b"content-length", str(limit + 1).encode()), signed], [])
    assert (r.status, r.read, r.reached) == (413, 0, [])
    r = Run(app[0], "POST", "/api/v1/jobs", [(b"transfer-encoding", b"chunked"), signed], [b"x" * MIB] * 40)
    assert (r.status, r.reached) == (413, [])
    assert r.read == 40 * MIB  # (all of it: the lingering read drops what a known client still sends)
    assert json.loads(r.sent[1]["body"])["detail"]["limit"] == limit
    # a body whose last piece passes the limit is answered at once: nothing is left to drop (a client
    # that waits for its answer would otherwise wait LINGER seconds)
    monkeypatch.setattr(limits, "LINGER", 3600.0)
    r = Run(app[0], "POST", "/api/v1/jobs", [(b"transfer-encoding", b"chunked"), signed], [b"x" * MIB] * 33,
            stays=True)
    assert (r.status, r.reached, r.read) == (413, [], 33 * MIB)
    # a read carries no body: one sent by nobody is refused at its first bytes, and not read on
    r = Run(app[0], "GET", "/api/v1/jobs", [(b"transfer-encoding", b"chunked")], [b"x" * MIB] * 40)
    assert (r.status, r.read, r.reached) == (413, MIB, [])
    r = Run(app[0], "GET", "/api/v1/jobs", [(b"content-length", b"0")], [])
    assert r.status == 200
    # the code upload's own limit: larger than every other route's
    assert limits.body_limit("POST", "/api/v1/code") > limits.MAX_CODE > wire.MAX_BODY
    assert limits.body_limit("POST", "/api/v1/jobs") == wire.MAX_BODY


def test_a_credential_is_for_its_own_request_and_good_once(app) -> None:
    c = _signed("POST", "/api/v1/jobs", BODY)
    headers = [(b"content-length", str(len(BODY)).encode()), (b"content-type", b"application/json"),
               (cred.HEADER.lower().encode(), c)]
    other = BODY.replace(b"true\\n", b"false\\n")
    r = Run(app[0], "POST", "/api/v1/jobs", headers, [other])  # another body under it: nobody
    assert (r.status, r.reached) == (401, [])
    r = Run(app[0], "POST", "/api/v1/jobs", headers, [BODY])
    assert r.status == 200 and r.reached[0]["caller"].uid == 0 and r.reached[0]["body"] == json.loads(BODY)
    r = Run(app[0], "POST", "/api/v1/jobs", headers, [BODY])  # used
    assert (r.status, r.reached) == (401, [])
    r = Run(app[0], "POST", "/api/v1/jobs", [*headers[:2], (cred.HEADER.lower().encode(),
                                                           _signed("POST", "/api/v1/jobs", BODY, b"o" * 32))], [BODY])
    assert (r.status, r.reached) == (401, [])


def test_a_spooled_request_is_its_uid_and_json_is_the_one_format(app) -> None:
    headers = [(b"content-length", str(len(BODY)).encode()), (b"content-type", b"application/json")]
    r = Run(app[0], "POST", "/api/v1/jobs", headers, [BODY], local=4242)
    assert r.status == 200 and r.reached[0]["caller"].uid == 4242
    for ctype in (b"application/x-python-literal", b"text/plain"):
        r = Run(app[0], "POST", "/api/v1/jobs", [headers[0], (b"content-type", ctype)], [BODY], local=4242)
        assert (r.status, r.reached) == (415, [])
    r = Run(app[0], "POST", "/api/v1/jobs", headers, [b"{" * 10 + b"x"], local=4242)
    assert (r.status, r.reached, r.error) == (400, [], "expected a JSON body")
    r = Run(app[0], "GET", "/api/v1/jobs", [], [], local=4242)  # a read: no body
    assert r.status == 200 and r.reached[0]["body"] is None


def test_marshal_is_for_spooled_requests_that_ask(app) -> None:
    _, client = app
    want = {"Accept": f"{wire.MARSHAL}, {wire.JSON}"}
    r = client.get("/api/v1/ping", headers=want)  # (over TCP: JSON whatever it asks)
    assert r.headers["content-type"] == wire.JSON
    ctl = app[0].state.ctl
    sent: list[dict] = []

    async def send(msg: dict) -> None:
        sent.append(msg)

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": "GET", "path": "/api/v1/partitions", "raw_path": b"/api/v1/partitions",
             "query_string": b"", "headers": [(b"accept", want["Accept"].encode()), (b"host", b"h")],
             "http_version": "1.1", "scheme": "http", "root_path": "", "server": ("127.0.0.1", 1), "client": None,
             gate.LOCAL: 0}
    del ctl
    client.portal.call(app[0], scope, receive, send)
    import marshal
    heads = dict(sent[0]["headers"])
    assert heads[b"content-type"] == wire.MARSHAL.encode()
    assert marshal.loads(sent[1]["body"]) == client.get("/api/v1/partitions").json()


def test_every_route_is_behind_the_gate(app) -> None:
    """Routes are GateRoutes (their handlers take the body the gate decoded) and the gate is the one
    middleware: a route or a middleware added another way fails here."""
    from starlette.routing import Route
    a = app[0]

    def walk(routes: list) -> list:  # (the routers' own routes, through the app's includes)
        return [x for r in routes for x in (walk(r.original_router.routes) if hasattr(r, "original_router") else [r])]
    routes = [r for r in walk(a.routes) if r.path not in (a.openapi_url, a.docs_url, a.redoc_url,
                                                          a.swagger_ui_oauth2_redirect_url)]
    assert len(routes) > 40 and all(isinstance(r, Route) for r in routes)
    assert [r.path for r in routes if not isinstance(r, gate.GateRoute)] == []
    assert [m.cls for m in a.user_middleware] == [gate.Gate]
