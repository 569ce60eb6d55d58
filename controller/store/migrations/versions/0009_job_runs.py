"""Earlier runs of requeued jobs, sacct -D (df8bb13): table job_runs

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from slurmlet.controller.store.migrations.ops import create_table

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "job_runs",
        sa.Column("job_id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("run", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("start_time", sa.Float()),
        sa.Column("end_time", sa.Float()),
        sa.Column("exit_code", sa.Integer(), nullable=False),
        sa.Column("exit_signal", sa.Integer(), nullable=False),
        sa.Column("nodes", sa.Text(), nullable=False),
        sa.Column("alloc", sa.Text()),
        sa.Column("batch_host", sa.String(64)),
        sa.Column("batch_state", sa.String(16)),
        sa.Column("batch_exit_code", sa.Integer()),
        sa.Column("batch_exit_signal", sa.Integer()),
    )


def downgrade() -> None:
    op.drop_table("job_runs")
