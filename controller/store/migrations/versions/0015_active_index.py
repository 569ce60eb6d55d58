"""Indexes for the jobs on nodes and the running steps: jobs.active, steps.state

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_jobs_active", "jobs", ["active"])
    op.create_index("ix_steps_state", "steps", ["state"])


def downgrade() -> None:
    op.drop_index("ix_steps_state", "steps")
    op.drop_index("ix_jobs_active", "jobs")
