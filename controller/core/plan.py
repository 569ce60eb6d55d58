"""`plan(snapshot) -> Plan`: the only entry point of the scheduling core.

Priority-ordered first fit: jobs are taken in (partition tier desc, priority desc, submit time,
job id) order; a job that fits starts; the first job of a partition that does not fit gets
`Resources` and blocks the rest of that partition (`Priority`), as Slurm's main scheduler does.
Jobs that can never run where they are queued carry the partition-limit reasons instead.
Deterministic and independent of the order of the snapshot's tuples.
"""

from __future__ import annotations

from dataclasses import replace

from .alloc import Free, fit
from .model import Node, Partition, PendingJob, Plan, Reason, Request, Snapshot, Start, natural_key
from .priority import Factors, factors


def order_key(job: PendingJob, tiers: dict[str, int]) -> tuple:
    return (-tiers.get(job.partition, 0), -job.priority, job.submit_time, job.job_id)


def static_reason(job: PendingJob, part: Partition | None, nodes: dict[str, Node], def_mem: int,
                  now: float, memo: dict | None = None) -> Reason | None:
    """A reason that holds whatever else runs: holds, begin time, partition limits.

    `memo` caches the partition-limit verdict per (request, partition) within one pass: queues
    hold many identical requests, and the check builds an empty copy of the partition.
    """
    if job.held == "admin":
        return Reason.HELD_ADMIN
    if job.held == "user":
        return Reason.HELD_USER
    if job.blocked_reason is not None:
        return job.blocked_reason
    if job.begin_time is not None and job.begin_time > now:
        return Reason.BEGIN_TIME
    if part is None:
        return Reason.PARTITION_CONFIG
    if not part.up:
        return Reason.PARTITION_DOWN
    if part.max_time is not None and job.time_limit is not None and job.time_limit > part.max_time:
        return Reason.PARTITION_TIME_LIMIT
    if memo is None:
        memo = {}
    key = (job.request, part.name)
    if key not in memo:
        members = memo.get(part.name)
        if members is None:
            members = memo[part.name] = _ordered([nodes[n] for n in part.nodes if n in nodes])
        memo[key] = _partition_limit(job.request, part, members, def_mem)
    return memo[key]


def _partition_limit(req: Request, part: Partition, members: list[Node], def_mem: int) -> Reason | None:
    """Why `req` can never run in `part` (its `members`, in order), even on empty nodes; None if it can."""
    if req.nodes_min > len(members):
        return Reason.PARTITION_NODE_LIMIT
    if req.ntasks and req.ntasks * req.cpus_per_task > sum(n.cpus for n in members):
        return Reason.PARTITION_CONFIG
    if any(n not in part.nodes for n in req.nodelist):
        return Reason.REQ_NODE_NOT_AVAIL
    if fit(req, [Free.empty(n) for n in members], def_mem) is None:
        return Reason.PARTITION_CONFIG
    return None


def _ordered(nodes: list[Node]) -> list[Node]:
    return sorted(nodes, key=lambda n: (n.weight, natural_key(n.name)))


def priorities(snap: Snapshot) -> dict[int, Factors]:
    """Multifactor priority of every pending job (empty when no weight is set)."""
    w = snap.weights
    if not w.active:
        return {}
    total_nodes = len(snap.nodes)
    total_cpus = sum(n.cpus for n in snap.nodes)
    pjf = {p.name: p.priority_job_factor for p in snap.partitions}
    max_pjf = max(pjf.values(), default=1) or 1
    out = {}
    for j in snap.pending:
        r = j.request
        cpus = (r.ntasks or r.nodes_min * (r.ntasks_per_node or 1)) * r.cpus_per_task
        out[j.job_id] = factors(w=w, now=snap.now, eligible=j.eligible_time, nodes=r.nodes_min, cpus=cpus,
                                total_nodes=total_nodes, total_cpus=total_cpus,
                                partition_factor=pjf.get(j.partition, 1), max_partition_factor=max_pjf,
                                nice=j.nice)
    return out


def plan(snap: Snapshot) -> Plan:
    fac = priorities(snap)
    if fac:
        snap = replace(snap, pending=tuple(replace(j, priority=fac[j.job_id].total()) for j in snap.pending))
    nodes = {n.name: n for n in snap.nodes}
    parts = {p.name: p for p in snap.partitions}
    tiers = {p.name: p.priority_tier for p in snap.partitions}
    members = {p.name: frozenset(p.nodes) for p in snap.partitions}
    free = {n.name: Free.of(n) for n in _ordered(list(snap.nodes)) if n.available}
    order = sorted(snap.pending, key=lambda j: order_key(j, tiers))
    out = Plan(factors=fac)
    blocked: set[str] = set()
    memo: dict = {}
    for job in order:
        part = parts.get(job.partition)
        reason = static_reason(job, part, nodes, snap.def_mem_per_cpu, snap.now, memo)
        if reason is not None:
            out.reasons[job.job_id] = reason
            continue
        if job.partition in blocked:
            out.reasons[job.job_id] = Reason.PRIORITY
            continue
        assert part is not None
        cands = [f for name, f in free.items() if name in members[part.name]]
        allocs = fit(job.request, cands, snap.def_mem_per_cpu)
        if allocs is None:
            down = [n for n in part.nodes if n in nodes and not nodes[n].available]
            out.reasons[job.job_id] = Reason.RESOURCES if not down or len(down) < len(part.nodes) else Reason.NODE_DOWN
            blocked.add(job.partition)
            continue
        for a in allocs:
            f = free[a.node]
            f.take(a, job.request.exclusive)
            if f.cpus == 0:
                del free[a.node]  # full: later jobs need not look at it
        out.starts.append(Start(job.job_id, allocs))
    return out


__all__ = ["plan", "static_reason", "order_key", "Request", "Snapshot", "Plan"]
