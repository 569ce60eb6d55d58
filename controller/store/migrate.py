"""Schema versions: every start brings the database to tables.py's schema, keeping its data.

- an empty database is made from tables.py (`create_all`) and stamped at HEAD: no migration runs,
  so a new store costs what it did before Alembic;
- a database stamped at HEAD is left alone (tables missing from it are made: a table that was
  dropped by hand);
- a database at an older revision is upgraded with Alembic (controller/store/migrations);
- a database from before Alembic (slurmlet tables, no alembic_version) is stamped at the revision
  its tables and columns match, then upgraded.

All of it runs in one transaction that holds a lock (PostgreSQL: an advisory lock for the schema;
SQLite: BEGIN IMMEDIATE), so two controllers starting on one database do not both make or migrate it:
the second waits, then finds it at HEAD. Alembic is imported only when a migration runs.
"""

from __future__ import annotations

import logging
import os

from sqlalchemy import Column, Connection, Engine, MetaData, PrimaryKeyConstraint, String, Table, inspect, text

from .migrations import HEAD
from .tables import metadata

log = logging.getLogger("slurmlet.store")

MIGRATIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations")

#: Alembic's version table, as alembic itself makes it
version_table = Table("alembic_version", MetaData(), Column("version_num", String(32), nullable=False),
                      PrimaryKeyConstraint("version_num", name="alembic_version_pkc"))

#: what each revision replaying the time before Alembic made (table -> its new columns; () for a new
#: table), to tell which revision a database from that time is at. Frozen: later databases carry
#: their revision in alembic_version.
PRE_ALEMBIC: list[tuple[str, dict[str, tuple[str, ...]]]] = [
    ("0001", {"jobs": (), "nodes": ()}),
    ("0002", {"jobs": ("est_start", "suspend_time", "suspended_secs", "preempt_time", "preempt_grace")}),
    ("0003", {"jobs": ("site_factor",)}),
    ("0004", {"jobs": ("array_max_tasks",)}),
    ("0005", {"steps": ()}),
    ("0006", {"jobs": ("master_port",)}),
    ("0007", {"secrets": ()}),
    ("0008", {"code_blobs": ()}),
    ("0009", {"job_runs": ()}),
    ("0010", {"jobs": ("batch_max_rss", "batch_user_cpu", "batch_system_cpu"), "steps": ("usage",)}),
    ("0011", {"nodes": ("pool",), "node_scripts": (), "clusters": (), "accounts": (), "users": (),
              "assocs": (), "qos": ()}),
]


class SchemaError(RuntimeError):
    """The database cannot be brought to this slurmlet's schema (e.g. it is from a newer slurmlet)."""


def _lock(conn: Connection) -> None:
    """Start the transaction that holds the migration lock until commit."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('slurmlet schema ' || "
                          "coalesce(current_schema(), '')))"))
    elif conn.dialect.name == "sqlite":
        # pysqlite opens no transaction for DDL by itself; this one takes the write lock at once
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _read_version(conn: Connection, tables: set[str]) -> str | None:
    if version_table.name not in tables:
        return None
    return conn.execute(version_table.select()).scalar()


def stamp(conn: Connection, revision: str | None) -> None:
    """Record `revision` as the database's (None: none), as `alembic stamp` does."""
    version_table.create(conn, checkfirst=True)
    conn.execute(version_table.delete())
    if revision is not None:
        conn.execute(version_table.insert().values(version_num=revision))


def detect(conn: Connection, tables: set[str] | None = None) -> str | None:
    """The newest revision a database from before Alembic wholly has, with all revisions before it
    (None: not even the baseline's tables)."""
    insp = inspect(conn)
    tables = set(insp.get_table_names()) if tables is None else tables
    columns: dict[str, set[str]] = {}
    found = None
    for revision, made in PRE_ALEMBIC:
        for table, cols in made.items():
            if table not in tables:
                return found
            if cols:
                have = columns.get(table)
                if have is None:
                    have = columns[table] = {c["name"] for c in insp.get_columns(table)}
                if not set(cols) <= have:
                    return found
        found = revision
    return found


def alembic_config(conn: Connection | None = None):  # noqa: ANN201 - alembic.config.Config
    from alembic.config import Config
    cfg = Config()
    cfg.set_main_option("script_location", MIGRATIONS)
    cfg.attributes["connection"] = conn
    return cfg


def script_directory():  # noqa: ANN201 - alembic.script.ScriptDirectory
    from alembic.script import ScriptDirectory
    return ScriptDirectory.from_config(alembic_config())


def _quiet(record: logging.LogRecord) -> bool:
    """Alembic's migration log without its notes on the database driver: only the upgrades run."""
    return record.getMessage().startswith("Running ")


def _upgrade(conn: Connection, start: str | None, target: str = HEAD) -> None:
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)  # not the operator's concern
    migration_log = logging.getLogger("alembic.runtime.migration")
    if _quiet not in migration_log.filters:  # its "Context impl ..." lines: not the operator's concern either
        migration_log.addFilter(_quiet)
    from alembic import command
    from alembic.util import CommandError
    script = script_directory()
    if start is not None:
        try:
            script.get_revision(start)
        except Exception:
            raise SchemaError(f"the database is at schema revision {start}, which this slurmlet does not know "
                              f"(its newest is {HEAD}): is it from a newer slurmlet?") from None
    log.warning("upgrading the database's schema from revision %s to %s", start or "none", target)
    try:
        command.upgrade(alembic_config(conn), target)
    except CommandError as e:
        raise SchemaError(str(e)) from e


def prepare(engine: Engine) -> tuple[str | None, str]:
    """Bring the database to HEAD (see the module's doc); returns its revision before and after
    (before: None when it was empty, "pre-alembic:REV" when it was from before Alembic, matching REV)."""
    with engine.connect() as conn:
        _lock(conn)
        tables = set(inspect(conn).get_table_names())
        version = _read_version(conn, tables)
        ours = tables & set(metadata.tables)
        if not ours:  # empty (or only a version row left behind): made whole from tables.py
            metadata.create_all(conn, checkfirst=False)
            stamp(conn, HEAD)
            before = None
        elif version == HEAD:
            missing = [t for t in metadata.sorted_tables if t.name not in tables]
            if missing:
                metadata.create_all(conn, tables=missing, checkfirst=False)
            before = HEAD
        else:
            before = version
            if version is None:
                found = detect(conn, tables)
                log.warning("database from before schema versions: it matches revision %s", found or "none")
                stamp(conn, found)
                before = f"pre-alembic:{found}"
                version = found
            if version != HEAD:
                _upgrade(conn, version)
        conn.commit()
    return before, HEAD


def current(conn: Connection) -> tuple[str | None, str | None]:
    """(the revision in alembic_version, the pre-Alembic revision the tables match when there is none)."""
    tables = set(inspect(conn).get_table_names())
    version = _read_version(conn, tables)
    if version is not None or not tables & set(metadata.tables):
        return version, None
    return None, detect(conn, tables)
