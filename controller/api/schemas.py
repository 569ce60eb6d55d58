"""Wire models. Unknown fields are refused (422 names them)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from slurmlet.common.wire import ANSWER_CHARS

MAX_SCRIPT = 4 * 1024 * 1024  # bytes; Slurm's default max_script_size
MAX_ID = 2**31 - 1  #: job and step ids are integer columns (32 bits in PostgreSQL): a larger one names nothing
Id = Annotated[int, Field(ge=0, le=MAX_ID)]
#: a step as the agent names it, "JOB.STEP"
StepKey = Annotated[str, Field(pattern=r"^[0-9]{1,10}\.[0-9]{1,10}$")]


MAX_TEXT = 65536  #: characters in any string field but a script (a path, a name, an environment value)
#: the fields with a limit of their own: a script (at most max_script_size: limits.check_script), an
#: agent's answers (a piece of a job's output in base64: common/wire.py)
TEXT_LIMITS = {"script": 2**31, "answers": ANSWER_CHARS}


def check_text(v: object, where: str, limit: int = MAX_TEXT) -> None:
    """Refuse what no daemon may be handed: a NUL (no path, argument or environment entry can hold
    one), a lone surrogate (valid JSON, but no UTF-8: it could not be stored or shown), an absurd length."""
    if isinstance(v, str):
        if "\0" in v:
            raise ValueError(f"{where}: contains a NUL character")
        if len(v) > limit:
            raise ValueError(f"{where}: longer than {limit} characters")
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{where}: not valid UTF-8 (a lone surrogate)") from None
    elif isinstance(v, (list, tuple)):
        for x in v:
            check_text(x, where, limit)
    elif isinstance(v, dict):
        for k, x in v.items():
            check_text(k, where, limit)
            check_text(x, where, limit)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # no Infinity/NaN: JSON answers cannot hold them

    @field_validator("*", mode="after")
    @classmethod
    def _text(cls, v: object, info: ValidationInfo) -> object:
        name = info.field_name or ""
        check_text(v, name, limit=TEXT_LIMITS.get(name, MAX_TEXT))
        if name == "environment" and isinstance(v, dict) and any(not k or "=" in k for k in v):
            raise ValueError("environment: a variable's name must be non-empty and hold no '='")
        return v


class JobSubmit(Strict):
    script: str  #: at most max_script_size (MAX_SCRIPT unless set): controller/api/limits.py answers 413
    name: str = Field("sbatch", max_length=256)
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    nodes_min: int = Field(1, ge=1, le=100000)
    nodes_max: int | None = Field(None, ge=1, le=100000)
    ntasks: int | None = Field(None, ge=1, le=1000000)
    ntasks_per_node: int | None = Field(None, ge=1, le=100000)
    cpus_per_task: int = Field(1, ge=1, le=100000)
    mem_per_node: int | None = Field(None, ge=0)
    mem_per_cpu: int | None = Field(None, ge=0)
    time_limit: int | None = Field(None, ge=0, le=MAX_ID)
    gpus: int | None = Field(None, ge=0)
    gpus_per_node: int | None = Field(None, ge=0)
    gpus_per_task: int | None = Field(None, ge=0)
    cpus_per_gpu: int | None = Field(None, ge=1, le=100000)
    mincpus: int | None = Field(None, ge=1, le=100000)  #: --mincpus: at least this many CPUs on each node
    mem_per_gpu: int | None = Field(None, ge=0)  #: MB
    overcommit: bool = False
    gres: bool = False  #: the GPUs per node came from --gres (sbatch then sets no SLURM_GPUS_PER_NODE)
    exclusive: bool = False
    requeue: bool | None = None
    environment: dict[str, str] = Field(default_factory=dict)  #: names without `=` (Strict checks)
    workdir: str = "/"
    submit_dir: str | None = None
    stdout: str | None = None
    stderr: str | None = None
    stdin: str | None = None
    open_mode: Literal["truncate", "append"] = "truncate"
    hold: bool = False
    begin_time: float | None = None
    signal: str | None = None
    comment: str | None = None
    dependency: str | None = None
    array: str | None = None
    nice: int = Field(0, ge=-2147483645, le=2147483645)
    nodelist: str | None = None
    exclude: str | None = None
    user: str = "root"
    uid: int = Field(0, ge=-MAX_ID - 1, le=MAX_ID)  # 32-bit columns: a larger number overflows them
    gid: int = Field(0, ge=-MAX_ID - 1, le=MAX_ID)
    group: str = "root"
    submit_host: str = "localhost"
    argv: list[str] = Field(default_factory=list)
    max_retries: int = Field(0, ge=0, le=100)  #: an air run: failed attempts are run again this many times
    gpu_type: str | None = Field(None, max_length=64)  #: --gres=gpu:TYPE:N: only nodes with such GPUs
    secrets: dict[str, str] = Field(default_factory=dict)  #: an air run: NAME -> scope/key, resolved at launch
    code: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")  #: an air run: its packed code_source (sha256)
    py_deps: list[str] | None = None  #: an air run's environment.dependencies: a venv per node
    test_only: bool = False
    kill_on_invalid_dep: bool = False
    #: salloc's allocation: `script` only holds the nodes (no batch step is shown), the job ends when
    #: salloc releases it (POST /api/v1/jobs/{id}/complete with its command's exit code)
    interactive: bool = False
    #: with `interactive`: an srun's own allocation, for its step 0 alone; the step's end ends it
    #: (with srun's exit code), also when that srun was killed and cannot release it
    srun_step: bool = False
    #: a heterogeneous job (sbatch's `#SBATCH hetjob`, `:`): its other components, in order (their
    #: `script` is not used: the batch script, this one's, runs on the first node of the first)
    het: list[JobSubmit] | None = Field(None, min_length=1, max_length=127)

    @model_validator(mode="after")
    def _nodes_range(self) -> JobSubmit:
        if self.nodes_max is not None and self.nodes_max < self.nodes_min:
            raise ValueError("nodes_max must be >= nodes_min")
        return self


MAX_BATCH = 1000  #: jobs in one POST /api/v1/jobs/batch (more: 422 naming the limit)


class JobBatch(Strict):
    """Many submissions in one request: validated all, then stored in one transaction, or none."""

    jobs: list[JobSubmit] = Field(min_length=1, max_length=MAX_BATCH)


class JobUpdate(Strict):
    time_limit: int | None = Field(None, ge=0, le=MAX_ID)
    #: scontrol update StartTime=: when a pending job may start (a time past is now)
    begin_time: float | None = Field(None, ge=0)
    partition: str | None = None
    name: str | None = None
    comment: str | None = None
    nice: int | None = Field(None, ge=-2147483645, le=2147483645)
    site_factor: int | None = Field(None, ge=-2147483645, le=2147483645)


class StepCancel(Strict):
    #: scancel JOB.STEP's: a step that is not running is an error, and its tasks are killed at once
    #: (SIGKILL, with slurmstepd's CANCELLED line); srun's own (interrupted, -K): SIGTERM, then KillWait
    scancel: bool = False
    #: srun's forced termination (a signal to srun, or -W's time up): its tasks killed at once as scancel's
    #: are, a running step or not; `signal` (a second Ctrl-C's SIGINT) sent to them first
    now: bool = False
    signal: int | None = Field(None, ge=1, le=64)


class AttachRequest(Strict):
    io: str = Field(max_length=300)  #: host:port where sattach collects the output, as srun's `io`


class StatRequest(Strict):
    steps: list[str] = Field(default_factory=list, max_length=1000)  #: "0", "batch"; none: every running step
    node: str | None = Field(None, max_length=255)  #: only this node's tasks (scontrol listpids)


class CompleteRequest(Strict):
    exit_code: int = Field(0, ge=0, le=255)


class CancelRequest(Strict):
    ids: list[Id] = Field(default_factory=list)
    #: array tasks, `ARRAYID_INDEX` (a plain array id in `ids` means every task of it)
    tasks: list[str] = Field(default_factory=list)
    signal: int | None = Field(None, ge=1, le=64)
    users: list[str] = Field(default_factory=list)
    names: list[str] = Field(default_factory=list)
    partitions: list[str] = Field(default_factory=list)
    states: list[str] = Field(default_factory=list)
    uid: int = 0


class IdsRequest(Strict):
    ids: list[Id] = Field(default_factory=list)


class NodeResources(Strict):
    cpus: int = Field(ge=1)
    memory: int = Field(ge=1)
    gpus: int = Field(0, ge=0)
    gpu_type: str | None = None
    addr: str | None = None
    hostname: str | None = None
    boot_time: float | None = None
    arch: str | None = None
    os: str | None = None
    version: str | None = None
    pool: str | None = Field(None, max_length=64)  #: the node pool the agent joined (`--pool`)


class ScriptDone(Strict):
    """A Prolog or Epilog the agent ran for a job's run (its restart count)."""

    job_id: Id
    run: int
    kind: Literal["prolog", "epilog"]
    exit_code: int = 0


