"""The order of a cycle's queue: multifactor priority (`priorities` as sprio shows it, `priority_totals`
as a cycle sorts by) and `queue`, the cycle's jobs and suspended jobs in the order the main pass
and backfill take them."""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from .limits import request_tres
from .memo import Memo
from .model import PendingJob, Snapshot
from .nodes import requested_cpus
from .priority import Factors, Weights, factors

if TYPE_CHECKING:
    from .cycle import Cycle, Item

_FIRST = itemgetter(0)


def _fixed_parts(snap: Snapshot, total_cpus: int | None = None) -> Callable[[PendingJob], Factors]:
    """Everything but age is the same for jobs with the same request, partition and usage: those
    parts are computed once per cycle (`priority.factors` is the formula; this is its fast path).
    `total_cpus`: the nodes' CPUs, when the caller knows them."""
    w = snap.weights
    total_nodes = len(snap.nodes)
    if total_cpus is None:
        total_cpus = sum(n.cpus for n in snap.nodes)
    pjf = {p.name: p.priority_job_factor for p in snap.partitions}
    max_pjf = max(pjf.values(), default=1) or 1
    fixed: dict[tuple[Any, ...], Factors] = {}
    part_tres: dict[str, dict[str, float]] = {}
    if w.tres:  # what each partition has of each TRES, for PriorityWeightTRES
        by_name = {n.name: n for n in snap.nodes}
        for p in snap.partitions:
            members = [by_name[n] for n in p.nodes if n in by_name]
            part_tres[p.name] = {"cpu": sum(n.cpus for n in members), "mem": sum(n.memory for n in members),
                                 "node": len(members), "gres/gpu": sum(n.gpus for n in members)}

    def base(j: PendingJob) -> Factors:
        key = (id(j.request), j.partition, j.usage, j.shares, j.qos_factor, j.fs_factor)
        got = fixed.get(key)
        if got is None:
            r = j.request
            got = fixed[key] = factors(w=w, now=snap.now, eligible=None, nodes=r.nodes_min, cpus=requested_cpus(r),
                                       total_nodes=total_nodes, total_cpus=total_cpus,
                                       partition_factor=pjf.get(j.partition, 1), max_partition_factor=max_pjf,
                                       usage=j.usage, shares=j.shares, qos_factor=j.qos_factor,
                                       fs_factor=j.fs_factor,
                                       job_tres=request_tres(r, snap.def_mem_per_cpu) if w.tres else None,
                                       part_tres=part_tres.get(j.partition))
        return got
    return base


def _age(w: Weights, now: float, eligible: float | None) -> float:
    if eligible is None or w.max_age <= 0 or not w.age:
        return 0.0
    return w.age * min(max(now - eligible, 0.0) / w.max_age, 1.0)


def priorities(snap: Snapshot) -> dict[int, Factors]:
    """Multifactor priority of every pending job, component by component, as sprio shows it
    (empty when no weight is set)."""
    w = snap.weights
    if not w.active:
        return {}
    base = _fixed_parts(snap)
    out = {}
    for j in snap.pending:
        b = base(j)
        age = _age(w, snap.now, j.eligible_time)
        out[j.job_id] = Factors(j.site, round(age), b.assoc, b.fairshare, b.jobsize, b.partition, b.qos, j.nice,
                                b.exact + age + j.site, b.tres)
    return out


def _base_context(snap: Snapshot, total_cpus: int) -> tuple[Any, ...] | None:
    """What a job's priority but its age, site and nice depends on besides the job's own fields,
    or None when that is the nodes' TRES too (PriorityWeightTRES: not kept across cycles)."""
    w = snap.weights
    if w.tres:
        return None
    return w, len(snap.nodes), total_cpus, tuple((p.name, p.priority_job_factor) for p in snap.partitions)


