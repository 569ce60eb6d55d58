"""AI Runtime runs (`air run`, `air list`) and the code they upload (`code_source`)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import ValidationError

from .. import auth
from ..errors import InvalidRequest, NotFound
from ..gate import GateRoute
from ..views import validate_submit
from . import limits
from .deps import as_caller, as_json, caller, ctl, int_field, json_body, own_code
from .jobs import _replayed
from .schemas import JobSubmit

router = APIRouter(route_class=GateRoute)


@router.post("/api/v1/runs")
async def submit_run(request: Request):
    """air run: a workload (validated, errors naming the field path) becomes a batch job."""
    c = ctl(request)
    from slurmlet.controller import workload as wl
    doc = await json_body(request)
    if not isinstance(doc, dict):
        raise InvalidRequest("expected a JSON object")
    code = doc.get("code")
    uid, gid = int_field(doc, "uid"), int_field(doc, "gid")
    user = str(doc.get("user") or "root")
    as_caller(request, {"user": user, "uid": uid, "gid": gid})
    own_code(c, request, {"code": code, "uid": uid}, "invalid workload: ")
    w = wl.parse(doc.get("workload"))
    body = wl.job_body(w, cwd=str(doc.get("cwd") or "/"), user=user,
                       uid=uid, gid=gid,
                       group=str(doc.get("group") or "root"), host=str(doc.get("host") or "localhost"),
                       code=code)
    # the user's own secrets, or their accounts' (at launch: the job's account's)
    missing = c.store.missing_secrets(w.secrets, [f"user:{user}"] + [
        f"account:{a}" for a in c.store.accounts.tree().user_accounts(user)])
    if missing:
        raise InvalidRequest("invalid workload: " + "; ".join(
            f"secrets.{n}: no secret {w.secrets[n]} (slurmlet secrets put {w.secrets[n].replace('/', ' ')})"
            for n in missing))
    try:
        job = JobSubmit.model_validate(body)
    except ValidationError as e:  # the request's own fields (uid, cwd, ...): a 400, not a 500
        raise InvalidRequest("invalid run: " + "; ".join(wl.field_errors(e, "run"))) from None
    data = job.model_dump()
    key, digest, replay = (None, None, None) if doc.get("dry_run") else _replayed(c, request, data, 200)
    if replay is not None:  # air run retried after a lost answer: the same run
        return replay
    data = validate_submit(data, c.config, c.store.capacity_rows())
    if doc.get("dry_run"):
        return as_json({"job": data, "sbatch": wl.sbatch_preview(body)})
    job_id = c.store.submit(data, c.clock(), key=key, digest=digest)
    c.wake.set()
    return {"job_id": job_id}


@router.get("/api/v1/runs")
async def list_runs(request: Request):
    """air list: id, name, state, accelerators, submit, start and end of every job (compact rows)."""
    c = ctl(request)
    return as_json({"fields": ["id", "name", "state", "accelerators", "submit", "start", "end"],
                  "runs": c.store.run_rows()})


@router.post("/api/v1/code")
async def put_code(request: Request):
    """air run: the packed code_source (.tar.gz, base64 in `data`); answers its id (sha256)."""
    c = ctl(request)
    import base64
    doc = await json_body(request)
    try:
        data = base64.b64decode(doc["data"], validate=True) if isinstance(doc, dict) else b""
    except (KeyError, TypeError, ValueError):  # binascii.Error, and a str that is not ASCII
        raise InvalidRequest("code_source: expected {\"data\": base64 of a .tar.gz}") from None
    if not data or not isinstance(doc, dict):  # (what is no dict has no data)
        raise InvalidRequest("code_source: the packed code is empty")
    if len(data) > limits.MAX_CODE:
        raise limits.TooLarge(f"code_source: the packed code is {len(data)} bytes, the limit is {limits.MAX_CODE}",
                              limit=limits.MAX_CODE, size=len(data))
    return {"id": c.store.put_code(data, c.clock(), _uploader(request, int_field(doc, "uid")))}


def _uploader(request: Request, uid: int) -> int:
    """Whose code an upload is, or whose a run may name: the caller's (the body's uid only on a
    controller without a key)."""
    who = caller(request)
    return who.uid if who.known and who.uid is not None else uid


@router.get("/api/v1/code/{sha}")
async def get_code(sha: str, request: Request):
    """A run's packed code, for the agents (root) and operators, and for whoever uploaded it."""
    c = ctl(request)
    from fastapi.responses import Response
    who = caller(request)
    if who.level < 1 and not (who.known and who.uid is not None and c.store.has_code(sha, who.uid)):
        raise (auth.Unauthenticated() if not who.known else NotFound(f"no code {sha}"))
    return Response(c.store.get_code(sha), media_type="application/gzip")
