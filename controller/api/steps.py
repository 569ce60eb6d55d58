"""Job steps: srun inside an allocation creates one, cancels one, waits for one."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Annotated

import hostlist
from fastapi import APIRouter, Query, Request

from .. import auth
from ..errors import NotFound
from ..gate import GateRoute, parked
from .deps import JobId, as_json, ctl, own_job
from .schemas import AttachRequest, StatRequest, StepCancel, StepCreate

router = APIRouter(route_class=GateRoute)


@router.post("/api/v1/jobs/{job_id}/steps")
async def create_step(job_id: JobId, body: StepCreate, request: Request):
    """srun inside an allocation: a step on the job's nodes; their agents start its tasks."""
    c = ctl(request)
    own_job(c, request, job_id)
    got = c.store.create_step(job_id, body.model_dump(), c.clock())
    c.notify(x["node"] for x in got["layout"])
    return as_json(got)


@router.post("/api/v1/jobs/{job_id}/steps/{step_id}/cancel")
async def cancel_step(job_id: JobId, step_id: JobId, request: Request,
                      body: StepCancel | None = None):
    c = ctl(request)
    own_job(c, request, job_id)
    scancel = body is not None and body.scancel
    nodes = c.store.cancel_step(job_id, step_id, c.clock(), running_only=scancel)
    if scancel or (body is not None and body.now):
        c.kill_now(f"{job_id}.{step_id}", body.signal if body is not None else None)
    c.notify(nodes)
    return {"ok": True}


@router.get("/api/v1/jobs/{job_id}/steps/{step_id}")
async def get_step(job_id: JobId, step_id: JobId, request: Request,
                   wait: Annotated[float, Query(allow_inf_nan=False)] = 0.0):
    """One step. `wait`: up to that many seconds (at most 30) for it to be RUNNING no more (srun,
    once its tasks exited, until every node's report of them is in)."""
    c = ctl(request)
    deadline = c.clock() + min(max(wait, 0.0), 30.0)
    while True:
        ev = c.ended  # (set by each report of steps that ended: api/nodes.py)
        got = [s for s in c.store.step_rows([job_id], srun=True).get(job_id, []) if s["step"] == step_id]
        if not got:
            raise NotFound("Invalid job id specified")
        left = deadline - c.clock()
        if got[0]["state"] != "RUNNING" or left <= 0:
            return as_json(got[0])
        with contextlib.suppress(asyncio.TimeoutError):
            async with parked(request):
                await asyncio.wait_for(ev.wait(), left)


@router.post("/api/v1/jobs/{job_id}/steps/{step_id}/attach")
async def attach(job_id: JobId, step_id: JobId, body: AttachRequest, request: Request):
    """sattach: the step's nodes send its tasks' output so far and to come, and their exits, to
    `body.io` too. Answers the step's nodes and tasks, and whether it still runs."""
    c = ctl(request)
    own_job(c, request, job_id)
    got = [s for s in c.store.step_rows([job_id]).get(job_id, []) if s["step"] == step_id]
    if not got:
        raise NotFound("Invalid job id specified")
    step = got[0]
    nodes = hostlist.expand_hostlist(step["nodes"]) if step["nodes"] else []
    running = step["state"] == "RUNNING"
    if running:
        for node in nodes:
            c.attach_wanted.setdefault(node, []).append({"op": "attach", "job_id": job_id, "step_id": step_id,
                                                         "io": body.io})
        c.notify(nodes)
    return {"nodes": nodes, "num_tasks": step["num_tasks"], "running": running}


#: how long sstat waits for the nodes' answers (a node that does not answer is left out)
STAT_WAIT = 5.0


@router.post("/api/v1/jobs/{job_id}/stat")
async def stat(job_id: JobId, body: StatRequest, request: Request):
    """sstat: the running steps' tasks, each sampled now by its node's agent (max RSS and virtual size so
    far, CPU time, processes). The job's owner, operators and administrators; anyone else sees nothing
    (as slurmstepd answers them). Steps: `body.steps` ("0", "batch"), else every running one."""
    c = ctl(request)
    row = c.store.get_row(job_id)
    try:
        own_job(c, request, job_id)
    except auth.Forbidden:
        return as_json({"job_id": job_id, "state": row.state, "steps": []})
    job = c.store.public(row)
    steps = [s for s in job["steps"] + c.store.step_rows([job_id]).get(job_id, []) if s["state"] == "RUNNING"]
    if body.steps:
        steps = [s for s in steps if str(s["step"]) in body.steps]
    asked: dict[str, list[str]] = {}
    got: dict[str, dict[str, list]] = {}
    for s in steps:
        key = f"{job_id}.{s['step']}"
        asked[key] = hostlist.expand_hostlist(s["nodes"]) if s["nodes"] else []
        if body.node is not None:
            asked[key] = [n for n in asked[key] if n == body.node]
        got[key] = {}
        c.stat_got.setdefault(key, []).append(got[key])
        for node in asked[key]:
            c.stat_wanted.setdefault(node, set()).add(key)
    c.notify({n for nodes in asked.values() for n in nodes})
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STAT_WAIT
    try:
        while any(n not in got[k] for k, nodes in asked.items() for n in nodes):
            left = deadline - loop.time()
            if left <= 0:
                break
            with contextlib.suppress(asyncio.TimeoutError):
                async with parked(request):
                    await asyncio.wait_for(c.stat_came.wait(), left)
    finally:
        for k in asked:
            waiting = [w for w in c.stat_got.get(k, []) if w is not got[k]]
            c.stat_got[k] = waiting
            if not waiting:
                c.stat_got.pop(k, None)
    out = []
    for s in steps:
        key = f"{job_id}.{s['step']}"
        tasks = [dict(t, node=node) for node in asked[key] for t in got[key].get(node, [])]
        out.append({"step": s["step"], "nodes": s["nodes"], "tasks": tasks})
    return as_json({"job_id": job_id, "state": row.state, "steps": out})
