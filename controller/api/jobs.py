"""Jobs: submission (single, batch, idempotent retries, --test-only), queries (squeue, sacct, sbatch
--wait), and the user's actions on them (scancel, hold, release, requeue, update), sprio's factors."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from .. import auth
from ..core.model import PendingJob
from ..core.order import priorities
from ..core.plan import plan
from ..errors import DomainError, InvalidRequest, NotFound
from ..gate import GateRoute, parked
from ..store.base import request_of
from ..store.jobs import JobStore
from ..store.queries import only_keys
from ..views import validate_submit
from . import limits
from .deps import (
    JobId,
    Time,
    as_caller,
    as_json,
    as_json_kept,
    caller,
    ctl,
    own_code,
    own_job,
    parse_ids,
    split_list,
)
from .schemas import CancelRequest, CompleteRequest, IdsRequest, JobBatch, JobSubmit, JobUpdate

if TYPE_CHECKING:
    from ..runtime import Controller

router = APIRouter(route_class=GateRoute)


@router.post("/api/v1/jobs", status_code=201)
async def submit(body: JobSubmit, request: Request):
    """Submit a batch job (sbatch)."""
    c = ctl(request)
    limits.check_script(body.script, c.config)  # 413 over max_script_size, as slurmctld refuses it
    data = body.model_dump()
    as_caller(request, data)
    own_code(c, request, data)
    key, digest = (None, None) if data.get("test_only") else _keyed(request, data)
    user = data["user"]
    try:
        nodes = c.store.capacity_rows()
        het = data.pop("het", None)
        data = validate_submit(data, c.config, nodes)
        if het:
            data["het"] = _het_components(request, c, data, het, nodes)
        if data.get("test_only"):
            return JSONResponse(status_code=200, content=_test_only(c, data))
        job_id, made = c.store.submit_keyed(data, c.clock(), key, digest)
    except DomainError:  # a retry whose first attempt made the job (now over a limit it counts in): that job
        known = None if key is None else c.store.job_for_key(user, key, digest)
        if known is None:
            raise
        job_id, made = known, False
    if not made:  # the key made a job already (a retry whose first answer was lost): that job again
        return JSONResponse(status_code=201, content={"job_id": job_id},
                            headers={"Idempotent-Replayed": "true", "Location": f"/api/v1/jobs/{job_id}"})
    if wakes_scheduler(data):
        c.place_now = c.place_now or bool(data.get("interactive"))  # (someone waits at a terminal)
        c.wake.set()
    # plain JSON: no response-model encoding; the CLI reads the new job's id off Location (no JSON decoder)
    return JSONResponse({"job_id": job_id}, status_code=201, headers={"Location": f"/api/v1/jobs/{job_id}"})


@router.post("/api/v1/jobs/batch", status_code=201)
async def submit_batch(body: JobBatch, request: Request):
    """Submit up to MAX_BATCH batch jobs at once: each checked as POST /api/v1/jobs checks it,
    then all stored in one transaction, or none (the error names the first refused job,
    `jobs[i]: ...`). Answers their ids in the order of the request."""
    c = ctl(request)
    if request.headers.get("idempotency-key") is not None:
        raise InvalidRequest("Idempotency-Key: not accepted by /api/v1/jobs/batch (send the jobs one by one)")
    nodes = c.store.capacity_rows()
    datas = []
    for i, job in enumerate(body.jobs):
        try:
            limits.check_script(job.script, c.config)
            data = job.model_dump()
            as_caller(request, data)
            own_code(c, request, data)
            if data.get("test_only"):
                raise InvalidRequest("test_only: not accepted in a batch")
            datas.append(validate_submit(data, c.config, nodes))
        except DomainError as e:
            e.error = f"jobs[{i}]: {e.error}"
            raise
    ids = c.store.submit_many(datas, c.clock())
    if any(wakes_scheduler(d) for d in datas):
        c.wake.set()
    return JSONResponse({"job_ids": ids}, status_code=201)


def _het_components(request: Request, c: Controller, leader: dict, het: list[dict], nodes: list) -> list[dict]:
    """A heterogeneous job's other components, each checked as a job of its own is (an array or
    another level of components is refused, as 22.05 refuses them)."""
    if leader.get("array"):
        raise InvalidRequest("Job arrays of heterogeneous jobs are not supported")
    out = []
    named = set(_nodes_named(leader))
    for comp in het:
        if comp.get("array") or comp.get("het"):
            raise InvalidRequest("Job arrays of heterogeneous jobs are not supported")
        comp = dict(comp, user=leader["user"], uid=leader["uid"], gid=leader["gid"], group=leader["group"],
                    script=leader["script"])
        comp.pop("het", None)
        as_caller(request, comp)
        own_code(c, request, comp)
        out.append(validate_submit(comp, c.config, nodes))
        mine = set(_nodes_named(out[-1]))
        if mine & named:  # (components never share a node: 22.05 refuses two that name one)
            raise InvalidRequest("Invalid node name specified")
        named |= mine
    return out


def _nodes_named(job: dict) -> list[str]:
    """The nodes a submission's -w names (checked by validate_submit already)."""
    import hostlist
    return hostlist.expand_hostlist(job["nodelist"]) if job.get("nodelist") else []


