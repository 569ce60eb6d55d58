"""Backfill (sched/backfill): after the main pass, the jobs waiting for resources or behind a
higher-priority job are walked again in queue order over a time map of when running jobs give
their resources back (`timemap`): a job starts now if that delays no reservation made for a job
ahead of it; otherwise it reserves its earliest start (`bf_policy=easy`: only the first blocked
job reserves)."""

from __future__ import annotations

import math
from itertools import islice, repeat
from operator import attrgetter, ne
from typing import Any

from .cycle import BF_REASONS, Cycle, Item, seconds_of
from .model import NodeAlloc, PendingJob
from .nodes import in_use, requested_cpus, whole_nodes_of
from .timemap import CountMap, TimeMap

_CPUS = attrgetter("cpus")


def _seconds(cyc: Cycle, job: PendingJob) -> float | None:
    """The job's time limit, else its partition's MaxTime, in seconds (None: neither)."""
    limit = job.time_limit
    if limit is None:
        p = cyc.parts.get(job.partition)
        limit = p.max_time if p else None
    return None if limit is None else seconds_of(cyc.memo, limit)


def _limit(cyc: Cycle, job: PendingJob) -> float | None:
    """The seconds backfill plans `job` for (None: no limit)."""
    return seconds_of(cyc.memo, job.time_limit) if job.time_limit is not None else _seconds(cyc, job)


def _reach(cyc: Cycle, now: float, job: PendingJob) -> float:
    """now + the seconds backfill plans `job` for: `CountMap.earliest` with only_now looks at
    the slots that begin before it (all of them when it has no limit)."""
    secs = _limit(cyc, job)
    return math.inf if secs is None else now + secs


def _holders(cyc: Cycle) -> list[tuple[float | None, tuple[NodeAlloc, ...]]]:
    """(when, allocations) of everything that holds resources and will give them back."""
    now = cyc.snap.now
    running = cyc.snap.running
    if not cyc.going and not cyc.suspending and not cyc.stopped:
        out = [(r.end_time, r.allocs) for r in running]  # none preempting (else `going`)
    else:
        out = _holders_slow(cyc)
    for job, allocs in cyc.started:
        secs = _seconds(cyc, job)
        out.append((None if secs is None else now + secs, allocs))
    return out


def _holders_slow(cyc: Cycle) -> list[tuple[float | None, tuple[NodeAlloc, ...]]]:
    now = cyc.snap.now
    out: list[tuple[float | None, tuple[NodeAlloc, ...]]] = []
    for r in cyc.snap.running:
        if r.suspended or r.job_id in cyc.suspending:
            continue
        out.append((now if r.preempting or r.job_id in cyc.going else r.end_time, r.allocs))
    return out


def _count_mode(cyc: Cycle, jobs: list[PendingJob], holders: list[tuple[float | None, tuple[NodeAlloc, ...]]]
                ) -> list[int] | None:
    """Whole-node backfill: when all nodes are alike, each one idle or held whole by one job,
    one node set for every partition, and every job to test takes whole nodes, nodes are
    interchangeable and backfill may plan with node counts (exact, and much cheaper).
    Returns the node count of each job (in the order of `jobs`), or None when the per-node
    time map is needed."""
    snap = cyc.snap
    if len(set(cyc.members.values())) != 1 or cyc.stopped:
        return None
    shape = cyc.ctx.shape
    if shape is None:
        return None
    free, open_ = cyc.free, cyc.open
    if any(not f.idle or f.cpus != shape[0] for name, f in free.items() if name in open_):
        return None
    # open nodes whose Free is not built yet: as `Free.of` would say (with nothing in use on
    # any node that had free CPUs when the cycle began, there is nothing to look at)
    if cyc.ctx.used_room and any(map(in_use, [n for name, n in open_.items() if name not in free])):
        return None
    # every node idle or all its CPUs used, and as many whole-node allocations as busy nodes:
    # then each busy node is held by one job alone
    if cyc.ctx.partial:
        return None
    held = sum([len(r.allocs) for r in snap.running])
    if held != cyc.ctx.busy or any(any(map(ne, map(_CPUS, allocs), repeat(shape[0])))
                                    for _, allocs in cyc.started):
        return None
    seen: dict[int, int] = {}  #: id(request) -> its node count (the jobs hold their requests)
    def_mem = snap.def_mem_per_cpu
    if len(jobs) <= 16:
        sizes = []
        for job in jobs:
            req = job.request
            k = seen.get(id(req))
            if k is None:
                k = seen[id(req)] = whole_nodes_of(cyc.memo, req, shape, def_mem)
                if not k:
                    return None
            sizes.append(k)
        return sizes
    # long queues: once per distinct request (they hold few), in order of first use
    ids = [id(job.request) for job in jobs]
    for rid, job in dict(zip(ids, jobs)).items():
        k = seen[rid] = whole_nodes_of(cyc.memo, job.request, shape, def_mem)
        if not k:
            return None
    return [seen[i] for i in ids]


