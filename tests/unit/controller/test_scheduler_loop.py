"""The scheduling cycle (controller/loops/scheduler.py): one pass on a real SQLite store with a fixed
clock, and the loop's pacing as pure functions."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmlet.controller.api.schemas import JobSubmit
from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.loops.scheduler import LONE_DELAY, due, next_wait, pass_delay, run_pass
from slurmlet.controller.runtime import Controller, Settings
from slurmlet.controller.views import validate_submit

CONF = "ClusterName=t\nNodeName=node[1-2] CPUs=4 RealMemory=8000\nPartitionName=debug Nodes=ALL Default=YES\n"
NOW = 1_000_000.0


@pytest.fixture
def ctl(tmp_path: Path):
    c = Controller(Settings(db_url=f"sqlite:///{tmp_path / 'db.sqlite'}", config=parse_slurm_conf(CONF),
                            clock=lambda: NOW))
    for name in ("node1", "node2"):
        c.store.node_sync(name, {"resources": {"cpus": 4, "memory": 8000}}, NOW)
    yield c
    c.store.engine.dispose()


def submit(c: Controller, **kw) -> int:
    data = JobSubmit.model_validate({"script": "#!/bin/sh\ntrue\n", **kw}).model_dump()
    return c.store.submit(validate_submit(data, c.config, c.store.capacity_rows()), NOW)


def test_a_pass_starts_what_fits_and_orders_reach_the_nodes_only_then(ctl: Controller):
    whole = submit(ctl, ntasks=8)  # both nodes
    later = submit(ctl, ntasks=1)  # waits behind it
    held = submit(ctl, hold=True)
    assert ctl.store.node_sync("node1", {"running": []}, NOW) == []  # nothing ordered before a pass
    r = run_pass(ctl)
    assert (r.started, r.pending, r.backfilled) == (1, 3, 0)
    assert ctl.store.get_row(whole).state == "RUNNING"
    assert [ctl.store.get_row(j).state for j in (later, held)] == ["PENDING", "PENDING"]
    assert ctl.store.get_row(later).reason == "Resources"
    orders = ctl.store.node_sync("node1", {"running": []}, NOW)
    assert [(o["op"], o["job_id"]) for o in orders] == [("launch", whole)]
    assert ctl.stats.main.cycles == 1 and ctl.stats.jobs_started == 1
    assert ctl.bf_dirty == ctl.bf_enabled  # something changed since the last backfill pass


def test_a_begin_time_in_the_future_is_when_the_loop_looks_again(ctl: Controller):
    submit(ctl, begin_time=NOW + 30)
    r = run_pass(ctl)
    assert r.started == 0 and ctl.next_begin == NOW + 30
    assert next_wait(NOW, 60.0, ctl.next_begin, False, 0.0) == 30.0


def test_a_backfill_pass_is_recorded_as_one_and_owes_no_other(ctl: Controller):
    submit(ctl, ntasks=1)
    run_pass(ctl, backfill=True)
    assert ctl.stats.backfill.cycles == 1 and ctl.stats.main.cycles == 0
    assert not ctl.bf_dirty and ctl.next_bf == NOW + ctl.bf_interval


@given(now=st.floats(0, 1e9), interval=st.floats(0.01, 100), begin=st.none() | st.floats(0, 1e9),
       dirty=st.booleans(), nbf=st.floats(0, 1e9))
def test_the_loop_never_waits_past_what_is_due(now, interval, begin, dirty, nbf):
    w = next_wait(now, interval, begin, dirty, nbf)
    assert 0.0 <= w <= interval
    if begin is not None:
        assert w <= max(0.0, begin - now)
    if dirty:
        assert w <= max(0.0, nbf - now)


def test_nothing_due_means_no_pass():
    assert due(10.0, False, None, False, 0.0) == (False, False)
    assert due(10.0, True, None, False, 0.0) == (True, False)  # woken
    assert due(10.0, False, 10.0, False, 0.0) == (True, False)  # a begin time came due
    assert due(10.0, False, 11.0, False, 0.0) == (False, False)
    assert due(10.0, False, None, True, 10.0) == (True, True)  # backfill owed
    assert due(10.0, False, None, True, 10.5) == (False, False)


def test_a_lone_wake_up_is_not_debounced_and_a_burst_is(ctl: Controller):
    s = ctl.settings
    assert (s.debounce, s.debounce_after) == (0.002, 0.05)
    assert pass_delay(100.0, 0.0, 0.0, s) == LONE_DELAY < s.debounce  # no pass for long: almost at once
    assert pass_delay(100.0, 99.9, 0.0, s) == LONE_DELAY
    assert pass_delay(100.0, 99.99, 0.0, s) == s.debounce  # a pass just ran: more may be coming
    assert pass_delay(100.0, 99.99, 100.5, s) == 0.5  # after a long pass, its spacing
    assert pass_delay(100.0, 0.0, 100.5, s) == 0.5
    # an allocation someone waits for (srun, salloc) is placed at once, a burst or not; spacing stands
    assert pass_delay(100.0, 99.99, 0.0, s, place_now=True) == LONE_DELAY
    assert pass_delay(100.0, 99.99, 100.5, s, place_now=True) == 0.5