def priority_totals(snap: Snapshot, total_cpus: int | None = None, memo: Memo | None = None) -> dict[int, int]:
    """The same priorities as `priorities`, only the totals: what a scheduling cycle needs.

    Everything but the age of a job is kept from one cycle to the next while the job (the same
    frozen object) and what else it depends on (weights, node and CPU counts, partition factors)
    stay the same: queues change little between cycles (in `memo`; none: nothing is kept)."""
    w = snap.weights
    if not w.active:
        return {}
    if total_cpus is None:
        total_cpus = sum(n.cpus for n in snap.nodes)
    if memo is None:
        memo = Memo()
    last = memo.last_bases
    known: dict[Any, Any] | None
    if (last is not None and last[0] is w and last[1] is snap.partitions and last[2] == len(snap.nodes)
            and last[3] == total_cpus):
        known = last[4]  # the same weights and partition objects: the same context
        key = None
    else:
        key = _base_context(snap, total_cpus)
        known = memo.bases.get(key) if key is not None else None
    if known is None:
        known = {}
        if key is not None:
            if len(memo.bases) > 8:
                memo.bases.clear()
            memo.bases[key] = known
    elif len(known) > 2 * len(snap.pending) + 4096:  # jobs of past cycles: forget them
        known.clear()
    if key is not None:
        memo.last_bases = (w, snap.partitions, len(snap.nodes), total_cpus, known)
    # one loop, job by job (compiled with mypyc for the simulator, this is where it gains): the
    # same float operations, in the same order, as `int(fixed + age + site - nice)`, floored at 1
    base: Callable[[PendingJob], Factors] | None = None
    now, max_age, w_age = snap.now, w.max_age, w.age
    aged = max_age > 0 and w_age != 0
    full = w_age * 1.0
    plain = None not in known  # no known job has a site factor or a nice value (x + 0 - 0 is x)
    totals: dict[int, int] = {}
    for j in snap.pending:
        g = known.get(id(j))
        if g is None or g[0] is not j:
            if base is None:
                base = _fixed_parts(snap, total_cpus)
            g = known[id(j)] = (j, base(j).exact)
            if j.site or j.nice:  # counted under None: without any, no job has either
                known[None] = known.get(None, 0) + 1
                plain = False
        e = j.eligible_time
        if not aged or e is None:
            a = 0.0
        else:  # an age of 0 (or -0.0: the same totals) up to now, 1 from max_age on
            d = now - e
            a = (w_age * (d / max_age) if d < max_age else full) if d > 0.0 else 0.0
        t = int(g[1] + a) if plain else int(g[1] + a + j.site - j.nice)
        totals[j.job_id] = t if t > 1 else 1
    return totals


def _key(cyc: Cycle, job: PendingJob) -> tuple[Any, ...]:
    return (not cyc.may_preempt(job), -cyc.tiers.get(job.partition, 0), 1,
            -cyc.prio.get(job.job_id, job.priority), job.submit_time, job.job_id)


def queue(cyc: Cycle) -> list[Item]:
    items: list[Any]
    if cyc.cfg.preempt_qos or cyc.can_preempt:
        items = [(_key(cyc, j), j, None) for j in cyc.snap.pending]
    else:  # no job may preempt: `key` without the call
        tiers, prio, pending = cyc.tiers, cyc.prio, cyc.snap.pending
        if (len(pending) > 8 and not cyc.stopped
                and len({tiers.get(p, 0) for p in {j.partition for j in pending}}) <= 1):
            # one partition tier for every job and nothing suspended to resume: the keys' first
            # three parts are all the same, so (priority, submit time, job id) sorts alike
            if len(prio) == len(pending):  # one total per job (ids are unique), in the queue's order
                items = [((-p, j.submit_time, i), j, None) for (i, p), j in zip(prio.items(), pending)]
            else:
                items = [((-prio.get(j.job_id, j.priority), j.submit_time, j.job_id), j, None) for j in pending]
            items.sort(key=_FIRST)
            return items
        items = [((True, -tiers.get(j.partition, 0), 1, -prio.get(j.job_id, j.priority), j.submit_time,
                   j.job_id), j, None) for j in pending]
    for r in cyc.snap.running if cyc.stopped else ():
        if r.suspended and not r.held_stopped:
            items.append(((r.partition not in cyc.can_preempt, -cyc.tiers.get(r.partition, 0), 0,
                           -r.priority, r.start_time, r.job_id), None, r))
    items.sort(key=_FIRST)
    return items
