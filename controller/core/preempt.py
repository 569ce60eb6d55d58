"""Preemption (preempt/partition_prio and preempt/qos): the victims a pending job that does not fit
may take resources from, and what their going gives back. Policy only: the store cancels, requeues
or suspends them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .alloc import Free, fit
from .cycle import Cycle
from .model import NodeAlloc, Partition, PendingJob, Preemption, RunningJob


def victim_mode(cyc: Cycle, r: RunningJob) -> str:
    if cyc.cfg.preempt_qos:
        m = cyc.snap.qos_preempt_mode.get(r.qos, "OFF")
    else:
        p = cyc.parts.get(r.partition)
        m = p.preempt_mode if p else "OFF"
    return "CANCEL" if m == "REQUEUE" and not r.requeue else m


def _victim_ok(cyc: Cycle, r: RunningJob, job: PendingJob, tier: int, mem: frozenset[str]) -> bool:
    p = cyc.parts.get(r.partition)
    if cyc.cfg.preempt_qos:  # the preemptor's QOS names the victim's, whatever their partitions
        allowed = r.qos in cyc.snap.qos_preempt.get(job.qos, ()) and victim_mode(cyc, r) != "OFF"
    else:
        allowed = p is not None and p.priority_tier < tier and p.preempt_mode != "OFF"
    return (allowed and not r.suspended and not r.preempting and r.job_id not in cyc.going
            and r.job_id not in cyc.suspending
            and cyc.snap.now - r.start_time >= cyc.cfg.preempt_exempt_time
            and any(a.node in mem for a in r.allocs))


def _trial_fit(cyc: Cycle, job: PendingJob, part: Partition, back: list[RunningJob]) -> tuple[NodeAlloc, ...] | None:
    """Would `job` fit if the jobs in `back` gave their resources back (suspended ones keep memory)?"""
    mem = cyc.members[part.name]
    trial: dict[str, Free] = {}
    for r in back:
        keep_mem = victim_mode(cyc, r) == "SUSPEND" and r.job_id not in cyc.going
        for a in r.allocs:
            f0 = cyc.fr(a.node)
            if f0 is None or a.node not in mem:
                continue
            f = trial.get(a.node)
            if f is None:
                f = trial[a.node] = Free(f0.name, f0.cpus, f0.memory, list(f0.gpu_ids), f0.total_cpus,
                                         f0.total_memory, f0.total_gpus, f0.idle, f0.weight, f0.gpu_type)
            f.cpus += a.cpus
            f.memory += 0 if keep_mem else a.memory
            f.gpu_ids = sorted(set(f.gpu_ids) | set(a.gpu_ids))
            f.idle = f.cpus == f.total_cpus and f.memory == f.total_memory and len(f.gpu_ids) == f.total_gpus
    cands = [f for name in cyc.order if name in mem and name not in cyc.fenced
             and (f := trial.get(name) or (cyc.fr(name) if name in cyc.open else None)) is not None]
    return fit(job.request, cands, cyc.snap.def_mem_per_cpu)


def preempt(cyc: Cycle, job: PendingJob, part: Partition) -> tuple[NodeAlloc, ...] | None:
    """partition_prio: choose the fewest, lowest-priority, youngest lower-tier victims that make
    room (preempt/qos: of the QOSes the job's QOS may preempt, the oldest among equals).
    Returns allocations when the job can start now (all victims suspended), else None."""
    going = sorted(cyc.going.values(), key=lambda r: r.job_id)
    if going and _trial_fit(cyc, job, part, going) is not None:
        return None  # earlier victims are still on their way out: wait for them
    mem = cyc.members[part.name]
    order: Callable[[RunningJob], tuple[Any, ...]]
    if cyc.cfg.preempt_qos:  # lowest priority first; among equals the longest running (as 22.05 picks)
        order = lambda r: (r.priority, r.start_time, r.job_id)  # noqa: E731
    else:
        order = lambda r: (cyc.tiers.get(r.partition, 0), r.priority, -r.start_time, -r.job_id)  # noqa: E731
    pool = sorted((r for r in cyc.snap.running if _victim_ok(cyc, r, job, part.priority_tier, mem)), key=order)
    chosen: list[RunningJob] = []
    for r in pool:
        chosen.append(r)
        if _trial_fit(cyc, job, part, going + chosen) is not None:
            break
    else:
        return None
    for r in reversed(chosen[:-1]):  # only as many as needed: drop the most valuable first
        rest = [x for x in chosen if x is not r]
        if _trial_fit(cyc, job, part, going + rest) is not None:
            chosen = rest
    for r in sorted(chosen, key=lambda r: r.job_id):
        mode = victim_mode(cyc, r)
        p = cyc.parts.get(r.partition)
        cyc.out.preemptions.append(Preemption(r.job_id, job.job_id, mode, p.grace_time if p else 0))
        if mode == "SUSPEND":
            cyc.suspending.add(r.job_id)
            _give_back(cyc, r)
        else:
            cyc.going[r.job_id] = r
    if any(victim_mode(cyc, r) != "SUSPEND" for r in chosen):
        return None  # the preemptor starts once the cancelled or requeued victims are gone
    return cyc.fit_open(job.request, part.name)


def _give_back(cyc: Cycle, r: RunningJob) -> None:
    """A suspended victim's CPUs and GPUs are free for its preemptor; its memory stays held."""
    for a in r.allocs:
        f = cyc.fr(a.node)
        if f is None:
            continue
        f.cpus += a.cpus
        f.gpu_ids = sorted(set(f.gpu_ids) | set(a.gpu_ids))
    cyc.materialize()
    cyc.clean = False
    cyc.open = {name: f for name in cyc.order  # rebuilt: keeps the preference order
                 if (f := cyc.free.get(name)) is not None and f.cpus > 0 and name not in cyc.fenced}
