"""The dashboard: its page at `/` and assets at `/ui/...` (all in the wheel: no CDN), and the event
stream it follows (`/api/v1/events`, server-sent events). The page reads the same API as the CLI and
signs in with a token from `scontrol token` (`/?token=TOKEN`)."""

from __future__ import annotations

import asyncio
import json
from importlib import resources

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse
from sqlalchemy import func, select

from ..store.tables import jobs as J
from .deps import CtlDep

router = APIRouter()

#: the assets the page loads, by name: (media type, file under controller/web/)
ASSETS = {"app.js": "text/javascript", "style.css": "text/css"}
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


def fingerprint(c) -> tuple:  # noqa: ANN001 - the Controller
    """What changes when anything the dashboard shows changes: the jobs' states and times, holds,
    and which nodes answer. One look serves every open page: taken again after POLL/2 seconds, or
    once a job has ended since (`c.ended` was replaced)."""
    now = c.clock()
    look = c.ui_look
    if look is not None and now - look[0] < POLL / 2 and look[1] is c.ended:
        return look[2]
    with c.store.engine.connect() as conn:
        states = tuple(conn.execute(select(J.c.state, func.count()).group_by(J.c.state).order_by(J.c.state)).all())
        times = tuple(conn.execute(select(func.max(J.c.id), func.max(J.c.start_time), func.max(J.c.end_time),
                                          func.count(J.c.held), func.sum(J.c.priority))).one())
    timeout = c.config.slurmd_timeout
    alive = tuple(sorted(n for n, t in c.last_sync.items() if now - t <= timeout))
    fp = (states, times, alive)
    c.ui_look = (now, c.ended, fp)
    return fp


@router.get("/api/v1/events", include_in_schema=False)  # (a stream: no schema tool can end it)
async def events(c: CtlDep, request: Request) -> StreamingResponse:
    """`event: change` whenever what the dashboard shows may have changed (at once when a job ends,
    else within a second); a comment line every 15 s keeps proxies from closing the stream."""
    async def stream():  # noqa: ANN202
        last, quiet = None, 0.0
        yield "retry: 2000\n\n"
        while not await request.is_disconnected():
            try:
                fp = fingerprint(c)
            except Exception:  # noqa: BLE001 - the database away: no change to tell; look again later
                fp = last
            if fp != last:
                last, quiet = fp, 0.0
                yield f"event: change\ndata: {json.dumps({'at': c.clock()})}\n\n"
            elif quiet >= 15:
                quiet = 0.0
                yield ": idle\n\n"
            try:
                await asyncio.wait_for(c.ended.wait(), POLL)
            except asyncio.TimeoutError:
                quiet += POLL
    return StreamingResponse(stream(), media_type="text/event-stream", headers=_NO_STORE)
