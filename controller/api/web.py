"""The dashboard: its page at `/` and assets at `/ui/...` (all in the wheel: no CDN), and the event
stream it follows (`/api/v1/events`, server-sent events). The page reads the same API as the CLI and
signs in with a token from `scontrol token` (`/?token=TOKEN`)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from importlib import resources
from typing import Literal

import hostlist
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse
from sqlalchemy import func, select

from slurmlet.common.wire import PIECE

from ..gate import GateRoute, parked
from ..store.tables import jobs as J
from .deps import JobId, as_json, ctl, own_job

router = APIRouter(route_class=GateRoute)

#: the assets the page loads, by name: (media type, file under controller/web/)
ASSETS = {"app.js": "text/javascript", "events.js": "text/javascript", "style.css": "text/css"}
#: how long the dashboard's questions wait for a node's answer
ASK_WAIT = 5.0
#: the most nodes one usage request asks
USAGE_NODES = 64
#: how often the event stream looks for a change it was not told of (a node going silent, a start)
POLL = 1.0


def _asset(name: str) -> bytes:
    return resources.files("slurmlet.controller").joinpath("web", name).read_bytes()


_NO_STORE = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}


@router.get("/", include_in_schema=False)
async def page() -> Response:
    # the token in the address stays out of other sites' Referer headers
    return Response(_asset("index.html"), media_type="text/html; charset=utf-8",
                    headers=dict(_NO_STORE, **{"Referrer-Policy": "no-referrer",
                                               "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                                                                          "frame-ancestors 'none'"}))


@router.get("/ui/{name}", include_in_schema=False)
async def asset(name: str) -> Response:
    if name not in ASSETS:
        return Response(status_code=404)
    return Response(_asset(name), media_type=ASSETS[name] + "; charset=utf-8", headers=_NO_STORE)


def fingerprint(c, writes: int = 0) -> tuple:  # noqa: ANN001 - the Controller
    """What changes when anything the dashboard shows changes: the jobs' states and times, holds,
    which nodes answer, and `writes` (the changes made through the API: metrics.Latency.writes).
    One look serves every open page: taken again after POLL/2 seconds, once a job has ended since
    (`c.ended` was replaced), or after a change through the API."""
    now = c.clock()
    look = c.ui_look
    if look is not None and now - look[0] < POLL / 2 and look[1] is c.ended and look[2][-1] == writes:
        return look[2]
    with c.store.engine.connect() as conn:
        states = tuple(conn.execute(select(J.c.state, func.count()).group_by(J.c.state).order_by(J.c.state)).all())
        times = tuple(conn.execute(select(func.max(J.c.id), func.max(J.c.start_time), func.max(J.c.end_time),
                                          func.count(J.c.held), func.sum(J.c.priority))).one())
    timeout = c.config.slurmd_timeout
    alive = tuple(sorted(n for n, t in c.last_sync.items() if now - t <= timeout))
    fp = (states, times, alive, writes)
    c.ui_look = (now, c.ended, fp)
    return fp


def look(c, writes: int = 0) -> str:  # noqa: ANN001 - the Controller
    """The fingerprint as a short name: the event stream says it with each event, and a list asked
    with `look=1` says (X-Slurmlet-Look) the one taken before it was read, so a page whose lists are
    at least that new skips the stream's word for it."""
    return hashlib.sha256(repr(fingerprint(c, writes)).encode()).hexdigest()[:16]


def writes_of(request: Request) -> int:
    latency = getattr(request.app.state, "latency", None)
    return latency.writes if latency is not None else 0


@router.get("/api/v1/events", include_in_schema=False)  # (a stream: no schema tool can end it)
async def events(request: Request) -> StreamingResponse:
    """`event: change` whenever what the dashboard shows may have changed (at once when a job ends,
    else within a second); a comment line every 15 s keeps proxies from closing the stream."""
    c = ctl(request)
    async def stream():  # noqa: ANN202
        last, quiet = None, 0.0
        yield "retry: 2000\n\n"
        while not await request.is_disconnected():
            try:
                fp = fingerprint(c, writes_of(request))
            except Exception:  # noqa: BLE001 - the database away: no change to tell; look again later
                fp = last
            if fp != last:
                last, quiet = fp, 0.0
                name = hashlib.sha256(repr(fp).encode()).hexdigest()[:16]
                yield f"event: change\ndata: {json.dumps({'at': c.clock(), 'look': name})}\n\n"
            elif quiet >= 15:
                quiet = 0.0
                yield ": idle\n\n"
            try:
                await asyncio.wait_for(c.ended.wait(), POLL)
            except TimeoutError:
                quiet += POLL
    return StreamingResponse(stream(), media_type="text/event-stream", headers=_NO_STORE)