class Finished(Strict):
    job_id: Id
    exit_code: int = 0
    signal: int = 0
    timeout: bool = False
    launch_failed: bool = False
    oom: bool = False  # the kernel killed some of it for its cgroup's memory limit (OUT_OF_MEMORY)
    end_time: float | None = None
    restarts: int | None = None  # the incarnation that ended; a stale report is ignored
    prolog_failed: bool = False  # the node's Prolog failed: the job never started
    epilog_failed: int | None = None  # the node's Epilog exit code, when it failed
    max_rss: int | None = Field(None, ge=0)  # KB: the batch script's largest resident set, as sampled
    max_vms: int | None = Field(None, ge=0)  # KB: its largest virtual memory size, as sampled
    user_cpu: float | None = Field(None, ge=0)  # seconds
    system_cpu: float | None = Field(None, ge=0)


class Lost(Strict):
    """A job's batch script (its run `restarts`) or a step's tasks (`step_id`) that an agent found
    left running by its predecessor after a crash, and killed: the job lost the node."""

    job_id: Id
    restarts: int | None = Field(None, ge=0)
    step_id: Id | None = None


class StepUsage(Strict):
    """What a step's tasks on one node used: the kernel's counts where the step had a cgroup."""

    max_rss: int | None = Field(None, ge=0)  #: KB, its largest task's (the cgroup's peak for a lone task)
    max_vms: int | None = Field(None, ge=0)  #: KB, its largest task's virtual memory, as sampled
    user_cpu: float | None = Field(None, ge=0)  #: seconds, all its tasks
    system_cpu: float | None = Field(None, ge=0)
    oom: bool = False  #: the kernel killed some of it for the step's memory limit
    tasks: dict[str, list[int]] = Field(default_factory=dict)  #: rank -> [max RSS KB, max VM size KB]


