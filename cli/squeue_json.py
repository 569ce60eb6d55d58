"""`squeue --json`: jobs in the shape Slurm 22.05's squeue prints (openapi/v0.0.38's job description).

22.05 prints every job slurmctld holds, whatever the filters say; the pending tasks of an array are one
job (`array_task_string`), as squeue's lines collapse them. A job without an allocation has no
`job_resources`."""

from __future__ import annotations

from slurmlet.cli import slurm_json
from slurmlet.cli.slurm_json import seconds
from slurmlet.common import jobfacts
from slurmlet.common.grammar import fmt_ranges
from slurmlet.common.render_squeue import collapse_arrays

TYPE_CHECKING = False
if TYPE_CHECKING:
    from slurmlet.common.render_squeue import QRow

#: the job's end when it has no time limit: a year after its start, as slurmctld sets it
_NO_LIMIT_END = 365 * 86400
_STARTED = frozenset({"RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING"})


def _flags(j: dict, started: bool) -> list[str]:
    """The job's flags that 22.05 prints: TRES_STR_CALC once it ended, JOB_CPUS_SET (-c), JOB_MEM_SET
    (--mem), JOB_WAS_RUNNING while it runs."""
    out = ["TRES_STR_CALC"] if started and j.get("end_time") and j.get("state") not in _STARTED else []
    if j.get("cpus_per_task"):
        out.append("JOB_CPUS_SET")
    if started and j.get("state") in _STARTED:
        out.append("JOB_WAS_RUNNING")
    if j.get("mem_per_node"):
        out.append("JOB_MEM_SET")
    return out


def _resources(j: dict) -> dict:
    """`job_resources`: the allocation node by node (the cores numbered from 0 on each node)."""
    cpus = j.get("alloc_cpus") or [j.get("num_cpus") or 0]
    names = j.get("node_list") or [j.get("batch_host") or ""]
    nodes = []
    for name, n in zip(names, cpus):
        mem = j.get("mem_per_node") or (j.get("mem_per_cpu") or 0) * n
        nodes.append({"sockets": {"0": {"cores": {str(c): "allocated" for c in range(n)}}}, "nodename": name,
                      "cpus_used": 0, "memory_used": 0, "memory_allocated": mem})
    return {"nodes": j.get("nodes") or "", "allocated_cores": sum(cpus), "allocated_hosts": len(nodes),
            "allocated_nodes": nodes}


def _gres_detail(j: dict) -> list[str]:
    """`gpu:2(IDX:0-1)` for each node with GPUs."""
    kind = f"gpu:{j['gpu_type']}" if j.get("gpu_type") else "gpu"
    return [f"{kind}:{len(ids)}(IDX:{fmt_ranges(ids)})" for ids in (j.get("gpu_ids") or {}).values() if ids]


