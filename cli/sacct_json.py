"""`sacct --json`: jobs in the shape Slurm 22.05's sacct prints (data_parser v0.0.38)."""

from __future__ import annotations

import time

from slurmlet.cli import slurm_json
from slurmlet.cli.slurm_json import seconds as _int


def _exit(code: int, sig: int) -> dict:
    status = "SIGNALED" if sig else ("SUCCESS" if code == 0 else "FAILED")
    out: dict = {"status": status, "return_code": code}
    if sig:
        out["signal"] = {"signal_id": sig, "name": ""}
    return out


def _tres(j: dict, allocated: bool) -> list[dict]:
    out = [{"type": "cpu", "name": None, "id": 1, "count": j["num_cpus"]}]
    mem = j.get("alloc_memory") if allocated else None
    if mem is None and j.get("mem_per_node"):
        mem = j["mem_per_node"] * j["num_nodes"]
    elif mem is None and j.get("mem_per_cpu"):
        mem = j["mem_per_cpu"] * j["num_cpus"]
    if mem:
        out.append({"type": "mem", "name": None, "id": 2, "count": mem})
    out.append({"type": "node", "name": None, "id": 4, "count": j["num_nodes"]})
    out.append({"type": "billing", "name": None, "id": 5, "count": j.get("billing", j["num_cpus"])})
    gpus = (j.get("gpus_per_node") or 0) * j["num_nodes"]
    if gpus:
        out.append({"type": "gres", "name": "gpu", "id": 1001, "count": gpus})
    return out


def _step(j: dict, s: dict, now: float) -> dict:
    start, end = s.get("start_time"), s.get("end_time")
    elapsed = int((end or now) - start) if start else 0

    def cpu_time(secs: float | None) -> dict:
        whole = int(secs or 0)
        return {"seconds": whole, "microseconds": int(round(((secs or 0) - whole) * 1e6))}
    consumed = ([{"type": "mem", "name": None, "id": 2, "count": s["max_rss"] * 1024}] if s.get("max_rss") else [])
    return {
        "nodes": {"list": [], "count": s.get("num_nodes", 1), "range": s.get("nodes") or ""},
        "tres": {"requested": {"max": [], "min": [], "average": [], "total": []},
                 "consumed": {"max": consumed, "min": [], "average": [], "total": []},
                 "allocated": [{"type": "cpu", "name": None, "id": 1, "count": s.get("num_cpus", 1)},
                               {"type": "node", "name": None, "id": 4, "count": s.get("num_nodes", 1)}]},
        "time": {"elapsed": elapsed, "end": _int(end), "start": _int(start), "suspended": 0,
                 "system": cpu_time(s.get("system_cpu")), "total": cpu_time(s.get("total_cpu")),
                 "user": cpu_time(s.get("user_cpu"))},
        "exit_code": _exit(s.get("exit_code") or 0, s.get("exit_signal") or 0),
        "tasks": {"count": s.get("num_tasks", 1)},
        "pid": None,
        "CPU": {"requested_frequency": {"min": 0, "max": 0}, "governor": []},
        "kill_request_user": None,
        "state": s.get("state"),
        "statistics": {"CPU": {"actual_frequency": 0}, "energy": {"consumed": 0}},
        "step": {"job_id": j["job_id"], "het": {"component": None}, "id": str(s["step"]), "name": s.get("name")},
        "task": {"distribution": "Unknown" if s["step"] == "batch" else "Block"},
    }


def job(j: dict, now: float | None = None) -> dict:
    now = time.time() if now is None else now
    start, end = j.get("start_time"), j.get("end_time")
    elapsed = int((end or now) - start) if start else 0
    array_id = j.get("array_job_id")
    return {
        "account": j["account"],
        "comment": {"administrator": None, "job": j.get("comment"), "system": None},
        "allocation_nodes": j["num_nodes"] if start else 0,
        "array": {"job_id": array_id or 0, "limits": {"max": {"running": {"tasks": j.get("array_max_tasks") or 0}}},
                  "task": None, "task_id": j.get("array_task_id")},
        "association": {"account": j["account"], "cluster": j.get("cluster"), "partition": j["partition"],
                        "user": j["user"]},
        "cluster": j.get("cluster"),
        "constraints": "",
        "container": None,
        "derived_exit_code": _exit(j.get("derived_exit_code") or 0, j.get("derived_exit_signal") or 0),
        "time": {"elapsed": elapsed, "eligible": _int(j.get("eligible_time")), "end": _int(end),
                 "start": _int(start), "submission": _int(j.get("submit_time")),
                 "suspended": int(j.get("suspended_secs") or 0),
                 "system": {"seconds": 0, "microseconds": 0},
                 "limit": j.get("time_limit") if j.get("time_limit") is not None else 0,
                 "total": {"seconds": 0, "microseconds": 0}, "user": {"seconds": 0, "microseconds": 0}},
        "exit_code": _exit(j.get("exit_code") or 0, j.get("exit_signal") or 0),
        "flags": [],
        "group": j.get("group"),
        # a heterogeneous job's component: its leader's id and its offset (22.05: 0 and null for another job)
        "het": {"job_id": j.get("het_job_id") or 0,
                "job_offset": j.get("het_job_offset") if j.get("het_job_id") is not None else None},
        "job_id": j["job_id"],
        "name": j["name"],
        "mcs": {"label": ""},
        "nodes": j.get("nodes") or "None assigned",
        "partition": j["partition"],
        "priority": j.get("priority", 0),
        "qos": j.get("qos"),
        "required": {"CPUs": j["num_cpus"], "memory": j.get("mem_per_node") or j.get("mem_per_cpu") or 0},
        "kill_request_user": None,
        "reservation": {"id": 0, "name": 0},
        "state": {"current": j["state"], "reason": j.get("reason") or "None"},
        "steps": [_step(j, s, now) for s in j.get("steps", [])],
        "tres": {"allocated": _tres(j, True) if start else [], "requested": _tres(j, False)},
        "user": j["user"],
        "wckey": {"wckey": "", "flags": []},
        "working_directory": j.get("workdir") or "",
    }


def document(jobs: list[dict]) -> dict:
    return slurm_json.document(slurm_json.OPENAPI_DB, "jobs", [job(j) for j in jobs])
