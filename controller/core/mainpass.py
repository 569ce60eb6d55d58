"""The main pass of a cycle (as Slurm's main scheduler runs it): jobs in queue order start where
they fit; the first job of a partition that does not fit gets `Resources` and blocks the rest of
it (`Priority`); suspended jobs resume once their CPUs are free. Also the reasons that hold
whatever else runs (`static_reason`: holds, begin time, partition limits)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from itertools import islice
from typing import Any

from .alloc import partition_misfit
from .cycle import BF_REASONS, Cycle, Item
from .model import Node, NodeAlloc, Partition, PendingJob, Reason, Request, RunningJob, natural_key
from .nodes import NodeMap, Verdicts
from .preempt import preempt

#: per partition, id(job) -> (job, its static reason there): see `nodes.PartInfo.statics`
Statics = dict[str, dict[int, tuple[PendingJob, Reason | None]]]


def static_reason(job: PendingJob, part: Partition | None, nodes: Mapping[str, Node] | NodeMap, def_mem: int,
                  now: float, verdicts: dict[str, Verdicts] | None = None) -> Reason | None:
    """A reason that holds whatever else runs: holds, begin time, partition limits.

    `verdicts` holds the partition-limit verdicts per partition (`nodes.limits_of`): queues hold
    many identical requests, and the check builds an empty copy of the partition.
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
    if verdicts is None:
        verdicts = {}
    known = verdicts.get(part.name)
    if known is None:
        known = verdicts[part.name] = {}
    req = job.request
    got = known.get(id(req))  # by identity first: hashing a Request costs more than the check
    if got is None or got[0] is not req:
        if len(known) > 8192:
            known.clear()
        reason = known.get(req, known)  # then by value: queues hold many equal requests
        if reason is known:
            # the partition's nodes in order, kept beside the verdicts (only their capacities
            # are read, which are those of every snapshot the verdicts are kept for)
            members = known.get(_MEMBERS)
            if members is None:
                members = known[_MEMBERS] = _ordered([nodes[n] for n in part.nodes if n in nodes])
            reason = known[req] = _partition_limit(req, part, members, def_mem)
        got = known[id(req)] = (req, reason)
    verdict: Reason | None = got[1]
    return verdict


#: the key under which a partition's verdicts keep its nodes in order
_MEMBERS = "members"


def _partition_limit(req: Request, part: Partition, members: list[Node], def_mem: int) -> Reason | None:
    """Why `req` can never run in `part` (its `members`, in order), even on empty nodes; None if it can."""
    why = partition_misfit(req, part.max_nodes, members, def_mem)
    if why == "nodes":
        return Reason.PARTITION_NODE_LIMIT
    if why == "cpus":
        return Reason.PARTITION_CONFIG
    if any(n not in part.nodes for n in req.nodelist):
        return Reason.REQ_NODE_NOT_AVAIL
    return Reason.PARTITION_CONFIG if why == "fit" else None


def _ordered(nodes: Iterable[Node]) -> list[Node]:
    return sorted(nodes, key=lambda n: (n.weight, natural_key(n.name)))


def main_pass(cyc: Cycle, items: list[Item]) -> None:
    snap, out = cyc.snap, cyc.out
    reasons = out.reasons
    statics = {name: info.statics(snap.def_mem_per_cpu, len(snap.pending)) for name, info in cyc.info.items()}
    # once every partition is blocked and nothing suspended waits in the queue, each job left
    # gets its static or limit reason, or Priority (`_waits`)
    lone = not cyc.stopped
    for at, (_, job, suspended) in enumerate(items):
        if suspended is not None:
            resume(cyc, suspended)
            continue
        assert job is not None  # an item holds a pending job or a suspended one
        part: Any = cyc.parts.get(job.partition)  # not None when there is no reason
        reason = _reason(cyc, job, part, statics)
        if reason is not None:
            reasons[job.job_id] = reason
            continue
        if job.partition in cyc.blocked or cyc.members[part.name] <= cyc.fenced:
            reasons[job.job_id] = Reason.PRIORITY
            continue
        allocs = cyc.fit_open(job.request, part.name)
        if job.het:
            allocs = het_fit(cyc, job, allocs)
        elif allocs is None and cyc.may_preempt(job):
            allocs = preempt(cyc, job, part)
        if allocs is None:
            out.reasons[job.job_id] = cyc.blocked_reason(part)
            block(cyc, part.name)
            if lone and len(items) - at > 8 and len(cyc.blocked) == len(cyc.parts):
                _waits(cyc, items, at + 1, statics)
                return
            continue
        cyc.start(job, allocs)


