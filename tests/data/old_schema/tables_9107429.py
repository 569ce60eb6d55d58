# controller/store/tables.py as it was at commit 9107429 (git show 9107429:controller/store/tables.py), kept
# verbatim below this header: tests/store/test_migrations.py makes databases exactly as that slurmlet did.
"""SQLAlchemy 2.0 Core tables: the controller's whole state lives here."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Float, Index, Integer, LargeBinary, MetaData, String, Table, Text

metadata = MetaData()

jobs = Table(
    "jobs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(256), nullable=False),
    Column("user", String(64), nullable=False),
    Column("uid", Integer, nullable=False),
    Column("gid", Integer, nullable=False),
    Column("grp", String(64), nullable=False),
    Column("account", String(64), nullable=False),
    Column("qos", String(64), nullable=False),
    Column("partition", String(64), nullable=False),
    #: PENDING RUNNING COMPLETED FAILED CANCELLED TIMEOUT NODE_FAIL ...
    Column("state", String(16), nullable=False),
    Column("reason", String(64), nullable=False, default="None"),
    Column("priority", Integer, nullable=False, default=1),
    Column("nice", Integer, nullable=False, default=0),
    Column("held", String(8)),  #: None, "user" or "admin"
    Column("submit_time", Float, nullable=False),
    Column("eligible_time", Float),
    Column("begin_time", Float),
    Column("start_time", Float),
    Column("end_time", Float),
    Column("time_limit", Integer),  #: minutes; NULL = UNLIMITED
    Column("spec", Text, nullable=False),  #: JSON: the request (JobSubmit minus script/env)
    Column("script", Text, nullable=False),
    Column("environment", Text, nullable=False),  #: JSON object
    Column("alloc", Text),  #: JSON list of {node, cpus, memory, gpu_ids, tasks}
    Column("nodes", Text, nullable=False, default=""),  #: compressed hostlist of the allocation
    Column("batch_host", String(64)),
    #: 1 while processes of the job may exist on its nodes (running, or being killed)
    Column("active", Boolean, nullable=False, default=False),
    #: what to do once the processes are gone: cancel, requeue, hold (requeue held)
    Column("pending_action", String(16)),
    Column("pending_signal", Integer),  #: one-shot scancel --signal to deliver
    Column("cancelled_by", Integer),
    Column("exit_code", Integer, nullable=False, default=0),
    Column("exit_signal", Integer, nullable=False, default=0),
    Column("batch_state", String(16)),
    Column("batch_exit_code", Integer),
    Column("batch_exit_signal", Integer),
    Column("restarts", Integer, nullable=False, default=0),
    Column("requeue", Boolean, nullable=False, default=True),
    Column("stdout", Text),  #: expanded at start
    Column("stderr", Text),
    Column("array_job_id", Integer),
    Column("array_task_id", Integer),
    Column("comment", Text),
    Column("dependency", Text),
    Column("est_start", Float),  #: pending: the start backfill expects (squeue --start)
    Column("suspend_time", Float),  #: SUSPENDED: since when
    Column("suspended_secs", Float, nullable=False, default=0.0),  #: time spent suspended so far
    Column("preempt_time", Float),  #: when the job was chosen as a preemption victim
    Column("preempt_grace", Integer),  #: its partition's GraceTime, seconds
    Column("site_factor", Integer, nullable=False, default=0),  #: scontrol update SiteFactor=
    Column("array_max_tasks", Integer),  #: --array=...%N: at most N tasks of the array run at once
    Column("master_port", Integer),  #: MASTER_PORT of the job's rendezvous, the same on all its nodes
    #: the batch script's use, as the agent sampled it (sacct MaxRSS in KB, UserCPU/SystemCPU in s)
    Column("batch_max_rss", Integer),
    Column("batch_user_cpu", Float),
    Column("batch_system_cpu", Float),
)
Index("ix_jobs_state", jobs.c.state)
Index("ix_jobs_host_active", jobs.c.batch_host, jobs.c.active)
Index("ix_jobs_end", jobs.c.end_time)

nodes = Table(
    "nodes",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("addr", String(128), nullable=False),
    Column("hostname", String(128), nullable=False),
    Column("cpus", Integer, nullable=False),
    Column("memory", Integer, nullable=False),
    Column("gpus", Integer, nullable=False),
    Column("gpu_type", String(64)),
    #: the administrative state: UP, DRAIN, DOWN (DOWN also when heartbeats stop)
    Column("admin_state", String(16), nullable=False, default="UP"),
    Column("reason", Text),
    Column("reason_time", Float),
    Column("last_seen", Float, nullable=False),
    Column("registered_at", Float, nullable=False),
    Column("boot_time", Float),
    Column("arch", String(32)),
    Column("os", String(256)),
    Column("version", String(32)),
    Column("cpu_load", Float),
    Column("free_mem", Integer),
    Column("last_busy", Float),
)

#: job steps (srun inside an allocation): one row per step, its layout and its tasks' results
steps = Table(
    "steps",
    metadata,
    Column("job_id", Integer, primary_key=True),
    Column("step_id", Integer, primary_key=True),
    Column("name", String(256), nullable=False),
    #: RUNNING, then COMPLETED, FAILED or CANCELLED
    Column("state", String(16), nullable=False),
    #: JSON list of {node, addr, ranks, cpus, gpu_ids}: which global task ranks run where
    Column("layout", Text, nullable=False),
    Column("request", Text, nullable=False),  #: JSON: argv, env, cwd, io address, label, ...
    Column("start_time", Float, nullable=False),
    Column("end_time", Float),
    #: JSON {node: {rank: [exit_code, signal]}} as the nodes report their tasks' ends
    Column("results", Text, nullable=False, default="{}"),
    Column("usage", Text, nullable=False, default="{}"),  #: JSON {node: {max_rss, user_cpu, system_cpu}}
    Column("exit_code", Integer, nullable=False, default=0),
    Column("exit_signal", Integer, nullable=False, default=0),
)

#: secrets for air runs (`slurmlet secrets put SCOPE KEY`): injected into a run's environment at
#: launch, never returned by the API
secrets = Table(
    "secrets",
    metadata,
    Column("scope", String(128), primary_key=True),
    Column("key", String(128), primary_key=True),
    Column("value", Text, nullable=False),
    Column("updated", Float, nullable=False),
)

#: air runs' code (`code_source.root_path`, packed by the CLI as .tar.gz), by sha256; agents unpack it
code_blobs = Table(
    "code_blobs",
    metadata,
    Column("sha", String(64), primary_key=True),
    Column("data", LargeBinary, nullable=False),
    Column("created", Float, nullable=False),
)

#: earlier runs of requeued jobs (sacct -D): what each incarnation was, once it ended
job_runs = Table(
    "job_runs",
    metadata,
    Column("job_id", Integer, primary_key=True),
    Column("run", Integer, primary_key=True),  #: the job's restart count during that run
    Column("state", String(16), nullable=False),
    Column("start_time", Float),
    Column("end_time", Float),
    Column("exit_code", Integer, nullable=False, default=0),
    Column("exit_signal", Integer, nullable=False, default=0),
    Column("nodes", Text, nullable=False, default=""),
    Column("alloc", Text),
    Column("batch_host", String(64)),
    Column("batch_state", String(16)),
    Column("batch_exit_code", Integer),
    Column("batch_exit_signal", Integer),
)
