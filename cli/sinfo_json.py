"""`sinfo --json`: the nodes in the shape Slurm 22.05's sinfo prints (openapi/v0.0.38's node description;
22.05 prints no partitions)."""

from __future__ import annotations

from slurmlet.cli import slurm_json
from slurmlet.cli.slurm_json import seconds
from slurmlet.common import fmt


def _gres_used(n: dict) -> str:
    if not n.get("gpus"):
        return ""
    kind = f"gpu:{n['gpu_type']}" if n.get("gpu_type") else "gpu"
    return f"{kind}:{n.get('gpus_alloc') or 0}"


def _tres(n: dict, cpus: int, mem: int, gpus: int, billing: bool) -> str:
    pairs = [("cpu", cpus), ("mem", fmt.convert_num(mem) if mem else None),
             ("billing", cpus if billing else None), ("gres/gpu", gpus or None)]
    return fmt.tres_string(pairs)


def node(n: dict) -> dict:
    """One node of `sinfo --json`."""
    base, flags = fmt.node_state_parts(fmt.node_state_code(n.get("state"), cpus_alloc=n.get("cpus_alloc") or 0,
                                                           jobs=n.get("jobs") or 0))
    cpus, alloc = n.get("cpus") or 0, n.get("cpus_alloc") or 0
    load = n.get("cpu_load")
    return {
        "architecture": n.get("arch") or "",
        "burstbuffer_network_address": "",
        "boards": 1,
        "boot_time": seconds(n.get("boot_time")),
        "comment": "",
        "cores": cpus,
        "cpu_binding": 0,
        "cpu_load": int(round(float(load) * 100)) if load is not None else 0,
        "extra": "",
        "free_memory": int(n.get("free_memory") or 0),
        "cpus": cpus,
        "last_busy": seconds(n.get("last_busy")),
        "features": n.get("features") or "",
        "active_features": n.get("features") or "",
        "gres": n.get("gres") or "",
        "gres_drained": "N/A",
        "gres_used": _gres_used(n),
        "mcs_label": "",
        "name": n["name"],
        "next_state_after_reboot": "invalid",
        "address": n.get("addr") or n["name"],
        "hostname": n.get("hostname") or n["name"],
        "state": base.lower(),
        "state_flags": flags,
        "next_state_after_reboot_flags": [],
        "operating_system": n.get("os") or "",
        "owner": None,
        "partitions": list(n.get("partitions") or []),
        "port": 6818,
        "real_memory": n.get("real_memory") or 0,
        "reason": n.get("reason") or "",
        "reason_changed_at": seconds(n.get("reason_time")),
        "reason_set_by_user": (n.get("reason_user") or "root") if n.get("reason") else None,
        "slurmd_start_time": seconds(n.get("slurmd_start_time")),
        "sockets": 1,
        "threads": 1,
        "temporary_disk": 0,
        "weight": n.get("weight") or 1,
        "tres": _tres(n, cpus, n.get("real_memory") or 0, n.get("gpus") or 0, True),
        "slurmd_version": n.get("version") or "",
        "alloc_memory": n.get("alloc_memory") or 0,
        "alloc_cpus": alloc,
        "idle_cpus": max(cpus - alloc, 0),
        "tres_used": _tres(n, alloc, n.get("alloc_memory") or 0, n.get("gpus_alloc") or 0, False) if alloc else "",
        "tres_weighted": float(alloc),
    }


def document(nodes: list[dict]) -> dict:
    return slurm_json.document(slurm_json.OPENAPI, "nodes", [node(n) for n in nodes])
