"""SQLAlchemy 2.0 Core tables: the controller's whole state lives here."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Float, Index, Integer, LargeBinary, MetaData, String, Table, Text, text

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
    #: a heterogeneous job's components: each a row, `het_job_id` the first one's id (its leader, offset 0).
    #: The leader holds the whole allocation (its `alloc` entries name their component, "het"); the
    #: others follow its state (store/het.py) and are never active themselves
    Column("het_job_id", Integer),
    Column("het_job_offset", Integer),
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
    Column("batch_max_vms", Integer),
    Column("batch_user_cpu", Float),
    Column("batch_system_cpu", Float),
    #: how many times the row was updated (every UPDATE counts it up): a job list works out again only
    #: the jobs whose rev changed since it last did (store/queries.py, Queries.listed)
    Column("rev", Integer, nullable=False, default=0, onupdate=text("rev + 1")),
)
Index("ix_jobs_state", jobs.c.state)
Index("ix_jobs_host_active", jobs.c.batch_host, jobs.c.active)
Index("ix_jobs_end", jobs.c.end_time)
Index("ix_jobs_array", jobs.c.array_job_id)
Index("ix_jobs_het", jobs.c.het_job_id)  #: sacct -j / squeue -j name arrays by their job id
#: the jobs on nodes: each scheduling pass, node sync and squeue reads them, and without this index
#: each read went through the whole history, scripts and environments included
Index("ix_jobs_active", jobs.c.active)
#: what a job list reads of each job first (store/queries.py, Queries.listed: id, rev, submit time,
#: under squeue's filters): from this index alone, not from the rows with their scripts
Index("ix_jobs_listed", jobs.c.state, jobs.c.end_time, jobs.c.active, jobs.c.rev, jobs.c.submit_time)

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
    Column("pool", String(64)),  #: the node pool the agent joined (`slurmlet agent --pool`); its feature
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
Index("ix_steps_state", steps.c.state)  #: the running steps (each node sync), not every step ever run

#: Prolog/Epilog runs of a job's incarnation on each of its nodes, and PrologSlurmctld/EpilogSlurmctld
#: on the controller (node ''): what is still to run, and how it went. The batch script starts once
#: every prolog row of its run is OK.
node_scripts = Table(
    "node_scripts",
    metadata,
    Column("job_id", Integer, primary_key=True),
    Column("run", Integer, primary_key=True),  #: the job's restart count
    Column("node", String(64), primary_key=True),  #: '' for the controller's own scripts
    Column("kind", String(24), primary_key=True),  #: prolog, epilog, prolog_slurmctld, epilog_slurmctld
    Column("state", String(16), nullable=False),  #: PENDING, RUNNING (controller), OK, FAILED
    Column("exit_code", Integer),
    Column("payload", Text, nullable=False),  #: JSON: what the agent needs to run it (the job's environment)
    Column("created", Float, nullable=False),
)
Index("ix_node_scripts_node_state", node_scripts.c.node, node_scripts.c.state)

#: secrets for air runs (`slurmlet secrets put SCOPE KEY`): injected into a run's environment at
#: launch, never returned by the API. Each belongs to a user (`user:NAME`) or to an account
#: (`account:NAME`, for its members): `scope/key` names one per owner
secrets = Table(
    "secrets",
    metadata,
    Column("owner", String(136), primary_key=True),
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

#: who uploaded each code blob (the same bytes uploaded by two users belong to both): only they,
#: and the agents, may read it or run it
code_owners = Table(
    "code_owners",
    metadata,
    Column("sha", String(64), primary_key=True),
    Column("uid", Integer, primary_key=True),
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

#: submissions by idempotency key (the `Idempotency-Key` header of POST /api/v1/jobs, sent by sbatch
#: and REST clients): a retried request whose first answer was lost (a controller killed after its
#: commit, a cut connection) gets the job its first attempt made instead of a second one. Keys are
#: per user; the row is written in the transaction that inserts the job.
submit_keys = Table(
    "submit_keys",
    metadata,
    Column("user", String(64), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("job_id", Integer, nullable=False),
    Column("created", Float, nullable=False),
    Column("digest", String(64)),  #: sha256 of the request: a key reused for another request is refused
)

# ---------------------------------------------------------------- accounting (sacctmgr)
#: clusters known to the accounting database (sacctmgr add cluster); the controller adds its own
clusters = Table(
    "clusters",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("created", Float, nullable=False),
)

#: accounts, a tree under `root`
accounts = Table(
    "accounts",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("parent", String(64)),  #: None only for root
    Column("description", Text, nullable=False, default=""),
    Column("organization", Text, nullable=False, default=""),
    Column("created", Float, nullable=False),
)

#: users: their default account and administrative level
users = Table(
    "users",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("default_account", String(64), nullable=False),
    Column("admin_level", String(16), nullable=False, default="None"),  #: None, Operator, Administrator
    Column("created", Float, nullable=False),
)

#: associations: an account's own (user '') and each user's in an account, optionally per partition
assocs = Table(
    "assocs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("account", String(64), nullable=False),
    Column("user", String(64), nullable=False, default=""),
    Column("partition", String(64), nullable=False, default=""),
    Column("shares", Integer, nullable=False, default=1),  #: Fairshare (RawShares)
    Column("priority", Integer),
    Column("qos", Text),  #: comma list of QOS names; NULL: inherited from the parent
    Column("default_qos", String(64)),
    #: JSON: GrpTRES, GrpJobs, GrpSubmitJobs, MaxJobs, MaxSubmitJobs, MaxTRES, MaxWall (minutes)
    Column("limits", Text, nullable=False, default="{}"),
    Column("created", Float, nullable=False),
)
Index("ix_assocs_key", assocs.c.account, assocs.c.user, assocs.c.partition, unique=True)

#: quality of service
qos = Table(
    "qos",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(64), nullable=False, unique=True),
    Column("description", Text, nullable=False, default=""),
    Column("priority", Integer, nullable=False, default=0),
    Column("preempt", Text, nullable=False, default=""),  #: comma list of QOS it may preempt
    Column("preempt_mode", String(16), nullable=False, default="cluster"),
    Column("preempt_exempt_time", Integer),  #: seconds
    Column("grace_time", Integer, nullable=False, default=0),  #: seconds
    Column("flags", Text, nullable=False, default=""),
    Column("usage_factor", Float, nullable=False, default=1.0),
    #: JSON: GrpTRES, GrpJobs, GrpSubmitJobs, MaxTRESPerJob, MaxTRESPerUser, MaxJobsPerUser,
    #: MaxSubmitJobsPerUser, MaxWall (minutes)
    Column("limits", Text, nullable=False, default="{}"),
    Column("created", Float, nullable=False),
)

# ---------------------------------------------------------------- the controllers (SlurmctldHost)
#: who may change the database: one row (id 1). The active controller holds it until `expires` (seconds
#: on the database's clock) and renews it; a backup takes it once it has expired (or by `scontrol
#: takeover`), with `token` one higher. Every write transaction of a controller first checks that the
#: token is still its own (controller/store/lease.py): one that lost the lease changes nothing more.
controller_lease = Table(
    "controller_lease",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("holder", String(255), nullable=False, default=""),  #: "NAME pid PID on HOST" ("": nobody)
    Column("token", Integer, nullable=False, default=0),
    Column("expires", Float, nullable=False, default=0.0),
    Column("holder_index", Integer, nullable=False, default=0),  #: its place among SlurmctldHost's
)
