"""Jobs that lose their node, whichever way the controller learns it (an agent that registers again
without them, its `lost` report after killing what its crashed predecessor left running, or
SlurmdTimeout of silence), end alike: NODE_FAIL kept for sacct -D, requeued when allowed with
Restarts+1 and BeginTime = now + the requeue delay. And submissions by idempotency key."""

from __future__ import annotations

import pytest

from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.core.plan import plan
from slurmlet.controller.errors import InvalidRequest
from slurmlet.controller.store.jobs import JobStore
from slurmlet.nodeagent.env import batch_environment
from tests.store.conftest import store_fixture

CONF = parse_slurm_conf("ClusterName=t\nNodeName=node[1-2] CPUs=4 RealMemory=1000\n"
                        "PartitionName=debug Nodes=ALL Default=YES\nSlurmletRequeueDelay=120\nSlurmdTimeout=10\n")
RES = {"cpus": 4, "memory": 1000, "gpus": 0}


store = store_fixture(CONF)


def body(**kw) -> dict:
    b = dict(script="#!/bin/sh\ntrue\n", name="t", partition="debug", user="alice", uid=1000, gid=1000,
             group="alice", workdir="/tmp", environment={})
    b.update(kw)
    return b


def register(store: JobStore, now: float = 1.0) -> None:
    for n in ("node1", "node2"):
        store.node_sync(n, {"resources": RES, "running": [], "finished": []}, now)


def start(store: JobStore, now: float, **kw) -> int:
    jid = store.submit(body(**kw), now)
    store.apply(plan(store.snapshot(now), backfill=False), now)
    for n in ("node1", "node2"):
        store.node_sync(n, {"running": [], "finished": []}, now)
    return jid


def state(store: JobStore, jid: int) -> tuple:
    j = store.public(store.get_row(jid))
    return j["state"], j["reason"], j["restarts"], j["begin_time"]


@pytest.mark.parametrize("how", ["register", "lost", "reap"])
def test_a_lost_job_ends_node_fail_and_is_requeued_after_the_delay(store: JobStore, how: str):
    register(store)
    keep = start(store, 2.0, requeue=True)
    lose = start(store, 2.0, requeue=False)
    assert store.get_row(keep).batch_host == store.get_row(lose).batch_host == "node1"
    store.node_sync("node1", {"running": [keep, lose]}, 3.0)
    store.node_sync("node2", {"running": []}, 3.0)
    if how == "register":  # an agent started again: it runs nothing
        store.node_sync("node1", {"resources": RES, "running": []}, 5.0)
    elif how == "lost":  # ... and says why: it killed what its predecessor left running
        store.node_sync("node1", {"lost": [{"job_id": keep, "restarts": 0}, {"job_id": lose, "restarts": 0}],
                                  "running": []}, 5.0)
    else:  # node1 silent for SlurmdTimeout
        store.node_sync("node2", {"running": []}, 14.0)
        reaped = store.reap(14.0)
        assert reaped.others == set() and reaped.silent == {"node1"}  # no other node to tell
        assert reaped.jobs == {keep: "requeued", lose: "NODE_FAIL"}
        assert str(reaped).startswith("node1 not responding: jobs ")  # the log line names them
        assert f"{keep} requeued" in str(reaped) and f"{lose} NODE_FAIL" in str(reaped)
    now = 14.0 if how == "reap" else 5.0
    assert state(store, lose) == ("NODE_FAIL", "NodeDown", 0, None)
    assert state(store, keep) == ("PENDING", "BeginTime", 1, now + 120)
    runs = store.earlier_runs([store.get_row(keep)])[keep]
    assert [(r["state"], r["restarts"]) for r in runs] == [("NODE_FAIL", 0)]
    # eligible again after the requeue delay, not before; its next run counts as a restart
    for t in (now + 60, now + 121):
        for n in ("node1", "node2"):
            store.node_sync(n, {"resources": RES, "running": []}, t)
        store.apply(plan(store.snapshot(t), backfill=False), t)
        if t < now + 120:
            assert store.get_row(keep).state == "PENDING"
    orders = [o for n in ("node1", "node2") for o in store.node_sync(n, {"running": []}, now + 121)
              if o["op"] == "launch"]
    assert [(o["job_id"], o["restarts"]) for o in orders] == [(keep, 1)]
    env = batch_environment(orders[0], node=orders[0]["alloc"][0]["node"], cluster="t",
                            controller_url="http://x", bin_dir="/bin", node_addr="127.0.0.1")
    assert env["SLURM_RESTART_COUNT"] == "1"


