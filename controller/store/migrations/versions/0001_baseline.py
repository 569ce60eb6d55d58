"""Baseline: the first release's schema (30d1ff0): jobs and nodes

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from slurmlet.controller.store.migrations.ops import create_index, create_table

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "jobs",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("user", sa.String(64), nullable=False),
        sa.Column("uid", sa.Integer(), nullable=False),
        sa.Column("gid", sa.Integer(), nullable=False),
        sa.Column("grp", sa.String(64), nullable=False),
        sa.Column("account", sa.String(64), nullable=False),
        sa.Column("qos", sa.String(64), nullable=False),
        sa.Column("partition", sa.String(64), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(64), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("nice", sa.Integer(), nullable=False),
        sa.Column("held", sa.String(8)),
        sa.Column("submit_time", sa.Float(), nullable=False),
        sa.Column("eligible_time", sa.Float()),
        sa.Column("begin_time", sa.Float()),
        sa.Column("start_time", sa.Float()),
        sa.Column("end_time", sa.Float()),
        sa.Column("time_limit", sa.Integer()),
        sa.Column("spec", sa.Text(), nullable=False),
        sa.Column("script", sa.Text(), nullable=False),
        sa.Column("environment", sa.Text(), nullable=False),
        sa.Column("alloc", sa.Text()),
        sa.Column("nodes", sa.Text(), nullable=False),
        sa.Column("batch_host", sa.String(64)),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("pending_action", sa.String(16)),
        sa.Column("pending_signal", sa.Integer()),
        sa.Column("cancelled_by", sa.Integer()),
        sa.Column("exit_code", sa.Integer(), nullable=False),
        sa.Column("exit_signal", sa.Integer(), nullable=False),
        sa.Column("batch_state", sa.String(16)),
        sa.Column("batch_exit_code", sa.Integer()),
        sa.Column("batch_exit_signal", sa.Integer()),
        sa.Column("restarts", sa.Integer(), nullable=False),
        sa.Column("requeue", sa.Boolean(), nullable=False),
        sa.Column("stdout", sa.Text()),
        sa.Column("stderr", sa.Text()),
        sa.Column("array_job_id", sa.Integer()),
        sa.Column("array_task_id", sa.Integer()),
        sa.Column("comment", sa.Text()),
        sa.Column("dependency", sa.Text()),
    )
    create_index("ix_jobs_state", "jobs", ["state"])
    create_index("ix_jobs_host_active", "jobs", ["batch_host", "active"])
    create_index("ix_jobs_end", "jobs", ["end_time"])
    create_table(
        "nodes",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("addr", sa.String(128), nullable=False),
        sa.Column("hostname", sa.String(128), nullable=False),
        sa.Column("cpus", sa.Integer(), nullable=False),
        sa.Column("memory", sa.Integer(), nullable=False),
        sa.Column("gpus", sa.Integer(), nullable=False),
        sa.Column("gpu_type", sa.String(64)),
        sa.Column("admin_state", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text()),
        sa.Column("reason_time", sa.Float()),
        sa.Column("last_seen", sa.Float(), nullable=False),
        sa.Column("registered_at", sa.Float(), nullable=False),
        sa.Column("boot_time", sa.Float()),
        sa.Column("arch", sa.String(32)),
        sa.Column("os", sa.String(256)),
        sa.Column("version", sa.String(32)),
        sa.Column("cpu_load", sa.Float()),
        sa.Column("free_mem", sa.Integer()),
        sa.Column("last_busy", sa.Float()),
    )


def downgrade() -> None:
    op.drop_table("nodes")
    op.drop_table("jobs")
