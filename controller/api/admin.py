"""The cluster's administration: tokens (scontrol token), ping, scontrol reconfigure, the
configuration the agents and `scontrol show config` read, and sdiag's statistics."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse

from .. import auth
from ..errors import InvalidRequest
from ..gate import GateRoute
from ..runtime import VERSION, Stats
from .deps import caller, ctl

log = logging.getLogger("slurmlet.controller")
router = APIRouter(route_class=GateRoute)


@router.post("/api/v1/token")
async def token(request: Request, lifespan: int = 1800, username: str | None = None):
    """scontrol token: a JWT for REST clients (X-SLURM-USER-TOKEN), for the caller or, asked by an
    administrator, for another user."""
    c = ctl(request)
    who = caller(request)
    if c.settings.key is None:
        raise InvalidRequest("authentication is not configured (no cluster key)")
    if lifespan < 1 or lifespan > 365 * 86400:
        raise InvalidRequest("lifespan: must be between 1 second and a year")
    user = username or who.user
    if user is None:  # (a write comes with a credential where there is a key: not from here)
        raise InvalidRequest("username: no user to issue a token for")
    if user != who.user:
        auth.require(who, 2)
    return {"token": auth.issue_token(c.settings.key, user, lifespan, c.clock()), "user": user,
            "lifespan": lifespan}


@router.get("/api/v1/ping")
async def ping(request: Request):
    """scontrol ping: this controller answers, and which of SlurmctldHost's it is (failover.py; one
    in standby answers this too)."""
    c = ctl(request)
    return dict(request.app.state.failover.public(), ok=True, cluster=c.config.cluster_name, version=VERSION)


@router.post("/api/v1/takeover")
async def takeover(request: Request, index: int):
    """scontrol takeover, sent to the controller `index` that is to take control (root only, as 22.05):
    this one has it already."""
    fo = request.app.state.failover
    fo.check_takeover(caller(request), index)
    return {"ok": True, "index": fo.index}


@router.post("/api/v1/reconfigure")
async def reconfigure(request: Request):
    """scontrol reconfigure: re-read slurm.conf or the JSON spec; refused whole or applied whole."""
    c = ctl(request)
    auth.require(caller(request), 2, auth.InvalidUser)
    warnings = c.reconfigure()
    for w in warnings:
        log.warning("reconfigure: %s (ignored)", w)
    return {"ok": True, "warnings": warnings}


@router.get("/api/v1/config")
async def config(request: Request):
    c = ctl(request)
    cfg = c.config
    return {"source": cfg.source, "login_pool": cfg.login_pool, "home_storage": cfg.home_storage,
            "cluster_name": cfg.cluster_name, "version": VERSION, "kill_wait": cfg.kill_wait,
            "min_job_age": cfg.min_job_age, "slurmd_timeout": cfg.slurmd_timeout,
            "def_mem_per_cpu": cfg.def_mem_per_cpu, "job_requeue": cfg.job_requeue,
            "max_array_size": cfg.max_array_size, "scheduler_type": cfg.scheduler_type,
            "enforce_part_limits": cfg.enforce_part_limits, "raw": cfg.raw, "listen": c.settings.listen,
            "controllers": list(cfg.controllers or cfg.controller_names()), "slurmctld_timeout": cfg.slurmctld_timeout,
            "cgroup": cfg.cgroup}


@router.get("/api/v1/config/file", response_class=PlainTextResponse)
async def config_file(request: Request):
    """The slurm.conf this controller read, for the agents' copy (a jobs' SLURM_CONF points there).
    A cluster without one (built in, or a JSON spec) gets a file that names it."""
    c = ctl(request)
    cfg = c.config
    if cfg.text:
        return cfg.text
    what = "a JSON cluster spec" if cfg.source == "spec" else "the built-in configuration"
    return (f"# {cfg.cluster_name}: no slurm.conf ({what}); scontrol show config shows it\n"
            f"ClusterName={cfg.cluster_name}\n")


@router.get("/api/v1/diag")
async def diag(request: Request, history: bool = False):
    """sdiag: scheduler cycle statistics and job counters since the controller started (or sdiag -r).
    `history`: the last passes too (the dashboard's plots), each [when, "main" or "backfill",
    microseconds, jobs examined, jobs pending, jobs started]."""
    c = ctl(request)
    s = c.stats
    counts = c.store.state_counts()
    return {**({"history": [list(h) for h in s.history]} if history else {}),
            "now": c.clock(), "started": s.started, "main": s.main.public(), "backfill": s.backfill.public(),
            "skipped": s.skipped, "jobs_started": s.jobs_started, "backfilled_jobs": s.backfilled,
            "preempted_jobs": s.preempted, "backfill_enabled": c.bf_enabled,
            "bf_interval": c.bf_interval, "jobs": counts,
            # kept for older clients
            "cycles": s.main.cycles, "last_cycle_us": s.main.last_us, "max_cycle_us": s.main.max_us,
            "mean_cycle_us": s.main.total_us // s.main.cycles if s.main.cycles else 0}


@router.post("/api/v1/diag/reset")
async def diag_reset(request: Request):
    """sdiag -r: start the statistics afresh."""
    c = ctl(request)
    auth.require(caller(request), 1)
    c.stats = Stats()
    return {"ok": True}
