"""Alembic's environment for slurmlet: `controller.store.migrate` hands over a connection
(config.attributes["connection"]) that is already in the transaction it locked, and commits it."""

from __future__ import annotations

from alembic import context

from slurmlet.controller.store.tables import metadata


def run() -> None:
    conn = context.config.attributes.get("connection")
    if context.is_offline_mode() or conn is None:
        raise RuntimeError("slurmlet's migrations run on a connection from controller.store.migrate "
                           "(`slurmlet db upgrade`), not from the alembic command")
    # transactional_ddl: on SQLite too, the DDL runs in migrate's transaction (BEGIN IMMEDIATE) and
    # a failed upgrade leaves the database as it was
    context.configure(connection=conn, target_metadata=metadata, compare_type=True, transactional_ddl=True,
                      render_as_batch=conn.dialect.name == "sqlite")  # SQLite's ALTER TABLE is limited
    with context.begin_transaction():
        context.run_migrations()


run()
