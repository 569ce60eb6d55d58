"""Nodes and partitions (sinfo, scontrol update node), and the agents' sync: register, heartbeat,
report, and long-poll for orders."""

from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter, Request

from .. import auth
from ..errors import InvalidRequest
from ..gate import GateRoute, parked
from ..views import partition_public
from .deps import as_json, caller, ctl, nodes_of
from .schemas import NodeSync, NodeUpdate

log = logging.getLogger("slurmlet.controller")

router = APIRouter(route_class=GateRoute)


@router.get("/api/v1/nodes")
async def nodes(request: Request):
    c = ctl(request)
    return as_json({"nodes": nodes_of(c)})


@router.get("/api/v1/partitions")
async def partitions(request: Request):
    c = ctl(request)
    return as_json({"partitions": partition_public(c.config, nodes_of(c))})


@router.get("/api/v1/cluster")
async def cluster(request: Request):
    """Nodes and partitions in one round trip (sinfo)."""
    c = ctl(request)
    ns = nodes_of(c)
    return as_json({"nodes": ns, "partitions": partition_public(c.config, ns)})


@router.post("/api/v1/nodes/{name}/update")
async def node_update(name: str, body: NodeUpdate, request: Request):
    c = ctl(request)
    auth.require(caller(request), 1, auth.InvalidUser)  # slurmctld: "Security violation" -> Invalid user id
    state = body.state.upper()
    mapping = {"RESUME": "UP", "IDLE": "UP", "UP": "UP", "DRAIN": "DRAIN", "DOWN": "DOWN"}
    if state not in mapping:
        raise InvalidRequest("Invalid node state specified")
    if mapping[state] in ("DRAIN", "DOWN") and not body.reason:
        raise InvalidRequest("You must specify a reason when DOWNING or DRAINING a node. Request denied")
    c.store.set_node_state(name, mapping[state], body.reason if mapping[state] != "UP" else None, c.clock())
    c.wake.set()
    return {"ok": True}


@router.post("/api/v1/nodes/{name}/sync")
async def node_sync(name: str, body: NodeSync, request: Request):
    """The agent's channel: register or heartbeat, report exits, receive orders (long-poll)."""
    c = ctl(request)
    auth.require(caller(request), 2)  # agents sign as root with the cluster key
    # One long-poll per node: a new sync (the agent gave up on the last one, e.g. to report an
    # exit) ends the wait of the one before, which answers no orders; they wait for this one.
    old = c.node_waits.pop(name, None)
    if old is not None:
        old.set()
    ev = c.node_event(name)
    ev.clear()
    data = body.model_dump()
    now = c.clock()
    if body.stats:
        for rep in body.stats:  # sstat's answers (kept only while asked for)
            for collector in c.stat_got.get(str(rep.get("key")), []):
                collector[name] = rep.get("tasks") or []
        c.stat_came.set()
        c.stat_came = asyncio.Event()
    if body.answers:
        c.answered(body.answers)
    orders = _now(c, c.store.node_sync(name, data, now)) + _held_orders(c, name)
    c.notify(c.store.take_notify())
    c.run_controller_scripts()
    last = c.last_sync.get(name)
    c.last_sync[name] = now
    if last is not None and now - last > c.config.slurmd_timeout:
        log.info("Node %s now responding (silent for %.1f s)", name, now - last)
    # a registering node ends the jobs it lost; a step's end ends an srun's own allocation
    if body.finished or body.resources or body.lost or body.steps_finished:
        c.jobs_changed()
    if body.finished or body.steps_finished or body.scripts_done or body.resources or last is None or \
            now - last > c.config.slurmd_timeout:
        c.wake.set()  # resources freed, or a node (re)appeared
    wait = min(body.wait, c.settings.max_long_poll)
    if not orders and wait > 0:
        superseded = asyncio.Event()
        c.node_waits[name] = superseded
        waiters = (asyncio.ensure_future(ev.wait()), asyncio.ensure_future(superseded.wait()))
        try:
            async with parked(request):
                await asyncio.wait(waiters, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()
            if c.node_waits.get(name) is superseded:
                del c.node_waits[name]
        if superseded.is_set():
            return as_json({"orders": [], "superseded": True})
        if ev.is_set():
            orders = c.store.node_sync(name, {"running": body.running, "suspended": body.suspended,
                                              "steps_running": body.steps_running, "ending": body.ending,
                                              "notified": body.notified, "steps_ending": body.steps_ending,
                                              "scripts_running": body.scripts_running},
                                       c.clock())
            orders = _now(c, orders) + _held_orders(c, name)
    return as_json({"orders": orders})


def _now(c, orders: list[dict]) -> list[dict]:  # noqa: ANN001 - the Controller
    """scancel's steps, srun's forced terminations: their kill orders say to kill at once, after which
    signal (Controller.kill_now)."""
    if c.steps_kill_now:
        for o in orders:
            got = c.steps_kill_now.get(f"{o['job_id']}.{o['step_id']}") if o["op"] == "kill_step" else None
            if got is not None:
                o["now"] = True
                if got[1]:
                    o["signal"] = got[1]
    return orders


def _held_orders(c, name: str) -> list[dict]:  # noqa: ANN001 - the Controller
    """Orders kept in memory for the node's next answer: sstat's samples, sattach's attachments, and the
    questions asked of it, again with each sync until answered (an answer carrying orders can be lost:
    the agent drops a long-poll it no longer needs; it answers each question once)."""
    keys = c.stat_wanted.pop(name, None)
    return ([{"op": "stat", "keys": sorted(keys)}] if keys else []) + c.attach_wanted.pop(name, []) + \
        list(c.asks_wanted.get(name, []))
