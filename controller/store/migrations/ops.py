"""Schema operations for the revisions that replay slurmlet's history from before Alembic (0001-0011).

Before Alembic, `make_engine` ran `metadata.create_all`: it made missing tables whole, in the shape
of the slurmlet that ran it, but never added a column to a table that existed. A database from that
time may so hold a table of a later revision beside tables of an earlier one; these operations skip
what is already there, so any such database is upgraded whatever its mix. Revisions after 0011
can use alembic's `op` directly.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


def _inspector() -> sa.Inspector:
    return sa.inspect(op.get_bind())


def create_table(name: str, *items: sa.schema.SchemaItem) -> None:
    if not _inspector().has_table(name):
        op.create_table(name, *items)


def create_index(name: str, table: str, columns: list[str], unique: bool = False) -> None:
    if name not in {ix["name"] for ix in _inspector().get_indexes(table)}:
        op.create_index(name, table, columns, unique=unique)


def add_columns(table: str, *columns: sa.Column) -> None:
    """Add the columns `table` lacks. A NOT NULL column needs a `server_default` here: it fills the
    rows already there, and is dropped right after (tables.py's defaults are Python-side, and a
    migrated database is to equal a new one)."""
    have = {c["name"] for c in _inspector().get_columns(table)}
    todo = [c for c in columns if c.name not in have]
    if not todo:
        return
    with op.batch_alter_table(table) as batch:  # SQLite: ALTER TABLE ADD COLUMN, no copy
        for column in todo:
            batch.add_column(column)
    filled = [c.name for c in todo if c.server_default is not None]
    if filled:
        with op.batch_alter_table(table) as batch:  # SQLite: one copy of the table
            for name in filled:
                batch.alter_column(name, server_default=None)


def drop_columns(table: str, *names: str) -> None:
    with op.batch_alter_table(table) as batch:
        for name in names:
            batch.drop_column(name)