@router.get("/api/v1/jobs/{job_id}/output")
async def output(job_id: JobId, request: Request, offset: int = Query(-1, ge=-1),
                 limit: int = Query(PIECE, ge=0),
                 which: Literal["stdout", "stderr", "mlflow"] = "stdout",
                 air_node: int | None = Query(None, ge=0, le=100000),
                 attempt: int | None = Query(None, ge=1, le=100000)):
    """The job's output file as its node reads it with the job's user's rights: `limit` bytes from
    `offset` (-1: its last `limit`), base64 in `data`, with the `offset` they start at and the file's
    `size`. At most PIECE bytes (common/wire.py) a request, whatever `limit` asks: a larger output is
    read a piece at a time, each from offset + bytes read (as a page follows the file). `which`: its
    stdout, its stderr, or for an air run its attempt's MLflow run (`mlflow`); `air_node=N`: an air
    run's log of its Nth node (read there), of `attempt` (default: the latest). Its owner, operators and
    administrators only (403 for others, as for its script and environment). `error` says why there
    is nothing: not started, no output file, the node silent, the file unreadable."""
    c = ctl(request)
    own_job(c, request, job_id)
    row = c.store.get_row(job_id)
    node = row.batch_host
    if air_node is not None or which == "mlflow":  # an air run's files (controller/workload.py, mlflow_track.py)
        job = c.store.public(row)
        air = os.path.join(job.get("submit_dir") or job.get("workdir") or "/", ".air")
        attempt = attempt or (row.restarts or 0) + 1
        if air_node is not None:
            nodes = hostlist.expand_hostlist(row.nodes) if row.nodes else []
            node = nodes[air_node] if air_node < len(nodes) else None
            path = os.path.join(air, f"{job_id}-node-{air_node}-a{attempt}.log")
        else:
            path = os.path.join(air, f"{job_id}-a{attempt}.mlflow")
    else:
        path = row.stdout if which == "stdout" else (row.stderr or row.stdout)
    out = {"job_id": job_id, "which": which, "path": path, "node": node, "offset": 0, "size": 0,
           "data": "", "error": None}
    if not node:
        return as_json(dict(out, error="the job has not started" if not row.nodes else "no such node in the job"))
    if not path:
        return as_json(dict(out, error="the job has no output file"))
    async with parked(request):
        got = await c.ask(node, {"op": "tail", "job_id": job_id, "uid": row.uid, "gid": row.gid,
                                 "path": path, "offset": offset, "limit": min(limit, PIECE)}, ASK_WAIT)
    if got is None:
        return as_json(dict(out, error=f"node {node} did not answer"))
    if got.get("error"):
        return as_json(dict(out, error=str(got["error"])))
    return as_json(dict(out, offset=int(got.get("offset") or 0), size=int(got.get("size") or 0),
                        data=str(got.get("data") or "")))


@router.get("/api/v1/jobs/{job_id}/usage")
async def usage(job_id: JobId, request: Request):
    """CPU and memory of the job over time on each of its nodes, from the agents' samples (kept on
    each node while the job runs and for its last jobs after): `nodes` maps a node to its series,
    one per process tree (`source`: "batch", or a step's task "STEP.RANK"), each a list of
    [time, resident KB, CPU seconds so far]. Its owner, operators and administrators (as sstat)."""
    c = ctl(request)
    own_job(c, request, job_id)
    row = c.store.get_row(job_id)
    nodes = hostlist.expand_hostlist(row.nodes)[:USAGE_NODES] if row.nodes else []
    async with parked(request):
        got = await asyncio.gather(*(c.ask(n, {"op": "usage", "job_id": job_id}, ASK_WAIT) for n in nodes))
    return as_json({"job_id": job_id, "state": row.state,
                    "nodes": {n: (a or {}).get("series") or [] for n, a in zip(nodes, got)},
                    "silent": [n for n, a in zip(nodes, got) if a is None]})
