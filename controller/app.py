"""create_app(settings) -> FastAPI. Routes validate, call the store, then wake the loops."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Annotated, Callable

from fastapi import FastAPI, Path, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from pydantic import ValidationError

from slurmlet.controller import auth
from slurmlet.controller.api import accounting, limits
from slurmlet.controller.api.schemas import (MAX_ID, CancelRequest, IdsRequest, JobBatch, JobSubmit, JobUpdate, NodeSync,
                                    NodeUpdate, StepCreate)
from slurmlet.controller.config import ClusterConfig
from slurmlet.controller.core.model import PendingJob
from slurmlet.controller.core.plan import plan, priorities
from slurmlet.controller.errors import Conflict, DomainError, InvalidRequest, NotFound
from slurmlet.controller.loops.reaper import reaper_loop
from slurmlet.controller.store.engine import make_engine
from slurmlet.controller.store.jobs import JobStore, request_of
from slurmlet.controller.views import node_public, partition_public, validate_submit

log = logging.getLogger("slurmlet.controller")
VERSION = "22.05.8"
MAX_CODE = 256 * 2**20  #: the largest packed code_source an air run may upload
JobId = Annotated[int, Path(ge=0, le=MAX_ID)]  #: larger ids name no job (422, not a database overflow)
Time = Annotated[float | None, Query(allow_inf_nan=False)]  #: a Unix time (no inf or NaN)


@dataclass
class Settings:
    db_url: str
    config: ClusterConfig
    listen: str = "127.0.0.1:6817"
    #: how long an agent's sync may wait for orders (the agent asks; this caps it)
    max_long_poll: float = 5.0
    #: periodic scheduling pass even without events (BeginTime, node changes)
    sched_interval: float = 1.0
    #: how long a pass waits after its first wake-up for more events to coalesce
    debounce: float = 0.005
    #: after a pass of T seconds the next event-driven one waits at least T * pass_spacing: under a
    #: stream of events (a submission burst) passes take at most 1/(1 + pass_spacing) of the event
    #: loop, and the requests between them are answered instead of waiting behind queue scans
    pass_spacing: float = 2.0
    clock: Callable[[], float] = time.time
    #: re-reads the configuration file (slurm.conf or the JSON spec) for `scontrol reconfigure`
    reload: Callable[[], ClusterConfig] | None = None
    #: the cluster key (controller/auth.py); None: no authentication, every request is trusted
    key: bytes | None = None


@dataclass
class PassStats:
    """One kind of scheduling pass, as sdiag reports it (times in microseconds)."""

    cycles: int = 0
    last_us: int = 0
    max_us: int = 0
    total_us: int = 0
    last_depth: int = 0  #: jobs examined
    total_depth: int = 0
    last_queue: int = 0  #: pending jobs in the snapshot
    total_queue: int = 0
    last_when: float | None = None

    def add(self, us: int, depth: int, queue: int, when: float) -> None:
        self.cycles += 1
        self.last_us, self.max_us, self.total_us = us, max(self.max_us, us), self.total_us + us
        self.last_depth, self.total_depth = depth, self.total_depth + depth
        self.last_queue, self.total_queue = queue, self.total_queue + queue
        self.last_when = when

    def public(self) -> dict:
        n = self.cycles or 1
        return {"cycles": self.cycles, "last_cycle_us": self.last_us, "max_cycle_us": self.max_us,
                "mean_cycle_us": self.total_us // n, "last_depth": self.last_depth,
                "mean_depth": self.total_depth // n, "last_queue_length": self.last_queue,
                "mean_queue_length": self.total_queue // n, "last_cycle_when": self.last_when}


@dataclass
class Stats:
    main: PassStats = field(default_factory=PassStats)
    backfill: PassStats = field(default_factory=PassStats)
    skipped: int = 0  #: loop wake-ups that found nothing changed and ran no pass
    jobs_started: int = 0
    backfilled: int = 0
    preempted: int = 0
    started: float = field(default_factory=time.time)


class Controller:
    """The daemon's live state: the store, the wake-up events and the scheduling pass."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.config = settings.config
        self.clock = settings.clock
        self.store = JobStore(make_engine(settings.db_url), settings.config)
        self.store.accounts.ensure_defaults(self.clock())
        self.wake = asyncio.Event()
        self.node_events: dict[str, asyncio.Event] = {}
        #: the long-poll each node's agent is waiting in, if any: set to end it early
        self.node_waits: dict[str, asyncio.Event] = {}
        self.stats = Stats()
        self.next_begin: float | None = None
        self.last_sync: dict[str, float] = {}
        #: set (and replaced) whenever jobs may have ended: `GET /jobs/{id}?wait=` waits on it
        self.ended = asyncio.Event()
        self.bf_enabled = self.store.sched.backfill
        self.bf_interval = settings.config.bf_interval()
        self.bf_dirty = self.bf_enabled  #: something changed since the last backfill pass
        self.next_bf = 0.0
        self.script_tasks: set[asyncio.Task] = set()  #: PrologSlurmctld/EpilogSlurmctld runs
        #: when (time.monotonic) the next event-driven pass may start: see Settings.pass_spacing
        self.next_pass = 0.0
        if self.config.home_storage:  # a spec's home_directory_storage: users' homes live there
            import os
            os.makedirs(self.config.home_storage, exist_ok=True)

    def reconfigure(self) -> list[str]:
        """scontrol reconfigure: re-read the configuration and swap it in whole, or change nothing
        (a malformed file, or a change to a parameter fixed at cluster creation). Returns its warnings."""
        from slurmlet.controller.config import ConfigError
        if self.settings.reload is None:
            raise InvalidRequest("the controller was started without a configuration file")
        try:
            new = self.settings.reload()
        except ConfigError as e:
            raise InvalidRequest(f"{e}; the running configuration is unchanged") from None
        fixed = self.config.fixed_changes(new)
        if fixed:
            raise InvalidRequest(f"{'; '.join(fixed)}: set at cluster creation, a change needs a restart; "
                                 f"the running configuration is unchanged")
        # one synchronous swap: no request or scheduling pass sees half of the old and half of the new
        self.settings = dataclasses.replace(self.settings, config=new)
        self.config = new
        self.store.set_config(new)
        self.bf_enabled = self.store.sched.backfill
        self.bf_interval = new.bf_interval()
        self.bf_dirty, self.next_bf = self.bf_enabled, 0.0
        self.wake.set()
        return list(new.warnings)

    def run_controller_scripts(self) -> None:
        """Start the PrologSlurmctld/EpilogSlurmctld runs waiting in the store; they run as
        subprocesses of their own and never block the event loop."""
        for r in self.store.claim_controller_scripts():
            task = asyncio.create_task(self._controller_script(r))
            self.script_tasks.add(task)
            task.add_done_callback(self.script_tasks.discard)

    async def _controller_script(self, r) -> None:  # noqa: ANN001
        import json

        from slurmlet.common.scripts import run_scripts
        payload = json.loads(r.payload)
        code, out = await run_scripts(payload["script"], payload["env"])
        if code:
            log.error("%s JobId=%s %s exit status %s:0: %s", r.kind, r.job_id, r.kind.split("_")[0], code,
                      out.strip()[-300:], extra={"action": r.kind})
        self.store.controller_script_done({"job_id": r.job_id, "run": r.run, "kind": r.kind, "exit_code": code},
                                          self.clock())
        self.notify(self.store.take_notify())
        self.wake.set()

    def node_event(self, name: str) -> asyncio.Event:
        ev = self.node_events.get(name)
        if ev is None:
            ev = self.node_events[name] = asyncio.Event()
        return ev

    def jobs_changed(self) -> None:
        self.ended.set()
        self.ended = asyncio.Event()

    def notify(self, hosts) -> None:  # noqa: ANN001
        for h in hosts:
            if h:
                self.node_event(h).set()

    def schedule_pass(self, backfill: bool = False) -> None:
        """One cycle: snapshot, plan (main pass, and backfill when asked), apply in one transaction."""
        t0 = time.perf_counter()
        now = self.clock()
        snap = self.store.snapshot(now)
        p = plan(snap, backfill=backfill)
        woken = self.store.apply(p, now)
        if self.store._dep_kill:
            self.jobs_changed()
        future = [j.begin_time for j in snap.pending if j.begin_time and j.begin_time > now and not j.held]
        if self.store.next_dep_time is not None:  # an after:ID+minutes dependency comes due
            future.append(self.store.next_dep_time)
        self.next_begin = min(future) if future else None
        self.notify(woken | self.store.take_notify())
        self.run_controller_scripts()
        us = int((time.perf_counter() - t0) * 1e6)
        s = self.stats
        s.jobs_started += len(p.starts)
        s.backfilled += len(p.backfilled)
        s.preempted += len(p.preemptions)
        if backfill:
            s.backfill.add(us, p.bf_tested, len(snap.pending), now)
            self.bf_dirty = False
            self.next_bf = now + self.bf_interval
        else:
            s.main.add(us, len(snap.pending), len(snap.pending), now)
            self.bf_dirty = self.bf_enabled

    async def scheduler_loop(self) -> None:
        """Event-driven main passes (debounced), plus a backfill pass every bf_interval seconds
        while anything changed since the last one. A quiet queue costs no pass at all."""
        interval = self.settings.sched_interval
        self.wake.set()
        while True:
            timeout = interval
            now = self.clock()
            if self.next_begin is not None:
                timeout = max(0.0, min(timeout, self.next_begin - now))
            if self.bf_dirty:
                timeout = max(0.0, min(timeout, self.next_bf - now))
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.wake.wait(), timeout)
            now = self.clock()
            bf_due = self.bf_dirty and now >= self.next_bf
            begin_due = self.next_begin is not None and now >= self.next_begin
            if not self.wake.is_set() and not begin_due and not bf_due:
                self.stats.skipped += 1  # nothing changed: an unchanged queue costs no pass
                continue
            # debounce: a burst of submissions or exits lands before the pass (Slurm's batch_sched_delay);
            # right after a long pass, wait in proportion to it (Settings.pass_spacing)
            await asyncio.sleep(max(self.settings.debounce, self.next_pass - time.monotonic()))
            self.wake.clear()
            t0 = time.monotonic()
            try:
                self.schedule_pass(backfill=bf_due)
            except Exception:  # a failing pass must not kill the daemon; log loudly and go on
                log.exception("scheduling pass failed", extra={"action": "schedule"})
                await asyncio.sleep(interval)
            t1 = time.monotonic()
            self.next_pass = t1 + (t1 - t0) * self.settings.pass_spacing


