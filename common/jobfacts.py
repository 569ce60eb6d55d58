"""Facts about jobs and nodes as the REST API serves them (JobPublic, NodePublic), shared by the squeue, sacct and
scontrol renderers: time used, end time, memory, GPUs, TRES, exit code, reason, the id as shown."""


from __future__ import annotations

import time

from slurmlet.common import fmt as F

TYPE_CHECKING = False  # keep typing (~7 ms) out of the CLI's import path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    JobDict = dict[str, Any]
    NodeDict = dict[str, Any]
    PartDict = dict[str, Any]




def now_or_clock(now: float | None) -> float:
    """The reference time for durations: ``now`` or the wall clock."""
    return time.time() if now is None else now


def null_or(value: Any, default: str = "(null)") -> Any:
    """``default`` when ``value`` is None (C's ``printf("%s", NULL)`` prints ``(null)``)."""
    return default if value is None else value


# ===========================================================================
# Job facts shared by squeue, scontrol and sacct
# ===========================================================================


def job_is_array(job: JobDict) -> bool:
    """True for an element of a job array."""
    return job.get("array_task_id") is not None and job.get("array_job_id") is not None


def job_time_used(job: JobDict, now: float | Callable[[], float]) -> int:
    """``job_time_used``: 0 while pending, now-start while running, end-start once done. `now` may be
    a function giving the time: called only for a job whose time runs on."""
    start = job.get("start_time")
    state = job.get("state")
    if not start or state == "PENDING":
        return 0
    if state == "SUSPENDED" and job.get("pre_sus_time") is not None:
        return int(job["pre_sus_time"])
    end = job.get("end_time")
    if state in ("RUNNING", "SUSPENDED") or not end:
        end = now() if callable(now) else now
    return max(int(end) - int(start) - int(job.get("suspended_secs") or 0), 0)


def job_end_time(job: JobDict) -> float | None:
    """The end time Slurm shows: the real one, else start+limit for a started job."""
    end: float | None = job.get("end_time")
    if end:
        return end
    start: float | None = job.get("start_time")
    limit: int | None = job.get("time_limit")
    suspended: float = job.get("suspended_secs") or 0
    if start and limit is not None and job.get("state") not in ("PENDING",):
        return start + limit * 60 + suspended
    return None


def job_mem_total(job: JobDict) -> int:
    """The job's memory in MB across all its nodes (the ``mem=`` of its TRES)."""
    if job.get("alloc_memory"):
        return int(job["alloc_memory"])
    if job.get("mem_per_cpu"):
        return int(job["mem_per_cpu"]) * int(job.get("num_cpus") or 0)
    if job.get("mem_per_node"):
        return int(job["mem_per_node"]) * int(job.get("num_nodes") or 0)
    return 0


def job_gpus_total(job: JobDict) -> int:
    """GPUs of the whole job (``gres/gpu=`` in its TRES)."""
    ids = job.get("gpu_ids") or {}
    if ids:
        return sum(len(v) for v in ids.values())
    return int(job.get("gpus_per_node") or 0) * int(job.get("num_nodes") or 0)


def job_tres_pairs(job: JobDict) -> list[tuple[str, Any]]:
    """The job TRES in slurmctld order: cpu, mem, node, billing, gres/gpu."""
    cpus = int(job.get("num_cpus") or 0)
    mem = job_mem_total(job)
    gpus = job_gpus_total(job)
    return [("cpu", cpus), ("mem", F.convert_num(mem) if mem else None),
            ("node", int(job.get("num_nodes") or 0)), ("billing", int(job.get("billing", cpus))),
            ("gres/gpu", gpus or None)]


def job_tres_str(job: JobDict, *, sort: bool = False) -> str:
    """``cpu=1,mem=1000M,node=1,billing=1,gres/gpu=8`` (sorted by name for sacct)."""
    pairs = job_tres_pairs(job)
    if sort:
        pairs = sorted(pairs)
    return F.tres_string(pairs)


