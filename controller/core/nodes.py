"""What cycles derive from a snapshot's nodes, kept in the caller's `Memo` across cycles.

`nodes_of` gives a cycle its `Nodes`: the last cycle's derived data when the nodes' capacities are
the same, updated for the nodes whose use changed. Also the sizes of requests on those nodes
(`requested_cpus`, `fewest_nodes`, `whole_nodes_of`) and a lazy by-name view of the nodes (`NodeMap`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence, ValuesView
from itertools import compress
from operator import and_, attrgetter, itemgetter, lt, not_
from typing import Any, TypeVar

from .alloc import Free, _task_counts, _try_node, tasks_per_node
from .memo import Memo
from .model import Node, NodeAlloc, Partition, PendingJob, Reason, Request, natural_key

#: a node's capacities: (name, CPUs, memory, GPUs, weight, available)
Caps = tuple[str, int, int, int, int, bool]
#: a partition's limit verdicts (see `limits_of`): id(request) -> (request, verdict) and request -> verdict
Verdicts = dict[Any, Any]
_T = TypeVar("_T")

CAPS = attrgetter("name", "cpus", "memory", "gpus", "weight", "available")
_NAME = attrgetter("name")
_USED = attrgetter("cpus_used")
_CPUS = attrgetter("cpus")
_EXCLUSIVE = attrgetter("exclusive_used")
_FIRST = itemgetter(0)


def _uniform(caps: tuple[Caps, ...]) -> tuple[int, int, int] | None:
    """The one (cpus, memory, gpus) shape of the cluster's nodes, if they are all alike and up."""
    shapes = {c[1:4] for c in caps}
    return shapes.pop() if len(shapes) == 1 and all(c[5] for c in caps) else None



def limits_of(memo: Memo, part: Partition, caps: tuple[Caps, ...], def_mem: int) -> Verdicts:
    """The verdict cache of a partition: keyed by request identity (to a (request, verdict) pair)
    and by request value (to the verdict)."""
    key = (part, def_mem, caps)
    got = memo.limits.get(key)
    if got is None:
        if len(memo.limits) > 64:
            memo.limits.clear()
        got = memo.limits[key] = {}
    return got


class PartInfo:
    """What cycles derive from one partition and the nodes' capacities."""

    __slots__ = ("part", "members", "whole", "down", "verdicts", "static")

    def __init__(self, part: Partition, names: frozenset[str], available: dict[str, bool]):
        self.part = part
        self.members = frozenset(part.nodes)
        self.whole = self.members >= names  #: every node of the cluster is in it
        down = [n for n in part.nodes if n in available and not available[n]]
        self.down = bool(down) and len(down) >= len(part.nodes)  #: all its nodes are unavailable
        self.verdicts: dict[int, Verdicts] = {}  #: per DefMemPerCPU: see `limits_of`
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


def in_use(n: Node) -> bool:
    """Anything allocated on the node (`Free.of` would not call it idle)."""
    return bool(n.cpus_used or n.memory_used or n.exclusive_used or (n.gpus and n.gpus_used))


