"""Owners: secrets belong to a user or an account (column owner, in the key); table code_owners

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # the key changes, so the table is made anew; secrets from before had no owner: root's
    op.rename_table("secrets", "secrets_0012")
    op.create_table(
        "secrets",
        sa.Column("owner", sa.String(136), primary_key=True),
        sa.Column("scope", sa.String(128), primary_key=True),
        sa.Column("key", sa.String(128), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("updated", sa.Float(), nullable=False),
    )
    op.execute("INSERT INTO secrets (owner, scope, key, value, updated) "
               "SELECT 'user:root', scope, key, value, updated FROM secrets_0012")
    op.drop_table("secrets_0012")
    # code uploaded before had no recorded owner: only the agents (and administrators) may read it
    op.create_table(
        "code_owners",
        sa.Column("sha", sa.String(64), primary_key=True),
        sa.Column("uid", sa.Integer(), primary_key=True),
    )


def downgrade() -> None:
    op.drop_table("code_owners")
    op.rename_table("secrets", "secrets_0013")
    op.create_table(
        "secrets",
        sa.Column("scope", sa.String(128), primary_key=True),
        sa.Column("key", sa.String(128), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("updated", sa.Float(), nullable=False),
    )
    # one secret per name again: root's are kept, the others' go (they could collide)
    op.execute("INSERT INTO secrets (scope, key, value, updated) "
               "SELECT scope, key, value, updated FROM secrets_0013 WHERE owner = 'user:root'")
    op.drop_table("secrets_0013")