def job_min_cpus_node(job: JobDict) -> int:
    """``pn_min_cpus``: CPUs a node must offer (cpus-per-task x tasks-per-node)."""
    if job.get("min_cpus_node") is not None:
        return int(job["min_cpus_node"])
    return int(job.get("cpus_per_task") or 1) * int(job.get("ntasks_per_node") or 1)


def job_min_memory(job: JobDict) -> tuple[str, str]:
    """``("CPU", "1000M")`` or ``("Node", "2000M")``: the per-cpu/per-node memory request."""
    if job.get("mem_per_cpu"):
        return "CPU", F.convert_num(job["mem_per_cpu"])
    return "Node", F.convert_num(job.get("mem_per_node") or 0)


def job_exit(job: JobDict, derived: bool = False, ctld: bool = False) -> str:
    """``ExitCode`` as ``exit:signal``. `ctld`: as scontrol has it, where a job that the controller ended
    (TIMEOUT, CANCELLED once it ran) has its batch script's status (``0:15``) and accounting's row ``0:0``."""
    if derived:
        return f"{job.get('derived_exit_code') or 0}:{job.get('derived_exit_signal') or 0}"
    if ctld and job.get("state") in ("TIMEOUT", "CANCELLED"):
        batch = next((s for s in job.get("steps") or [] if s.get("step") == "batch"), None)
        if batch is not None:
            return f"{batch.get('exit_code') or 0}:{batch.get('exit_signal') or 0}"
    return f"{job.get('exit_code') or 0}:{job.get('exit_signal') or 0}"


def job_reason(job: JobDict) -> str:
    """The job's state reason, ``None`` when it has none."""
    return job.get("reason") or "None"


def job_id_str(job: JobDict, tasks: str | None = None) -> str:
    """``7885_[0-3]`` (collapsed array), ``7885_2`` (array task), ``7887+1`` (a heterogeneous
    job's component) or ``7889``."""
    if job.get("het_job_id") is not None:
        return f"{job['het_job_id']}+{job.get('het_job_offset') or 0}"
    if tasks is not None:
        return f"{job['array_job_id']}_[{tasks}]"
    if job_is_array(job):
        return f"{job['array_job_id']}_{job['array_task_id']}"
    return str(job["job_id"])


def node_code(node: NodeDict) -> int:
    """Slurm's numeric state bits of a NodePublic dict."""
    return F.node_state_code(node.get("state"), cpus_alloc=int(node.get("cpus_alloc") or 0),
                             jobs=int(node.get("jobs") or 0))


def node_sct(node: NodeDict) -> tuple[int, int, int]:
    """Sockets, cores per socket and threads per core of a node."""
    sockets = int(node.get("sockets") or 1)
    threads = int(node.get("threads") or 1)
    cores = int(node.get("cores") or max(int(node.get("cpus") or 1) // (sockets * threads), 1))
    return sockets, cores, threads


def free_mem(node: NodeDict) -> Any:
    """Free memory of a node (the API has used both ``free_memory`` and ``free_mem``)."""
    v = node.get("free_memory")
    return node.get("free_mem") if v is None else v


def alloc_node(job: JobDict) -> tuple[str, int]:
    """``AllocNode:Sid``: the submitting host and session id."""
    return (job.get("alloc_node") or job.get("submit_host") or "localhost",
            int(job.get("alloc_sid") or 0))


def working_cluster(cluster: str, controller_url: str) -> str:
    """SLURM_WORKING_CLUSTER: the cluster's name, its controller's host and port, Slurm's
    protocol port and version numbers (`name:host:port:9728:109`), as srun and slurmd set it."""
    hostport = controller_url.split("//")[-1].rstrip("/")
    return f"{cluster}:{hostport.rsplit(':', 1)[0]}:{hostport.rsplit(':', 1)[-1]}:9728:109"
