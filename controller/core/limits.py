"""Accounting limits (AccountingStorageEnforce=limits), as pure functions over TRES counts.

A limit that holds while jobs run (GrpTRES, GrpJobs, MaxJobsPerUser, MaxTRESPerUser, ...) is a
`Counter`: what the running jobs charging it already hold, and its cap. The store builds one per
(QOS or association, user where the limit is per user, TRES) and tells each pending job which
counters it charges; the core checks them before placing a job and charges them when it starts
one, so two jobs of one user cannot both start past MaxJobsPerUser in one cycle.

Per-job limits (MaxTRESPerJob, MaxWall) never change while a job waits: the store checks them
with `per_job_reason` and they reach the core as a fixed reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from .model import NodeAlloc, Reason, Request

#: the TRES slurmlet counts, in Slurm's order (its TRES ids: cpu=1 mem=2 node=4 billing=5, gres after)
TRES_ORDER = ("cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages", "gres/gpu")
_MEM_UNITS: Final = MappingProxyType({"": 1, "M": 1, "G": 1024, "T": 1024 * 1024})


class TresError(ValueError):
    """A malformed TRES string (`cpu=4,mem=10G,gres/gpu=2`)."""


def _items(text: str) -> Iterator[tuple[str, str, str, str]]:
    for item in (text or "").split(","):
        item = item.strip()
        if item:
            name, eq, value = item.partition("=")
            yield item, name.strip().lower(), eq, value


def parse_tres(text: str, *, allow_clear: bool = False) -> dict[str, int]:
    """`cpu=4,mem=10G,node=2,gres/gpu=2` -> {'cpu': 4, 'mem': 10240, 'node': 2, 'gres/gpu': 2}.

    Memory is in MB (suffixes M, G, T). `gpu=2` means `gres/gpu=2`. With `allow_clear`, `-1`
    removes a TRES from a limit (sacctmgr modify ... set GrpTRES=cpu=-1)."""
    out: dict[str, int] = {}
    for item, name, eq, value in _items(text):
        if not eq or not name or not value.strip():
            raise TresError(f"bad TRES {item!r}: expected NAME=COUNT")
        if name == "gpu" or name.startswith("gpu:"):
            name = "gres/" + name
        if name not in TRES_ORDER and not name.startswith("gres/"):
            raise TresError(f"unknown TRES {name!r}")
        v = value.strip().upper()
        unit = v[-1] if v[-1] in "MGT" else ""
        num = v[:-1] if unit else v
        try:
            n = int(num)
        except ValueError:
            raise TresError(f"bad TRES count {item!r}") from None
        if n == -1 and allow_clear:
            out[name] = -1
            continue
        if n < 0:
            raise TresError(f"bad TRES count {item!r}: must not be negative")
        if unit and name != "mem":
            raise TresError(f"bad TRES count {item!r}")
        out[name] = n * _MEM_UNITS[unit] if name == "mem" else n
    return out


def tres_text(tres: dict[str, int] | None) -> str:
    """The reverse of `parse_tres`, in Slurm's TRES order (memory in M, or G when whole)."""
    if not tres:
        return ""
    keys = sorted(tres, key=lambda k: (TRES_ORDER.index(k) if k in TRES_ORDER else len(TRES_ORDER), k))
    parts = []
    for k in keys:
        v = tres[k]
        if k == "mem":
            parts.append(f"mem={v // 1024}G" if v and v % 1024 == 0 else f"mem={v}M")
        else:
            parts.append(f"{k}={v}")
    return ",".join(parts)


def request_tres(req: Request, def_mem: int = 0) -> dict[str, int]:
    """The least a request can take of each TRES (what limits are checked against before placing)."""
    nodes = req.nodes_min
    tasks = req.ntasks or nodes * (req.ntasks_per_node or 1)
    cpus = tasks * req.cpus_per_task
    if req.gpus:
        gpus = req.gpus
    elif req.gpus_per_node:
        gpus = req.gpus_per_node * nodes
    elif req.gpus_per_task:
        gpus = req.gpus_per_task * tasks
    else:
        gpus = 0
    if req.mem_per_node is not None:
        mem = req.mem_per_node * nodes
    else:
        mem = (req.mem_per_cpu or def_mem) * cpus
    return {"cpu": cpus, "mem": mem, "node": nodes, "gres/gpu": gpus}


def alloc_tres(allocs: tuple[NodeAlloc, ...] | list[NodeAlloc]) -> dict[str, int]:
    """What an allocation holds."""
    return {"cpu": sum(a.cpus for a in allocs), "mem": sum(a.memory for a in allocs), "node": len(allocs),
            "gres/gpu": sum(len(a.gpu_ids) for a in allocs)}


def billing(tres: dict[str, int], weights: dict[str, float] | None) -> float:
    """TRESBillingWeights: the weighted sum (memory weighed per GB); without weights, the CPUs."""
    if not weights:
        return float(tres.get("cpu", 0))
    total = 0.0
    for k, w in weights.items():
        v = tres.get(k, 0)
        total += w * (v / 1024.0 if k == "mem" else v)
    return total


