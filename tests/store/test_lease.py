"""The controllers' lease (controller/store/lease.py) on SQLite and PostgreSQL: taken when free or
run out, renewed by its holder only, and the fence on every write transaction: a controller that
lost the lease commits nothing more, and its reads go on."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from sqlalchemy import insert, select

from slurmlet.controller.store.engine import make_engine, sqlite_url
from slurmlet.controller.store.lease import Lease, LeaseLost, single_host
from slurmlet.controller.store.tables import clusters
from tests.conftest import pg_available, pg_schema_url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.pg)])
def url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return sqlite_url(str(tmp_path))
    if not pg_available():
        pytest.skip("PostgreSQL is not running at 127.0.0.1:5432")
    return pg_schema_url("slurmlet_test_lease")


def leases(url: str, ttl: float = 1.0) -> tuple[Lease, Lease]:
    make_engine(url).dispose()  # (the schema)
    return (Lease(make_engine(url, migrate=False), "ctl1", 0, ttl),
            Lease(make_engine(url, migrate=False), "ctl2", 1, ttl))


def add(engine, name: str) -> None:
    with engine.begin() as c:
        c.execute(insert(clusters).values(name=name, created=0.0))


def names(engine) -> list[str]:
    with engine.begin() as c:
        return sorted(r.name for r in c.execute(select(clusters.c.name)))


def test_a_lease_is_taken_once_free_or_run_out_and_renewed_by_its_holder_only(url: str):
    a, b = leases(url)
    assert a.take() and a.token == 1 and a.held()
    assert not b.take() and b.token is None and not b.held()
    assert a.renew() and a.held()
    state = b.read()
    assert (state.holder, state.token, state.index, state.live) == (a.me, 1, 0, True)
    deadline = time.monotonic() + 30
    while not b.take():  # (the lease runs out a second after its last renewal, on the database's clock)
        assert time.monotonic() < deadline, "the lease never ran out"
        time.sleep(0.05)
    assert b.token == 2 and b.read().holder == b.me
    assert not a.renew() and a.token is None and not a.held()
    assert a.take(force=True) and a.token == 3  # (scontrol takeover, the primary's start)
    a.release()
    assert b.take() and b.token == 4  # (a lease given up is taken at once)


def test_the_fence_commits_nothing_of_a_controller_that_lost_the_lease(url: str):
    a, b = leases(url, ttl=60)
    assert a.take()
    store = make_engine(url, migrate=False)
    a.fence(store)
    add(store, "before")
    assert b.take(force=True)  # another controller took it (a does not know yet)
    with pytest.raises(LeaseLost, match="no longer holds the lease"):
        add(store, "after")
    assert a.token is None and not a.held()
    assert names(store) == ["before"]  # nothing of it committed, and reads go on
    with pytest.raises(LeaseLost):  # nor of anything later, whatever the token it takes next
        add(store, "later")
    assert a.take(force=True)
    with pytest.raises(LeaseLost):  # (the fence holds the token of its controller's start)
        add(store, "later")
    other = make_engine(url, migrate=False)
    a.fence(other)
    add(other, "again")
    assert names(other) == ["again", "before"]


@pytest.mark.pg
def test_a_write_in_flight_when_another_controller_takes_over_is_refused_whole():
    if not pg_available():  # (SQLite's writer holds the file's write lock: no takeover comes between)
        pytest.skip("PostgreSQL is not running at 127.0.0.1:5432")
    url = pg_schema_url("slurmlet_test_lease_flight")
    a, b = leases(url, ttl=60)
    assert a.take()
    store = make_engine(url, migrate=False)
    a.fence(store)
    with pytest.raises(LeaseLost):
        with store.begin() as c:
            c.execute(insert(clusters).values(name="one", created=0.0))
            c.execute(insert(clusters).values(name="two", created=0.0))
            assert b.take(force=True)
    assert names(store) == []


def test_sqlite_refuses_a_second_controller_while_the_first_lives(tmp_path):
    url = sqlite_url(str(tmp_path))
    make_engine(url).dispose()
    live = subprocess.Popen([sys.executable, "-c", f"""
import sys, time
from slurmlet.controller.store.engine import make_engine
from slurmlet.controller.store.lease import Lease
lease = Lease(make_engine({url!r}, migrate=False), "ctl1", 0, 120)
assert lease.take(force=True)
print("taken", flush=True)
time.sleep(600)
"""], stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout.readline() == "taken\n"
        mine = Lease(make_engine(url, migrate=False), "ctl1", 0, 120)
        why = single_host(mine.read(), mine.me)
        assert why == f"the controller ctl1 pid {live.pid} on {os.uname().nodename} holds it"
    finally:
        live.kill()
        live.wait()
    assert single_host(mine.read(), mine.me) is None  # (killed: the next one starts at once)