def job(row: QRow, het_sets: dict[int, str] | None = None) -> dict:
    """One job of `squeue --json` (`row`: a job, or the pending tasks of an array collapsed; `het_sets`:
    each heterogeneous job's component ids, `1-2`, where the job has no `het_job_id_set` of its own)."""
    j = row.j
    start: float = j.get("start_time") or 0
    started = bool(start) and bool(j.get("nodes"))
    end: float = j.get("end_time") or 0
    if started and not end:
        end = start + (j["time_limit"] * 60 if j.get("time_limit") else _NO_LIMIT_END)
    pending = j.get("state") == "PENDING"
    tres = jobfacts.job_tres_str(j)
    code, sig = j.get("exit_code") or 0, j.get("exit_signal") or 0
    het = j.get("het_job_id") or 0
    out: dict = {
        "account": j.get("account") or "",
        "accrue_time": seconds(j.get("accrue_time", j.get("eligible_time"))),
        "admin_comment": "",
        "array_job_id": j.get("array_job_id") or 0,
        "array_task_id": None if row.tasks is not None else j.get("array_task_id"),
        "array_max_tasks": j.get("array_max_tasks") or 0,
        "array_task_string": row.tasks or "",
        "association_id": 0,
        "batch_features": "",
        "batch_flag": bool(j.get("batch", True)),
        "batch_host": j.get("batch_host") or "",
        "flags": _flags(j, started),
        "burst_buffer": "",
        "burst_buffer_state": "",
        "cluster": j.get("cluster") or "",
        "cluster_features": "",
        "command": j.get("command") or "",
        "comment": j.get("comment") or "",
        "container": "",
        "contiguous": False,
        "core_spec": None,
        "thread_spec": None,
        "cores_per_socket": None,
        "billable_tres": float(dict(jobfacts.job_tres_pairs(j))["billing"]) if started else None,
        "cpus_per_task": None,
        "cpu_frequency_minimum": None,
        "cpu_frequency_maximum": None,
        "cpu_frequency_governor": None,
        "cpus_per_tres": "",
        "deadline": 0,
        "delay_boot": 0,
        "dependency": j.get("dependency") or "",
        "derived_exit_code": ((j.get("derived_exit_code") or 0) << 8) | (j.get("derived_exit_signal") or 0),
        "eligible_time": seconds(j.get("eligible_time")),
        "end_time": seconds(end),
        "excluded_nodes": j.get("exc_nodes") or "",
        "exit_code": (code << 8) | sig,
        "features": j.get("features") or "",
        "federation_origin": "",
        "federation_siblings_active": "",
        "federation_siblings_viable": "",
        "gres_detail": _gres_detail(j),
        "group_id": j.get("gid") or 0,
        "group_name": j.get("group") or "",
        "job_id": j["job_id"],
    }
    if started:
        out["job_resources"] = _resources(j)
    out.update({
        "job_state": j.get("state"),
        "last_sched_evaluation": seconds(start or j.get("submit_time")),
        "licenses": "",
        "max_cpus": 0,
        "max_nodes": j.get("nodes_max") or 0,
        "mcs_label": "",
        "memory_per_tres": "",
        "name": j.get("name") or "",
        "nodes": j.get("nodes") or "",
        "nice": j.get("nice") or None,
        "tasks_per_core": None,
        "tasks_per_node": j.get("ntasks_per_node") or 0,
        "tasks_per_socket": None,
        "tasks_per_board": 0,
        "cpus": j.get("num_cpus"),
        "node_count": j.get("num_nodes"),
        "tasks": j.get("num_tasks"),
        "het_job_id": het,
        "het_job_id_set": j.get("het_job_id_set") or (het_sets or {}).get(het, ""),
        "het_job_offset": j.get("het_job_offset") or 0,
        "partition": j.get("partition") or "",
        "prefer": "",
        "memory_per_node": j.get("mem_per_node") or None,
        "memory_per_cpu": j.get("mem_per_cpu") or None,
        "minimum_cpus_per_node": jobfacts.job_min_cpus_node(j),
        "minimum_tmp_disk_per_node": 0,
        "preempt_time": seconds(j.get("preempt_time")),
        "pre_sus_time": seconds(j.get("pre_sus_time")),
        "priority": j.get("priority") or 0,
        "profile": None,
        "qos": j.get("qos") or "",
        "reboot": False,
        "required_nodes": j.get("req_nodes") or "",
        "requeue": bool(j.get("requeue")),
        "resize_time": 0,
        "restart_cnt": j.get("restarts") or 0,
        "resv_name": j.get("reservation") or "",
        "shared": None,
        "show_flags": ["SHOW_ALL", "SHOW_DETAIL", "SHOW_LOCAL"],
        "sockets_per_board": 0,
        "sockets_per_node": None,
        "start_time": seconds(start),
        "state_description": "",
        "state_reason": row.reason,
        "standard_error": j.get("stderr_pattern") or "",
        "standard_input": j.get("stdin") or "/dev/null",
        "standard_output": j.get("stdout_pattern") or "",
        "submit_time": seconds(j.get("submit_time")),
        "suspend_time": seconds(j.get("suspend_time")),
        "system_comment": "",
        "time_limit": j.get("time_limit") or None,
        "time_minimum": 0,
        "threads_per_core": None,
        "tres_bind": "",
        "tres_freq": "",
        "tres_per_job": j.get("tres_per_job") or "",
        "tres_per_node": j.get("tres_per_node") or "",
        "tres_per_socket": "",
        "tres_per_task": "",
        "tres_req_str": tres,
        "tres_alloc_str": "" if pending or not started else tres,
        "user_id": j.get("uid") or 0,
        "user_name": j.get("user") or "",
        "wckey": j.get("wckey") or "",
        "current_working_directory": j.get("workdir") or "",
    })
    return out


def document(jobs: list[dict], now: float) -> dict:
    components: dict[int, list[int]] = {}
    for j in jobs:
        if j.get("het_job_id"):
            components.setdefault(j["het_job_id"], []).append(j["job_id"])
    het_sets = {het: fmt_ranges(sorted(ids)) for het, ids in components.items()}
    return slurm_json.document(slurm_json.OPENAPI, "jobs", [job(r, het_sets) for r in collapse_arrays(jobs, now)])