def parse_billing_weights(text: str) -> dict[str, float]:
    """`CPU=1.0,Mem=0.25G,GRES/gpu=2.0` -> {'cpu': 1.0, 'mem': 0.25, 'gres/gpu': 2.0} (mem per GB)."""
    out: dict[str, float] = {}
    for item, name, eq, value in _items(text):
        if name == "gres/gpu" or name.startswith("gres/gpu:"):
            name = "gres/gpu"
        if not eq or (name not in TRES_ORDER and not name.startswith("gres/")):
            raise TresError(f"TRESBillingWeights: bad item {item!r}")
        v = value.strip().upper()
        scale = 1.0
        if name == "mem":
            if v.endswith("G"):
                v = v[:-1]
            elif v.endswith("M"):
                v, scale = v[:-1], 1024.0
            elif v.endswith("T"):
                v, scale = v[:-1], 1 / 1024.0
            else:
                scale = 1024.0  # a bare weight is per MB
        try:
            out[name] = float(v) * scale
        except ValueError:
            raise TresError(f"TRESBillingWeights: bad weight {item!r}") from None
    return out


@dataclass(frozen=True, slots=True)
class Counter:
    """A limit held while jobs run: at most `cap` of `tres` ("jobs" or a TRES) at once."""

    tres: str
    cap: int
    used: float  #: what running jobs that charge it hold now
    reason: Reason  #: the pending reason when it binds (QOSMaxJobsPerUserLimit, AssocGrpGRES, ...)


def need(tres: str, amounts: dict[str, int], bill: float = 0.0) -> float:
    """How much of a counter's `tres` a job with these TRES `amounts` charges."""
    if tres == "jobs":
        return 1
    if tres == "billing":
        return bill
    return amounts.get(tres, 0)


#: the pending reason of a limit, by (who, kind, TRES): who is "QOS" or "Assoc"; kind "Grp",
#: "MaxPerUser" or "MaxPerJob"; Slurm's job_state_reason names
_REASONS: Final = MappingProxyType({
    ("QOS", "Grp", "jobs"): "QOSGrpJobsLimit", ("QOS", "Grp", "cpu"): "QOSGrpCpuLimit",
    ("QOS", "Grp", "mem"): "QOSGrpMemLimit", ("QOS", "Grp", "node"): "QOSGrpNodeLimit",
    ("QOS", "Grp", "gres"): "QOSGrpGRES", ("QOS", "Grp", "billing"): "QOSGrpBilling",
    ("QOS", "MaxPerUser", "jobs"): "QOSMaxJobsPerUserLimit", ("QOS", "MaxPerUser", "cpu"): "QOSMaxCpuPerUserLimit",
    ("QOS", "MaxPerUser", "mem"): "QOSMaxMemoryPerUser", ("QOS", "MaxPerUser", "node"): "QOSMaxNodePerUserLimit",
    ("QOS", "MaxPerUser", "gres"): "QOSMaxGRESPerUser", ("QOS", "MaxPerUser", "billing"): "QOSMaxBillingPerUser",
    ("QOS", "MaxPerJob", "cpu"): "QOSMaxCpuPerJobLimit", ("QOS", "MaxPerJob", "mem"): "QOSMaxMemoryPerJob",
    ("QOS", "MaxPerJob", "node"): "QOSMaxNodePerJobLimit", ("QOS", "MaxPerJob", "gres"): "QOSMaxGRESPerJob",
    ("QOS", "MaxPerJob", "billing"): "QOSMaxBillingPerJob",
    ("QOS", "MaxPerJob", "wall"): "QOSMaxWallDurationPerJobLimit",
    ("Assoc", "Grp", "jobs"): "AssocGrpJobsLimit", ("Assoc", "Grp", "cpu"): "AssocGrpCpuLimit",
    ("Assoc", "Grp", "mem"): "AssocGrpMemLimit", ("Assoc", "Grp", "node"): "AssocGrpNodeLimit",
    ("Assoc", "Grp", "gres"): "AssocGrpGRES", ("Assoc", "Grp", "billing"): "AssocGrpBilling",
    ("Assoc", "MaxPerUser", "jobs"): "AssocMaxJobsLimit",
    ("Assoc", "MaxPerJob", "cpu"): "AssocMaxCpuPerJobLimit", ("Assoc", "MaxPerJob", "mem"): "AssocMaxMemPerJob",
    ("Assoc", "MaxPerJob", "node"): "AssocMaxNodePerJobLimit", ("Assoc", "MaxPerJob", "gres"): "AssocMaxGRESPerJob",
    ("Assoc", "MaxPerJob", "billing"): "AssocMaxBillingPerJob",
    ("Assoc", "MaxPerJob", "wall"): "AssocMaxWallDurationPerJobLimit",
})


def reason(who: str, kind: str, tres: str) -> Reason:
    key = "gres" if tres.startswith("gres/") else tres
    return Reason(_REASONS.get((who, kind, key), f"{who}ResourceLimit"))


def per_job_reason(who: str, max_tres: dict[str, int], max_wall: int | None, amounts: dict[str, int],
                   time_limit: int | None, bill: float = 0.0) -> Reason | None:
    """Why a job can never start under a per-job limit (MaxTRESPerJob/MaxTRES, MaxWall in minutes)."""
    for tres, cap in max_tres.items():
        if need(tres, amounts, bill) > cap:
            return reason(who, "MaxPerJob", tres)
    if max_wall is not None and time_limit is not None and time_limit > max_wall:
        return reason(who, "MaxPerJob", "wall")
    return None
