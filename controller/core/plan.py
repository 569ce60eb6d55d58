"""`plan(snapshot) -> Plan`: the only entry point of the scheduling core.

One cycle, as Slurm's slurmctld runs it:

1. **Priority.** Multifactor priority of every pending job (when weights are configured).
2. **Main pass.** Jobs are taken in (can preempt, partition tier desc, priority desc, submit
   time, job id) order; a job that fits starts; the first job of a partition that does not fit
   gets `Resources` and blocks the rest of that partition (`Priority`). Under
   `preempt/partition_prio` a job that does not fit may first preempt running jobs of lower
   PriorityTier partitions; suspended jobs resume, in the same order, once their CPUs are free.
3. **Backfill** (sched/backfill, when asked for). Pending jobs are walked again in the same order
   over a time map of when running jobs give their resources back (see `timemap`): a job
   starts now if that delays no reservation made for a job ahead of it; otherwise it reserves its
   earliest start, which `squeue --start` shows (`bf_policy=easy`: only the first blocked job
   reserves).

Jobs that can never run where they are queued carry the partition-limit reasons instead.
Deterministic and independent of the order of the snapshot's tuples.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import compress, islice, repeat
from operator import and_, attrgetter, itemgetter, lt, ne, not_
from typing import Any, Callable

from .alloc import Free, _task_counts, _try_node, fit, partition_misfit
from .limits import alloc_tres, need, request_tres
from .model import (
    Node,
    NodeAlloc,
    Partition,
    PendingJob,
    Plan,
    Preemption,
    Reason,
    Request,
    RunningJob,
    Snapshot,
    Start,
    natural_key,
)
from .priority import Factors, factors
from .timemap import CountMap, TimeMap


def static_reason(job: PendingJob, part: Partition | None, nodes: dict[str, Node] | _NodeMap, def_mem: int,
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
    verdicts = memo.get(part.name)
    if verdicts is None:
        caps = memo.get(None)
        if caps is None:
            caps = memo[None] = tuple(map(_CAPS, nodes.values()))
        verdicts = memo[part.name] = _limits_of(part, caps, def_mem)
    req = job.request
    got = verdicts.get(id(req))  # by identity first: hashing a Request costs more than the check
    if got is None or got[0] is not req:
        if len(verdicts) > 8192:
            verdicts.clear()
        reason = verdicts.get(req, verdicts)  # then by value: queues hold many equal requests
        if reason is verdicts:
            reason = verdicts[req] = _partition_limit(
                req, part, _ordered([nodes[n] for n in part.nodes if n in nodes]), def_mem)
        got = verdicts[id(req)] = (req, reason)
    return got[1]


_CAPS = attrgetter("name", "cpus", "memory", "gpus", "weight", "available")
_NAME = attrgetter("name")
_USED = attrgetter("cpus_used")
_CPUS = attrgetter("cpus")
_EXCLUSIVE = attrgetter("exclusive_used")
_FIRST = itemgetter(0)


def _uniform(caps: tuple[tuple, ...]) -> tuple[int, int, int] | None:
    """The one (cpus, memory, gpus) shape of the cluster's nodes, if they are all alike and up."""
    shapes = {c[1:4] for c in caps}
    return shapes.pop() if len(shapes) == 1 and all(c[5] for c in caps) else None

#: partition-limit verdicts per (partition, the cluster's node capacities): they hold across cycles
_LIMITS: dict[tuple, dict] = {}


def _limits_of(part: Partition, caps: tuple, def_mem: int) -> dict:
    """The verdict cache of a partition: keyed by request identity (to a (request, verdict) pair)
    and by request value (to the verdict)."""
    key = (part, def_mem, caps)
    got = _LIMITS.get(key)
    if got is None:
        if len(_LIMITS) > 64:
            _LIMITS.clear()
        got = _LIMITS[key] = {}
    return got


class _Part:
    """What cycles derive from one partition and the nodes' capacities."""

    __slots__ = ("part", "members", "whole", "down", "verdicts", "static")

    def __init__(self, part: Partition, names: frozenset[str], available: dict[str, bool]):
        self.part = part
        self.members = frozenset(part.nodes)
        self.whole = self.members >= names  #: every node of the cluster is in it
        down = [n for n in part.nodes if n in available and not available[n]]
        self.down = bool(down) and len(down) >= len(part.nodes)  #: all its nodes are unavailable
        self.verdicts: dict[int, dict] = {}  #: per DefMemPerCPU: see `_limits_of`
        self.static: dict[int, dict[int, tuple[PendingJob, Reason | None]]] = {}  #: see `statics`

    def statics(self, def_mem: int, pending: int) -> dict[int, tuple[PendingJob, Reason | None]]:
        """Per DefMemPerCPU, id(job) -> (job, its `static_reason` here): kept for jobs without a
        begin time (the same frozen job, partition and node capacities give the same reason)."""
        got = self.static.get(def_mem)
        if got is None:
            got = self.static[def_mem] = {}
        elif len(got) > 2 * pending + 4096:  # jobs of past cycles: forget them
            got.clear()
        return got


def _in_use(n: Node) -> bool:
    """Anything allocated on the node (`Free.of` would not call it idle)."""
    return bool(n.cpus_used or n.memory_used or n.exclusive_used or (n.gpus and n.gpus_used))


