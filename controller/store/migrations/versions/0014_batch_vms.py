"""The batch script's largest virtual memory size (sacct MaxVMSize of a job's batch step): jobs.batch_max_vms

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa

from slurmlet.controller.store.migrations.ops import add_columns, drop_columns

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    add_columns("jobs", sa.Column("batch_max_vms", sa.Integer()))


def downgrade() -> None:
    drop_columns("jobs", "batch_max_vms")
