"""create_app(settings) -> FastAPI: the controller's assembly. The lifespan makes the Controller
(runtime.py), runs the loops (loops/) and the request spool (spool.py); every request passes the gate
(gate.py: framing, caller, body, timing) and the routers (api/) do the rest."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError

from slurmlet.common.wire import STANDBY

from . import metrics, spool
from .api import accounting, admin, jobs, nodes, runs, secrets, steps, web
from .api.deps import json_safe, nodes_of
from .config import ConfigError
from .errors import Conflict, DomainError, InvalidRequest, NotFound, Unavailable
from .failover import Failover, whoami
from .gate import Gate, GateRoute
from .loops.reaper import reaper_loop
from .loops.scheduler import scheduler_loop
from .runtime import VERSION, Controller, Settings
from .store.engine import make_engine
from .store.guard import describe
from .store.lease import Lease, LeaseLost

log = logging.getLogger("slurmlet.controller")


def create_app(settings: Settings) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        index, name = whoami(settings.config, settings.host)
        lease = Lease(make_engine(settings.db_url), name, index, settings.config.slurmctld_timeout)
        fo = app.state.failover = Failover(lease, settings.config.controller_names(), settings.key)
        app.state.ctl = None
        running: list[asyncio.Task] = []

        latest = [settings]  #: the settings as the last active Controller left them (scontrol reconfigure)

        async def activate() -> None:
            cur = latest[0]
            if cur.reload is not None:  # (slurm.conf as it is now, as 22.05's backup reads it taking control)
                try:
                    cur = latest[0] = dataclasses.replace(cur, config=cur.reload())
                except ConfigError as e:
                    log.warning("slurm.conf cannot be read again (%s): the configuration read before is kept", e)
            ctl = Controller(cur, lease)
            app.state.ctl = ctl  # (first: whatever is started below, deactivate() stops)
            ctl.store.reset_controller_scripts()
            gone = ctl.store.forget_unconfigured_nodes()
            if gone:
                log.warning("slurm.conf names these nodes no more: forgotten: %s", ", ".join(gone))
            for w in cur.config.warnings:
                log.warning("slurm.conf: %s (ignored)", w)
            task = asyncio.create_task(scheduler_loop(ctl), name="the scheduler loop")
            task.add_done_callback(_crash_on_failure)
            running.append(task)
            running.append(asyncio.create_task(reaper_loop(ctl)))  # silent nodes: their jobs NODE_FAIL or requeued
            if cur.spool:
                host, _, port = cur.listen.rpartition(":")
                ctl.spool = spool.Spool(cur.spool, app, (host.strip("[]"), int(port)))
                await ctl.spool.start()

        async def deactivate() -> None:
            ctl: Controller | None = app.state.ctl
            app.state.ctl = None
            tasks, running[:] = list(running), []
            if ctl is not None:
                latest[0] = ctl.settings
                if ctl.spool is not None:
                    await ctl.spool.stop()
                tasks += ctl.script_tasks
            for t in tasks:
                t.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await t
            if ctl is not None:
                ctl.store.engine.dispose()

        # the primary takes control at its start (as 22.05's takes it back from a backup); a backup when
        # the lease has run out
        if await asyncio.to_thread(lease.take, index == 0):
            await fo.start(activate, deactivate)
        else:
            held = await asyncio.to_thread(lease.read)
            fo.holder_index = held.index if held.live else None
        keeper = asyncio.create_task(fo.run(activate, deactivate), name="the controller lease's keeper")
        keeper.add_done_callback(_crash_on_failure)
        try:
            yield
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
            await fo.stop(deactivate)
            lease.engine.dispose()

    # (FastAPI's own OpenTelemetry off: /metrics is the controller's, and its spans cost every request)
    app = FastAPI(title="slurmlet controller", version="0.1.0", lifespan=lifespan,
                  telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False})
    app.router.route_class = GateRoute

    def ctl() -> Controller:
        return app.state.ctl


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

    # (the router tries routes in order: the agents' syncs and the requests every job makes first)
    for r in (nodes, jobs, steps, runs, secrets, admin, web, accounting):
        app.include_router(r.router)
    latency = metrics.install(app, ctl, nodes_of)
    app.add_middleware(Gate, ctl=ctl, failover=lambda: app.state.failover, latency=latency)  # (the one layer: gate.py)
    return app


def domain_error(exc: DomainError) -> JSONResponse:
    # (nothing of a request refused for a lease lost was recorded: marked as a standby's refusal, it goes
    # on to the next controller)
    headers = {STANDBY: f"{exc.ttl:g}"} if isinstance(exc, LeaseLost) else None
    return JSONResponse(status_code=exc.status, content={"detail": exc.to_json()}, headers=headers)


def db_refused(c: Controller, exc: OperationalError) -> JSONResponse:
    """The database refused the request for its own sake (locked, read-only, unreachable): 503
    naming it, not a 500; nothing of the request was recorded."""
    err = Unavailable(f"the database {describe(c.store.engine)} refused the request: {exc.orig}")
    return JSONResponse(status_code=err.status, content={"detail": err.to_json()})


def too_deep() -> JSONResponse:
    """A JSON body nested deeper than the parser goes: refused, not a 500."""
    return JSONResponse(status_code=400, content={"detail": InvalidRequest("the JSON body nests too deeply").to_json()})


def _crash_on_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.critical("%s died: %r", task.get_name(), task.exception())
        import os
        import signal
        os.kill(os.getpid(), signal.SIGTERM)


__all__ = ["create_app", "Settings", "Controller", "Conflict", "NotFound", "VERSION"]
