"""Backfill estimates, suspension and preemption (bd4e06c): jobs.est_start, suspend_time, ...

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa

from slurmlet.controller.store.migrations.ops import add_columns, drop_columns

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    add_columns("jobs",
                sa.Column("est_start", sa.Float()),
                sa.Column("suspend_time", sa.Float()),
                sa.Column("suspended_secs", sa.Float(), nullable=False, server_default=sa.text("0")),
                sa.Column("preempt_time", sa.Float()),
                sa.Column("preempt_grace", sa.Integer()))


def downgrade() -> None:
    drop_columns("jobs", "est_start", "suspend_time", "suspended_secs", "preempt_time", "preempt_grace")
