"""Submissions by idempotency key: table submit_keys (with the digest of the request)

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from slurmlet.controller.store.migrations.ops import create_table

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # (ops.create_table: a database stamped 0011 while tables.py already had the table has it)
    create_table(
        "submit_keys",
        sa.Column("user", sa.String(64), primary_key=True),
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        sa.Column("digest", sa.String(64)),
    )


def downgrade() -> None:
    op.drop_table("submit_keys")
