"""What the store's parts share: `Shared` (the database, the configuration and what is derived from
it), job states, the spec keys kept with a job, prepared inserts, and the conversions from rows
(compress, request_of, pattern_path, requeued_values)."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Iterable

import hostlist
from sqlalchemy import Engine, insert

from slurmlet.common.patterns import default_output, expand_pattern
from slurmlet.controller.config import ClusterConfig
from slurmlet.controller.core.model import Request, SchedConfig
from slurmlet.controller.core.priority import Weights

from .accounts import AccountStore
from .tables import jobs as J
from .tables import submit_keys as KEYS

ACTIVE_STATES = ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING")
FINAL_STATES = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
                "BOOT_FAIL", "DEADLINE")
SPEC_KEYS = ("nodes_min", "nodes_max", "ntasks", "ntasks_per_node", "cpus_per_task", "mem_per_node",
             "mem_per_cpu", "gpus", "gpus_per_node", "gpus_per_task", "cpus_per_gpu", "mincpus", "mem_per_gpu", "overcommit", "gres", "exclusive", "workdir", "submit_dir",
             "stdin", "open_mode", "signal", "nodelist", "exclude", "submit_host", "argv", "stdout",
             "stderr", "kill_on_invalid_dep", "dependency", "array", "max_retries", "gpu_type", "secrets",
             "code", "py_deps", "interactive", "srun_step")


INSERT_JOB = insert(J)
INSERT_JOB_IDS = insert(J).returning(J.c.id, sort_by_parameter_order=True)
INSERT_KEY = insert(KEYS)
BY_ID = attrgetter("id")


@dataclass
class Shared:
    """What every part of the store reads: the database, the configuration (replaced whole by
    `set_config`: parts read it here, never keep it), the accounting tables, and the nodes to tell of
    new orders made outside a scheduling pass."""

    engine: Engine
    config: ClusterConfig
    accounts: AccountStore
    weights: Weights = field(init=False)
    sched: SchedConfig = field(init=False)
    #: nodes whose agents have new orders outside a scheduling pass (prologs done, epilogs to run)
    notify_hosts: set[str] = field(default_factory=set)
    #: PrologSlurmctld/EpilogSlurmctld rows may be waiting for the controller
    controller_scripts: bool = True
    #: each pending job's request, parsed once (a job's request never changes after submission)
    requests: dict[int, Request] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.set_config(self.config)

    def set_config(self, config: ClusterConfig) -> None:
        self.config = config
        self.weights = config.priority_weights()
        self.sched = config.sched_config()

    def billing_weights(self, partition: str) -> dict[str, float]:
        """TRESBillingWeights of a partition (none: billing counts CPUs)."""
        p = self.config.partition(partition)
        return dict(p.billing_weights) if p is not None else {}

    def requeued_values(self, now: float, hold: bool) -> dict[str, Any]:
        """A job's columns when it goes back to the queue (held by an admin with `hold`)."""
        begin = now + self.config.requeue_delay
        return dict(state="PENDING", reason="JobHeldAdmin" if hold else "BeginTime", active=False,
                    alloc=None, nodes="", batch_host=None, start_time=None, end_time=None,
                    begin_time=begin, eligible_time=begin, restarts=J.c.restarts + 1, pending_action=None,
                    held="admin" if hold else None, exit_code=0, exit_signal=0, pending_signal=None,
                    suspend_time=None, est_start=None)


class Part:
    """A part of the store: what all parts share, and the state of its own it keeps."""

    def __init__(self, shared: Shared):
        self.shared = shared
        self.engine = shared.engine

    @property
    def config(self) -> ClusterConfig:
        return self.shared.config


def pattern_path(row: Any, spec: dict, which: str, node: str | None = None) -> str:  # noqa: ANN401 - a job row
    """The job's `stdout` or `stderr` file (its pattern expanded; `node`: its batch host to be)."""
    pattern = spec.get(which)
    if which == "stderr" and not pattern:
        pattern = spec.get("stdout")
    if not pattern:
        pattern = default_output(row.array_task_id is not None)
    return _output_path(pattern, row.id, row.array_job_id or row.id, row.array_task_id, row.name,
                        node or row.batch_host or "", row.user, spec.get("workdir") or "/")


@functools.lru_cache(maxsize=16384)
def _output_path(pattern: str, job_id: int, array_job_id: int, array_task_id: int | None, name: str, node: str,
                 user: str, workdir: str) -> str:
    """A pending job's output file as it would be named (every list shows it again: kept)."""
    path = expand_pattern(pattern, job_id=job_id, array_job_id=array_job_id, array_task_id=array_task_id,
                          name=name, node=node, user=user)
    return path if os.path.isabs(path) else os.path.join(workdir, path)


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
        cpus_per_gpu=spec.get("cpus_per_gpu"),
        mincpus=spec.get("mincpus"),
        mem_per_gpu=spec.get("mem_per_gpu"),
        overcommit=bool(spec.get("overcommit")),
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

