"""The database under a running controller: the controller's own outages, and a SQLite file that
must stay the one it opened.

- `FileGuard`: the SQLite file's identity (device, inode) taken at start. Every transaction first
  compares it with the path's (one stat(2)): a file deleted, moved away, replaced or made
  read-only under the controller answers `Unavailable` (503, naming the path), never an
  acknowledgement of a change written to a file nobody will open again. Put back at its path,
  the same file works again.
- `watch`: the engine tells the controller when its database fails it (a statement refused as
  locked, read-only or unreachable, or the guard's refusal) and when a transaction commits, so
  that the reaper does not count the controller's own outage as its nodes' silence
  (loops/reaper.py).
"""

from __future__ import annotations

import itertools
import logging
import os
from typing import Any, Callable

from sqlalchemy import Engine, event
from sqlalchemy.exc import OperationalError

from slurmlet.controller.errors import Unavailable

log = logging.getLogger("slurmlet.controller")


class FileGuard:
    """The SQLite file at `path` as the controller opened it."""

    def __init__(self, path: str):
        self.path = path
        st = os.stat(path)
        self.ident = (st.st_dev, st.st_ino)
        self.problem: str | None = None  #: what is wrong with the file now (None: nothing)

    def check(self) -> None:
        """Raise Unavailable when the path no longer holds the file opened at start, or it is read-only."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            problem = "was deleted or moved away"
        except OSError as e:
            problem = f"cannot be examined ({e.strerror})"
        else:
            if (st.st_dev, st.st_ino) != self.ident:
                problem = "was replaced by another file"
            elif not st.st_mode & 0o222:
                problem = "was made read-only"
            else:
                if self.problem is not None:
                    log.warning("the database %s is back: changes are recorded again", self.path,
                                extra={"action": "database"})
                    self.problem = None
                return
        if problem != self.problem:  # once per change of what is wrong: loudly
            log.critical("the database %s %s under the running controller: every change is refused until "
                         "it is back", self.path, problem, extra={"action": "database"})
            self.problem = problem
        raise Unavailable(f"the database {self.path} {problem} under the running controller: "
                          f"nothing is recorded until it is back")


def sqlite_path(engine: Engine) -> str | None:
    """The file of a SQLite engine (None: another database, or one in memory)."""
    if engine.dialect.name != "sqlite":
        return None
    db = engine.url.database
    return os.path.abspath(db) if db and db != ":memory:" and not db.startswith("file:") else None


def describe(engine: Engine) -> str:
    """The database as an operator names it: a SQLite file's path, else its URL without a password."""
    return sqlite_path(engine) or engine.url.render_as_string(hide_password=True)


def wrote(conn: Any) -> bool:  # noqa: ANN401 - a SQLAlchemy Connection
    """Whether the transaction a commit ends wrote anything: a SQLite connection is in a transaction
    only once it wrote (a read's commit changes nothing); other databases' commits all count."""
    return getattr(conn.connection.dbapi_connection, "in_transaction", True)


#: serial numbers of DBAPI connections (a PRAGMA data_version compares only within one connection)
_SERIALS = itertools.count(1)


def data_version(c: Any) -> tuple[int, int] | None:  # noqa: ANN401 - a SQLAlchemy Connection
    """What moves whenever another connection, another process's too, commits to the database, read on
    the connection `c`: SQLite's PRAGMA data_version, with the connection's serial number (the pragma's
    values compare only within one connection). This connection's own commits do not move it. None where
    nothing so cheap tells (PostgreSQL): what was kept must be read again."""
    if c.dialect.name != "sqlite":
        return None
    info = c.connection.info  # (kept with the DBAPI connection while it lives)
    serial = info.get("serial")
    if serial is None:
        serial = info["serial"] = next(_SERIALS)
    return serial, c.connection.dbapi_connection.execute("PRAGMA data_version").fetchone()[0]


def watch(engine: Engine, failed: Callable[[str], None], worked: Callable[[], None],
          guard: FileGuard | None = None) -> None:
    """Tell `failed(why)` of every transaction the database (or `guard`) refuses, `worked()` of every
    commit of a change. Statements refused for their content (a constraint) are not the database failing."""
    @event.listens_for(engine, "begin")
    def _begin(_conn) -> None:  # noqa: ANN001
        if guard is not None:
            try:
                guard.check()
            except Unavailable as e:
                failed(e.error)
                raise

    @event.listens_for(engine, "handle_error")
    def _error(ctx) -> None:  # noqa: ANN001 - sqlalchemy.engine.ExceptionContext
        if ctx.is_disconnect or isinstance(ctx.sqlalchemy_exception, OperationalError):
            failed(str(ctx.original_exception))

    @event.listens_for(engine, "commit")
    def _commit(conn) -> None:  # noqa: ANN001
        if wrote(conn):  # (a read's commit proves nothing)
            worked()