class Nodes:
    """What cycles derive from the nodes.

    From their capacities (name, CPUs, memory, GPUs, weight, availability), kept from one cycle to
    the next while those do not change, as a cluster's nodes rarely do: the preference order
    (weight, natural name) and each node's rank, the positions of the available nodes in that
    order, the one node shape (when all are alike), and per partition its members, whether it is
    down and its partition-limit verdicts.

    From what is in use, per snapshot, updated from the last snapshot's for the nodes that
    changed (a cycle's starts and ends touch few): which available nodes have free CPUs (`keep`,
    in preference order; `room_by_name` lists them), how many nodes have CPUs in use (`busy`),
    how many have some but not all of them in use (`partial`), how many of the nodes with free
    CPUs have anything in use (`used_room`)."""

    __slots__ = ("nodes", "caps", "order", "rank", "avail", "shape", "total_cpus", "parts", "names", "up",
                 "busy", "partial", "used_room", "allocs", "roomd", "keep", "at", "seen", "slot", "slot_names")
    order: tuple[str, ...]
    rank: dict[str, int]
    avail: tuple[int, ...]
    shape: tuple[int, int, int] | None
    total_cpus: int
    parts: dict[str, PartInfo]
    names: frozenset[str]
    up: dict[str, bool]
    allocs: dict[tuple[int, int, int], tuple[Request, dict[str, NodeAlloc]]]
    at: list[int]
    seen: dict[tuple[int, int], Node]
    slot: dict[str, int]
    slot_names: tuple[str, ...]

    def __init__(self, nodes: tuple[Node, ...], caps: tuple[Caps, ...], same: Nodes | None = None,
                 changed: list[int] | None = None):
        """`same`: a snapshot's with the same capacities; `changed`: the positions where its nodes
        are not the same objects as these (None: unknown)."""
        self.nodes = nodes
        self.caps = caps
        self.roomd: Room | None = None
        if same is not None:  # the same capacities: share what was derived from them
            self.order, self.rank, self.avail, self.shape = same.order, same.rank, same.avail, same.shape
            self.total_cpus, self.parts, self.names, self.up = same.total_cpus, same.parts, same.names, same.up
            self.allocs, self.at, self.seen = same.allocs, same.at, same.seen
            self.slot, self.slot_names = same.slot, same.slot_names
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
        self.slot_names = tuple(caps[i][0] for i in self.avail)  #: index in `avail` -> name
        self.slot = {n: r for r, n in enumerate(self.slot_names)}  #: name -> index in `avail`
        self.shape = _uniform(caps)
        self.total_cpus = sum(c[1] for c in caps)
        self.parts = {}
        self.names = frozenset(c[0] for c in caps)
        self.up = {c[0]: c[5] for c in caps}
        self.allocs = {}  #: see `idle_allocs`
        self._use(None, None)

    def _use(self, last: Nodes | None, changed: list[int] | None) -> None:
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
            self.used_room = sum(map(in_use, compress(ordered, keep)))
        else:
            keep = self.keep = last.keep[:]
            olds, news = pick(last.nodes, changed), pick(nodes, changed)
            was, now = list(map(_USED, olds)), list(map(_USED, news))
            self.busy = last.busy + was.count(0) - now.count(0)
            self.partial = self.partial_of(last.partial, was, now, full)
            used_room = last.used_room
            at = self.at
            for i, old, new in zip(changed, olds, news):  # (`in_use`, inline)
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

    def same_caps(self, nodes: tuple[Node, ...], changed: list[int]) -> bool | None:
        """Whether the nodes at `changed` have the capacities of those positions (None: not
        checked, too many to check one by one). A node object found so at a position is
        remembered (and held, so that its id stays its own): nodes that come and go between the
        same few objects are checked once."""
        seen = self.seen
        keys = list(zip(changed, map(id, pick(nodes, changed))))
        if all(map(seen.__contains__, keys)):
            return True
        if not _few(changed, nodes):
            return None
        caps = self.caps
        for (i, _), n in zip(keys, pick(nodes, changed)):
            if CAPS(n) != caps[i]:
                return False
        if len(seen) > 4 * len(caps) + 64:
            seen.clear()
        seen.update(zip(keys, pick(nodes, changed)))
        return True

    @staticmethod
    def partial_of(before: int, was: list[int], now: list[int], full: int) -> int:
        """How many nodes have some but not all CPUs in use, after `was` became `now`."""
        if full:
            return before + was.count(0) + was.count(full) - now.count(0) - now.count(full)
        return before + was.count(0) - now.count(0)

    def part(self, p: Partition) -> PartInfo:
        got = self.parts.get(p.name)
        if got is None or (got.part is not p and got.part != p):
            if len(self.parts) > 256:
                self.parts.clear()
            got = self.parts[p.name] = PartInfo(p, self.names, self.up)
        elif got.part is not p:  # an equal partition: later cycles that pass this one find it by identity
            got.part = p
        return got

    def verdicts(self, memo: Memo, p: Partition, def_mem: int) -> Verdicts:
        info = self.part(p)
        got = info.verdicts.get(def_mem)
        if got is None:
            got = info.verdicts[def_mem] = limits_of(memo, p, self.caps, def_mem)
        return got

    def available_in_order(self, nodes: tuple[Node, ...]) -> list[Node]:
        """The available nodes of `nodes` (the snapshot's, in its order), in preference order."""
        return pick(nodes, self.avail)

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
        tasks = tasks_per_node(req)
        assert tasks is not None, "a whole-node request has fixed tasks per node"
        a = _try_node(Free.of(node), req, tasks, nnodes, def_mem)
        assert a is not None, "a whole-node request fits on an idle node"
        table[node.name] = a
        return a

    def room_by_name(self) -> Room:
        """The available nodes with free CPUs by name, in preference order (not to be changed:
        a cycle changes its `copy`)."""
        got = self.roomd
        if got is None:
            # (`keep` is not changed once built: the next snapshot's Nodes changes a copy)
            got = self.roomd = Room(self.nodes, self.avail, self.slot, self.slot_names, self.keep,
                                    self.keep.count(1))
        return got


_NONE: Any = object()