class _Nodes:
    """What cycles derive from the nodes.

    From their capacities (name, CPUs, memory, GPUs, weight, availability), kept from one cycle to
    the next while those do not change, as a cluster's nodes rarely do: the preference order
    (weight, natural name) and each node's rank, the positions of the available nodes in that
    order, the one node shape (when all are alike), and per partition its members, whether it is
    down and its partition-limit verdicts.

    From what is in use, per snapshot, updated from the last snapshot's for the nodes that
    changed (a cycle's starts and ends touch few): the positions of the available nodes with
    free CPUs in preference order (`room`), how many nodes have CPUs in use (`busy`), how many
    have some but not all of them in use (`partial`), how many of the `room` nodes have anything
    in use (`used_room`)."""

    __slots__ = ("nodes", "caps", "order", "rank", "avail", "shape", "total_cpus", "parts", "names", "up",
                 "room", "busy", "partial", "used_room", "allocs", "roomd", "keep", "at", "seen")
    order: tuple[str, ...]
    rank: dict[str, int]
    avail: tuple[int, ...]
    shape: tuple[int, int, int] | None
    total_cpus: int
    parts: dict[str, _Part]
    names: frozenset[str]
    up: dict[str, bool]
    allocs: dict[tuple, tuple[Request, dict[str, NodeAlloc]]]
    at: list[int]
    seen: dict[tuple[int, int], Node]

    def __init__(self, nodes: tuple[Node, ...], caps: tuple[tuple, ...], same: _Nodes | None = None,
                 changed: list[int] | None = None):
        """`same`: a snapshot's with the same capacities; `changed`: the positions where its nodes
        are not the same objects as these (None: unknown)."""
        self.nodes = nodes
        self.caps = caps
        self.roomd: dict[str, Node] | None = None
        if same is not None:  # the same capacities: share what was derived from them
            self.order, self.rank, self.avail, self.shape = same.order, same.rank, same.avail, same.shape
            self.total_cpus, self.parts, self.names, self.up = same.total_cpus, same.parts, same.names, same.up
            self.allocs, self.at, self.seen = same.allocs, same.at, same.seen
            self._use(same, changed)
            return
        perm = sorted(range(len(caps)), key=lambda i: (caps[i][4], natural_key(caps[i][0])))
        self.order = tuple(caps[i][0] for i in perm)
        self.rank = {n: i for i, n in enumerate(self.order)}
        self.avail = tuple(i for i in perm if caps[i][5])  #: positions of available nodes, in order
        self.at = [-1] * len(caps)  #: position -> index in `avail` (-1: not available)
        self.seen = {}  #: see `same_caps`
        for r, i in enumerate(self.avail):
            self.at[i] = r
        self.shape = _uniform(caps)
        self.total_cpus = sum(c[1] for c in caps)
        self.parts = {}
        self.names = frozenset(c[0] for c in caps)
        self.up = {c[0]: c[5] for c in caps}
        self.allocs = {}  #: see `idle_allocs`
        self._use(None, None)

    def _use(self, last: _Nodes | None, changed: list[int] | None) -> None:
        nodes = self.nodes
        full = self.shape[0] if self.shape else -1  #: CPUs of every node (-1: they differ)
        if last is None or changed is None or not _few(changed, nodes):
            used = list(map(_USED, nodes))
            ordered = self.available_in_order(nodes)
            #: per available node, in preference order: free CPUs, not held exclusively
            keep = self.keep = bytearray(map(and_, map(lt, map(_USED, ordered), map(_CPUS, ordered)),
                                             map(not_, map(_EXCLUSIVE, ordered))))
            self.busy = len(used) - used.count(0)
            self.partial = self.busy - (used.count(full) if full else 0)
            self.used_room = sum(map(_in_use, compress(ordered, keep)))
        else:
            keep = self.keep = last.keep[:]
            olds, news = _pick(last.nodes, changed), _pick(nodes, changed)
            was, now = list(map(_USED, olds)), list(map(_USED, news))
            self.busy = last.busy + was.count(0) - now.count(0)
            self.partial = self.partial_of(last.partial, was, now, full)
            used_room = last.used_room
            at = self.at
            for i, old, new in zip(changed, olds, news):  # (`_in_use`, inline)
                r = at[i]
                if r >= 0:  # available
                    if keep[r] and (old.cpus_used or old.memory_used or old.exclusive_used
                                    or (old.gpus and old.gpus_used)):
                        used_room -= 1
                    keep[r] = has = new.cpus_used < new.cpus and not new.exclusive_used
                    if has and (new.cpus_used or new.memory_used or new.exclusive_used
                                or (new.gpus and new.gpus_used)):
                        used_room += 1
            self.used_room = used_room
        self.room = list(compress(self.avail, keep))

    def same_caps(self, nodes: tuple[Node, ...], changed: list[int]) -> bool | None:
        """Whether the nodes at `changed` have the capacities of those positions (None: not
        checked, too many to check one by one). A node object found so at a position is
        remembered (and held, so that its id stays its own): nodes that come and go between the
        same few objects are checked once."""
        seen = self.seen
        keys = list(zip(changed, map(id, _pick(nodes, changed))))
        if all(map(seen.__contains__, keys)):
            return True
        if not _few(changed, nodes):
            return None
        caps = self.caps
        for (i, _), n in zip(keys, _pick(nodes, changed)):
            if _CAPS(n) != caps[i]:
                return False
        if len(seen) > 4 * len(caps) + 64:
            seen.clear()
        seen.update(zip(keys, _pick(nodes, changed)))
        return True

    @staticmethod
    def partial_of(before: int, was: list, now: list, full: int) -> int:
        """How many nodes have some but not all CPUs in use, after `was` became `now`."""
        if full:
            return before + was.count(0) + was.count(full) - now.count(0) - now.count(full)
        return before + was.count(0) - now.count(0)

    def part(self, p: Partition) -> _Part:
        got = self.parts.get(p.name)
        if got is None or (got.part is not p and got.part != p):
            if len(self.parts) > 256:
                self.parts.clear()
            got = self.parts[p.name] = _Part(p, self.names, self.up)
        elif got.part is not p:  # an equal partition: later cycles that pass this one find it by identity
            got.part = p
        return got

    def verdicts(self, p: Partition, def_mem: int) -> dict:
        info = self.part(p)
        got = info.verdicts.get(def_mem)
        if got is None:
            got = info.verdicts[def_mem] = _limits_of(p, self.caps, def_mem)
        return got

    def available_in_order(self, nodes: tuple[Node, ...]) -> list[Node]:
        """The available nodes of `nodes` (the snapshot's, in its order), in preference order."""
        return _pick(nodes, self.avail)

    def idle_allocs(self, req: Request, nnodes: int, def_mem: int) -> dict[str, NodeAlloc]:
        """By node name, what `fit` allocates to a job of `nnodes` equal nodes' worth of `req` on
        that node when it is idle (kept while the capacities are the same; see `idle_alloc`)."""
        key = (id(req), nnodes, def_mem)
        got = self.allocs.get(key)
        if got is None or got[0] is not req:
            if len(self.allocs) > 4096:
                self.allocs.clear()
            got = self.allocs[key] = (req, {})
        return got[1]

    @staticmethod
    def idle_alloc(table: dict[str, NodeAlloc], node: Node, req: Request, nnodes: int, def_mem: int) -> NodeAlloc:
        """`fit`'s allocation on `node`, idle, into `table` (from `idle_allocs`)."""
        _, counts = _task_counts(req)
        assert counts is not None, "a whole-node request has fixed tasks per node"
        a = _try_node(Free.of(node), req, counts[0], nnodes, def_mem)
        assert a is not None, "a whole-node request fits on an idle node"
        table[node.name] = a
        return a

    def room_by_name(self) -> dict[str, Node]:
        """The available nodes with free CPUs by name, in preference order (not to be changed)."""
        got = self.roomd
        if got is None:
            nodes = self.nodes
            got = self.roomd = {nodes[i].name: nodes[i] for i in self.room}
        return got


