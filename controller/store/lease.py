"""The controllers' lease: which of the controllers that share a database may change it.

Slurm lists its controllers as `SlurmctldHost` lines, the primary first; slurmlet's share one
database (PostgreSQL: a backup on another host reaches it) and hold one row of it,
`controller_lease` (tables.py), in turn:

- the active controller holds the lease until `expires`, on the database's own clock (no two hosts'
  clocks are compared), and renews it every SlurmctldTimeout / RENEWALS seconds;
- a backup takes it once it has expired, or at once when told to (`scontrol takeover`, or the
  primary at its start, as 22.05's primary takes control back), with `token` one higher;
- every write transaction of the controller checks, in the transaction, before its commit
  (`fence`), that the token is still the one it took: on PostgreSQL under a share lock of the row,
  which the taking over waits for, so a change either commits before the takeover or not at all.
  A controller that lost the lease (killed, paused past its lease, cut off) therefore changes
  nothing more, whatever it still believes;
- the holder also counts the lease down on its own monotonic clock from the moment it asked for it
  (`held`): past that it answers nothing as the active controller until a renewal succeeds.

On SQLite (one host, one file) there is one controller: a second one started on the same file
while the first lives is refused (`single_host`).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, Float, event, insert, literal_column, select, update
from sqlalchemy.exc import IntegrityError

from slurmlet.common.procs import daemon_alive
from slurmlet.controller.errors import Unavailable

from .tables import controller_lease as L

#: the holder renews the lease this many times in each SlurmctldTimeout
RENEWALS = 4


class LeaseLost(Unavailable):
    """This controller no longer holds the lease: another one is active"""

    ttl = 0.0  #: SlurmctldTimeout (what a client waits at most 1.5 times for another to be active)


@dataclass(frozen=True)
class State:
    """The lease as the database holds it."""

    holder: str
    token: int
    expires: float  #: on the database's clock
    index: int  #: the holder's place among SlurmctldHost's
    now: float  #: the database's clock when read

    @property
    def live(self) -> bool:
        return bool(self.holder) and self.expires > self.now

    def holder_pid(self) -> tuple[int, str] | None:
        """(pid, host) of the holder ("NAME pid PID on HOST")."""
        parts = self.holder.split()
        if len(parts) == 5 and parts[1] == "pid" and parts[3] == "on" and parts[2].isdigit():
            return int(parts[2]), parts[4]
        return None


def _db_now(engine: Engine) -> Any:  # noqa: ANN401 - a SQL expression
    """The database's clock in Unix seconds, as a SQL expression."""
    if engine.dialect.name == "postgresql":
        return literal_column("extract(epoch from clock_timestamp())", Float)
    return literal_column("((julianday('now') - 2440587.5) * 86400.0)", Float)


class Lease:
    """This controller's hold on the database: `name` is its SlurmctldHost name, `index` its place
    there, `ttl` SlurmctldTimeout (seconds). `engine` is the lease's own (no fence on it)."""

    def __init__(self, engine: Engine, name: str, index: int, ttl: float):
        self.engine = engine
        self.name, self.index, self.ttl = name, index, float(ttl)
        self.me = f"{name} pid {os.getpid()} on {socket.gethostname()}"
        self.token: int | None = None  #: the token held (None: none)
        #: called (from any thread) when a fenced commit finds the lease gone: its keeper looks at once
        self.on_lost: Callable[[], None] | None = None
        self.until = 0.0  #: time.monotonic() when the lease held runs out, as this process counts
        self.now = _db_now(engine)
        try:  # (the one row: made by the first controller to start)
            with engine.begin() as c:
                if c.execute(select(L.c.id).where(L.c.id == 1)).first() is None:
                    c.execute(insert(L).values(id=1, holder="", token=0, expires=0.0, holder_index=0))
        except IntegrityError:
            pass  # (another controller made it meanwhile)

    def read(self) -> State:
        with self.engine.begin() as c:
            r = c.execute(select(L.c.holder, L.c.token, L.c.expires, L.c.holder_index, self.now.label("now"))
                          .where(L.c.id == 1)).one()
        return State(r.holder, r.token, r.expires, r.holder_index, float(r.now))

    def held(self) -> bool:
        """Whether this controller holds the lease now, as far as its own clock tells."""
        return self.token is not None and time.monotonic() < self.until

    def take(self, force: bool = False) -> bool:
        """Take the lease if it has expired (or at once with `force`): True when taken."""
        t0 = time.monotonic()
        cond = (L.c.id == 1) if force else (L.c.id == 1) & ((L.c.holder == "") | (L.c.expires < self.now))
        with self.engine.begin() as c:
            r = c.execute(update(L).where(cond).values(holder=self.me, token=L.c.token + 1,
                                                       expires=self.now + self.ttl, holder_index=self.index)
                          .returning(L.c.token)).first()
        if r is None:
            return False
        self.token, self.until = r.token, t0 + self.ttl
        return True

    def renew(self) -> bool:
        """Renew the lease held: False (and nothing held from now) when another controller took it."""
        if self.token is None:
            return False
        t0 = time.monotonic()
        with self.engine.begin() as c:
            r = c.execute(update(L).where((L.c.id == 1) & (L.c.token == self.token) & (L.c.holder == self.me))
                          .values(expires=self.now + self.ttl).returning(L.c.token)).first()
        if r is None:
            self.token = None
            return False
        self.until = t0 + self.ttl
        return True

    def release(self) -> None:
        """Give the lease up (a controller that stops): a backup takes it at its next look."""
        if self.token is None:
            return
        with self.engine.begin() as c:
            c.execute(update(L).where((L.c.id == 1) & (L.c.token == self.token))
                      .values(holder="", expires=0.0))
        self.token = None

    def fence(self, engine: Engine) -> None:
        """Every write transaction on `engine` checks, before its commit, that the lease is still the
        one this controller holds now (the token it took last): LeaseLost (503) when not, and nothing of
        it is committed."""
        token = self.token
        pg = engine.dialect.name == "postgresql"
        # (PostgreSQL: only a transaction that wrote (it has an id) is checked, under a share lock of the
        # row that the taking over waits for; a read changes nothing and passes. SQLite: a commit of a
        # read is no commit (guard.wrote); a write holds the database's one write lock already)
        wrote = "SELECT txid_current_if_assigned() IS NOT NULL"
        sql = "SELECT token FROM controller_lease WHERE id = 1" + (" FOR SHARE" if pg else "")

        @event.listens_for(engine, "commit")
        def _fenced(conn) -> None:  # noqa: ANN001 - a SQLAlchemy Connection
            dbapi = conn.connection.dbapi_connection
            if not pg and not dbapi.in_transaction:
                return
            cur = dbapi.cursor()
            try:
                if pg:
                    cur.execute(wrote)
                    if not cur.fetchone()[0]:
                        return
                cur.execute(sql)
                row = cur.fetchone()
            finally:
                cur.close()
            if row is None or row[0] != token or self.token != token:
                if self.token == token:
                    self.token = None
                    if self.on_lost is not None:
                        self.on_lost()
                lost = LeaseLost(f"this controller ({self.name}) no longer holds the lease on the database: "
                                 "another controller is active; nothing was recorded")
                lost.ttl = self.ttl
                raise lost


def single_host(state: State, me: str) -> str | None:
    """On a database one controller holds (SQLite), why another may not start now (None: it may):
    the lease is held by a live process of this host other than this one."""
    got = state.holder_pid()
    if not state.live or got is None or state.holder == me:
        return None
    pid, host = got
    if host == socket.gethostname() and not daemon_alive(pid):
        return None
    return f"the controller {state.holder} holds it"