def _keyed(request: Request, data: dict) -> tuple[str | None, str | None]:
    """A submission's Idempotency-Key and the digest of its job (None, None without a key)."""
    key = _idempotency_key(request)
    if key is None:
        return None, None
    return key, hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def _replayed(c: Controller, request: Request, data: dict, status: int
              ) -> tuple[str | None, str | None, JSONResponse | None]:
    """The request's Idempotency-Key, the digest of its job, and, when the key already made
    that job (a retry whose first answer was lost), the answer to give: the same job again."""
    key, digest = _keyed(request, data)
    known = None if key is None else c.store.job_for_key(data["user"], key, digest)
    if known is None:
        return key, digest, None
    return key, digest, JSONResponse(status_code=status, content={"job_id": known},
                                     headers={"Idempotent-Replayed": "true"})


def _idempotency_key(request: Request) -> str | None:
    """The `Idempotency-Key` header of a submission (1 to 255 visible ASCII characters), if any."""
    key = request.headers.get("idempotency-key")
    if key is None:
        return None
    if not 0 < len(key) <= 255 or not all(33 <= ord(ch) < 127 for ch in key):
        raise InvalidRequest("Invalid Idempotency-Key: 1 to 255 visible ASCII characters")
    return key


#: the keys of a job that its steps make (_add_steps)
STEP_KEYS = frozenset({"steps", "user_cpu", "system_cpu", "total_cpu", "derived_exit_code", "derived_exit_signal"})


@router.get("/api/v1/jobs")
async def list_jobs(request: Request, ids: str | None = None, states: str | None = None,
                    users: str | None = None, partitions: str | None = None, names: str | None = None,
                    history: bool = False, since: Time = None, until: Time = None,
                    duplicates: bool = False, accounts: str | None = None,
                    qos: str | None = None, look: bool = False, fields: str | None = None,
                    nulls: bool = True):
    """Jobs (squeue, sacct). Without `history`, finished jobs older than MinJobAge are left out.
    `look`: the dashboard's, see api/web.py. `fields`: only these keys of each job (comma-separated;
    the dashboard's lists need a fifth of them); with `nulls=false`, only those not null (squeue's:
    most of its keys are null for a pending job)."""
    c = ctl(request)
    from .web import look as look_of
    from .web import writes_of
    seen = look_of(c, writes_of(request)) if look else None  # (taken before the rows are read)
    filters: dict[str, Any] = dict(ids=parse_ids(ids), states=split_list(states), users=split_list(users),
                                   partitions=split_list(partitions), names=split_list(names), since=since,
                                   until=until, now=c.clock(), history=history, accounts=split_list(accounts),
                                   qos=split_list(qos))
    keys = split_list(fields)
    if keys and not duplicates and not STEP_KEYS & set(keys):  # (squeue's: only its columns' keys)
        jobs = c.store.listed(keys, nulls, **filters)
        out = as_json_kept({"jobs": jobs}, jobs)
    else:
        rows = c.store.job_rows(**filters)
        jobs = c.store.public_list(rows)
        if not keys or STEP_KEYS & set(keys):
            _add_steps(c.store, jobs)
        if duplicates:  # sacct -D: each requeued job's earlier runs come first
            earlier = c.store.earlier_runs(rows)
            jobs = [x for j in jobs for x in earlier.get(j["job_id"], []) + [j]]
        if keys:  # (a key the job lacks stays absent)
            jobs = [only_keys(j, keys, nulls) for j in jobs]
        out = as_json({"jobs": jobs}, plain=True)
    if seen is not None:
        out.headers["X-Slurmlet-Look"] = seen
    return out


