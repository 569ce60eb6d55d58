"""What the store's modules share: job states, the spec keys kept with a job, prepared inserts,
and the conversions from rows (compress, request_of)."""

from __future__ import annotations

from operator import attrgetter
from typing import Iterable

import hostlist
from sqlalchemy import insert

from slurmlet.controller.core.model import Request

from .tables import jobs as J
from .tables import submit_keys as KEYS

ACTIVE_STATES = ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING")
FINAL_STATES = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
                "BOOT_FAIL", "DEADLINE")
SPEC_KEYS = ("nodes_min", "nodes_max", "ntasks", "ntasks_per_node", "cpus_per_task", "mem_per_node",
             "mem_per_cpu", "gpus", "gpus_per_node", "gpus_per_task", "exclusive", "workdir", "submit_dir",
             "stdin", "open_mode", "signal", "nodelist", "exclude", "submit_host", "argv", "stdout",
             "stderr", "kill_on_invalid_dep", "dependency", "array", "max_retries", "gpu_type", "secrets",
             "code", "py_deps", "interactive", "srun_step")


INSERT_JOB = insert(J)
INSERT_JOB_IDS = insert(J).returning(J.c.id, sort_by_parameter_order=True)
INSERT_KEY = insert(KEYS)
BY_ID = attrgetter("id")


def compress(names: Iterable[str]) -> str:
    names = list(names)
    return hostlist.collect_hostlist(names) if names else ""


def request_of(spec: dict) -> Request:
    return Request(
        nodes_min=spec.get("nodes_min") or 1,
        nodes_max=spec.get("nodes_max"),
        ntasks=spec.get("ntasks"),
        ntasks_per_node=spec.get("ntasks_per_node"),
        cpus_per_task=spec.get("cpus_per_task") or 1,
        mem_per_node=spec.get("mem_per_node"),
        mem_per_cpu=spec.get("mem_per_cpu"),
        gpus=spec.get("gpus"),
        gpus_per_node=spec.get("gpus_per_node"),
        gpus_per_task=spec.get("gpus_per_task"),
        exclusive=bool(spec.get("exclusive")),
        nodelist=tuple(hostlist.expand_hostlist(spec["nodelist"])) if spec.get("nodelist") else (),
        exclude=tuple(hostlist.expand_hostlist(spec["exclude"])) if spec.get("exclude") else (),
        gpu_type=spec.get("gpu_type") or None,
    )


def port_free(port: int) -> bool:
    """Nothing listens on `port` here (on a local cluster, here is every node)."""
    import socket
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


#: pending_action values under which the job's processes are being stopped for good or for a requeue
KILL_WHY = {"cancel": "cancel", "requeue": "requeue", "requeue_hold": "requeue", "preempt": "preempt",
             "preempt_requeue": "preempt"}

