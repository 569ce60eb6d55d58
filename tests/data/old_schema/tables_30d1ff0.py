# controller/store/tables.py as it was at commit 30d1ff0 (git show 30d1ff0:controller/store/tables.py), kept
# verbatim below this header: tests/store/test_migrations.py makes databases exactly as that slurmlet did.
"""SQLAlchemy 2.0 Core tables: the controller's whole state lives here."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Float, Index, Integer, MetaData, String, Table, Text

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
