"""Immutable inputs and outputs of the scheduling core.

Everything here is plain data: the store builds a `Snapshot` from the database, `plan()` turns
it into a `Plan`, and the store applies the plan in one transaction. No clock, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from .priority import Weights

if TYPE_CHECKING:
    from .limits import Counter


class Reason(str, Enum):
    """Why a job is pending (Slurm's `job_state_reason` names)."""

    NONE = "None"
    RESOURCES = "Resources"  #: the highest-priority job that does not fit yet
    PRIORITY = "Priority"  #: queued behind a higher-priority job of its partition
    HELD_USER = "JobHeldUser"
    HELD_ADMIN = "JobHeldAdmin"
    BEGIN_TIME = "BeginTime"  #: --begin (or a requeue delay) lies in the future
    PARTITION_TIME_LIMIT = "PartitionTimeLimit"
    PARTITION_NODE_LIMIT = "PartitionNodeLimit"
    PARTITION_CONFIG = "PartitionConfig"  #: more CPUs than the partition has in all
    PARTITION_DOWN = "PartitionDown"
    REQ_NODE_NOT_AVAIL = "ReqNodeNotAvail"
    NODE_DOWN = "NodeDown"
    DEPENDENCY = "Dependency"
    ARRAY_TASK_LIMIT = "JobArrayTaskLimit"  #: the array's %N throttle is reached
    DEPENDENCY_NEVER = "DependencyNeverSatisfied"
    ACCOUNTING_POLICY = "AccountingPolicy"
    QOS_RESOURCE_LIMIT = "QOSResourceLimit"
    ASSOC_RESOURCE_LIMIT = "AssocResourceLimit"
    # accounting limits (AccountingStorageEnforce=limits), see core.limits
    ASSOC_GRP_BILLING = "AssocGrpBilling"
    ASSOC_GRP_CPU_LIMIT = "AssocGrpCpuLimit"
    ASSOC_GRP_GRES = "AssocGrpGRES"
    ASSOC_GRP_JOBS_LIMIT = "AssocGrpJobsLimit"
    ASSOC_GRP_MEM_LIMIT = "AssocGrpMemLimit"
    ASSOC_GRP_NODE_LIMIT = "AssocGrpNodeLimit"
    ASSOC_MAX_BILLING_PER_JOB = "AssocMaxBillingPerJob"
    ASSOC_MAX_CPU_PER_JOB_LIMIT = "AssocMaxCpuPerJobLimit"
    ASSOC_MAX_GRES_PER_JOB = "AssocMaxGRESPerJob"
    ASSOC_MAX_JOBS_LIMIT = "AssocMaxJobsLimit"
    ASSOC_MAX_MEM_PER_JOB = "AssocMaxMemPerJob"
    ASSOC_MAX_NODE_PER_JOB_LIMIT = "AssocMaxNodePerJobLimit"
    ASSOC_MAX_WALL_DURATION_PER_JOB_LIMIT = "AssocMaxWallDurationPerJobLimit"
    QOS_GRP_BILLING = "QOSGrpBilling"
    QOS_GRP_CPU_LIMIT = "QOSGrpCpuLimit"
    QOS_GRP_GRES = "QOSGrpGRES"
    QOS_GRP_JOBS_LIMIT = "QOSGrpJobsLimit"
    QOS_GRP_MEM_LIMIT = "QOSGrpMemLimit"
    QOS_GRP_NODE_LIMIT = "QOSGrpNodeLimit"
    QOS_MAX_BILLING_PER_JOB = "QOSMaxBillingPerJob"
    QOS_MAX_BILLING_PER_USER = "QOSMaxBillingPerUser"
    QOS_MAX_CPU_PER_JOB_LIMIT = "QOSMaxCpuPerJobLimit"
    QOS_MAX_CPU_PER_USER_LIMIT = "QOSMaxCpuPerUserLimit"
    QOS_MAX_GRES_PER_JOB = "QOSMaxGRESPerJob"
    QOS_MAX_GRES_PER_USER = "QOSMaxGRESPerUser"
    QOS_MAX_JOBS_PER_USER_LIMIT = "QOSMaxJobsPerUserLimit"
    QOS_MAX_MEMORY_PER_JOB = "QOSMaxMemoryPerJob"
    QOS_MAX_MEMORY_PER_USER = "QOSMaxMemoryPerUser"
    QOS_MAX_NODE_PER_JOB_LIMIT = "QOSMaxNodePerJobLimit"
    QOS_MAX_NODE_PER_USER_LIMIT = "QOSMaxNodePerUserLimit"
    QOS_MAX_WALL_DURATION_PER_JOB_LIMIT = "QOSMaxWallDurationPerJobLimit"


@dataclass(frozen=True, slots=True)
class Node:
    """A node as the scheduler sees it: capacity and what running jobs already hold."""

    name: str
    cpus: int
    memory: int  # MB
    gpus: int
    available: bool = True  # False when DOWN, DRAIN or not registered
    weight: int = 1
    cpus_used: int = 0
    memory_used: int = 0
    gpus_used: tuple[int, ...] = ()  # GPU indices held by running jobs
    exclusive_used: bool = False  # a running --exclusive job holds the whole node
    gpu_type: str | None = None  # the model its GPUs are (H100, a100, ...)
    # (suspended jobs count in memory_used only: their CPUs and GPUs are free for their preemptor)


@dataclass(frozen=True, slots=True)
class Partition:
    name: str
    nodes: tuple[str, ...]
    max_time: int | None = None  # minutes; None = UNLIMITED
    priority_tier: int = 1
    up: bool = True
    priority_job_factor: int = 1
    #: how this partition's running jobs are preempted: OFF, CANCEL, REQUEUE or SUSPEND
    preempt_mode: str = "OFF"
    grace_time: int = 0  #: seconds between the preemption notice (SIGTERM) and the kill
    max_nodes: int | None = None  #: MaxNodes: a job asking more pends (PartitionNodeLimit); None = UNLIMITED


@dataclass(frozen=True, slots=True)
class Request:
    """What one job asks for. Exactly Slurm's knobs, before any layout is chosen."""

    nodes_min: int = 1
    nodes_max: int | None = None  # None: as many as the tasks need
    ntasks: int | None = None  # None: one per node
    ntasks_per_node: int | None = None
    cpus_per_task: int = 1
    mem_per_node: int | None = None  # MB
    mem_per_cpu: int | None = None  # MB
    gpus: int | None = None  # total (-G)
    gpus_per_node: int | None = None
    gpus_per_task: int | None = None
    cpus_per_gpu: int | None = None  # --cpus-per-gpu: CPUs for each GPU allocated
    mincpus: int | None = None  # --mincpus: at least this many CPUs on each node
    mem_per_gpu: int | None = None  # MB, for each GPU allocated
    overcommit: bool = False  # -O: one task's CPUs per node, whatever the task count
    exclusive: bool = False
    nodelist: tuple[str, ...] = ()  # -w: these nodes must be part of the allocation
    exclude: tuple[str, ...] = ()
    gpu_type: str | None = None  # --gres=gpu:TYPE:N, an air run's accelerator model: only such nodes


@dataclass(frozen=True, slots=True)
class PendingJob:
    job_id: int
    partition: str
    request: Request
    priority: int = 1
    submit_time: float = 0.0
    time_limit: float | None = None  # minutes (None: the partition's MaxTime, else unlimited)
    begin_time: float | None = None
    held: str | None = None  # None, "user" or "admin"
    blocked_reason: Reason | None = None  # set by the store (e.g. dependencies)
    nice: int = 0
    eligible_time: float | None = None
    #: fair-share inputs: the association's decayed usage and its normalized shares
    usage: float = 0.0
    shares: float = 1.0
    fs_factor: float | None = None  #: the fair-share factor itself, when the store computed it (Fair Tree)
    site: int = 0  #: site factor (scontrol update SiteFactor)
    qos: str = "normal"
    qos_factor: float = 0.0  #: the QOS's Priority over the highest QOS Priority (multifactor's QOS factor)
    #: keys of `Snapshot.counters` this job charges while it runs (AccountingStorageEnforce=limits)
    limits: tuple[str, ...] = ()
    bill: float = 0.0  #: its billing TRES (TRESBillingWeights), for billing limits
    #: a heterogeneous job (this, its first component): the others' partitions and requests, in
    #: order. All start together, each on nodes of its own, or none does
    het: tuple[tuple[str, Request], ...] = ()


@dataclass(frozen=True, slots=True)
class NodeAlloc:
    node: str
    cpus: int
    memory: int
    gpu_ids: tuple[int, ...]
    tasks: int
    het: int = 0  #: a heterogeneous job's component that holds it (its offset)


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A job holding resources: what backfill plans around and what preemption may take back."""

    job_id: int
    partition: str
    allocs: tuple[NodeAlloc, ...]
    start_time: float
    #: when its resources come back: start + time limit (+ time spent suspended); None = unlimited
    end_time: float | None
    priority: int = 1
    requeue: bool = True  #: may be requeued (REQUEUE preemption falls back to CANCEL when not)
    suspended: bool = False  #: stopped by SUSPEND preemption; resumes when its CPUs are free again
    held_stopped: bool = False  #: suspended by an operator (scontrol suspend): only `scontrol resume` ends it
    preempting: bool = False  #: already chosen as a victim: its resources are on their way back
    qos: str = "normal"


@dataclass(frozen=True, slots=True)
class SchedConfig:
    """SchedulerType, SchedulerParameters and PreemptType, as the core needs them."""

    backfill: bool = True  #: sched/backfill (False: sched/builtin)
    bf_window: int = 1440  #: minutes ahead that backfill plans
    bf_resolution: int = 60  #: seconds: the grain of backfill's time map
    bf_max_job_test: int = 100  #: pending jobs each backfill pass examines
    #: accepted for compatibility: a pass works on a snapshot and holds no lock, so it is never
    #: interrupted and always "continues" to bf_max_job_test
    bf_continue: bool = False
    bf_easy: bool = False  #: bf_policy=easy: reserve only for the first blocked job
    preempt: bool = False  #: PreemptType=preempt/partition_prio or preempt/qos
    preempt_qos: bool = False  #: preempt/qos: a job's QOS names the QOSes it may preempt
    preempt_exempt_time: int = 0  #: seconds a job runs before it may be preempted


@dataclass(frozen=True, slots=True)
class Snapshot:
    now: float
    nodes: tuple[Node, ...]
    partitions: tuple[Partition, ...]
    pending: tuple[PendingJob, ...]
    def_mem_per_cpu: int = 0
    weights: Weights = Weights()  # multifactor weights; all zero: the stored priority is used
    #: jobs holding resources. The nodes' `*_used` fields already count them; these add the
    #: times and owners that backfill and preemption need.
    running: tuple[RunningJob, ...] = ()
    config: SchedConfig = SchedConfig()
    #: running limits by key (see core.limits); pending jobs name the ones they charge
    counters: dict[str, Counter] = field(default_factory=dict)
    #: preempt/qos: each QOS's Preempt list and PreemptMode (OFF, CANCEL, REQUEUE or SUSPEND)
    qos_preempt: dict[str, tuple[str, ...]] = field(default_factory=dict)
    qos_preempt_mode: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Start:
    job_id: int
    allocs: tuple[NodeAlloc, ...]

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(a.node for a in self.allocs)


@dataclass(frozen=True, slots=True)
class Preemption:
    victim: int
    preemptor: int
    mode: str  #: CANCEL, REQUEUE or SUSPEND
    grace_time: int = 0  #: seconds (the victim partition's GraceTime)


@dataclass(slots=True)
class Plan:
    starts: list[Start] = field(default_factory=list)
    reasons: dict[int, Reason] = field(default_factory=dict)
    #: the multifactor priority of each pending job (multifactor only; `priorities()` has the parts)
    priorities: dict[int, int] = field(default_factory=dict)
    preemptions: list[Preemption] = field(default_factory=list)
    resumes: list[int] = field(default_factory=list)  #: suspended jobs whose CPUs are free again
    #: expected start of pending jobs that backfill placed on its time map (squeue --start)
    start_times: dict[int, float] = field(default_factory=dict)
    backfilled: set[int] = field(default_factory=set)  #: started by the backfill pass
    bf_tested: int = 0  #: jobs the backfill pass examined (sdiag's depth)


def natural_key(name: str) -> tuple[str, int, str]:
    """Sort key that puts node2 before node10."""
    head = name.rstrip("0123456789")
    tail = name[len(head):]
    return (head, int(tail) if tail else -1, name)