def _few(changed: list[int], nodes: tuple[Node, ...]) -> bool:
    """Few enough changed nodes to update what was derived from the last snapshot's, node by node."""
    return len(changed) <= 64 or len(changed) <= len(nodes) // 8


def _pick(xs: tuple, positions) -> list:  # noqa: ANN001 - a sequence of positions
    if len(positions) < 2:
        return [xs[i] for i in positions]
    return list(itemgetter(*positions)(xs))


_LAST: _Nodes | None = None  #: the nodes of the last cycle


def _nodes_of(nodes: tuple[Node, ...]) -> _Nodes:
    """The derived node data of a cycle: the last cycle's when the capacities are the same (the
    same tuple, or the same nodes but those that changed, changed only in what is in use)."""
    global _LAST
    last = _LAST
    if last is not None:
        if last.nodes is nodes:
            return last
        if len(last.nodes) == len(nodes):
            was = last.nodes
            changed = [i for i in range(len(nodes)) if nodes[i] is not was[i]]
            if last.same_caps(nodes, changed):
                got = _LAST = _Nodes(nodes, last.caps, last, changed)
                return got
    caps = tuple(map(_CAPS, nodes))  # many changed (a store builds every node anew): all at once
    got = _LAST = _Nodes(nodes, caps, last if last is not None and caps == last.caps else None)
    return got


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


def _ordered(nodes) -> list[Node]:  # noqa: ANN001 - any iterable of nodes
    return sorted(nodes, key=lambda n: (n.weight, natural_key(n.name)))


