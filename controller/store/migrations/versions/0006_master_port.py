"""Rendezvous port (9258d2d): jobs.master_port

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa

from slurmlet.controller.store.migrations.ops import add_columns, drop_columns

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    add_columns("jobs", sa.Column("master_port", sa.Integer()))


def downgrade() -> None:
    drop_columns("jobs", "master_port")
