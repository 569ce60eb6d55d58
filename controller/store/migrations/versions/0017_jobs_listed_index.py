"""An index squeue's job list reads alone: jobs(state, end_time, active, rev, submit_time)

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_jobs_listed", "jobs", ["state", "end_time", "active", "rev", "submit_time"])


def downgrade() -> None:
    op.drop_index("ix_jobs_listed", "jobs")
