"""srun steps (c305e41): table steps

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from slurmlet.controller.store.migrations.ops import create_table

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "steps",
        sa.Column("job_id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("step_id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("layout", sa.Text(), nullable=False),
        sa.Column("request", sa.Text(), nullable=False),
        sa.Column("start_time", sa.Float(), nullable=False),
        sa.Column("end_time", sa.Float()),
        sa.Column("results", sa.Text(), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=False),
        sa.Column("exit_signal", sa.Integer(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("steps")