class StepFinished(Strict):
    job_id: Id
    step_id: Id
    results: dict[str, list[int]] = Field(default_factory=dict)  #: rank -> [exit code, signal]
    end_time: float | None = None
    usage: StepUsage | None = None


class HetStepPart(Strict):
    """One component of a heterogeneous step: the job component it runs in and its own request."""

    het_group: int = Field(ge=0, le=127)
    argv: list[str] = Field(min_length=1)
    nodes: int | None = Field(None, ge=1)
    ntasks: int | None = Field(None, ge=1)
    ntasks_per_node: int | None = Field(None, ge=1)
    cpus_per_task: int | None = Field(None, ge=1)
    #: its own srun -o/-e patterns and --export environment (none: the step's)
    stdout: str | None = None
    stderr: str | None = None
    environment: dict[str, str] | None = None


class StepCreate(Strict):
    """srun's step request: where and how many tasks, what they run, where their output goes."""

    argv: list[str] = Field(min_length=1)
    nodes: int | None = Field(None, ge=1)
    ntasks: int | None = Field(None, ge=1)
    ntasks_per_node: int | None = Field(None, ge=1)
    cpus_per_task: int | None = Field(None, ge=1)  #: None: the job's CPUs on each node (no -c)
    cpu_bind: str | None = Field(None, max_length=4096)  #: srun --cpu-bind (with TaskPlugin=task/affinity)
    mem_per_node: int | None = Field(None, ge=0)  #: srun --mem (MB): the step's own limit on each node
    mem_per_cpu: int | None = Field(None, ge=0)  #: srun --mem-per-cpu (MB), times the step's CPUs there
    gpus_per_task: int | None = Field(None, ge=1)
    name: str | None = Field(None, max_length=256)  #: srun -J: the step's name (its tasks' SLURM_JOB_NAME)
    exact: bool = False  #: srun --exact (or --exclusive): only its tasks' CPUs, as -c gives too
    gpus_per_node: int | None = Field(None, ge=1)  #: srun --gpus-per-node (--gres=gpu:N): that many of the job's
    environment: dict[str, str] = Field(default_factory=dict)
    cwd: str = "/"
    io: str | None = None  #: host:port where srun collects the tasks' output and exit codes
    #: "words": the agents write each stream's header line as words, not JSON (common/streamhead.py)
    io_header: Literal["json", "words"] = "json"
    label: bool = False
    unbuffered: bool = False
    #: srun --input: "all" tasks read srun's stdin (sent on each one's `in` stream), or the one of this
    #: rank, or "none"; None: every task reads /dev/null
    input: str | None = Field(None, pattern=r"^(all|none|[0-9]{1,9})$")
    stdout: str | None = None  #: srun -o pattern: the tasks write there instead of streaming to srun
    stderr: str | None = None
    nodelist: list[str] = Field(default_factory=list)  #: srun -w: run on these nodes of the job
    srun_host: str | None = Field(None, max_length=255)  #: where the srun runs (scontrol show step: SrunHost)
    srun_pid: int | None = Field(None, ge=0, le=2**31)
    #: srun --pty: task 0 runs on a pseudo-terminal of this size (rows, columns) relayed to srun; the
    #: other tasks' output is discarded
    pty: bool = False
    winsize: tuple[int, int] = (24, 80)
    #: a step of a heterogeneous job (srun `A : B`, --het-group): per component of the step, its
    #: job component (`het_group`) and what runs there (argv, task counts); ranks follow one another
    components: list[HetStepPart] | None = Field(None, min_length=1, max_length=128)

    @model_validator(mode="after")
    def _winsize(self) -> StepCreate:
        if not all(0 <= n <= 65535 for n in self.winsize):
            raise ValueError("winsize must be two numbers 0..65535")
        return self


