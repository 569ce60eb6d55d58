"""Heterogeneous jobs: jobs.het_job_id, het_job_offset

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from slurmlet.controller.store.migrations.ops import add_columns, drop_columns

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    add_columns("jobs", sa.Column("het_job_id", sa.Integer()), sa.Column("het_job_offset", sa.Integer()))
    op.create_index("ix_jobs_het", "jobs", ["het_job_id"])


def downgrade() -> None:
    op.drop_index("ix_jobs_het", "jobs")
    drop_columns("jobs", "het_job_id", "het_job_offset")
