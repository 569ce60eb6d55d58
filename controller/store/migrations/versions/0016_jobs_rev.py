"""A count of each job row's updates, for job lists to work out only what changed: jobs.rev

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa

from slurmlet.controller.store.migrations.ops import add_columns, drop_columns

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    add_columns("jobs", sa.Column("rev", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    drop_columns("jobs", "rev")
