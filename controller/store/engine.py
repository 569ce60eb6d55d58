"""Engine factory: SQLite (WAL) by default, PostgreSQL (psycopg 3) by URL."""

from __future__ import annotations

import os

from sqlalchemy import Engine, create_engine, event

from .tables import metadata


def normalize_url(url: str) -> str:
    """Accept `postgresql://` and `postgres://` and use the psycopg 3 driver for them."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def sqlite_url(state_dir: str) -> str:
    os.makedirs(state_dir, exist_ok=True)
    return f"sqlite:///{os.path.join(os.path.abspath(state_dir), 'slurmlet.db')}"


def make_engine(url: str) -> Engine:
    url = normalize_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(conn, _record):  # noqa: ANN001
            cur = conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()
    else:
        engine = create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5)
    metadata.create_all(engine)
    for table in metadata.sorted_tables:  # indexes added since a database was created
        for index in table.indexes:
            index.create(engine, checkfirst=True)
    return engine
