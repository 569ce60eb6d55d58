"""Accounting routes: sacctmgr's add/modify/delete/show and sshare's tree.

    GET  /api/v1/accounting/{entity}          clusters, accounts, users, assocs, qos
    POST /api/v1/accounting/{entity}/{action} add | modify | delete (body: names, where, set;
                                              commit=false: what it would do, nothing written)
    GET  /api/v1/shares                       the fair-share tree (sshare)
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Request

from slurmlet.controller import auth
from slurmlet.controller.api.deps import ctl
from slurmlet.controller.api.schemas import Strict
from slurmlet.controller.core import fairshare
from slurmlet.controller.core.limits import TRES_ORDER, tres_text
from slurmlet.controller.errors import InvalidRequest, NotFound
from slurmlet.controller.gate import GateRoute
from slurmlet.controller.loops.scheduler import run_pass

ENTITIES = ("clusters", "accounts", "users", "assocs", "qos")


class AcctChange(Strict):
    names: list[str] = []
    where: dict[str, str] = {}
    set: dict[str, str] = {}
    commit: bool = True


router = APIRouter(route_class=GateRoute)


@router.get("/api/v1/accounting/{entity}")
async def show(request: Request, entity: str):
    c = ctl(request)
    if entity not in ENTITIES:
        raise NotFound(f"Unknown entity {entity!r}: expected one of {', '.join(ENTITIES)}")
    return {entity: rows(c.store, entity, c.config, c.settings.listen)}


@router.post("/api/v1/accounting/{entity}/{action}")
async def change(entity: str, action: str, body: AcctChange, request: Request):
    c = ctl(request)
    if body.commit:  # the accounting database is the administrators' (what a change would do is not secret)
        auth.require(request.state.caller, 2)
    acct = c.store.accounts
    now = c.clock()
    where = {k.lower(): v for k, v in body.where.items()}
    sets = {k.lower(): v for k, v in body.set.items()}
    if action == "add":
        done = acct.add(entity, body.names, sets, now, commit=body.commit)
    elif action == "modify":
        if body.names:
            where.setdefault("name", ",".join(body.names))
        done = acct.modify(entity, where, sets, commit=body.commit)
    elif action == "delete":
        if body.names:
            where.setdefault("name", ",".join(body.names))
        done = acct.delete(entity, where, commit=body.commit)
    else:
        raise InvalidRequest(f"Unknown action {action!r}: expected add, modify or delete")
    if body.commit and done:
        run_pass(c)  # limits, QOS and shares may let jobs start, or hold them back
    return {"done": done}


@router.get("/api/v1/shares")
async def shares(request: Request):
    c = ctl(request)
    now = c.clock()
    root = c.store.share_tree(now)
    out = []
    fair_tree = c.config.fair_tree()
    run_mins = c.store.tres_run_mins(now)
    for depth, n in fairshare.walk(root):
        # sshare's root line: NormShares 0 under Fair Tree, 1 under the classic factor
        norm = n.norm_shares if depth else (0.0 if fair_tree else 1.0)
        out.append({"account": n.account, "user": n.user, "depth": depth, "raw_shares": n.shares,
                    "norm_shares": norm, "raw_usage": n.raw_usage, "norm_usage": n.norm_usage,
                    "effective_usage": n.effective_usage,
                    "fairshare": n.fairshare if n.user or not fair_tree else None,
                    "level_fs": _finite(n.level_fs) if depth and fair_tree else None,
                    "tres_run_mins": _run_mins(run_mins, n, depth)})
    return {"fair_tree": fair_tree, "shares": out}


def _run_mins(run_mins: dict, n: Any, depth: int) -> str:
    """TRESRunMins of an association: what its running jobs hold times the minutes they have left
    (an account's and root's include everything below them)."""
    got: dict[str, int] = {}
    for (acct, user), mins in run_mins.items():
        counted = (acct, user) == (n.account, n.user) if n.user else (depth == 0 or acct in _accounts_under(n))
        if counted:
            for k, v in mins.items():
                got[k] = got.get(k, 0) + v
    return ",".join(f"{k}={int(got.get(k, 0))}" for k in TRES_ORDER)


def _accounts_under(n: Any) -> set[str]:
    out = {n.account}
    for c in n.children:
        if not c.user:
            out |= _accounts_under(c)
    return out


def _finite(v: float) -> float | str:
    """JSON has no infinity: LevelFS of an association without usage is sent as "inf"."""
    return "inf" if v == float("inf") else v


def rows(store: Any, entity: str, config: Any, listen: str = "") -> list[dict]:
    t = store.accounts.tree()
    if entity == "clusters":
        host, _, port = listen.rpartition(":")
        return [{"cluster": n, "host": host if n == store.accounts.cluster else None,
                 "port": port if n == store.accounts.cluster else None,
                 "rpc": 9728 if n == store.accounts.cluster else None, "shares": 1, "qos": ["normal"]}
                for n in t.clusters]
    if entity == "accounts":
        return [{"account": r.name, "description": r.description, "organization": r.organization,
                 "parent": r.parent} for r in sorted(t.accounts.values(), key=lambda r: r.name)]
    if entity == "users":
        return [{"user": r.name, "default_account": r.default_account, "admin_level": r.admin_level}
                for r in sorted(t.users.values(), key=lambda r: r.name)]
    if entity == "qos":
        return [{"name": q.name, "id": q.id, "description": q.description, "priority": q.priority,
                 "preempt": q.preempt, "preempt_mode": q.preempt_mode,
                 "preempt_exempt_time": q.preempt_exempt_time, "grace_time": q.grace_time, "flags": q.flags,
                 "usage_factor": q.usage_factor, **_limit_fields(q.limits)} for q in t.qos.values()]
    out = []
    for a in _tree_order(t):
        parent = None if a.user else (t.accounts[a.account].parent if a.account in t.accounts else None)
        out.append({"cluster": store.accounts.cluster, "account": a.account, "user": a.user,
                    "partition": a.partition, "parent": parent, "shares": a.shares, "priority": a.priority,
                    "qos": t.allowed_qos(a), "default_qos": a.default_qos, "id": a.id,
                    **_limit_fields(a.limits)})
    return out


def _limit_fields(limits: dict) -> dict:
    return {k: (tres_text(v) if isinstance(v, dict) else v) for k, v in limits.items()}


def _tree_order(t: Any) -> list:
    """Associations as sacctmgr lists them: depth first from root, an account's users before its
    sub-accounts."""
    out = []

    def rec(account: str) -> None:
        own = t.by_key.get((account, "", ""))
        if own is not None:
            out.append(own)
        out.extend(sorted((a for a in t.assocs if a.account == account and a.user),
                          key=lambda a: (a.user, a.partition)))
        for child in sorted(n for n, r in t.accounts.items() if r.parent == account):
            rec(child)
    rec("root")
    return out


@router.get("/api/v1/reports/usage")
async def usage_report(request: Request, start: float, end: float, top: int = 10,
                       tres: Literal["cpu", "gres/gpu"] = "cpu", buckets: int = Query(0, ge=0, le=1000)):
    """sreport cluster utilization and user topusage over [start, end): CPU-seconds (GPU-seconds
    with `tres=gres/gpu`) reported, allocated (down, planned down and planned are not recorded: 0),
    idle, and the top users; with `buckets=N`, the same figures for each Nth of the window too
    (`series`: what the dashboard plots)."""
    c = ctl(request)
    from slurmlet.controller.core import report
    if not end > start:
        raise InvalidRequest("end must be after start")
    used, created = c.store.usage_records(start, end)
    nodes = c.store.capacity_rows()
    if tres == "gres/gpu":
        cpus = sum(r.gpus or 0 for r in nodes) or sum((n.gpus or 0) for n in c.config.nodes)
    else:
        cpus = sum(r.cpus for r in nodes) or sum((n.cpus or 0) for n in c.config.nodes)
    now = c.clock()
    since = created if created is not None else start
    u = report.utilization(used, cpus, since, start, end, now, tres)
    series = []
    for i in range(buckets):
        b0, b1 = start + (end - start) * i / buckets, start + (end - start) * (i + 1) / buckets
        b = report.utilization(used, cpus, since, b0, b1, now, tres)
        series.append({"start": b0, "end": b1, "reported": b.reported, "allocated": b.allocated, "idle": b.idle})
    return {"cluster": c.config.cluster_name, "tres": tres, "start": start, "end": end, "total": u.total,
            "reported": u.reported, "allocated": u.allocated, "down": u.down, "planned_down": u.planned_down,
            "idle": u.idle, "planned": u.planned, **({"series": series} if buckets else {}),
            "top": [{"user": usr, "account": acct, "used": secs} for usr, acct, secs in report.top_users(u, top)]}
