"""Choosing nodes, CPUs, memory and GPU indices for one job (first fit, Slurm's task layouts)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .model import Node, NodeAlloc, Request


@dataclass(slots=True)
class Free:
    """Mutable free capacity of one node during a planning pass."""

    name: str
    cpus: int
    memory: int
    gpu_ids: list[int]
    total_cpus: int
    total_memory: int
    total_gpus: int
    idle: bool  # nothing allocated: an --exclusive job may take it
    weight: int = 1
    gpu_type: str | None = None

    @classmethod
    def of(cls, n: Node) -> Free:
        if not n.gpus and not n.exclusive_used:  # the common CPU-only node, without the set work
            return cls(n.name, max(0, n.cpus - n.cpus_used), max(0, n.memory - n.memory_used), [], n.cpus,
                       n.memory, 0, n.cpus_used == 0 and n.memory_used == 0, n.weight, n.gpu_type)
        used = set(n.gpus_used)
        cpus_free = 0 if n.exclusive_used else n.cpus - n.cpus_used
        return cls(
            name=n.name,
            cpus=max(0, cpus_free),
            memory=0 if n.exclusive_used else max(0, n.memory - n.memory_used),
            gpu_ids=[] if n.exclusive_used else [i for i in range(n.gpus) if i not in used],
            total_cpus=n.cpus,
            total_memory=n.memory,
            total_gpus=n.gpus,
            idle=n.cpus_used == 0 and not n.gpus_used and n.memory_used == 0 and not n.exclusive_used,
            weight=n.weight,
            gpu_type=n.gpu_type,
        )

    @classmethod
    def empty(cls, n: Node) -> Free:
        """The node with nothing running: for 'could this job ever fit' checks."""
        return cls(n.name, n.cpus, n.memory, list(range(n.gpus)), n.cpus, n.memory, n.gpus, True, n.weight,
                   n.gpu_type)

    def take(self, a: NodeAlloc, exclusive: bool) -> None:
        if exclusive:
            self.cpus, self.memory, self.gpu_ids = 0, 0, []
        else:
            self.cpus -= a.cpus
            self.memory -= a.memory
            self.gpu_ids = [g for g in self.gpu_ids if g not in a.gpu_ids]
        self.idle = False


def _mem_for(req: Request, cpus: int, gpus: int, def_mem_per_cpu: int) -> int:
    if req.mem_per_node is not None:
        return req.mem_per_node
    if req.mem_per_gpu is not None:
        return req.mem_per_gpu * gpus
    if req.mem_per_cpu is not None:
        return req.mem_per_cpu * cpus
    return def_mem_per_cpu * cpus


def _gpus_for(req: Request, tasks: int, nnodes: int) -> int:
    if req.gpus_per_node:
        return req.gpus_per_node
    if req.gpus_per_task:
        return req.gpus_per_task * tasks
    if req.gpus:
        return -(-req.gpus // nnodes)
    return 0


def _try_node(f: Free, req: Request, tasks: int, nnodes: int, def_mem: int) -> NodeAlloc | None:
    cpus = (1 if req.overcommit else tasks) * req.cpus_per_task  # -O: the tasks share one task's CPUs
    if cpus > (f.total_cpus if req.exclusive else f.cpus):  # the cheap test first: most misses are here
        return None
    gpus = _gpus_for(req, tasks, nnodes)
    if gpus and req.gpu_type and (f.gpu_type or "").lower() != req.gpu_type.lower():
        return None
    if req.cpus_per_gpu and gpus:
        cpus = max(cpus, req.cpus_per_gpu * gpus)
    if req.mincpus:
        cpus = max(cpus, req.mincpus)
    mem = _mem_for(req, cpus, gpus, def_mem)
    if req.exclusive:
        if not f.idle or cpus > f.total_cpus or mem > f.total_memory or gpus > f.total_gpus:
            return None
        mem_alloc = f.total_memory if req.mem_per_node in (None, 0) else mem
        return NodeAlloc(f.name, f.total_cpus, mem_alloc, tuple(range(f.total_gpus)), tasks)
    if cpus > f.cpus or mem > f.memory or gpus > len(f.gpu_ids):
        return None
    if req.mem_per_node == 0:  # --mem=0: all of the node's memory
        if f.memory < f.total_memory:
            return None
        mem = f.total_memory
    return NodeAlloc(f.name, cpus, mem, tuple(f.gpu_ids[:gpus]), tasks)


def _task_counts(req: Request) -> tuple[int, list[int] | None]:
    """Node count and tasks per node for fixed layouts; None when tasks are packed greedily."""
    if req.ntasks_per_node is not None:
        n = req.nodes_min
        if req.ntasks is not None:
            n = max(n, -(-req.ntasks // req.ntasks_per_node))
        return n, [req.ntasks_per_node] * n
    if req.ntasks is None:
        return req.nodes_min, [1] * req.nodes_min
    return 0, None


def tasks_per_node(req: Request) -> int | None:
    """The tasks on each node of a fixed layout (every count `_task_counts` gives), without
    building the list; None when tasks are packed greedily."""
    if req.ntasks_per_node is not None:
        return req.ntasks_per_node
    return 1 if req.ntasks is None else None


def fit(req: Request, free: Iterable[Free], def_mem: int) -> tuple[NodeAlloc, ...] | None:
    """First fit of `req` over `free` (already in preference order); None if it does not fit now.

    `-w` nodes are taken first and must all fit; `-x` nodes are never used. `free` may be an
    iterator: without -w or -x, it is read only as far as the fit needs.
    """
    cands: Iterable[Free] = free
    if req.exclude or req.nodelist:
        kept = [f for f in free if f.name not in req.exclude]
        if req.nodelist:
            pos = {n: i for i, n in enumerate(req.nodelist)}
            kept.sort(key=lambda f: (f.name not in pos, pos.get(f.name, 0)))
            if sum(1 for f in kept if f.name in pos) < len(req.nodelist):
                return None
        cands = kept
    nnodes, counts = _task_counts(req)
    if counts is not None:
        out: list[NodeAlloc] = []
        for f in cands if nnodes else ():
            a = _try_node(f, req, counts[len(out)], nnodes, def_mem)
            if a is None:
                if f.name in req.nodelist:
                    return None
                continue
            out.append(a)
            if len(out) == nnodes:
                break
        if len(out) < nnodes or (req.nodelist and len(req.nodelist) > nnodes):
            return None
        return tuple(out)
    return _fit_packed(req, cands, def_mem)


def _fit_packed(req: Request, cands: Iterable[Free], def_mem: int) -> tuple[NodeAlloc, ...] | None:
    """`-n N` without tasks per node: pack tasks onto as few nodes as possible, as Slurm's
    cons_tres does. With `-N M` each node takes what it can while leaving one task for each node
    still to come (`-N2 -n4` on empty 8-CPU nodes: 3,1), and never more than M nodes."""
    assert req.ntasks is not None
    left = req.ntasks
    need = min(req.nodes_min, req.ntasks)  # -N3 -n2 runs on 2 nodes, as sbatch warns
    out: list[NodeAlloc] = []
    limit = req.nodes_max if req.nodes_max is not None else need if req.nodes_min > 1 else None
    for f in cands:
        if left == 0 or (limit is not None and len(out) == limit):
            break
        per_cpu = req.cpus_per_task
        can = f.total_cpus // per_cpu if req.exclusive and f.idle else f.cpus // per_cpu
        if req.mem_per_cpu:
            can = min(can, (f.total_memory if req.exclusive else f.memory) // (req.mem_per_cpu * per_cpu))
        if req.gpus_per_task:
            can = min(can, len(f.gpu_ids) // req.gpus_per_task)
        tasks = min(can, left - max(0, need - len(out) - 1))
        while tasks > 0:
            a = _try_node(f, req, tasks, max(1, len(out) + 1), def_mem)
            if a is not None:
                out.append(a)
                left -= tasks
                break
            tasks -= 1
        else:
            if f.name in req.nodelist:
                return None
    if left > 0 or len(out) < need:
        return None
    return tuple(out)


def partition_misfit(req: Request, max_nodes: int | None, members: list[Node], def_mem: int) -> str | None:
    """Why `req` can never run on a partition of these `members` (in order), even all empty: "nodes"
    (more nodes than it has, or than its MaxNodes), "cpus" (more CPUs than all of them), "fit" (no
    layout fits); None if it can. The scheduler's partition-limit reason and EnforcePartLimits'
    refusal at submission both read it."""
    if req.nodes_min > len(members) or (max_nodes is not None and req.nodes_min > max_nodes):
        return "nodes"
    if req.ntasks and req.ntasks * req.cpus_per_task > sum(n.cpus for n in members):
        return "cpus"
    if fit(req, map(Free.empty, members), def_mem) is None:  # (read only as far as the fit needs)
        return "fit"
    return None
