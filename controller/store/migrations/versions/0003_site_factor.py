"""Site factor (3672b75): jobs.site_factor

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa

from slurmlet.controller.store.migrations.ops import add_columns, drop_columns

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    add_columns("jobs", sa.Column("site_factor", sa.Integer(), nullable=False, server_default=sa.text("0")))


def downgrade() -> None:
    drop_columns("jobs", "site_factor")