@router.get("/api/v1/squeue")
async def squeue_text(request: Request, ids: str | None = None, states: str | None = None, users: str | None = None,
                      partitions: str | None = None, names: str | None = None, accounts: str | None = None,
                      qos: str | None = None, shown: str | None = None, tasks: str | None = None,
                      fmt: str | None = None, long_fmt: str | None = None, sort: str | None = None,
                      long: bool = False, start: bool = False, noheader: bool = False, array: bool = False):
    """squeue's output for these filters (as GET /api/v1/jobs's) and options (`fmt` -o, `long_fmt` -O,
    `sort` -S, `long` -l, `start` --start, `noheader` -h, `array` -r), as text: what the CLI would
    render from the jobs (common/render_squeue.py), rendered here at the controller's clock, its local
    times in the controller's time zone. The controller keeps what it rendered (render_squeue.Kept):
    squeue in a loop over a queue that did not change costs it the read of the jobs' ids. A 400 names
    a column squeue does not know. squeue -j: `ids` the jobs (a 404 when none of them is known),
    `shown` the states of those to print, `tasks` the array tasks named (`7_3`, `7_`)."""
    c = ctl(request)
    from slurmlet.common import render_squeue as render
    from slurmlet.common import wire
    view: dict[str, Any] = dict(fmt=fmt, long_fmt=long_fmt, long=long, start=start, sort=sort)
    if not render.view_bounded(fmt, long_fmt, sort):
        raise InvalidRequest(f"a format of at most {wire.VIEW_CHARS} characters, {wire.VIEW_COLUMNS} columns "
                             f"and {wire.VIEW_LINE} characters of columns a line, sorted by at most "
                             f"{wire.VIEW_SORTS} keys, is rendered here: render it yourself")
    keys = render.job_keys(**view)
    if keys is None:
        try:
            render.squeue_lines([], **view)
        except ValueError as e:
            raise InvalidRequest(str(e)) from None
    wanted, now = parse_ids(ids), c.clock()
    jobs = c.store.listed(keys, False, ids=wanted, states=split_list(states), users=split_list(users),
                          partitions=split_list(partitions), names=split_list(names), now=now,
                          accounts=split_list(accounts), qos=split_list(qos))
    if wanted and not jobs:
        raise NotFound()
    if shown:
        keep = set(shown.split(","))
        jobs = [j for j in jobs if j["state"] in keep]
    if tasks:
        jobs = render.named_tasks(jobs, tasks.split(","))
    text = c.squeue_kept.text(jobs, now, noheader=noheader, array_collapse=not array, **view)
    return Response(text, media_type="text/plain; charset=utf-8")


@router.get("/api/v1/jobs/{job_id}")
async def get_job(job_id: JobId, request: Request,
                  wait: Annotated[float, Query(allow_inf_nan=False)] = 0.0,
                  until: Literal["end", "start"] = "end"):
    """One job. `wait`: up to that many seconds (at most 30) for it to end (sbatch -W, srun), or with
    `until=start` to leave PENDING (srun's allocation granted)."""
    c = ctl(request)
    deadline = c.clock() + min(max(wait, 0.0), 30.0)
    waiting = ("PENDING", "CONFIGURING") if until == "start" else ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING")
    while True:
        ev = c.ended
        row = c.store.get_row(job_id)
        left = deadline - c.clock()
        if row.state not in waiting or left <= 0:
            break
        with contextlib.suppress(asyncio.TimeoutError):
            async with parked(request):
                await asyncio.wait_for(ev.wait(), left)
    job = c.store.public(row)
    _add_steps(c.store, [job])
    return as_json(job, plain=True)


