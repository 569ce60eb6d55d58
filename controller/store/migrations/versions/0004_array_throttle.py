"""Job arrays' %N throttle (c08d310): jobs.array_max_tasks

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa

from slurmlet.controller.store.migrations.ops import add_columns, drop_columns

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    add_columns("jobs", sa.Column("array_max_tasks", sa.Integer()))


def downgrade() -> None:
    drop_columns("jobs", "array_max_tasks")
