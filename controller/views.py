"""Submit-time validation and the public views of nodes and partitions (pure over rows)."""

from __future__ import annotations

import json
from typing import Any

import hostlist

from slurmlet.controller.config import ClusterConfig
from slurmlet.controller.core.admit import partition_refusal
from slurmlet.controller.core.alloc import Free, fit
from slurmlet.controller.core.model import Node, natural_key
from slurmlet.controller.errors import InvalidRequest
from slurmlet.controller.store.base import compress, request_of

NOT_AVAILABLE = "Requested node configuration is not available"


def validate_submit(body: dict, config: ClusterConfig, node_rows: list[Any]) -> dict:
    """Slurm's submit-time checks. Returns the body with the partition filled in.

    Refusals carry Slurm's wording: an unknown partition, a node that no node can satisfy.
    Requests that merely exceed the partition (too many nodes) are accepted and stay pending,
    as slurmctld does.
    """
    # refused rather than run with the wrong semantics until they are implemented
    if body.get("array"):
        from slurmlet.common.grammar import OptError, parse_array
        try:
            tasks, _ = parse_array(body["array"], config.max_array_size)
        except OptError:
            raise InvalidRequest("Invalid job array specification") from None
        if not tasks:
            body = dict(body, array=None)
    n, per_node, most = body.get("ntasks"), body.get("ntasks_per_node"), body.get("nodes_max")
    if n and per_node and most and n > per_node * most:  # (-n16 --ntasks-per-node=4 -N2)
        raise InvalidRequest(NOT_AVAILABLE)
    part_name = body.get("partition")
    if part_name:
        # Slurm takes the first of a comma-separated list
        part_name = part_name.split(",")[0]
        part = config.partition(part_name)
        if part is None:
            raise InvalidRequest("Invalid partition name specified",
                                 pre=[f"invalid partition specified: {part_name}"])
    else:
        part = config.default_partition()
        if part is None:
            raise InvalidRequest("No partition specified or system default partition")
    body = dict(body, partition=part.name)
    view = _view(config, node_rows)
    known = view.known
    if body.get("nodelist"):
        try:
            want = hostlist.expand_hostlist(body["nodelist"])
        except hostlist.BadHostlist:
            raise InvalidRequest("Invalid node name specified") from None
        if any(n not in known for n in want):
            raise InvalidRequest("Invalid node name specified")
    if not known:
        return body  # no node has registered yet: nothing to check against
    req = request_of(body)
    members, capacity = view.partition(part)
    if body.get("nodelist") and not set(hostlist.expand_hostlist(body["nodelist"])) <= set(members):
        raise InvalidRequest(NOT_AVAILABLE)  # e.g. a login node: in no partition, it runs no jobs
    if not capacity:
        return body
    if config.enforce_part_limits != "NO":  # refused now rather than pending with a partition limit
        limit = body.get("time_limit")
        why = partition_refusal(req, limit if limit is not None else part.default_time,
                                part.max_time, part.max_nodes, capacity, config.def_mem_per_cpu or 0)
        if why is not None:
            raise InvalidRequest(why)
    single = _single_node_view(req)
    if not any(fit(single, [Free.empty(c)], config.def_mem_per_cpu or 0) for c in capacity):
        pre = []
        if req.mem_per_node and all(req.mem_per_node > c.memory for c in capacity):
            pre.append("Memory specification can not be satisfied")
        elif req.cpus_per_task * (req.ntasks_per_node or 1) > max(c.cpus for c in capacity):
            pre.append("CPU count per node can not be satisfied")
        raise InvalidRequest(NOT_AVAILABLE, pre=pre)
    return body


class _NodesView:
    """What submit-time checks read of the nodes, worked out once per node list: each submission
    would otherwise sort every node and build each partition's capacities (O(nodes) a submit)."""

    def __init__(self, config: ClusterConfig, node_rows: list[Any]):
        self.config, self.rows = config, node_rows
        self.known: dict[str, Any] = {r.name: r for r in node_rows}
        for nc in config.nodes:
            if nc.name not in self.known:
                self.known[nc.name] = None
        self.names = sorted(self.known, key=natural_key)
        self.features = config.node_features(node_rows)
        self.parts: dict[str, tuple[list[str], list[Node]]] = {}

    def partition(self, part: Any) -> tuple[list[str], list[Node]]:
        """A partition's member names, and the capacities of those known."""
        got = self.parts.get(part.name)
        if got is None:
            members = self.config.partition_nodes(part, self.names, self.features)
            capacity = [c for c in (_capacity(n, self.known.get(n), self.config) for n in members) if c is not None]
            got = self.parts[part.name] = (members, capacity)
        return got


_last_view: list[_NodesView] = []


def _view(config: ClusterConfig, node_rows: list[Any]) -> _NodesView:
    """The view of these very rows under this very configuration: the store hands out the same
    list until a node registers (JobStore.capacity_rows); any other list or config is a new view."""
    if _last_view and _last_view[0].rows is node_rows and _last_view[0].config is config:
        return _last_view[0]
    v = _NodesView(config, node_rows)
    _last_view[:] = [v]
    return v