def create_app(settings: Settings) -> FastAPI:
    ctl_holder: dict[str, Controller] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        ctl = Controller(settings)
        ctl_holder["ctl"] = ctl
        app.state.ctl = ctl
        ctl.store.reset_controller_scripts()
        for w in settings.config.warnings:
            log.warning("slurm.conf: %s (ignored)", w)
        task = asyncio.create_task(ctl.scheduler_loop())
        task.add_done_callback(_crash_on_failure)
        reaper = asyncio.create_task(reaper_loop(ctl))  # silent nodes: their jobs NODE_FAIL or requeued
        try:
            yield
        finally:
            task.cancel()
            for t in [task, reaper, *ctl.script_tasks]:
                t.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await t
            ctl.store.engine.dispose()

    app = FastAPI(title="slurmlet controller", version="0.1.0", lifespan=lifespan)

    def ctl() -> Controller:
        return ctl_holder["ctl"]

    accounting.register(app, ctl)

    @app.exception_handler(DomainError)
    async def _domain_error(_request: Request, exc: DomainError) -> JSONResponse:
        return JSONResponse(status_code=exc.status, content={"detail": exc.to_json()})

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        """FastAPI's 422 naming the fields; an Infinity or NaN the request held is shown as text
        (JSON cannot carry it back: FastAPI's own handler failed with a 500)."""
        return JSONResponse(status_code=422, content={"detail": _finite(jsonable_encoder(exc.errors()))})

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
            c = ctl()
            who = auth.authenticate(settings.key, Headers(scope=scope), c.clock(), c.store.admin_level)
            if who is None:
                if scope["method"] not in ("GET", "HEAD", "OPTIONS"):
                    await JSONResponse(status_code=401, content={"detail": auth.Unauthenticated().to_json()})(
                        scope, receive, send)
                    return
                who = auth.Caller(None, None, 0)
            scope.setdefault("state", {})["caller"] = who
            await self.app(scope, receive, send)

    app.add_middleware(_Authenticate)

    def caller(request: Request) -> auth.Caller:
        return request.state.caller

    def own_job(request: Request, job_id: int, denied: type[DomainError] = auth.Forbidden) -> None:
        """403 unless the caller may act on this job (its owner, an operator or an administrator);
        `denied` is the error Slurm gives for the action (InvalidUser for updates, holds, releases)."""
        who = caller(request)
        if who.level >= 1:
            return
        row = ctl().store.get_row(job_id)
        if not who.owns(row.uid, row.user):
            raise denied()

    def as_caller(request: Request, data: dict) -> None:
        """A submission runs as its caller: only administrators (root) may name another user."""
        who = caller(request)
        if who.known and who.level < 2 and (data.get("user") != who.user or
                                            (who.uid is not None and who.uid >= 0 and data.get("uid") != who.uid)):
            raise auth.Forbidden()

    # ------------------------------------------------------------------ jobs
    @app.post("/api/v1/jobs", status_code=201)
    async def submit(body: JobSubmit, request: Request):  # noqa: ANN202
        """Submit a batch job (sbatch)."""
        c = ctl()
        limits.check_script(body.script, c.config)  # 413 over max_script_size, as slurmctld refuses it
        data = body.model_dump()
        as_caller(request, data)
        key, digest, replay = (None, None, None) if data.get("test_only") else _replayed(request, data, 201)
        if replay is not None:
            return replay
        data = validate_submit(data, c.config, c.store.capacity_rows())
        if data.get("test_only"):
            return JSONResponse(status_code=200, content=_test_only(c, data))
        job_id = c.store.submit(data, c.clock(), key=key, digest=digest)
        if wakes_scheduler(data):
            c.wake.set()
        return JSONResponse({"job_id": job_id}, status_code=201)  # plain JSON: no response-model encoding

    @app.post("/api/v1/jobs/batch", status_code=201)
    async def submit_batch(body: JobBatch, request: Request):  # noqa: ANN202
        """Submit up to MAX_BATCH batch jobs at once: each checked as POST /api/v1/jobs checks it,
        then all stored in one transaction, or none (the error names the first refused job,
        `jobs[i]: ...`). Answers their ids in the order of the request."""
        c = ctl()
        if request.headers.get("idempotency-key") is not None:
            raise InvalidRequest("Idempotency-Key: not accepted by /api/v1/jobs/batch (send the jobs one by one)")
        nodes = c.store.capacity_rows()
        datas = []
        for i, job in enumerate(body.jobs):
            try:
                limits.check_script(job.script, c.config)
                data = job.model_dump()
                as_caller(request, data)
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

    def _replayed(request: Request, data: dict, status: int) -> tuple[str | None, str | None, JSONResponse | None]:
        """The request's Idempotency-Key, the digest of its job, and, when the key already made
        that job (a retry whose first answer was lost), the answer to give: the same job again."""
        key = _idempotency_key(request)
        if key is None:
            return None, None, None
        digest = hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()
        known = ctl().store.job_for_key(data["user"], key, digest)
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

    @app.post("/api/v1/runs")
    async def submit_run(request: Request):  # noqa: ANN202
        """air run: a workload (validated, errors naming the field path) becomes a batch job."""
        from slurmlet.controller import workload as wl
        c = ctl()
        doc = await _body(request)
        if not isinstance(doc, dict):
            raise InvalidRequest("expected a JSON object")
        w = wl.parse(doc.get("workload"))
        code = doc.get("code")
        if code is not None and (not isinstance(code, str) or not c.store.has_code(code)):
            raise InvalidRequest("invalid workload: code_source: the packed code was not uploaded")
        uid, gid = _int_field(doc, "uid"), _int_field(doc, "gid")
        as_caller(request, {"user": str(doc.get("user") or "root"), "uid": uid})
        body = wl.job_body(w, cwd=str(doc.get("cwd") or "/"), user=str(doc.get("user") or "root"),
                           uid=uid, gid=gid,
                           group=str(doc.get("group") or "root"), host=str(doc.get("host") or "localhost"),
                           code=code)
        missing = c.store.missing_secrets(w.secrets)
        if missing:
            raise InvalidRequest("invalid workload: " + "; ".join(
                f"secrets.{n}: no secret {w.secrets[n]} (slurmlet secrets put {w.secrets[n].replace('/', ' ')})"
                for n in missing))
        try:
            job = JobSubmit.model_validate(body)
        except ValidationError as e:  # the request's own fields (uid, cwd, ...): a 400, not a 500
            raise InvalidRequest("invalid run: " + "; ".join(wl.field_errors(e, "run"))) from None
        data = job.model_dump()
        key, digest, replay = (None, None, None) if doc.get("dry_run") else _replayed(request, data, 200)
        if replay is not None:  # air run retried after a lost answer: the same run
            return replay
        data = validate_submit(data, c.config, c.store.capacity_rows())
        if doc.get("dry_run"):
            return _json({"job": data, "sbatch": wl.sbatch_preview(body)})
        job_id = c.store.submit(data, c.clock(), key=key, digest=digest)
        c.wake.set()
        return {"job_id": job_id}

    @app.get("/api/v1/runs")
    async def list_runs():  # noqa: ANN202
        """air list: id, name, state, accelerators, submit, start and end of every job (compact rows)."""
        return _json({"fields": ["id", "name", "state", "accelerators", "submit", "start", "end"],
                      "runs": ctl().store.run_rows()})

    @app.post("/api/v1/code")
    async def put_code(request: Request):  # noqa: ANN202
        """air run: the packed code_source (.tar.gz, base64 in `data`); answers its id (sha256)."""
        import base64
        import binascii
        doc = await _body(request)
        try:
            data = base64.b64decode(doc["data"], validate=True) if isinstance(doc, dict) else b""
        except (KeyError, TypeError, binascii.Error):
            raise InvalidRequest("code_source: expected {\"data\": base64 of a .tar.gz}") from None
        if not data:
            raise InvalidRequest("code_source: the packed code is empty")
        if len(data) > MAX_CODE:
            raise limits.TooLarge(f"code_source: the packed code is {len(data)} bytes, the limit is {MAX_CODE}",
                                  limit=MAX_CODE, size=len(data))
        return {"id": ctl().store.put_code(data, ctl().clock())}

    @app.get("/api/v1/code/{sha}")
    async def get_code(sha: str):  # noqa: ANN202
        from fastapi.responses import Response
        return Response(ctl().store.get_code(sha), media_type="application/gzip")

    @app.put("/api/v1/secrets/{scope}/{key}")
    async def put_secret(scope: str, key: str, request: Request):  # noqa: ANN202
        """Store a secret for air runs; its value is never returned."""
        doc = await _body(request)
        if not isinstance(doc, dict) or not isinstance(doc.get("value"), str):
            raise InvalidRequest("expected {\"value\": \"...\"}")
        ctl().store.put_secret(scope, key, doc["value"], ctl().clock())
        return {"ok": True}

    @app.delete("/api/v1/secrets/{scope}/{key}")
    async def delete_secret(scope: str, key: str, request: Request):  # noqa: ANN202
        ctl().store.delete_secret(scope, key)
        return {"ok": True}

    @app.get("/api/v1/secrets")
    async def list_secrets():  # noqa: ANN202
        """Names only."""
        return _json({"secrets": ctl().store.secret_names()})

    @app.get("/api/v1/jobs")
    async def list_jobs(ids: str | None = None, states: str | None = None, users: str | None = None,
                        partitions: str | None = None, names: str | None = None,
                        history: bool = False, since: Time = None, until: Time = None,
                        duplicates: bool = False, accounts: str | None = None,
                        qos: str | None = None):  # noqa: ANN202
        """Jobs (squeue, sacct). Without `history`, finished jobs older than MinJobAge are left out."""
        c = ctl()
        id_list = _ids(ids)
        rows = c.store.job_rows(ids=id_list, states=_split(states), users=_split(users),
                                partitions=_split(partitions), names=_split(names), since=since, until=until,
                                now=c.clock(), history=history, accounts=_split(accounts), qos=_split(qos))
        jobs = [c.store.public(r) for r in rows]
        _add_steps(c.store, jobs)
        if duplicates:  # sacct -D: each requeued job's earlier runs come first
            earlier = c.store.earlier_runs(rows)
            jobs = [x for j in jobs for x in earlier.get(j["job_id"], []) + [j]]
        return _json({"jobs": jobs})

    @app.get("/api/v1/jobs/{job_id}")
    async def get_job(job_id: JobId, wait: Annotated[float, Query(allow_inf_nan=False)] = 0.0):  # noqa: ANN202
        """One job. `wait`: up to that many seconds (at most 30) for it to end (sbatch -W, srun)."""
        c = ctl()
        deadline = c.clock() + min(max(wait, 0.0), 30.0)
        while True:
            ev = c.ended
            row = c.store.get_row(job_id)
            left = deadline - c.clock()
            if row.state not in ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING") or left <= 0:
                break
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(ev.wait(), left)
        job = c.store.public(row)
        _add_steps(c.store, [job])
        return _json(job)

    @app.post("/api/v1/jobs/{job_id}/steps")
    async def create_step(job_id: JobId, body: StepCreate, request: Request):  # noqa: ANN202
        own_job(request, job_id)
        """srun inside an allocation: a step on the job's nodes; their agents start its tasks."""
        c = ctl()
        got = c.store.create_step(job_id, body.model_dump(), c.clock())
        c.notify(x["node"] for x in got["layout"])
        return _json(got)

    @app.post("/api/v1/jobs/{job_id}/steps/{step_id}/cancel")
    async def cancel_step(job_id: JobId, step_id: JobId, request: Request):  # noqa: ANN202
        own_job(request, job_id)
        c = ctl()
        c.notify(c.store.cancel_step(job_id, step_id, c.clock()))
        return {"ok": True}

    @app.get("/api/v1/jobs/{job_id}/steps/{step_id}")
    async def get_step(job_id: JobId, step_id: JobId):  # noqa: ANN202
        c = ctl()
        got = [s for s in c.store.step_rows([job_id]).get(job_id, []) if s["step"] == step_id]
        if not got:
            raise NotFound("Invalid job id specified")
        return _json(got[0])

    @app.post("/api/v1/jobs/cancel")
    async def cancel(body: CancelRequest, request: Request):  # noqa: ANN202
        """scancel: by ids and/or filters. Answers per-job results."""
        c = ctl()
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
        for jid in ids:
            try:
                own_job(request, jid)
                host = c.store.cancel(jid, now, signal=body.signal, uid=body.uid)
                c.notify([host])
                results.append({"job_id": jid, "ok": True})
            except DomainError as e:
                results.append({"job_id": jid, "ok": False, "error": e.error})
        c.jobs_changed()
        c.wake.set()
        return _json({"results": results})

    @app.post("/api/v1/jobs/{job_id}/hold")
    async def hold(job_id: JobId, request: Request, who: str = "user"):  # noqa: ANN202
        own_job(request, job_id, auth.InvalidUser)
        if who == "admin" and caller(request).level < 1:
            who = "user"  # scontrol hold by a user is a user hold, as in Slurm
        ctl().store.hold(job_id, "admin" if who == "admin" else "user")
        return {"ok": True}

    @app.post("/api/v1/jobs/{job_id}/release")
    async def release(job_id: JobId, request: Request):  # noqa: ANN202
        c = ctl()
        own_job(request, job_id, auth.InvalidUser)
        if c.store.get_row(job_id).held == "admin":  # an administrator's hold is theirs to lift
            auth.require(caller(request), 1)
        c.store.release(job_id, c.clock())
        c.wake.set()
        return {"ok": True}

    @app.post("/api/v1/jobs/release")
    async def release_many(body: IdsRequest, request: Request):  # noqa: ANN202
        c = ctl()
        if caller(request).level < 1:  # a user releases their own jobs only, and only their own holds
            for jid in body.ids or []:
                own_job(request, jid, auth.InvalidUser)
                if c.store.get_row(jid).held == "admin":
                    raise auth.Forbidden()
            if not body.ids:
                raise auth.Forbidden()
        n = c.store.release_all_held(c.clock(), body.ids or None)
        c.wake.set()
        return {"released": n}

    @app.post("/api/v1/jobs/{job_id}/requeue")
    async def requeue(job_id: JobId, request: Request, hold: bool = False):  # noqa: ANN202
        c = ctl()
        own_job(request, job_id)
        c.notify([c.store.requeue(job_id, c.clock(), hold=hold)])
        c.wake.set()
        return {"ok": True}

    @app.patch("/api/v1/jobs/{job_id}")
    async def update_job(job_id: JobId, body: JobUpdate, request: Request):  # noqa: ANN202
        c = ctl()
        own_job(request, job_id, auth.InvalidUser)
        changes = body.model_dump(exclude_unset=True)
        if set(changes) & {"site_factor", "priority"}:  # what only operators may set
            auth.require(caller(request), 1)
        c.store.update_job(job_id, body.model_dump(exclude_unset=True))
        c.wake.set()
        return {"ok": True}

    @app.get("/api/v1/priorities")
    async def job_priorities(ids: str | None = None, users: str | None = None,
                             partitions: str | None = None):  # noqa: ANN202
        """sprio: the multifactor components of pending jobs, weighted, and the weights."""
        c = ctl()
        now = c.clock()
        snap = c.store.snapshot(now)
        fac = priorities(snap)
        rows = {r.id: r for r in c.store.job_rows(states=["PENDING"], users=_split(users),
                                                  partitions=_split(partitions))}
        want = set(_ids(ids) or ()) if ids else None
        jobs = [{"job_id": jid, "partition": rows[jid].partition, "user": rows[jid].user,
                 "priority": f.total(), "factors": dataclasses.asdict(f)}
                for jid, f in sorted(fac.items())
                # like sprio: held jobs and jobs waiting for their --begin time are left out
                if jid in rows and not rows[jid].held and not (rows[jid].begin_time or 0) > now
                and (want is None or jid in want)]
        w = c.store.weights
        return _json({"jobs": jobs, "weights": {"site": 1, "age": w.age, "assoc": w.assoc,
                                                "fairshare": w.fairshare, "jobsize": w.jobsize,
                                                "partition": w.partition, "qos": w.qos,
                                                "tres": [list(t) for t in w.tres]}})

    # ------------------------------------------------------------------ nodes
    @app.get("/api/v1/nodes")
    async def nodes():  # noqa: ANN202
        c = ctl()
        return _json({"nodes": _nodes(c)})

    @app.get("/api/v1/partitions")
    async def partitions():  # noqa: ANN202
        c = ctl()
        return _json({"partitions": partition_public(c.config, _nodes(c))})

    @app.get("/api/v1/cluster")
    async def cluster():  # noqa: ANN202
        """Nodes and partitions in one round trip (sinfo)."""
        c = ctl()
        ns = _nodes(c)
        return _json({"nodes": ns, "partitions": partition_public(c.config, ns)})

    @app.post("/api/v1/nodes/{name}/update")
    async def node_update(name: str, body: NodeUpdate, request: Request):  # noqa: ANN202
        auth.require(caller(request), 1, auth.InvalidUser)  # slurmctld: "Security violation" -> Invalid user id
        c = ctl()
        state = body.state.upper()
        mapping = {"RESUME": "UP", "IDLE": "UP", "UP": "UP", "DRAIN": "DRAIN", "DOWN": "DOWN"}
        if state not in mapping:
            raise InvalidRequest("Invalid node state specified")
        if mapping[state] in ("DRAIN", "DOWN") and not body.reason:
            raise InvalidRequest("You must specify a reason when DOWNING or DRAINING a node. Request denied")
        c.store.set_node_state(name, mapping[state], body.reason if mapping[state] != "UP" else None, c.clock())
        c.wake.set()
        return {"ok": True}

    @app.post("/api/v1/nodes/{name}/sync")
    async def node_sync(name: str, body: NodeSync, request: Request):  # noqa: ANN202
        """The agent's channel: register or heartbeat, report exits, receive orders (long-poll)."""
        auth.require(caller(request), 2)  # agents sign as root with the cluster key
        c = ctl()
        # One long-poll per node: a new sync (the agent gave up on the last one, e.g. to report an
        # exit) ends the wait of the one before, which answers no orders; they wait for this one.
        old = c.node_waits.pop(name, None)
        if old is not None:
            old.set()
        ev = c.node_event(name)
        ev.clear()
        data = body.model_dump()
        now = c.clock()
        orders = c.store.node_sync(name, data, now)
        c.notify(c.store.take_notify())
        c.run_controller_scripts()
        last = c.last_sync.get(name)
        c.last_sync[name] = now
        if body.finished or body.resources or body.lost:  # a registering node ends the jobs it lost
            c.jobs_changed()
        if body.finished or body.scripts_done or body.resources or last is None or \
                now - last > c.config.slurmd_timeout:
            c.wake.set()  # resources freed, or a node (re)appeared
        wait = min(body.wait, c.settings.max_long_poll)
        if not orders and wait > 0:
            superseded = asyncio.Event()
            c.node_waits[name] = superseded
            waiters = (asyncio.ensure_future(ev.wait()), asyncio.ensure_future(superseded.wait()))
            try:
                await asyncio.wait(waiters, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waiters:
                    w.cancel()
                if c.node_waits.get(name) is superseded:
                    del c.node_waits[name]
            if superseded.is_set():
                return _json({"orders": [], "superseded": True})
            if ev.is_set():
                orders = c.store.node_sync(name, {"running": body.running, "suspended": body.suspended,
                                                  "steps_running": body.steps_running}, c.clock())
        return _json({"orders": orders})

    # ------------------------------------------------------------------ misc
    @app.post("/api/v1/token")
    async def token(request: Request, lifespan: int = 1800, username: str | None = None):  # noqa: ANN202
        """scontrol token: a JWT for REST clients (X-SLURM-USER-TOKEN), for the caller or, asked by an
        administrator, for another user."""
        who = caller(request)
        if settings.key is None:
            raise InvalidRequest("authentication is not configured (no cluster key)")
        if lifespan < 1 or lifespan > 365 * 86400:
            raise InvalidRequest("lifespan: must be between 1 second and a year")
        user = username or who.user
        if user != who.user:
            auth.require(who, 2)
        return {"token": auth.issue_token(settings.key, user, lifespan, ctl().clock()), "user": user,
                "lifespan": lifespan}

    @app.get("/api/v1/ping")
    async def ping():  # noqa: ANN202
        return {"ok": True, "cluster": ctl().config.cluster_name, "version": VERSION}

    @app.post("/api/v1/reconfigure")
    async def reconfigure(request: Request):  # noqa: ANN202
        """scontrol reconfigure: re-read slurm.conf or the JSON spec; refused whole or applied whole."""
        auth.require(caller(request), 2, auth.InvalidUser)
        warnings = ctl().reconfigure()
        for w in warnings:
            log.warning("reconfigure: %s (ignored)", w)
        return {"ok": True, "warnings": warnings}

    @app.get("/api/v1/config")
    async def config():  # noqa: ANN202
        cfg = ctl().config
        return {"source": cfg.source, "login_pool": cfg.login_pool, "home_storage": cfg.home_storage,"cluster_name": cfg.cluster_name, "version": VERSION, "kill_wait": cfg.kill_wait,
                "min_job_age": cfg.min_job_age, "slurmd_timeout": cfg.slurmd_timeout,
                "def_mem_per_cpu": cfg.def_mem_per_cpu, "job_requeue": cfg.job_requeue,
                "max_array_size": cfg.max_array_size, "scheduler_type": cfg.scheduler_type,
                "raw": cfg.raw, "listen": settings.listen}

    @app.get("/api/v1/diag")
    async def diag():  # noqa: ANN202
        """sdiag: scheduler cycle statistics and job counters since the controller started."""
        c = ctl()
        s = c.stats
        counts = c.store.state_counts()
        return {"now": c.clock(), "started": s.started, "main": s.main.public(), "backfill": s.backfill.public(),
                "skipped": s.skipped, "jobs_started": s.jobs_started, "backfilled_jobs": s.backfilled,
                "preempted_jobs": s.preempted, "backfill_enabled": c.bf_enabled,
                "bf_interval": c.bf_interval, "jobs": counts,
                # kept for older clients
                "cycles": s.main.cycles, "last_cycle_us": s.main.last_us, "max_cycle_us": s.main.max_us,
                "mean_cycle_us": s.main.total_us // s.main.cycles if s.main.cycles else 0}

    @app.post("/api/v1/diag/reset")
    async def diag_reset(request: Request):  # noqa: ANN202
        """sdiag -r: start the statistics afresh."""
        auth.require(caller(request), 1)
        ctl().stats = Stats()
        return {"ok": True}

    app.add_middleware(limits.BodyLimit, max_code=MAX_CODE)  # 413 before an oversized body is read
    from slurmlet.controller import metrics
    metrics.install(app, ctl, _nodes)  # GET /metrics; its latency middleware is the outermost: it times all
    return app


def wakes_scheduler(job: dict) -> bool:
    """Whether a new job needs a scheduling pass: a held one cannot start (the store gives it its
    JobHeldUser reason at submission), unless its dependency text is to be evaluated."""
    return not job.get("hold") or bool(job.get("dependency"))


def _add_steps(store: JobStore, jobs: list[dict]) -> None:
    """The srun steps of started jobs, after their batch step (sacct's ID.batch, ID.0, ...)."""
    started = [j["job_id"] for j in jobs if j.get("batch_host")]
    got = store.step_rows(started)
    for j in jobs:
        j["steps"] = j["steps"] + got.get(j["job_id"], [])
        for k in ("user_cpu", "system_cpu", "total_cpu"):  # the job's CPU time is its steps'
            j[k] = sum(s.get(k) or 0.0 for s in j["steps"])


async def _body(request: Request) -> object:
    """The request's JSON body; 400 when it is no JSON (not a 500)."""
    try:
        return await request.json()
    except ValueError:  # JSONDecodeError, UnicodeDecodeError
        raise InvalidRequest("expected a JSON body") from None


def _int_field(doc: dict, key: str) -> int:
    """An integer field of a body read by hand (0 when absent); 400 when it is no integer."""
    v = doc.get(key) or 0
    try:
        if isinstance(v, (bool, float, list, dict)):
            raise TypeError
        return int(v)
    except (TypeError, ValueError):
        raise InvalidRequest(f"{key}: expected an integer, got {v!r}"[:200]) from None


def _finite(doc: object) -> object:
    """`doc` with each float that JSON cannot hold (inf, nan) as its text."""
    if isinstance(doc, float) and not math.isfinite(doc):
        return str(doc)
    if isinstance(doc, list):
        return [_finite(x) for x in doc]
    if isinstance(doc, dict):
        return {k: _finite(v) for k, v in doc.items()}
    return doc


def _json(doc: object) -> JSONResponse:
    """Plain data straight to JSON: FastAPI's jsonable_encoder costs more than the query."""
    return JSONResponse(doc)


def _nodes(c: Controller) -> list[dict]:
    return node_public(c.store.node_rows(), c.store.active_allocs(), c.config, c.clock(), c.store.responding)


def _ids(v: str | None) -> list[int] | None:
    """A comma-separated list of job ids; 400 when one is not an id."""
    try:
        got = [int(x) for x in v.split(",")] if v else None
    except ValueError:
        raise InvalidRequest("Invalid job id specified") from None
    if got and not all(0 <= x <= MAX_ID for x in got):
        raise InvalidRequest("Invalid job id specified")
    return got


def _split(v: str | None) -> list[str] | None:
    return [x for x in v.split(",") if x] if v else None


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
            from slurmlet.controller.store.jobs import compress
            return {"job_id": fake_id, "start_time": now, "nodes": compress(s.node_names),
                    "partition": data["partition"], "cpus": sum(a.cpus for a in s.allocs)}
    reason = p.reasons.get(fake_id)
    if reason is not None and reason.value in ("PartitionNodeLimit", "PartitionConfig"):
        raise InvalidRequest("Requested node configuration is not available", code=1)
    return {"job_id": fake_id, "start_time": None, "nodes": "", "partition": data["partition"],
            "cpus": 0}


def _crash_on_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.critical("scheduler loop died: %r", task.exception())
        import os
        import signal
        os.kill(os.getpid(), signal.SIGTERM)


__all__ = ["create_app", "Settings", "Controller", "Conflict", "NotFound"]
