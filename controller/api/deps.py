"""What every router shares: the Controller and the caller of a request, the permission checks,
and small helpers for bodies read by hand, query lists and plain JSON answers.

Dependencies are `async def`: FastAPI runs a plain `def` one in a thread pool, which doubles the
cost of a small request."""

from __future__ import annotations

import marshal
import math
import os
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Path, Query, Request
from fastapi.responses import JSONResponse, Response

from slurmlet.common.wire import MARSHAL

from .. import auth
from ..errors import DomainError, InvalidRequest
from ..gate import MARSHAL_WANTED
from ..views import node_public
from .schemas import MAX_ID

if TYPE_CHECKING:
    from ..runtime import Controller

JobId = Annotated[int, Path(ge=0, le=MAX_ID)]  #: larger ids name no job (422, not a database overflow)
Time = Annotated[float | None, Query(allow_inf_nan=False)]  #: a Unix time (no inf or NaN)


def ctl(request: Request) -> Controller:
    """The Controller serving a request (a plain call: a FastAPI dependency costs every request a
    dependency solve)."""
    c: Controller = request.app.state.ctl
    return c


def caller(request: Request) -> auth.Caller:
    """Who sends the request (set by the authentication middleware in app.py)."""
    return request.state.caller


def own_job(c: Controller, request: Request, job_id: int, denied: type[DomainError] = auth.Forbidden) -> None:
    """403 unless the caller may act on this job (its owner, an operator or an administrator);
    `denied` is the error Slurm gives for the action (InvalidUser for updates, holds, releases)."""
    who = caller(request)
    if who.level >= 1:
        return
    row = c.store.get_row(job_id)
    if not who.owns(row.uid, row.user):
        raise denied()


def as_caller(request: Request, data: dict) -> None:
    """A submission runs as its caller: only administrators (root) may name another user, and only
    operators may raise its priority with a negative nice (slurmctld: `Invalid --nice value`)."""
    who = caller(request)
    if who.known and who.level < 2 and (data.get("user") != who.user or
                                        (who.uid is not None and who.uid >= 0 and data.get("uid") != who.uid)):
        raise auth.Forbidden()
    if who.known and who.level < 1 and (data.get("nice") or 0) < 0:
        raise InvalidRequest("Invalid --nice value")
    if who.known and who.level < 2 and not in_group(str(data.get("user")), data.get("gid")):
        raise auth.Forbidden()  # (as slurmctld: a job runs with a group of its user's only)


def in_group(user: str, gid: object) -> bool:
    """Whether `gid` is one of `user`'s groups on this host (True where this host does not know the
    user: the node's agent checks it again before it runs anything, where the user must exist)."""
    import pwd
    try:
        primary = pwd.getpwnam(user).pw_gid
    except KeyError:
        return True
    return isinstance(gid, int) and gid in os.getgrouplist(user, primary)


def own_code(c: Controller, request: Request, data: dict, prefix: str = "") -> None:
    """A job may name only packed code (`code`, an air run's code_source) that its own user uploaded:
    a hash of someone else's code is no way to read it."""
    code = data.get("code")
    if code is None:
        return
    who = caller(request)
    uid = who.uid if who.known and who.uid is not None and who.level < 2 else data.get("uid")
    if not isinstance(code, str) or not isinstance(uid, int) or not c.store.has_code(code, uid):
        raise InvalidRequest(prefix + "code_source: the packed code was not uploaded")


async def json_body(request: Request) -> object:
    """The request's body as the gate decoded it (gate.py: bounded, JSON); 400 when there is none."""
    doc = await request.json()
    if doc is None:
        raise InvalidRequest("expected a JSON body")
    return doc


def int_field(doc: dict, key: str) -> int:
    """An integer field of a body read by hand (0 when absent); 400 when it is no integer."""
    v = doc.get(key) or 0
    try:
        if isinstance(v, (bool, float, list, dict)):
            raise TypeError
        return int(v)
    except (TypeError, ValueError):
        raise InvalidRequest(f"{key}: expected an integer, got {v!r}"[:200]) from None


def json_safe(doc: object) -> object:
    """`doc` with what JSON cannot hold as text: a float inf or nan as its name, a lone surrogate as
    its escape (a refused request's own values are echoed in its 422)."""
    if isinstance(doc, float) and not math.isfinite(doc):
        return str(doc)
    if isinstance(doc, str):
        return doc.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(doc, list):
        return [json_safe(x) for x in doc]
    if isinstance(doc, dict):
        return {json_safe(k): json_safe(v) for k, v in doc.items()}
    return doc




_KEPT_ANSWERS: dict[tuple[int, bool], tuple[object, bytes | memoryview]] = {}


def as_json_kept(doc: Any, key: object) -> Response:
    """as_json(doc, plain=True) for a `doc` made of `key`, an object the store hands out again
    unchanged while nothing changed (Queries.listed's list): the answer made of the same object last
    time is sent again (squeue in a loop over 1,000 jobs: no marshal nor JSON of them each time).
    The last few are kept, each with its object (so its id names no other)."""
    wanted = MARSHAL_WANTED.get()
    hit = _KEPT_ANSWERS.get((id(key), wanted))
    if hit is None or hit[0] is not key:
        body = marshal.dumps(doc, 4) if wanted else JSONResponse(doc).body
        if len(_KEPT_ANSWERS) >= 8:
            _KEPT_ANSWERS.clear()
        hit = _KEPT_ANSWERS[(id(key), wanted)] = (key, body)
    return Response(hit[1], media_type=MARSHAL if wanted else "application/json")


def as_json(doc: Any, plain: bool = False) -> Response:
    """Plain data straight to JSON: FastAPI's jsonable_encoder costs more than the query. `plain`:
    `doc` holds JSON's types only (str keys, lists, no tuples): a client that takes marshal gets it
    straight (for a list of 1,000 jobs a tenth of the time of JSON and back, gate.as_marshal)."""
    if plain and MARSHAL_WANTED.get():
        return Response(marshal.dumps(doc, 4), media_type=MARSHAL)
    return JSONResponse(doc)


def nodes_of(c: Controller) -> list[dict]:
    """Every node as the API shows it (state, allocation, responding or not)."""
    return node_public(c.store.node_rows(), c.store.active_allocs(), c.config, c.clock(), c.store.responding)


def parse_ids(v: str | None) -> list[int] | None:
    """A comma-separated list of job ids; 400 when one is not an id."""
    try:
        got = [int(x) for x in v.split(",")] if v else None
    except ValueError:
        raise InvalidRequest("Invalid job id specified") from None
    if got and not all(0 <= x <= MAX_ID for x in got):
        raise InvalidRequest("Invalid job id specified")
    return got


def split_list(v: str | None) -> list[str] | None:
    return [x for x in v.split(",") if x] if v else None
