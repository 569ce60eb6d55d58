"""The controller's own database outages (controller/store/guard.py, DbHealth in runtime.py, the
reaper in loops/reaper.py): a real SQLite store with a fixed clock, a real lock held by a second
connection, a real file moved away under it.

- heartbeats the controller could not record are not the nodes' silence: the reaper gives every
  node a whole SlurmdTimeout from the end of the outage;
- a database file moved away or made read-only refuses every change with Unavailable (503)
  naming its path, and works again once it is back.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.exc import OperationalError

from slurmlet.controller.api.schemas import JobSubmit
from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.errors import Unavailable
from slurmlet.controller.loops.reaper import may_reap, reap_silent, stalled
from slurmlet.controller.loops.scheduler import run_pass
from slurmlet.controller.runtime import Controller, Settings
from slurmlet.controller.views import validate_submit

CONF = ("ClusterName=t\nNodeName=node[1-2] CPUs=4 RealMemory=8000\nPartitionName=debug Nodes=ALL Default=YES\n"
        "SlurmdTimeout=30\n")
T0 = 1_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ctl(tmp_path: Path, clock: Clock):
    c = Controller(Settings(db_url=f"sqlite:///{tmp_path / 'db.sqlite'}", config=parse_slurm_conf(CONF), clock=clock))
    for name in ("node1", "node2"):
        c.store.node_sync(name, {"resources": {"cpus": 4, "memory": 8000}}, T0)
    yield c
    c.store.engine.dispose()


def submit(c: Controller, **kw) -> int:
    data = JobSubmit.model_validate({"script": "#!/bin/sh\ntrue\n", **kw}).model_dump()
    return c.store.submit(validate_submit(data, c.config, c.store.capacity_rows()), c.clock())


def sync(c: Controller, node: str, at: float, **body) -> list[dict]:
    """An agent's sync at `at`, as the route makes it."""
    c.settings.clock.now = at
    return c.store.node_sync(node, {"running": [], **body}, at)


class Lock:
    """Another connection holding the database's write lock (BEGIN EXCLUSIVE); the store's
    connections wait for it 50 ms instead of the daemon's 30 s, so that their writes fail."""

    def __init__(self, c: Controller, path: Path):
        @event.listens_for(c.store.engine, "connect")
        def _impatient(conn, _record) -> None:  # after the engine's own pragmas
            conn.execute("PRAGMA busy_timeout=50")
        c.store.engine.dispose()
        self.conn = sqlite3.connect(path)
        self.conn.execute("BEGIN EXCLUSIVE")

    def release(self) -> None:
        self.conn.rollback()
        self.conn.close()


def test_silence_counts_only_while_the_controller_hears_and_its_database_takes_changes():
    assert not may_reap(T0 + 30, 30, T0, None)  # a whole SlurmdTimeout since `since` first
    assert may_reap(T0 + 30.5, 30, T0, None)
    assert not may_reap(T0 + 1000, 30, T0, T0 + 900)  # the database refuses changes: nothing is silent
    assert not stalled(1.4, 1.0, 30)  # a slow pass is not an outage
    assert stalled(12.0, 1.0, 30)  # the loop stood still longer than a quarter of SlurmdTimeout
    assert stalled(2.5, 1.0, 5) and not stalled(2.0, 1.0, 5)


def test_a_job_that_ends_while_the_database_is_locked_is_not_taken_for_a_silent_node(ctl: Controller, clock: Clock,
                                                                                   tmp_path: Path):
    one, two = submit(ctl, ntasks=4), submit(ctl, ntasks=4)  # one node each
    assert run_pass(ctl).started == 2
    host = {j: ctl.store.get_row(j).batch_host for j in (one, two)}
    for j in (one, two):
        assert [o["op"] for o in sync(ctl, host[j], T0)] == ["launch"]
        sync(ctl, host[j], T0 + 1, running=[j])
    assert ctl.db.since == T0 and ctl.db.failing is None

    lock = Lock(ctl, tmp_path / "db.sqlite")
    for at in (T0 + 10, T0 + 20, T0 + 30):  # heartbeats, and job one's end, the controller cannot record
        for node, running in ((host[one], []), (host[two], [two])):
            with pytest.raises(OperationalError, match="locked"):
                sync(ctl, node, at, running=running,
                     finished=[{"job_id": one, "exit_code": 0}] if node == host[one] else [])
    assert ctl.db.failing == T0 + 10 and "locked" in ctl.db.why
    assert reap_silent(ctl, T0 + 35) is None  # the controller's outage, not the nodes' silence
    lock.release()
    clock.now = T0 + 40
    assert reap_silent(ctl, T0 + 40) is None  # nothing committed yet: still the controller's outage

    # job one's node syncs first after the outage: it ends the outage and reports the job's end
    sync(ctl, host[one], T0 + 41, finished=[{"job_id": one, "exit_code": 0}])
    assert ctl.db.failing is None and ctl.db.since == T0 + 41
    assert ctl.store.get_row(one).state == "COMPLETED"
    # job two's node, silent since T0 + 1 as the database knows it, gets a whole SlurmdTimeout from T0 + 41
    assert reap_silent(ctl, T0 + 70) is None
    assert ctl.store.get_row(two).state == "RUNNING"
    # ... and after it, having not synced again, it is silent
    assert reap_silent(ctl, T0 + 72) is not None
    after = ctl.store.get_row(two)
    assert (after.state, after.restarts) in (("NODE_FAIL", 0), ("PENDING", 1))
    done = ctl.store.get_row(one)
    assert (done.state, done.restarts, done.exit_code) == ("COMPLETED", 0, 0)


def test_a_stalled_controller_gives_its_nodes_a_whole_timeout(ctl: Controller):
    ctl.db.away(T0 + 50)
    assert reap_silent(ctl, T0 + 79) is None
    ctl.db.away(T0 + 40)  # never back in time
    assert ctl.db.since == T0 + 50


def test_a_database_file_moved_away_refuses_every_change_until_it_is_back(ctl: Controller, clock: Clock,
                                                                           tmp_path: Path):
    path, away = tmp_path / "db.sqlite", tmp_path / "elsewhere.sqlite"
    first = submit(ctl)
    os.rename(path, away)
    clock.now = T0 + 5
    with pytest.raises(Unavailable, match=f"the database {path} was deleted or moved away") as e:
        submit(ctl)
    assert e.value.status == 503
    with pytest.raises(Unavailable):
        sync(ctl, "node1", T0 + 6)
    assert ctl.db.failing == T0 + 5
    assert reap_silent(ctl, T0 + 100) is None

    os.rename(away, path)  # back: the same file works again
    clock.now = T0 + 110
    second = submit(ctl)
    assert second == first + 1 and ctl.db.failing is None and ctl.db.since == T0 + 110

    path.chmod(0o444)
    try:
        with pytest.raises(Unavailable, match=f"the database {path} was made read-only"):
            submit(ctl)
    finally:
        path.chmod(0o644)
    path.unlink()
    path.write_bytes(b"")  # another file at the path
    with pytest.raises(Unavailable, match="was replaced by another file"):
        submit(ctl)