@router.post("/api/v1/jobs/cancel")
async def cancel(body: CancelRequest, request: Request):
    """scancel: by ids and/or filters. Answers per-job results."""
    c = ctl(request)
    now = c.clock()
    ids = [t for jid in body.ids for t in (c.store.array_members(jid) or [jid])]
    bad: list[dict] = []
    for tok in body.tasks:
        master, _, idx = tok.partition("_")
        rid = c.store.array_task(int(master), int(idx)) if master.isdigit() and idx.isdigit() else None
        if rid is None:
            bad.append({"job_id": tok, "ok": False, "error": "Invalid job id specified"})
        else:
            ids.append(rid)
    if body.users or body.names or body.partitions or body.states:
        rows = c.store.job_rows(ids=ids or None, users=body.users or None, names=body.names or None,
                                partitions=body.partitions or None,
                                states=body.states or ["PENDING", "RUNNING", "SUSPENDED"], now=now)
        ids = [r.id for r in rows]
    results = list(bad)
    who = caller(request)  # who cancelled, for accounting: the credential's uid (the body's only without a key)
    for jid in ids:
        try:
            own_job(c, request, jid)
            host = c.store.cancel(jid, now, signal=body.signal, uid=who.uid if who.uid is not None else body.uid)
            c.notify([host])
            results.append({"job_id": jid, "ok": True})
        except DomainError as e:
            results.append({"job_id": jid, "ok": False, "error": e.error})
    c.jobs_changed()
    c.wake.set()
    return as_json({"results": results})


@router.post("/api/v1/jobs/{job_id}/complete")
async def complete(job_id: JobId, body: CompleteRequest, request: Request):
    """salloc's release of its allocation, with its command's exit code (the owner's, as scancel's)."""
    c = ctl(request)
    own_job(c, request, job_id)
    c.notify([c.store.complete(job_id, c.clock(), body.exit_code)])
    c.jobs_changed()
    c.wake.set()
    return {"ok": True}


@router.post("/api/v1/jobs/{job_id}/hold")
async def hold(job_id: JobId, request: Request, who: str = "user"):
    c = ctl(request)
    own_job(c, request, job_id, auth.InvalidUser)
    if who == "admin" and caller(request).level < 1:
        who = "user"  # scontrol hold by a user is a user hold, as in Slurm
    c.store.hold(job_id, "admin" if who == "admin" else "user")
    return {"ok": True}


@router.post("/api/v1/jobs/{job_id}/suspend")
async def suspend(job_id: JobId, request: Request, resume: bool = False):
    """scontrol suspend|resume (operators and administrators, as in Slurm)."""
    c = ctl(request)
    auth.require(caller(request), 1)
    host = c.store.suspend(job_id, c.clock(), resume=resume)
    if host:
        c.notify([host])
        c.jobs_changed()
        c.wake.set()  # its CPUs are free for others now (or taken again)
    return {"ok": True}


@router.post("/api/v1/jobs/{job_id}/release")
async def release(job_id: JobId, request: Request):
    c = ctl(request)
    own_job(c, request, job_id, auth.InvalidUser)
    if c.store.get_row(job_id).held == "admin":  # an administrator's hold is theirs to lift
        auth.require(caller(request), 1)
    c.store.release(job_id, c.clock())
    c.wake.set()
    return {"ok": True}


@router.post("/api/v1/jobs/release")
async def release_many(body: IdsRequest, request: Request):
    c = ctl(request)
    if caller(request).level < 1:  # a user releases their own jobs only, and only their own holds
        for jid in body.ids or []:
            own_job(c, request, jid, auth.InvalidUser)
            if c.store.get_row(jid).held == "admin":
                raise auth.Forbidden()
        if not body.ids:
            raise auth.Forbidden()
    n = c.store.release_all_held(c.clock(), body.ids or None)
    c.wake.set()
    return {"released": n}


@router.post("/api/v1/jobs/{job_id}/requeue")
async def requeue(job_id: JobId, request: Request, hold: bool = False):
    c = ctl(request)
    own_job(c, request, job_id)
    c.notify([c.store.requeue(job_id, c.clock(), hold=hold)])
    c.wake.set()
    return {"ok": True}


@router.patch("/api/v1/jobs/{job_id}")
async def update_job(job_id: JobId, body: JobUpdate, request: Request):
    c = ctl(request)
    own_job(c, request, job_id, auth.InvalidUser)
    changes = body.model_dump(exclude_unset=True)
    who = caller(request)
    if set(changes) & {"site_factor", "priority"}:  # what only operators may set
        auth.require(who, 1)
    if who.level < 1 and ((changes.get("nice") or 0) < 0 or "time_limit" in changes):
        # slurmctld's rules for users: no negative nice; a running job's time limit may only go down
        # (a pending job's may go up too: the partition's MaxTime still holds it back)
        row = c.store.get_row(job_id)
        if (changes.get("nice") or 0) < 0:
            raise auth.Forbidden()
        new, old = changes["time_limit"] if "time_limit" in changes else None, row.time_limit
        if "time_limit" in changes and row.state != "PENDING" and (old is not None and (new is None or new > old)):
            raise auth.Forbidden()
    if changes.get("begin_time") is not None:
        changes["begin_time"] = max(changes["begin_time"], c.clock())
    c.store.update_job(job_id, changes)
    c.wake.set()
    return {"ok": True}


