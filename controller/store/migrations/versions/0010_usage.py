"""MaxRSS and CPU time of batch scripts and steps (9107429): jobs.batch_max_rss, ..., steps.usage

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa

from slurmlet.controller.store.migrations.ops import add_columns, drop_columns

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    add_columns("jobs",
                sa.Column("batch_max_rss", sa.Integer()),
                sa.Column("batch_user_cpu", sa.Float()),
                sa.Column("batch_system_cpu", sa.Float()))
    add_columns("steps", sa.Column("usage", sa.Text(), nullable=False, server_default="{}"))


def downgrade() -> None:
    drop_columns("steps", "usage")
    drop_columns("jobs", "batch_max_rss", "batch_user_cpu", "batch_system_cpu")