def _single_node_view(req):  # noqa: ANN001, ANN202
    """What one node of the job needs at least (one task, per-node GPUs and memory)."""
    from dataclasses import replace
    return replace(req, nodes_min=1, nodes_max=1, ntasks=None,
                   ntasks_per_node=req.ntasks_per_node or 1, nodelist=(), exclude=(),
                   gpus=None, gpus_per_node=req.gpus_per_node or (-(-req.gpus // req.nodes_min) if req.gpus else None))


def _capacity(name: str, row: Any, config: ClusterConfig) -> Node | None:
    nc = config.node(name)
    if row is not None:
        return Node(name=name, cpus=row.cpus, memory=row.memory, gpus=row.gpus, gpu_type=row.gpu_type)
    if nc is not None and nc.cpus:
        return Node(name=name, cpus=nc.cpus, memory=nc.real_memory or 1, gpus=nc.gpus or 0, gpu_type=nc.gpu_type)
    return None


def node_public(rows: list[Any], active: list[Any], config: ClusterConfig, now: float,
                up: Any) -> list[dict]:
    """NodePublic dicts: capacity, what is allocated and Slurm's node state."""
    use: dict[str, list] = {}
    for r in active:
        for a in json.loads(r.alloc or "[]"):
            u = use.setdefault(a["node"], [0, 0, 0, 0])
            u[0] += a["cpus"]
            u[1] += a["memory"]
            u[2] += len(a["gpu_ids"])
            u[3] += 1
    parts_of: dict[str, list[str]] = {}
    names = [r.name for r in rows] + [n.name for n in config.nodes if n.name not in {r.name for r in rows}]
    features = config.node_features(rows)
    for p in config.partitions:
        for n in config.partition_nodes(p, names, features):
            parts_of.setdefault(n, []).append(p.name)
    out = []
    by_name = {r.name: r for r in rows}
    for name in sorted(names, key=natural_key):
        r = by_name.get(name)
        u = use.get(name, [0, 0, 0, 0])
        if r is None:
            nc = config.node(name)
            assert nc is not None  # (a node without a row is one of the configuration's)
            out.append(_node_dict(name, nc.addr or name, name, nc.cpus or 1, nc.real_memory or 1, nc.gpus or 0,
                                  nc.gpu_type, "DOWN", "Not responding", u, parts_of.get(name, []), None,
                                  features.get(name)))
            continue
        if r.admin_state == "DOWN" or not up(r, now):
            state, reason = "DOWN", r.reason or ("Not responding" if r.admin_state == "UP" else None)
        elif r.admin_state == "DRAIN":
            state, reason = ("DRAINING" if u[3] else "DRAINED"), r.reason
        elif u[0] >= r.cpus:
            state, reason = "ALLOCATED", None
        elif u[3]:
            state, reason = "MIXED", None
        else:
            state, reason = "IDLE", None
        out.append(_node_dict(name, r.addr, r.hostname, r.cpus, r.memory, r.gpus, r.gpu_type, state, reason, u,
                              parts_of.get(name, []), r, features.get(name)))
    return out


def _node_dict(name, addr, hostname, cpus, memory, gpus, gpu_type, state, reason, u, parts, r, features):  # noqa: ANN001, ANN202
    return {
        "name": name, "addr": addr, "hostname": hostname, "state": state, "reason": reason,
        "reason_time": getattr(r, "reason_time", None), "cpus": cpus, "cpus_alloc": u[0],
        "real_memory": memory, "alloc_memory": u[1],
        "free_memory": getattr(r, "free_mem", None), "gpus": gpus, "gpus_alloc": u[2],
        "gres": (f"gpu:{gpu_type}:{gpus}" if gpu_type else f"gpu:{gpus}") if gpus else None,
        "gpu_type": gpu_type, "partitions": parts, "arch": getattr(r, "arch", None),
        "os": getattr(r, "os", None), "version": getattr(r, "version", None),
        "cpu_load": getattr(r, "cpu_load", None), "boot_time": getattr(r, "boot_time", None),
        "slurmd_start_time": getattr(r, "registered_at", None), "last_busy": getattr(r, "last_busy", None),
        "weight": 1, "jobs": u[3], "pool": getattr(r, "pool", None),
        # the pool is the node's feature, as a dynamic Slurm node's `slurmd -Z --conf Feature=POOL`
        "features": ",".join(features) if features else None,
    }


def partition_public(config: ClusterConfig, nodes: list[dict]) -> list[dict]:
    by_name = {n["name"]: n for n in nodes}
    names = list(by_name)
    features = {n["name"]: tuple((n.get("features") or "").split(",")) for n in nodes}
    out = []
    for p in config.partitions:
        members = [n for n in config.partition_nodes(p, names, features)]
        ms = [by_name[n] for n in members if n in by_name]
        out.append({
            "name": p.name, "nodes": compress(members), "node_names": members, "default": p.default,
            "state": p.state, "max_time": p.max_time, "default_time": p.default_time,
            "priority_tier": p.priority_tier, "priority_job_factor": p.priority_job_factor,
            "preempt_mode": (p.preempt_mode or config.preempt_mode).upper(),
            "grace_time": p.grace_time, "max_nodes": p.max_nodes, "min_nodes": p.min_nodes,
            "total_cpus": sum(n["cpus"] for n in ms), "total_nodes": len(members),
            "total_memory": sum(n["real_memory"] for n in ms), "total_gpus": sum(n["gpus"] for n in ms),
        })
    return out