class NodeSync(Strict):
    resources: NodeResources | None = None
    running: list[Id] = Field(default_factory=list)
    suspended: list[Id] = Field(default_factory=list)
    steps_running: list[StepKey] = Field(default_factory=list)  #: "JOB.STEP" with tasks on this node
    #: of `running`: the jobs whose kill sequence began, those in a preemption's GraceTime, and of
    #: `steps_running` the steps being killed (their orders are not sent again)
    ending: list[Id] = Field(default_factory=list)
    notified: list[Id] = Field(default_factory=list)
    steps_ending: list[StepKey] = Field(default_factory=list)
    #: the prologs and epilogs running now, "JOB.RUN.KIND" (their orders are not sent again meanwhile)
    scripts_running: list[str] = Field(default_factory=list, max_length=10000)
    steps_finished: list[StepFinished] = Field(default_factory=list)
    finished: list[Finished] = Field(default_factory=list)
    scripts_done: list[ScriptDone] = Field(default_factory=list)
    lost: list[Lost] = Field(default_factory=list)
    wait: float = Field(0.0, ge=0, le=30)
    #: sstat's answers: {"key": "JOB.STEP", "node": name, "tasks": [{rank, max_rss, max_vms, cpu, pids}]}
    stats: list[dict] = Field(default_factory=list, max_length=10000)
    #: answers to the controller's questions (Controller.ask): {"key": ..., what was asked}; a string
    #: in them up to ANSWER_CHARS long (a piece of output, common/wire.PIECE, in base64)
    answers: list[dict] = Field(default_factory=list, max_length=1000)
    cpu_load: float | None = None
    free_mem: int | None = None


class NodeUpdate(Strict):
    state: str
    reason: str | None = None