@lru_cache(maxsize=4096)
def _whole_nodes(req: Request, cpus: int, memory: int, gpus: int, def_mem: int) -> int:
    """How many whole nodes of this shape `req` takes when every node it gets is then full
    (0 when its layout leaves CPUs free or names nodes): backfill may then count nodes."""
    if req.nodelist or req.exclude or req.gpu_type:
        return 0
    nnodes, counts = _task_counts(req)
    if counts is None or not nnodes or any(c != counts[0] for c in counts):
        return 0
    per_node = counts[0] * req.cpus_per_task
    if not req.exclusive and per_node != cpus:
        return 0
    if per_node > cpus or (req.gpus_per_node or 0) > gpus or (req.gpus_per_task or 0) * counts[0] > gpus:
        return 0
    if req.gpus and -(-req.gpus // nnodes) > gpus:
        return 0
    mem = req.mem_per_node if req.mem_per_node is not None else (req.mem_per_cpu or def_mem) * per_node
    return nnodes if mem <= memory else 0


#: id(request) -> (request, shape, DefMemPerCPU, `_whole_nodes`): hashing a Request costs more than the check
_WHOLE: dict[int, tuple[Request, tuple, int, int]] = {}


def _whole_nodes_of(req: Request, shape: tuple[int, int, int], def_mem: int) -> int:
    got = _WHOLE.get(id(req))
    if got is None or got[0] is not req or got[1] != shape or got[2] != def_mem:
        if len(_WHOLE) > 4096:
            _WHOLE.clear()
        got = _WHOLE[id(req)] = (req, shape, def_mem, _whole_nodes(req, *shape, def_mem))
    return got[3]


def _fewest_nodes(req: Request) -> int:
    """The fewest nodes any allocation `fit` finds for `req` has."""
    nnodes, counts = _task_counts(req)
    if counts is not None:
        return nnodes
    assert req.ntasks is not None  # counts are None only with ntasks and no ntasks_per_node
    return min(req.nodes_min, req.ntasks)


def requested_cpus(req: Request) -> int:
    """The fewest CPUs any layout of `req` takes."""
    return (req.ntasks or req.nodes_min * (req.ntasks_per_node or 1)) * req.cpus_per_task


def _fixed_parts(snap: Snapshot, total_cpus: int | None = None):  # noqa: ANN202 - a function of a job
    """Everything but age is the same for jobs with the same request, partition and usage: those
    parts are computed once per cycle (`priority.factors` is the formula; this is its fast path).
    `total_cpus`: the nodes' CPUs, when the caller knows them."""
    w = snap.weights
    total_nodes = len(snap.nodes)
    if total_cpus is None:
        total_cpus = sum(n.cpus for n in snap.nodes)
    pjf = {p.name: p.priority_job_factor for p in snap.partitions}
    max_pjf = max(pjf.values(), default=1) or 1
    fixed: dict[tuple, Factors] = {}
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


def _age(w, now: float, eligible: float | None) -> float:  # noqa: ANN001 - Weights
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


#: per context (see `_base_context`): id(job) -> (job, the job's priority without its age, site and nice),
#: and None -> how many of those jobs have a site factor or a nice value (absent: none)
_BASES: dict[tuple, dict[int, tuple[PendingJob, float]]] = {}
#: the last cycle's (weights, partitions, node count, CPU count, its `_BASES` entry)
_LAST_BASES: tuple | None = None


def _base_context(snap: Snapshot, total_cpus: int) -> tuple | None:
    """What a job's priority but its age, site and nice depends on besides the job's own fields,
    or None when that is the nodes' TRES too (PriorityWeightTRES: not kept across cycles)."""
    w = snap.weights
    if w.tres:
        return None
    return w, len(snap.nodes), total_cpus, tuple((p.name, p.priority_job_factor) for p in snap.partitions)


def priority_totals(snap: Snapshot, total_cpus: int | None = None) -> dict[int, int]:
    """The same priorities as `priorities`, only the totals: what a scheduling cycle needs.

    Everything but the age of a job is kept from one cycle to the next while the job (the same
    frozen object) and what else it depends on (weights, node and CPU counts, partition factors)
    stay the same: queues change little between cycles."""
    w = snap.weights
    if not w.active:
        return {}
    if total_cpus is None:
        total_cpus = sum(n.cpus for n in snap.nodes)
    global _LAST_BASES
    last = _LAST_BASES
    if (last is not None and last[0] is w and last[1] is snap.partitions and last[2] == len(snap.nodes)
            and last[3] == total_cpus):
        known = last[4]  # the same weights and partition objects: the same context
        key = None
    else:
        key = _base_context(snap, total_cpus)
        known = _BASES.get(key) if key is not None else None
    if known is None:
        known = {}
        if key is not None:
            if len(_BASES) > 8:
                _BASES.clear()
            _BASES[key] = known
    elif len(known) > 2 * len(snap.pending) + 4096:  # jobs of past cycles: forget them
        known.clear()
    if key is not None:
        _LAST_BASES = (w, snap.partitions, len(snap.nodes), total_cpus, known)
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


_BF_REASONS = (Reason.RESOURCES, Reason.PRIORITY)
_SECONDS: dict[float, float] = {}


def _seconds(limit: float) -> float:
    """A time limit in minutes as seconds (rounded to the microsecond), remembered: `round` with
    digits is slow, and a queue holds few distinct limits."""
    got = _SECONDS.get(limit)
    if got is None:
        if len(_SECONDS) > 65536:
            _SECONDS.clear()
        got = _SECONDS[limit] = round(limit * 60.0, 6)
    return got


class _NodeMap:
    """A snapshot's nodes by name, as a dict built when first read (most cycles never read it)."""

    __slots__ = ("_nodes", "_dict")

    def __init__(self, nodes: tuple[Node, ...]):
        self._nodes = nodes
        self._dict: dict[str, Node] | None = None

    def _d(self) -> dict[str, Node]:
        d = self._dict
        if d is None:
            d = self._dict = dict(zip(map(_NAME, self._nodes), self._nodes))
        return d

    def __contains__(self, name: str) -> bool:
        return name in self._d()

    def __getitem__(self, name: str) -> Node:
        return self._d()[name]

    def get(self, name: str, default: Node | None = None) -> Node | None:
        return self._d().get(name, default)

    def values(self):  # noqa: ANN201 - the dict's values view
        return self._d().values()


#: one entry of the cycle's queue: (sort key, pending job, None) or (sort key, None, a suspended
#: job waiting to resume)
_Item = tuple[tuple, "PendingJob | None", "RunningJob | None"]


class _Cycle:
    """The mutable state of one planning cycle over an immutable snapshot."""

    def __init__(self, snap: Snapshot):
        self.snap = snap
        self.cfg = snap.config
        ctx = self.ctx = _nodes_of(snap.nodes)
        self.out = Plan(priorities=priority_totals(snap, ctx.total_cpus))
        self.prio = self.out.priorities
        self.nodes = _NodeMap(snap.nodes)
        self.parts = {p.name: p for p in snap.partitions}
        self.tiers = {p.name: p.priority_tier for p in snap.partitions}
        self.info = {p.name: ctx.part(p) for p in snap.partitions}
        self.members = {name: i.members for name, i in self.info.items()}
        self.order, self.rank = ctx.order, ctx.rank
        #: available nodes with free CPUs, in preference order: the nodes the main pass may use.
        #: Their free capacity (`Free`) is built when something reads it, into `free`, which gets
        #: the others too when something asks for them (`fr`)
        self.roomd = ctx.room_by_name()
        self.open: dict[str, Any] = self.roomd.copy()  # Node or Free  # a Node: its Free is not built yet
        self.free: dict[str, Free] = {}
        self.extra = False  #: `free` holds nodes that were never open
        #: nodes that jobs took whole (no free CPUs left), their Free not built: (allocation, exclusive)
        self.taken: dict[str, tuple[NodeAlloc, bool]] = {}
        #: every open node idle (nothing in use): a whole-node job takes the first ones
        self.clean = not ctx.used_room
        self.memo: dict = {None: ctx.caps}
        for p in snap.partitions:
            self.memo[p.name] = ctx.verdicts(p, snap.def_mem_per_cpu)
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

    def key(self, job: PendingJob) -> tuple:
        return (not self.may_preempt(job), -self.tiers.get(job.partition, 0), 1,
                -self.prio.get(job.job_id, job.priority), job.submit_time, job.job_id)

    def queue(self) -> list[_Item]:
        items: list[Any]
        ids: Any
        prios: Any
        if self.cfg.preempt_qos or self.can_preempt:
            items = [(self.key(j), j, None) for j in self.snap.pending]
        else:  # no job may preempt: `key` without the call
            tiers, prio, pending = self.tiers, self.prio, self.snap.pending
            if (len(pending) > 8 and not self.stopped
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
        for r in self.snap.running if self.stopped else ():
            if r.suspended and not r.held_stopped:
                items.append(((r.partition not in self.can_preempt, -self.tiers.get(r.partition, 0), 0,
                               -r.priority, r.start_time, r.job_id), None, r))
        items.sort(key=_FIRST)
        return items

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

    def candidates(self, part: str):  # noqa: ANN201 - an iterator of Free, in preference order
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
        on an idle node of that name (`_Nodes.idle_alloc`), without building any Free."""
        if self.count_open(part) < _fewest_nodes(req):
            return None
        def_mem = self.snap.def_mem_per_cpu
        shape = self.ctx.shape
        if self.clean and shape is not None:
            k = _whole_nodes_of(req, shape, def_mem)
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

    # ------------------------------------------------------------------ main pass
    def main_pass(self, items: list[_Item]) -> None:
        snap, out = self.snap, self.out
        reasons = out.reasons
        statics = {name: info.statics(snap.def_mem_per_cpu, len(snap.pending)) for name, info in self.info.items()}
        # once every partition is blocked and nothing suspended waits in the queue, each job left
        # gets its static or limit reason, or Priority (`_waits`)
        lone = not self.stopped
        for at, (_, job, suspended) in enumerate(items):
            if suspended is not None:
                self.resume(suspended)
                continue
            assert job is not None  # an item holds a pending job or a suspended one
            part: Any = self.parts.get(job.partition)  # not None when there is no reason
            reason = self._reason(job, part, statics)
            if reason is not None:
                reasons[job.job_id] = reason
                continue
            if job.partition in self.blocked or self.members[part.name] <= self.fenced:
                reasons[job.job_id] = Reason.PRIORITY
                continue
            allocs = self.fit_open(job.request, part.name)
            if allocs is None and self.may_preempt(job):
                allocs = self.preempt(job, part)
            if allocs is None:
                out.reasons[job.job_id] = self.blocked_reason(part)
                self.block(part.name)
                if lone and len(items) - at > 8 and len(self.blocked) == len(self.parts):
                    self._waits(items, at + 1, statics)
                    return
                continue
            self.start(job, allocs)

    def _waits(self, items: list[_Item], at: int, statics: dict) -> None:
        """The main pass from `at` on when every partition is blocked and no item is a suspended
        job: the loop of `main_pass`, less what cannot happen then (a job without a static or limit
        reason is in a blocked partition, so it waits with Priority)."""
        reasons, parts, priority = self.out.reasons, self.parts, Reason.PRIORITY
        waiting: list[PendingJob] = []  #: those whose reason backfill tests them for, in queue order (`_to_test`)
        for _, job, _ in islice(items, at, None):
            assert job is not None  # no item from `at` on is a suspended job
            # `_reason`, its kept static reason read inline (a job without accounting limits)
            known = statics.get(job.partition)
            got = known.get(id(job)) if known is not None else None
            if got is not None and got[0] is job and not job.limits:
                reason = got[1]
            else:
                reason = self._reason(job, parts.get(job.partition), statics)
            if reason is None:
                reasons[job.job_id] = priority
                waiting.append(job)
            else:
                reasons[job.job_id] = reason
                if reason in _BF_REASONS:  # (a reason the store gave it)
                    waiting.append(job)
        self.waiting = (at, waiting)

    def _reason(self, job: PendingJob, part: Partition | None, statics: dict) -> Reason | None:
        """Why `job` cannot start whatever the nodes do: its static reason (kept per partition in
        `statics` where it does not depend on the time) or an accounting limit; None: neither."""
        known = statics.get(job.partition)
        got = known.get(id(job)) if known is not None else None
        if got is not None and got[0] is job:
            reason = got[1]
        else:
            snap = self.snap
            reason = static_reason(job, part, self.nodes, snap.def_mem_per_cpu, snap.now, self.memo)
            if known is not None and job.begin_time is None:  # then it does not depend on `now`
                known[id(job)] = (job, reason)
        if reason is None and job.limits:
            reason = self.over_limit(job)
        return reason

    def block(self, part: str) -> None:
        """The partition's first job waits: the rest of it waits behind it (`Priority`), and
        lower-ordered jobs of other partitions stay off its nodes, as Slurm's main scheduler does,
        so that they cannot starve it. Backfill, which knows when jobs end, may still use them."""
        self.blocked.add(part)
        members = self.members[part]
        self._fence.append(members)  # added to `fenced` when something reads it
        if self.info[part].whole:
            self.open.clear()
        else:
            for name in [n for n in self.open if n in members]:
                del self.open[name]

    def resume(self, r: RunningJob) -> None:
        """A suspended job resumes on its own CPUs and GPUs once they are free (it kept its memory)."""
        for a in r.allocs:
            f = self.fr(a.node)
            if (f is None or a.node in self.fenced or f.cpus < a.cpus
                    or not set(a.gpu_ids) <= set(f.gpu_ids)):
                self.block(r.partition)  # it goes first: its partition's pending jobs wait
                return
        self.clean = False
        for a in r.allocs:
            f = self.free[a.node]
            f.cpus -= a.cpus
            f.gpu_ids = [g for g in f.gpu_ids if g not in a.gpu_ids]
            f.idle = False
            if f.cpus <= 0:
                self.open.pop(a.node, None)
        self.out.resumes.append(r.job_id)

    # ------------------------------------------------------------------ preemption
    def mode(self, r: RunningJob) -> str:
        if self.cfg.preempt_qos:
            m = self.snap.qos_preempt_mode.get(r.qos, "OFF")
        else:
            p = self.parts.get(r.partition)
            m = p.preempt_mode if p else "OFF"
        return "CANCEL" if m == "REQUEUE" and not r.requeue else m

    def _victim_ok(self, r: RunningJob, job: PendingJob, tier: int, mem: frozenset[str]) -> bool:
        p = self.parts.get(r.partition)
        if self.cfg.preempt_qos:  # the preemptor's QOS names the victim's, whatever their partitions
            allowed = r.qos in self.snap.qos_preempt.get(job.qos, ()) and self.mode(r) != "OFF"
        else:
            allowed = p is not None and p.priority_tier < tier and p.preempt_mode != "OFF"
        return (allowed and not r.suspended and not r.preempting and r.job_id not in self.going
                and r.job_id not in self.suspending
                and self.snap.now - r.start_time >= self.cfg.preempt_exempt_time
                and any(a.node in mem for a in r.allocs))

    def _trial_fit(self, job: PendingJob, part: Partition, back: list[RunningJob]) -> tuple[NodeAlloc, ...] | None:
        """Would `job` fit if the jobs in `back` gave their resources back (suspended ones keep memory)?"""
        mem = self.members[part.name]
        trial: dict[str, Free] = {}
        for r in back:
            keep_mem = self.mode(r) == "SUSPEND" and r.job_id not in self.going
            for a in r.allocs:
                f0 = self.fr(a.node)
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
        cands = [f for name in self.order if name in mem and name not in self.fenced
                 and (f := trial.get(name) or (self.fr(name) if name in self.open else None)) is not None]
        return fit(job.request, cands, self.snap.def_mem_per_cpu)

    def preempt(self, job: PendingJob, part: Partition) -> tuple[NodeAlloc, ...] | None:
        """partition_prio: choose the fewest, lowest-priority, youngest lower-tier victims that make
        room (preempt/qos: of the QOSes the job's QOS may preempt, the oldest among equals).
        Returns allocations when the job can start now (all victims suspended), else None."""
        going = sorted(self.going.values(), key=lambda r: r.job_id)
        if going and self._trial_fit(job, part, going) is not None:
            return None  # earlier victims are still on their way out: wait for them
        mem = self.members[part.name]
        order: Callable[[RunningJob], tuple]
        if self.cfg.preempt_qos:  # lowest priority first; among equals the longest running (as 22.05 picks)
            order = lambda r: (r.priority, r.start_time, r.job_id)  # noqa: E731
        else:
            order = lambda r: (self.tiers.get(r.partition, 0), r.priority, -r.start_time, -r.job_id)  # noqa: E731
        pool = sorted((r for r in self.snap.running if self._victim_ok(r, job, part.priority_tier, mem)), key=order)
        chosen: list[RunningJob] = []
        for r in pool:
            chosen.append(r)
            if self._trial_fit(job, part, going + chosen) is not None:
                break
        else:
            return None
        for r in reversed(chosen[:-1]):  # only as many as needed: drop the most valuable first
            rest = [x for x in chosen if x is not r]
            if self._trial_fit(job, part, going + rest) is not None:
                chosen = rest
        for r in sorted(chosen, key=lambda r: r.job_id):
            mode = self.mode(r)
            p = self.parts.get(r.partition)
            self.out.preemptions.append(Preemption(r.job_id, job.job_id, mode, p.grace_time if p else 0))
            if mode == "SUSPEND":
                self.suspending.add(r.job_id)
                self._give_back(r)
            else:
                self.going[r.job_id] = r
        if any(self.mode(r) != "SUSPEND" for r in chosen):
            return None  # the preemptor starts once the cancelled or requeued victims are gone
        return self.fit_open(job.request, part.name)

    def _give_back(self, r: RunningJob) -> None:
        """A suspended victim's CPUs and GPUs are free for its preemptor; its memory stays held."""
        for a in r.allocs:
            f = self.fr(a.node)
            if f is None:
                continue
            f.cpus += a.cpus
            f.gpu_ids = sorted(set(f.gpu_ids) | set(a.gpu_ids))
        self.materialize()
        self.clean = False
        self.open = {name: f for name in self.order  # rebuilt: keeps the preference order
                     if (f := self.free.get(name)) is not None and f.cpus > 0 and name not in self.fenced}

    # ------------------------------------------------------------------ backfill
    def seconds(self, job: PendingJob) -> float | None:
        limit = job.time_limit
        if limit is None:
            p = self.parts.get(job.partition)
            limit = p.max_time if p else None
        return None if limit is None else _seconds(limit)

    def limit(self, job: PendingJob) -> float | None:
        """The seconds backfill plans `job` for (None: no limit)."""
        return _seconds(job.time_limit) if job.time_limit is not None else self.seconds(job)

    def _reach(self, now: float, job: PendingJob) -> float:
        """now + the seconds backfill plans `job` for: `CountMap.earliest` with only_now looks at
        the slots that begin before it (all of them when it has no limit)."""
        secs = self.limit(job)
        return math.inf if secs is None else now + secs

    def _holders(self) -> list[tuple[float | None, tuple[NodeAlloc, ...]]]:
        """(when, allocations) of everything that holds resources and will give them back."""
        now = self.snap.now
        running = self.snap.running
        if not self.going and not self.suspending and not self.stopped:
            out = [(r.end_time, r.allocs) for r in running]  # none preempting (else `going`)
        else:
            out = self._holders_slow()
        for job, allocs in self.started:
            secs = self.seconds(job)
            out.append((None if secs is None else now + secs, allocs))
        return out

    def _holders_slow(self) -> list[tuple[float | None, tuple[NodeAlloc, ...]]]:
        now = self.snap.now
        out: list[tuple[float | None, tuple[NodeAlloc, ...]]] = []
        for r in self.snap.running:
            if r.suspended or r.job_id in self.suspending:
                continue
            out.append((now if r.preempting or r.job_id in self.going else r.end_time, r.allocs))
        return out

    def _count_mode(self, jobs: list[PendingJob], holders: list) -> list[int] | None:
        """Whole-node backfill: when all nodes are alike, each one idle or held whole by one job,
        one node set for every partition, and every job to test takes whole nodes, nodes are
        interchangeable and backfill may plan with node counts (exact, and much cheaper).
        Returns the node count of each job (in the order of `jobs`), or None when the per-node
        time map is needed."""
        snap = self.snap
        if len(set(self.members.values())) != 1 or self.stopped:
            return None
        shape = self.ctx.shape
        if shape is None:
            return None
        free, open_ = self.free, self.open
        if any(not f.idle or f.cpus != shape[0] for name, f in free.items() if name in open_):
            return None
        # open nodes whose Free is not built yet: as `Free.of` would say (with nothing in use on
        # any node that had free CPUs when the cycle began, there is nothing to look at)
        if self.ctx.used_room and any(map(_in_use, [n for name, n in open_.items() if name not in free])):
            return None
        # every node idle or all its CPUs used, and as many whole-node allocations as busy nodes:
        # then each busy node is held by one job alone
        if self.ctx.partial:
            return None
        held = sum([len(r.allocs) for r in snap.running])
        if held != self.ctx.busy or any(any(map(ne, map(_CPUS, allocs), repeat(shape[0])))
                                        for _, allocs in self.started):
            return None
        seen: dict[int, int] = {}  #: id(request) -> its node count (the jobs hold their requests)
        def_mem = snap.def_mem_per_cpu
        if len(jobs) <= 16:
            sizes = []
            for job in jobs:
                req = job.request
                k = seen.get(id(req))
                if k is None:
                    k = seen[id(req)] = _whole_nodes_of(req, shape, def_mem)
                    if not k:
                        return None
                sizes.append(k)
            return sizes
        # long queues: once per distinct request (they hold few), in order of first use
        ids = [id(job.request) for job in jobs]
        for rid, job in dict(zip(ids, jobs)).items():
            k = seen[rid] = _whole_nodes_of(job.request, shape, def_mem)
            if not k:
                return None
        return [seen[i] for i in ids]

    def _to_test(self, items: list[_Item]) -> list[PendingJob]:
        """The jobs backfill tests: those waiting for resources or behind a higher-priority job, in
        queue order, at most bf_max_job_test of them."""
        reasons, limit = self.out.reasons, self.cfg.bf_max_job_test
        if self.waiting is not None:  # the items from `at` on are known: only those before it are looked at
            at, waiting = self.waiting
            return ([job for _, job, _ in islice(items, at) if job is not None
                     and reasons.get(job.job_id) in _BF_REASONS] + waiting)[:limit]
        if limit < 0:
            return [job for _, job, _ in items if job is not None and reasons.get(job.job_id) in _BF_REASONS][:limit]
        jobs: list[PendingJob] = []
        if limit:
            for _, job, _ in items:
                if job is not None and reasons.get(job.job_id) in _BF_REASONS:
                    jobs.append(job)
                    if len(jobs) == limit:
                        break
        return jobs

    def backfill(self, items: list[_Item]) -> None:
        cfg, snap, out = self.cfg, self.snap, self.out
        now = snap.now
        jobs = self._to_test(items)
        if not jobs:
            return
        # the main pass's fences do not apply: the time map keeps backfill off what waiting jobs need
        self._fence.clear()
        self._fenced.clear()
        free = self.free
        if self.extra:
            self.materialize()
            self.open = {name: free[name] for name in sorted((n for n, f in free.items() if f.cpus > 0),
                                                             key=self.rank.__getitem__)}
        else:  # the nodes open when the cycle began, in order, less those jobs have filled since
            open_ = self.open = self.roomd.copy()
            for name in self.taken:
                open_.pop(name, None)
            for name, f in free.items():
                if f.cpus <= 0:
                    open_.pop(name, None)
        holders = self._holders()
        counts = self._count_mode(jobs, holders)
        window = cfg.bf_window * 60.0
        if counts is not None:
            cm = CountMap(now, cfg.bf_resolution, window, len(self.open),
                          [(t, len(allocs)) for t, allocs in holders if t is not None])
            earliest, reserve = cm.earliest, cm.reserve
        else:
            tm = TimeMap(now, cfg.bf_resolution, window, {name: fo for name in self.order
                                                         if (fo := self.fr(name)) is not None})
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
        if self.only_starts and counts is not None:
            sizes = counts
            cnt = cm.cnt  # reserve changes it in place; cnt[0]: the nodes free now, which `earliest` checks first
            while last >= 0 and (sizes[last] > cnt[0] or earliest(sizes[last], self.limit(jobs[last]), True) is None):
                last -= 1
            track = True
            # the job at `last` can start now on the map as it is (`sure`), over the slots that begin
            # before `reach` (now + its seconds, the end `earliest` checks up to): a reservation that
            # begins at or after `reach` leaves those slots as they are, so it still can
            sure = last >= 0
            reach = self._reach(now, jobs[last]) if sure else now
        else:
            track = False
        for i, job in enumerate(jobs):
            if i > last:
                break
            out.bf_tested += 1
            if job.limits:
                over = self.over_limit(job)
                if over is not None:  # jobs started since the main pass took what it may use
                    out.reasons[job.job_id] = over
                    continue
            part = self.parts[job.partition]
            limit = job.time_limit
            secs = _seconds(limit) if limit is not None else self.seconds(job)
            only_now = easy and reserved  # EASY: later jobs start now or not at all
            if counts is not None:
                n = counts[i]
                t = earliest(n, secs, only_now)
                if t is None:
                    continue
                allocs = self.fit_open(job.request, part.name) if t == now else None
                if t == now and allocs is None:  # cannot happen while the counts are right
                    continue
            else:
                found = tm.earliest(job.request, self.members[part.name], self.rank, secs,
                                    requested_cpus(job.request), snap.def_mem_per_cpu, only_now)
                if found is None:
                    continue
                t, allocs = found
            if t == now:
                self.start(job, allocs)
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
                                            earliest(sizes[last], self.limit(jobs[last]), True) is None):
                            last -= 1
                        sure = last > i
                        if sure:
                            reach = self._reach(now, jobs[last])
            else:
                tm.reserve(t, secs, allocs)


def clear_caches() -> None:
    """Forget what cycles keep from one another (node order, partition-limit verdicts, priorities);
    for benchmarks."""
    global _LAST, _LAST_BASES
    _LIMITS.clear()
    _BASES.clear()
    _LAST_BASES = None
    _WHOLE.clear()
    _LAST = None
    _whole_nodes.cache_clear()


def plan(snap: Snapshot, backfill: bool | None = None, *, only_starts: bool = False) -> Plan:
    """One scheduling cycle. `backfill`: run the backfill pass after the main pass (default: as
    `snap.config.backfill` says, i.e. sched/backfill).

    `only_starts`: the caller reads only what the cycle starts, preempts and resumes (a trace
    replay): backfill may then stop once none of the jobs it has left to test can start now.
    `starts`, `backfilled`, `preemptions`, `resumes` and `priorities` are those of the full cycle;
    `start_times`, `bf_tested` and the accounting-limit reasons backfill gives lack the jobs it
    did not reach. (Whole-node backfill only: with the per-node time map it tests every job.)"""
    cyc = _Cycle(snap)
    cyc.only_starts = only_starts
    items = cyc.queue()
    cyc.main_pass(items)
    if snap.config.backfill if backfill is None else backfill:
        cyc.backfill(items)
    return cyc.out


__all__ = ["plan", "priorities", "priority_totals", "static_reason", "requested_cpus", "clear_caches", "Request",
           "Snapshot", "Plan"]