class Room:
    """Nodes by name, in preference order, read as a dict reads (`len`, `in`, `[]`, `get`, `pop`,
    `del`, `clear`, `copy`, iteration over names and `items`): the available nodes of a snapshot
    whose byte in `keep` (one per available node, in preference order) is set. Built and
    copied at the cost of that byte string, not of a dict of the nodes: a cycle copies the
    nodes with free CPUs (`Nodes.room_by_name`) and takes them off one by one; most of them it
    never reads."""

    __slots__ = ("nodes", "avail", "slot", "names", "keep", "n")

    def __init__(self, nodes: tuple[Node, ...], avail: tuple[int, ...], slot: dict[str, int],
                 names: tuple[str, ...], keep: bytearray, n: int):
        self.nodes = nodes  #: the snapshot's
        self.avail = avail  #: index in `keep` -> position in `nodes`
        self.slot = slot  #: name -> index in `keep`
        self.names = names  #: index in `keep` -> name
        self.keep = keep
        self.n = n  #: bytes set in `keep`

    def __len__(self) -> int:
        return self.n

    def __contains__(self, name: object) -> bool:
        r = self.slot.get(name)  # type: ignore[call-overload]
        return r is not None and self.keep[r] != 0

    def get(self, name: str, default: Node | None = None) -> Node | None:
        r = self.slot.get(name)
        if r is None or not self.keep[r]:
            return default
        return self.nodes[self.avail[r]]

    def __getitem__(self, name: str) -> Node:
        r = self.slot.get(name)
        if r is None or not self.keep[r]:
            raise KeyError(name)
        return self.nodes[self.avail[r]]

    def __delitem__(self, name: str) -> None:
        r = self.slot.get(name)
        if r is None or not self.keep[r]:
            raise KeyError(name)
        self.keep[r] = 0
        self.n -= 1

    def pop(self, name: str, default: Any = _NONE) -> Any:
        r = self.slot.get(name)
        if r is None or not self.keep[r]:
            if default is _NONE:
                raise KeyError(name)
            return default
        self.keep[r] = 0
        self.n -= 1
        return self.nodes[self.avail[r]]

    def clear(self) -> None:
        self.keep = bytearray(len(self.keep))
        self.n = 0

    def copy(self) -> Room:
        return Room(self.nodes, self.avail, self.slot, self.names, self.keep[:], self.n)

    def __iter__(self) -> Iterator[str]:
        keep, names = self.keep, self.names
        r = keep.find(1)
        while r >= 0:
            yield names[r]
            r = keep.find(1, r + 1)

    def items(self) -> Iterator[tuple[str, Node]]:
        keep, names, nodes, avail = self.keep, self.names, self.nodes, self.avail
        r = keep.find(1)
        while r >= 0:
            yield names[r], nodes[avail[r]]
            r = keep.find(1, r + 1)


def _few(changed: list[int], nodes: tuple[Node, ...]) -> bool:
    """Few enough changed nodes to update what was derived from the last snapshot's, node by node."""
    return len(changed) <= 64 or len(changed) <= len(nodes) // 8


def pick(xs: Sequence[_T], positions: Sequence[int]) -> list[_T]:
    """The items of `xs` at `positions`, in that order."""
    if len(positions) < 2:
        return [xs[i] for i in positions]
    return list(itemgetter(*positions)(xs))


def nodes_of(memo: Memo, nodes: tuple[Node, ...]) -> Nodes:
    """The derived node data of a cycle: the last cycle's when the capacities are the same (the
    same tuple, or the same nodes but those that changed, changed only in what is in use)."""
    last = memo.nodes
    if last is not None:
        if last.nodes is nodes:
            return last
        if len(last.nodes) == len(nodes):
            was = last.nodes
            changed = [i for i in range(len(nodes)) if nodes[i] is not was[i]]
            if last.same_caps(nodes, changed):
                got = memo.nodes = Nodes(nodes, last.caps, last, changed)
                return got
    caps = tuple(map(CAPS, nodes))  # many changed (a store builds every node anew): all at once
    got = memo.nodes = Nodes(nodes, caps, last if last is not None and caps == last.caps else None)
    return got


def whole_nodes(req: Request, cpus: int, memory: int, gpus: int, def_mem: int) -> int:
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


def whole_nodes_of(memo: Memo, req: Request, shape: tuple[int, int, int], def_mem: int) -> int:
    """`whole_nodes` for a node shape, kept in `memo` by the request's identity (hashing a Request
    costs more than the check), then by its value."""
    got = memo.whole.get(id(req))
    if got is None or got[0] is not req or got[1] != shape or got[2] != def_mem:
        if len(memo.whole) > 4096:
            memo.whole.clear()
        got = memo.whole[id(req)] = (req, shape, def_mem, _whole_nodes_by_value(memo, req, shape, def_mem))
    return got[3]


def fewest_nodes(req: Request) -> int:
    """The fewest nodes any allocation `fit` finds for `req` has."""
    nnodes, counts = _task_counts(req)
    if counts is not None:
        return nnodes
    assert req.ntasks is not None  # counts are None only with ntasks and no ntasks_per_node
    return min(req.nodes_min, req.ntasks)


def requested_cpus(req: Request) -> int:
    """The fewest CPUs any layout of `req` takes."""
    return (req.ntasks or req.nodes_min * (req.ntasks_per_node or 1)) * req.cpus_per_task


def _whole_nodes_by_value(memo: Memo, req: Request, shape: tuple[int, int, int], def_mem: int) -> int:
    key = (req, *shape, def_mem)
    got = memo.whole_by_value.get(key)
    if got is None:
        if len(memo.whole_by_value) >= 4096:
            memo.whole_by_value.clear()
        got = memo.whole_by_value[key] = whole_nodes(req, *shape, def_mem)
    return got


class NodeMap:
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

    def values(self) -> ValuesView[Node]:
        return self._d().values()