def test_lost_step_tasks_end_the_job_and_stale_reports_change_nothing(store: JobStore):
    register(store)
    jid = start(store, 2.0, nodes_min=2, requeue=False)
    assert store.get_row(jid).batch_host == "node1"
    store.node_sync("node1", {"running": [jid]}, 3.0)
    step = store.create_step(jid, {"argv": ["sleep", "9"], "nodes": 2}, 3.0)
    store.node_sync("node2", {"steps_running": [f"{jid}.{step['step_id']}"]}, 3.5)
    # stale: another run of the job, a step that does not run, the batch script on a node not its host
    store.node_sync("node1", {"lost": [{"job_id": jid, "restarts": 3}], "running": [jid]}, 4.0)
    store.node_sync("node2", {"lost": [{"job_id": jid, "step_id": 99}, {"job_id": jid, "restarts": 0}]}, 4.0)
    store.node_sync("node2", {"lost": [{"job_id": 4242, "restarts": 0}]}, 4.0)
    assert store.get_row(jid).state == "RUNNING"
    store.take_notify()
    # node2's agent started again after a crash and killed its task of the step
    store.node_sync("node2", {"resources": RES, "lost": [{"job_id": jid, "step_id": step["step_id"]}]}, 5.0)
    assert state(store, jid) == ("NODE_FAIL", "NodeDown", 0, None)
    assert "node1" in store.take_notify()  # the batch host is told at once ...
    assert store.node_sync("node1", {"running": [jid]}, 5.1) == [{"op": "kill", "job_id": jid, "why": "orphan"}]


def test_a_kill_the_agent_is_carrying_out_is_not_ordered_again(store: JobStore):
    """Orders answer a sync at once: one repeated to an agent already ending the job or step (its
    KillWait, a preemption's GraceTime) would make the node spin through its syncs meanwhile."""
    register(store)
    jid = start(store, 2.0, nodes_min=2, requeue=False)
    store.node_sync("node1", {"running": [jid]}, 3.0)
    step = store.create_step(jid, {"argv": ["sleep", "9"], "nodes": 2}, 3.0)
    key = f"{jid}.{step['step_id']}"
    store.node_sync("node2", {"steps_running": [key]}, 3.5)
    store.cancel_step(jid, step["step_id"], 4.0)
    kill_step = {"op": "kill_step", "job_id": jid, "step_id": step["step_id"]}
    assert store.node_sync("node2", {"steps_running": [key]}, 4.1) == [kill_step]
    assert store.node_sync("node2", {"steps_running": [key], "steps_ending": [key]}, 4.2) == []
    store.cancel(jid, 5.0)
    kill = [o for o in store.node_sync("node1", {"running": [jid]}, 5.1) if o["op"] == "kill"]
    assert kill and kill[0]["job_id"] == jid
    assert [o for o in store.node_sync("node1", {"running": [jid], "ending": [jid]}, 5.2) if o["op"] == "kill"] == []


def test_submissions_by_idempotency_key(store: JobStore):
    first = store.submit(body(comment="a"), 1.0, key="k1")
    assert store.job_for_key("alice", "k1") == first and store.job_for_key("bob", "k1") is None
    # the same key at the same moment (the route looks first; this is the race): the first job
    assert store.submit(body(comment="b"), 2.0, key="k1") == first
    assert store.public(store.get_row(first))["comment"] == "a"
    other = store.submit(body(user="bob"), 2.0, key="k1")
    array = store.submit(body(array="0-3"), 3.0, key="k2")
    assert len({first, other, array}) == 3 and store.job_for_key("alice", "k2") == array
    assert store.submit(body(array="0-3"), 3.0, key="k2") == array
    assert store.max_job_id() == array + 3  # no task made twice


def test_a_key_is_for_one_request_and_for_a_day(store: JobStore):
    first = store.submit(body(comment="a"), 1.0, key="k1", digest="d1")
    assert store.job_for_key("alice", "k1", "d1") == first
    with pytest.raises(InvalidRequest, match="already used for a different request"):
        store.job_for_key("alice", "k1", "d2")
    store.submit(body(comment="b"), 50_000.0, key="k2", digest="d3")
    assert store.purge_keys(before=10_000.0) == 1  # k1 is older: forgotten, k2 kept
    assert store.job_for_key("alice", "k1", "d2") is None and store.job_for_key("alice", "k2") is not None
    assert store.submit(body(comment="again"), 60_000.0, key="k1", digest="d2") != first