@router.get("/api/v1/priorities")
async def job_priorities(request: Request, ids: str | None = None, users: str | None = None,
                         partitions: str | None = None):
    """sprio: the multifactor components of pending jobs, weighted, and the weights."""
    c = ctl(request)
    now = c.clock()
    snap = c.store.snapshot(now)
    fac = priorities(snap)
    rows = {r.id: r for r in c.store.job_rows(states=["PENDING"], users=split_list(users),
                                              partitions=split_list(partitions))}
    want = set(parse_ids(ids) or ()) if ids else None
    jobs = [{"job_id": jid, "partition": rows[jid].partition, "user": rows[jid].user,
             "priority": f.total(), "factors": dataclasses.asdict(f)}
            for jid, f in sorted(fac.items())
            # like sprio: held jobs and jobs waiting for their --begin time are left out
            if jid in rows and not rows[jid].held and not (rows[jid].begin_time or 0) > now
            and (want is None or jid in want)]
    w = c.store.weights
    return as_json({"jobs": jobs, "weights": {"site": 1, "age": w.age, "assoc": w.assoc,
                                            "fairshare": w.fairshare, "jobsize": w.jobsize,
                                            "partition": w.partition, "qos": w.qos,
                                            "tres": [list(t) for t in w.tres]}})


def wakes_scheduler(job: dict) -> bool:
    """Whether a new job needs a scheduling pass: a held one cannot start (the store gives it its
    JobHeldUser reason at submission), unless its dependency text is to be evaluated."""
    return not job.get("hold") or bool(job.get("dependency"))


def _add_steps(store: JobStore, jobs: list[dict]) -> None:
    """The srun steps of started jobs, after their batch step (sacct's ID.batch, ID.0, ...)."""
    # (a heterogeneous job's steps are its leader's: each component lists those that ran in it)
    started = {j.get("het_job_id") or j["job_id"] for j in jobs if j.get("batch_host")}
    got = store.step_rows(sorted(started))
    for j in jobs:
        if j.get("het_job_id") is None:
            j["steps"] = j["steps"] + got.get(j["job_id"], [])
        else:
            k = str(j.get("het_job_offset") or 0)
            j["steps"] = j["steps"] + [{**s, **s.get("groups", {}).get(k, {})} for s in got.get(j["het_job_id"], [])
                                       if k in s.get("groups", {"0": None})]
        for k in ("user_cpu", "system_cpu", "total_cpu"):  # the job's CPU time is its steps'
            j[k] = sum(s.get(k) or 0.0 for s in j["steps"])
        # DerivedExitCode: the highest exit status of its srun steps (as a wait status: code, then signal)
        srun = [(s.get("exit_code") or 0, s.get("exit_signal") or 0) for s in j["steps"] if s.get("step") != "batch"]
        j["derived_exit_code"], j["derived_exit_signal"] = max(srun, default=(0, 0))


def _test_only(c: Controller, data: dict) -> dict:
    """sbatch --test-only: plan the queue with this job added, store nothing."""
    now = c.clock()
    snap = c.store.snapshot(now)
    fake_id = c.store.max_job_id() + 1
    job = PendingJob(job_id=fake_id, partition=data["partition"], request=request_of(data),
                     priority=1 << 30, submit_time=now, time_limit=data.get("time_limit"),
                     begin_time=data.get("begin_time"))
    p = plan(dataclasses.replace(snap, pending=snap.pending + (job,)))
    for s in p.starts:
        if s.job_id == fake_id:
            from ..store.base import compress
            return {"job_id": fake_id, "start_time": now, "nodes": compress(s.node_names),
                    "partition": data["partition"], "cpus": sum(a.cpus for a in s.allocs)}
    reason = p.reasons.get(fake_id)
    if reason is not None and reason.value in ("PartitionNodeLimit", "PartitionConfig"):
        raise InvalidRequest("Requested node configuration is not available", code=1)
    return {"job_id": fake_id, "start_time": None, "nodes": "", "partition": data["partition"],
            "cpus": 0}
