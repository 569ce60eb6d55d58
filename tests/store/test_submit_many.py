"""JobStore.submit_many (POST /api/v1/jobs/batch): one transaction, ids in order, all or nothing,
submit-count limits counting the whole batch; a held job has its reason from submission on."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.core.plan import plan
from slurmlet.controller.errors import InvalidRequest
from slurmlet.controller.store.jobs import JobStore
from slurmlet.controller.store.tables import jobs as J
from tests.store.conftest import store_fixture
from tests.store.test_accounts import BASE, ENFORCE, body, register, team

store = store_fixture(parse_slurm_conf(ENFORCE), defaults=True)
open_store = store_fixture(parse_slurm_conf(BASE), defaults=True)


def count(store: JobStore) -> int:
    with store.engine.connect() as c:
        return c.execute(select(func.count()).select_from(J)).scalar()


def test_ids_in_order_one_row_each(open_store: JobStore):
    s = open_store
    first = s.submit(body(), 1.0)
    ids = s.submit_many([body(name=f"j{i}") for i in range(50)], 2.0)
    assert len(set(ids)) == 50 and min(ids) > first
    assert [s.get_row(j).name for j in ids] == [f"j{i}" for i in range(50)]
    assert count(s) == 51


def test_arrays_in_a_batch_keep_their_tasks(open_store: JobStore):
    s = open_store
    ids = s.submit_many([body(name="a"), body(name="arr", array="0-2"), body(name="b")], 1.0)
    assert [s.get_row(j).name for j in ids] == ["a", "arr", "b"]
    tasks = s.array_members(ids[1])
    assert len(tasks) == 3 and {s.get_row(t).array_job_id for t in tasks} == {ids[1]}
    assert count(s) == 5


def test_a_refused_job_refuses_the_batch_naming_it(store: JobStore):
    team(store)
    store.accounts.modify("qos", {"name": "normal"}, {"maxsubmitjobsperuser": "3"})
    store.submit(body(), 1.0)
    with pytest.raises(InvalidRequest) as e:  # 1 + 3 > 3: the third of the batch is one too many
        store.submit_many([body(), body(), body()], 2.0)
    assert e.value.error.startswith("jobs[2]: Job violates accounting/QOS policy")
    assert e.value.pre == ["QOSMaxSubmitJobPerUserLimit"]
    assert count(store) == 1  # nothing of it was stored
    with pytest.raises(InvalidRequest) as e:  # an array counts task by task here too
        store.submit_many([body(), body(array="0-1")], 2.0)
    assert e.value.error.startswith("jobs[1]: ")
    assert len(store.submit_many([body(), body()], 2.0)) == 2
    assert count(store) == 3


def test_a_held_job_has_its_reason_without_a_pass(open_store: JobStore):
    s = open_store
    register(s)
    jid = s.submit(body(hold=True), 2.0)
    [jid2] = s.submit_many([body(hold=True)], 2.0)
    assert s.get_row(jid).reason == s.get_row(jid2).reason == "JobHeldUser"
    p = plan(s.snapshot(3.0))  # what a pass would say: the same
    assert p.reasons[jid].value == p.reasons[jid2].value == "JobHeldUser"
