"""Accounting, node pools, prologs (8029037): clusters, accounts, users, assocs, qos, node_scripts, nodes.pool

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from slurmlet.controller.store.migrations.ops import add_columns, create_index, create_table, drop_columns

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_index("ix_jobs_array", "jobs", ["array_job_id"])
    add_columns("nodes", sa.Column("pool", sa.String(64)))
    create_table(
        "node_scripts",
        sa.Column("job_id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("run", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("node", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(24), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("exit_code", sa.Integer()),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
    )
    create_index("ix_node_scripts_node_state", "node_scripts", ["node", "state"])
    create_table(
        "clusters",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("created", sa.Float(), nullable=False),
    )
    create_table(
        "accounts",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("parent", sa.String(64)),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("organization", sa.Text(), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
    )
    create_table(
        "users",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("default_account", sa.String(64), nullable=False),
        sa.Column("admin_level", sa.String(16), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
    )
    create_table(
        "assocs",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("account", sa.String(64), nullable=False),
        sa.Column("user", sa.String(64), nullable=False),
        sa.Column("partition", sa.String(64), nullable=False),
        sa.Column("shares", sa.Integer(), nullable=False),
        sa.Column("priority", sa.Integer()),
        sa.Column("qos", sa.Text()),
        sa.Column("default_qos", sa.String(64)),
        sa.Column("limits", sa.Text(), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
    )
    create_index("ix_assocs_key", "assocs", ["account", "user", "partition"], unique=True)
    create_table(
        "qos",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("preempt", sa.Text(), nullable=False),
        sa.Column("preempt_mode", sa.String(16), nullable=False),
        sa.Column("preempt_exempt_time", sa.Integer()),
        sa.Column("grace_time", sa.Integer(), nullable=False),
        sa.Column("flags", sa.Text(), nullable=False),
        sa.Column("usage_factor", sa.Float(), nullable=False),
        sa.Column("limits", sa.Text(), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    for table in ("qos", "assocs", "users", "accounts", "clusters", "node_scripts"):
        op.drop_table(table)
    drop_columns("nodes", "pool")
    op.drop_index("ix_jobs_array", table_name="jobs")
