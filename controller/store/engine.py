"""Engine factory: SQLite (WAL) by default, PostgreSQL (psycopg 3) by URL."""

from __future__ import annotations

import os

from sqlalchemy import Engine, create_engine, event


def normalize_url(url: str) -> str:
    """Accept `postgresql://` and `postgres://` and use the psycopg 3 driver for them."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def sqlite_url(state_dir: str) -> str:
    os.makedirs(state_dir, exist_ok=True)
    return f"sqlite:///{os.path.join(os.path.abspath(state_dir), 'slurmlet.db')}"


def private_state(state_dir: str, db_path: str | None) -> None:
    """The state directory and the database are the controller's user's: others may pass through
    the directory (under `slurmlet up` it holds the agents' spools, which jobs reach, and credd's
    socket) but not list it (0711), and no one else reads the database files (0600; the controller
    makes new ones under umask 077). Directories and files of another owner are left as they are."""
    me = os.geteuid()
    for path, mode in [(state_dir, 0o711)] + [(db_path + suffix, 0o600) for suffix in
                                                ("", "-wal", "-shm", "-journal") if db_path]:
        try:
            st = os.stat(path)
            if st.st_uid == me and st.st_mode & 0o777 != mode:
                os.chmod(path, mode)
        except OSError:
            pass  # not there (yet): made under the umask


def _wal(cur) -> None:  # noqa: ANN001 - a sqlite3 cursor
    """PRAGMA journal_mode=WAL. Switching a database to WAL (once: it stays) needs it to itself, and
    SQLite answers 'database is locked' at once, without its busy timeout, while another connection
    is in a transaction (two controllers making one database): try again for up to 30 s."""
    import sqlite3
    import time
    deadline = time.monotonic() + 30
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def make_engine(url: str, migrate: bool = True) -> Engine:
    """An engine on `url`; with `migrate`, the database is first brought to tables.py's schema
    (made when empty, upgraded when older: controller/store/migrate.py)."""
    url = normalize_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(conn, _record):  # noqa: ANN001
            cur = conn.cursor()
            _wal(cur)
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()
    else:
        engine = create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5)
    if migrate:
        from .migrate import prepare
        prepare(engine)
    return engine
