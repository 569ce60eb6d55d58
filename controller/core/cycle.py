"""`Cycle`: the mutable state of one planning cycle, shared by its phases.

The phases are functions of a cycle, one module each: `order.queue` (the order jobs are taken in),
`mainpass.main_pass`, `preempt.preempt` (called by the main pass) and `backfill.backfill`; `plan.plan`
runs them. What they share lives here: the free capacity of the nodes as jobs take it (`fr`,
`fit_open`, `take`, `start`), the accounting limits (`over_limit`) and the nodes that blocked
partitions fence off (`fenced`).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Any

from .alloc import Free, fit
from .limits import alloc_tres, need, request_tres
from .memo import Memo
from .model import NodeAlloc, Partition, PendingJob, Plan, Reason, Request, RunningJob, Snapshot, Start
from .nodes import NodeMap, Verdicts, fewest_nodes, nodes_of, whole_nodes_of
from .order import priority_totals

#: the reasons of the jobs backfill tests: waiting for resources or behind a higher-priority job
BF_REASONS = (Reason.RESOURCES, Reason.PRIORITY)

#: one entry of the cycle's queue: (sort key, pending job, None) or (sort key, None, a suspended
#: job waiting to resume)
Item = tuple[tuple[Any, ...], "PendingJob | None", "RunningJob | None"]


def seconds_of(memo: Memo, limit: float) -> float:
    """A time limit in minutes as seconds (rounded to the microsecond), remembered: `round` with
    digits is slow, and a queue holds few distinct limits."""
    got = memo.seconds.get(limit)
    if got is None:
        if len(memo.seconds) > 65536:
            memo.seconds.clear()
        got = memo.seconds[limit] = round(limit * 60.0, 6)
    return got


class Cycle:
    """The mutable state of one planning cycle over an immutable snapshot."""

    def __init__(self, snap: Snapshot, memo: Memo):
        self.snap = snap
        self.memo = memo  #: what cycles keep from one another (the caller's)
        self.cfg = snap.config
        ctx = self.ctx = nodes_of(memo, snap.nodes)
        self.out = Plan(priorities=priority_totals(snap, ctx.total_cpus, memo))
        self.prio = self.out.priorities
        self.nodes = NodeMap(snap.nodes)
        self.parts = {p.name: p for p in snap.partitions}
        self.tiers = {p.name: p.priority_tier for p in snap.partitions}
        self.info = {p.name: ctx.part(p) for p in snap.partitions}
        self.members = {name: i.members for name, i in self.info.items()}
        self.order, self.rank = ctx.order, ctx.rank
        #: available nodes with free CPUs, in preference order: the nodes the main pass may use.
        #: Their free capacity (`Free`) is built when something reads it, into `free`, which gets
        #: the others too when something asks for them (`fr`)
        self.roomd = ctx.room_by_name()
        #: a `Room` (Nodes), or a dict (of Free) once backfill or preemption rebuilds it
        self.open: Any = self.roomd.copy()  # a Node: its Free is not built yet
        self.free: dict[str, Free] = {}
        self.extra = False  #: `free` holds nodes that were never open
        #: nodes that jobs took whole (no free CPUs left), their Free not built: (allocation, exclusive)
        self.taken: dict[str, tuple[NodeAlloc, bool]] = {}
        #: every open node idle (nothing in use): a whole-node job takes the first ones
        self.clean = not ctx.used_room
        #: per partition, its partition-limit verdicts (`static_reason`)
        self.verdicts: dict[str, Verdicts] = {p.name: ctx.verdicts(memo, p, snap.def_mem_per_cpu)
                                                     for p in snap.partitions}
        self.blocked: set[str] = set()
        #: nodes of partitions whose first job is waiting: later jobs of any partition keep off them
        self._fenced: set[str] = set()
        self._fence: list[frozenset[str]] = []  #: members of blocked partitions not yet in `_fenced`
        self.started: list[tuple[PendingJob, tuple[NodeAlloc, ...]]] = []
        #: running jobs on their way out (CANCEL/REQUEUE victims): their resources come back soon
        self.going: dict[int, RunningJob] = {r.job_id: r for r in snap.running if r.preempting}
        self.suspending: set[int] = set()
        self.can_preempt = self._preemptor_partitions()
        #: what running jobs hold of each accounting limit, as this cycle starts more
        self.used = {k: c.used for k, c in snap.counters.items()}
        self.only_starts = False  #: see `plan`
        #: (position, jobs): of the jobs from that position of the queue on, those waiting for
        #: resources or behind a higher-priority job, in order (set by `_waits`, which gave every
        #: job from there its reason)
        self.waiting: tuple[int, list[PendingJob]] | None = None
        self.stopped = any([r.suspended for r in snap.running])  #: some running job is suspended

    # ------------------------------------------------------------------ helpers
    def _preemptor_partitions(self) -> frozenset[str]:
        if not self.cfg.preempt or self.cfg.preempt_qos:
            return frozenset()
        modes = [(p.priority_tier, p.preempt_mode) for p in self.snap.partitions]
        return frozenset(p.name for p in self.snap.partitions
                         if any(t < p.priority_tier and m != "OFF" for t, m in modes))

    def may_preempt(self, job: PendingJob) -> bool:
        if self.cfg.preempt_qos:
            return bool(self.snap.qos_preempt.get(job.qos))
        return job.partition in self.can_preempt

    def fr(self, name: str) -> Free | None:
        """The free capacity of an available node (None for unavailable ones)."""
        f = self.free.get(name)
        if f is None:
            n = self.roomd.get(name)
            if n is None:
                n = self.nodes.get(name)
                if n is None or not n.available:
                    return None
                self.extra = True
            f = self.free[name] = Free.of(n)
            took = self.taken.pop(name, None)
            if took is not None:
                f.take(*took)
        return f

    def materialize(self) -> None:
        """Build the free capacity of every node that was open when the cycle began."""
        free = self.free
        for name in self.roomd:
            if name not in free:
                self.fr(name)

    def count_open(self, part: str) -> int:
        if self.info[part].whole:
            return len(self.open)
        mem = self.members[part]
        return sum(1 for name in self.open if name in mem)

    def candidates(self, part: str) -> Iterator[Free]:
        """The open nodes of a partition, their free capacity built as `fit` reaches them."""
        mem = self.members[part]
        free = self.free
        for name in list(self.open) if self.info[part].whole else [n for n in self.open if n in mem]:
            f = free.get(name)
            if f is None:
                f = free[name] = Free.of(self.open[name])
            yield f

    def fit_open(self, req: Request, part: str) -> tuple[NodeAlloc, ...] | None:
        """`fit` over the partition's open nodes; None at once when there are fewer of them than
        any layout of `req` takes nodes (what `fit` would find too, after building them all).

        When every open node is idle and all nodes are alike, a job that takes whole nodes fits
        on any of them, so `fit` takes the first ones: their allocations are those `fit` makes
        on an idle node of that name (`Nodes.idle_alloc`), without building any Free."""
        if self.count_open(part) < fewest_nodes(req):
            return None
        def_mem = self.snap.def_mem_per_cpu
        shape = self.ctx.shape
        if self.clean and shape is not None:
            k = whole_nodes_of(self.memo, req, shape, def_mem)
            if k:
                if self.info[part].whole:
                    names = list(islice(self.open, k))
                else:
                    mem = self.members[part]
                    names = list(islice((n for n in self.open if n in mem), k))
                table = self.ctx.idle_allocs(req, k, def_mem)
                return tuple([table.get(name) or self.ctx.idle_alloc(table, self.roomd[name], req, k, def_mem)
                              for name in names])
        return fit(req, self.candidates(part), def_mem)

    def take(self, allocs: tuple[NodeAlloc, ...], exclusive: bool) -> None:
        free, open_ = self.free, self.open
        for a in allocs:
            name = a.node
            if name not in free and name in open_:
                n = open_[name]  # its Free is not built yet: Free.of(n)
                if exclusive or a.cpus >= max(0, n.cpus - n.cpus_used):  # no free CPUs left after
                    self.taken[name] = (a, exclusive)
                    del open_[name]
                    continue
            f: Any = self.fr(name)  # available: not None
            f.take(a, exclusive)
            if f.cpus <= 0:
                open_.pop(name, None)  # full: later jobs need not look at it
            else:
                self.clean = False

    def over_limit(self, job: PendingJob) -> Reason | None:
        """The first accounting limit that starting `job` now would exceed."""
        if not job.limits:
            return None
        amounts = request_tres(job.request, self.snap.def_mem_per_cpu)
        counters = self.snap.counters
        for k in job.limits:
            c = counters[k]
            if self.used[k] + need(c.tres, amounts, job.bill) > c.cap:
                return c.reason
        return None

    def start(self, job: PendingJob, allocs: tuple[NodeAlloc, ...]) -> None:
        if job.limits:
            amounts = alloc_tres(allocs)
            for k in job.limits:
                self.used[k] += need(self.snap.counters[k].tres, amounts, job.bill)
        self.take(allocs, job.request.exclusive)
        self.out.starts.append(Start(job.job_id, allocs))
        self.started.append((job, allocs))

    @property
    def fenced(self) -> set[str]:
        """Nodes of partitions whose first job is waiting: later jobs of any partition keep off them."""
        got = self._fenced
        if self._fence:
            for members in self._fence:
                got |= members
            self._fence.clear()
        return got

    def blocked_reason(self, part: Partition) -> Reason:
        return Reason.NODE_DOWN if self.info[part.name].down else Reason.RESOURCES