def _to_test(cyc: Cycle, items: list[Item]) -> list[PendingJob]:
    """The jobs backfill tests: those waiting for resources or behind a higher-priority job, in
    queue order, at most bf_max_job_test of them."""
    reasons, limit = cyc.out.reasons, cyc.cfg.bf_max_job_test
    if cyc.waiting is not None:  # the items from `at` on are known: only those before it are looked at
        at, waiting = cyc.waiting
        return ([job for _, job, _ in islice(items, at) if job is not None
                 and reasons.get(job.job_id) in BF_REASONS] + waiting)[:limit]
    if limit < 0:
        return [job for _, job, _ in items if job is not None and reasons.get(job.job_id) in BF_REASONS][:limit]
    jobs: list[PendingJob] = []
    if limit:
        for _, job, _ in items:
            if job is not None and reasons.get(job.job_id) in BF_REASONS:
                jobs.append(job)
                if len(jobs) == limit:
                    break
    return jobs


def backfill(cyc: Cycle, items: list[Item]) -> None:
    cfg, snap, out = cyc.cfg, cyc.snap, cyc.out
    now = snap.now
    # a heterogeneous job starts in the main pass only, all its components at once
    jobs = [job for job in _to_test(cyc, items) if not job.het]
    if not jobs:
        return
    # the main pass's fences do not apply: the time map keeps backfill off what waiting jobs need
    cyc._fence.clear()
    cyc._fenced.clear()
    free = cyc.free
    if cyc.extra:
        cyc.materialize()
        cyc.open = {name: free[name] for name in sorted((n for n, f in free.items() if f.cpus > 0),
                                                         key=cyc.rank.__getitem__)}
    else:  # the nodes open when the cycle began, in order, less those jobs have filled since
        open_ = cyc.open = cyc.roomd.copy()
        for name in cyc.taken:
            open_.pop(name, None)
        for name, f in free.items():
            if f.cpus <= 0:
                open_.pop(name, None)
    holders = _holders(cyc)
    counts = _count_mode(cyc, jobs, holders)
    window = cfg.bf_window * 60.0
    if counts is not None:
        cm = CountMap(now, cfg.bf_resolution, window, len(cyc.open),
                      [(t, len(allocs)) for t, allocs in holders if t is not None])
        earliest, reserve = cm.earliest, cm.reserve
    else:
        tm = TimeMap(now, cfg.bf_resolution, window, {name: fo for name in cyc.order
                                                     if (fo := cyc.fr(name)) is not None})
        for t, held in holders:
            if t is not None:
                tm.release(t, held)
    allocs: Any  # tuple[NodeAlloc, ...]; None (unused) for a reservation on the count map
    reserved = False
    easy = cfg.bf_easy
    # only_starts: stop once no job left to test can start now (see `plan`). The count map's
    # counts only go down while backfill runs (a start or a reservation subtracts its nodes), so
    # a job that cannot start now at some point of the loop cannot later either; `last` is the
    # position of the last job that still can, as `earliest(..., only_now=True)` says on the map
    # as it is (no job starts now unless that says it may: it is `earliest`'s own first step)
    last = len(jobs) - 1
    if cyc.only_starts and counts is not None:
        sizes = counts
        cnt = cm.cnt  # reserve changes it in place; cnt[0]: the nodes free now, which `earliest` checks first
        while last >= 0 and (sizes[last] > cnt[0] or earliest(sizes[last], _limit(cyc, jobs[last]), True) is None):
            last -= 1
        track = True
        # the job at `last` can start now on the map as it is (`sure`), over the slots that begin
        # before `reach` (now + its seconds, the end `earliest` checks up to): a reservation that
        # begins at or after `reach` leaves those slots as they are, so it still can
        sure = last >= 0
        reach = _reach(cyc, now, jobs[last]) if sure else now
    else:
        track = False
    for i, job in enumerate(jobs):
        if i > last:
            break
        out.bf_tested += 1
        if job.limits:
            over = cyc.over_limit(job)
            if over is not None:  # jobs started since the main pass took what it may use
                out.reasons[job.job_id] = over
                continue
        part = cyc.parts[job.partition]
        limit = job.time_limit
        secs = seconds_of(cyc.memo, limit) if limit is not None else _seconds(cyc, job)
        only_now = easy and reserved  # EASY: later jobs start now or not at all
        if counts is not None:
            n = counts[i]
            t = earliest(n, secs, only_now)
            if t is None:
                continue
            allocs = cyc.fit_open(job.request, part.name) if t == now else None
            if t == now and allocs is None:  # cannot happen while the counts are right
                continue
        else:
            found = tm.earliest(job.request, cyc.members[part.name], cyc.rank, secs,
                                requested_cpus(job.request), snap.def_mem_per_cpu, only_now)
            if found is None:
                continue
            t, allocs = found
        if t == now:
            cyc.start(job, allocs)
            out.backfilled.add(job.job_id)
            del out.reasons[job.job_id]
        else:
            out.start_times[job.job_id] = t
            if reserved and easy:
                continue
            reserved = True
        if counts is not None:
            reserve(t, secs, n)
            if track:  # `last` may stay above the last job that can start (it is then not cut as short)
                if t == now:  # a start: only the nodes free now are looked at
                    while last > i and sizes[last] > cnt[0]:
                        last -= 1
                    sure = False
                elif not sure or t < reach:
                    while last > i and (sizes[last] > cnt[0] or
                                        earliest(sizes[last], _limit(cyc, jobs[last]), True) is None):
                        last -= 1
                    sure = last > i
                    if sure:
                        reach = _reach(cyc, now, jobs[last])
        else:
            tm.reserve(t, secs, allocs)