def het_fit(cyc: Cycle, job: PendingJob, first: tuple[NodeAlloc, ...] | None) -> tuple[NodeAlloc, ...] | None:
    """A heterogeneous job's allocation: its first component's (`first`) and each other one's on
    open nodes that no earlier component took, each allocation marked with its component; None
    unless every component fits now (they start together or not at all)."""
    if first is None:
        return None
    out = list(first)
    for offset, (part, req) in enumerate(job.het, 1):
        if part not in cyc.parts or cyc.parts[part].up is False:
            return None
        taken = tuple(a.node for a in out)
        got = cyc.fit_open(replace(req, exclude=req.exclude + taken), part)
        if got is None:
            return None
        out.extend(replace(a, het=offset) for a in got)
    return tuple(out)


def _waits(cyc: Cycle, items: list[Item], at: int, statics: Statics) -> None:
    """The main pass from `at` on when every partition is blocked and no item is a suspended
    job: the loop of `main_pass`, less what cannot happen then (a job without a static or limit
    reason is in a blocked partition, so it waits with Priority)."""
    reasons, parts, priority = cyc.out.reasons, cyc.parts, Reason.PRIORITY
    waiting: list[PendingJob] = []  #: those whose reason backfill tests them for, in queue order (`_to_test`)
    for _, job, _ in islice(items, at, None):
        assert job is not None  # no item from `at` on is a suspended job
        # `_reason`, its kept static reason read inline (a job without accounting limits)
        known = statics.get(job.partition)
        got = known.get(id(job)) if known is not None else None
        if got is not None and got[0] is job and not job.limits:
            reason = got[1]
        else:
            reason = _reason(cyc, job, parts.get(job.partition), statics)
        if reason is None:
            reasons[job.job_id] = priority
            waiting.append(job)
        else:
            reasons[job.job_id] = reason
            if reason in BF_REASONS:  # (a reason the store gave it)
                waiting.append(job)
    cyc.waiting = (at, waiting)


def _reason(cyc: Cycle, job: PendingJob, part: Partition | None, statics: Statics) -> Reason | None:
    """Why `job` cannot start whatever the nodes do: its static reason (kept per partition in
    `statics` where it does not depend on the time) or an accounting limit; None: neither."""
    known = statics.get(job.partition)
    got = known.get(id(job)) if known is not None else None
    if got is not None and got[0] is job:
        reason = got[1]
    else:
        snap = cyc.snap
        reason = static_reason(job, part, cyc.nodes, snap.def_mem_per_cpu, snap.now, cyc.verdicts)
        if known is not None and job.begin_time is None:  # then it does not depend on `now`
            known[id(job)] = (job, reason)
    if reason is None and job.limits:
        reason = cyc.over_limit(job)
    return reason


def block(cyc: Cycle, part: str) -> None:
    """The partition's first job waits: the rest of it waits behind it (`Priority`), and
    lower-ordered jobs of other partitions stay off its nodes, as Slurm's main scheduler does,
    so that they cannot starve it. Backfill, which knows when jobs end, may still use them."""
    cyc.blocked.add(part)
    members = cyc.members[part]
    cyc._fence.append(members)  # added to `fenced` when something reads it
    if cyc.info[part].whole:
        cyc.open.clear()
    else:
        for name in [n for n in cyc.open if n in members]:
            del cyc.open[name]


def resume(cyc: Cycle, r: RunningJob) -> None:
    """A suspended job resumes on its own CPUs and GPUs once they are free (it kept its memory)."""
    for a in r.allocs:
        f = cyc.fr(a.node)
        if (f is None or a.node in cyc.fenced or f.cpus < a.cpus
                or not set(a.gpu_ids) <= set(f.gpu_ids)):
            block(cyc, r.partition)  # it goes first: its partition's pending jobs wait
            return
    cyc.clean = False
    for a in r.allocs:
        f = cyc.free[a.node]
        f.cpus -= a.cpus
        f.gpu_ids = [g for g in f.gpu_ids if g not in a.gpu_ids]
        f.idle = False
        if f.cpus <= 0:
            cyc.open.pop(a.node, None)
    cyc.out.resumes.append(r.job_id)
