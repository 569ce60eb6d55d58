"""JobStore over real SQLite and real PostgreSQL: intake, plan application, agent sync, transitions."""

from __future__ import annotations

import pytest

from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.core.order import priorities
from slurmlet.controller.core.plan import plan
from slurmlet.controller.errors import Conflict, InvalidRequest, NotFound
from slurmlet.controller.store.engine import make_engine, sqlite_url
from slurmlet.controller.store.jobs import JobStore
from tests.store.conftest import store_fixture

CONF = parse_slurm_conf("ClusterName=t\nNodeName=node[1-2] CPUs=4 RealMemory=1000 Gres=gpu:2\n"
                        "PartitionName=debug Nodes=ALL Default=YES\nSlurmletRequeueDelay=0\n")
RES = {"cpus": 4, "memory": 1000, "gpus": 2}


store = store_fixture(CONF)


def body(**kw) -> dict:
    b = dict(script="#!/bin/sh\ntrue\n", name="t", partition="debug", user="alice", uid=1000, gid=1000,
             group="alice", workdir="/tmp", environment={"A": "1"})
    b.update(kw)
    return b


def register(store: JobStore, now: float = 1.0) -> None:
    for n in ("node1", "node2"):
        store.node_sync(n, {"resources": RES, "running": [], "finished": []}, now)


def schedule(store: JobStore, now: float) -> set[str]:
    return store.apply(plan(store.snapshot(now), backfill=False), now).woken


def test_submit_schedule_launch_finish(store: JobStore):
    register(store)
    jid = store.submit(body(gpus_per_node=2), 10.0)
    assert store.public(store.get_row(jid))["state"] == "PENDING"
    assert schedule(store, 11.0) == {"node1"}
    orders = store.node_sync("node1", {"running": [], "finished": []}, 11.5)
    assert [(o["op"], o["job_id"]) for o in orders] == [("launch", jid)]
    assert orders[0]["alloc"][0]["gpu_ids"] == [0, 1] and orders[0]["environment"] == {"A": "1"}
    # the order is repeated until the agent reports the job running: a lost answer heals
    assert store.node_sync("node1", {"running": [], "finished": []}, 11.6)[0]["op"] == "launch"
    assert store.node_sync("node1", {"running": [jid], "finished": []}, 12.0) == []
    store.node_sync("node1", {"running": [], "finished": [{"job_id": jid, "exit_code": 3}]}, 13.0)
    j = store.public(store.get_row(jid))
    assert (j["state"], j["reason"], j["exit_code"], j["start_time"], j["end_time"]) == \
        ("FAILED", "NonZeroExitCode", 3, 11.0, 13.0)
    assert j["steps"][0]["state"] == "FAILED"
    # a repeated report changes nothing
    store.node_sync("node1", {"running": [], "finished": [{"job_id": jid, "exit_code": 0}]}, 14.0)
    assert store.public(store.get_row(jid))["state"] == "FAILED"


def test_reasons_and_gpu_exclusivity(store: JobStore):
    register(store)
    a = store.submit(body(gpus_per_node=2, nodes_min=2), 1.0)
    b = store.submit(body(gpus_per_node=1), 2.0)
    c = store.submit(body(), 3.0)
    schedule(store, 4.0)
    assert store.public(store.get_row(a))["state"] == "RUNNING"
    assert store.public(store.get_row(b))["reason"] == "Resources"
    assert store.public(store.get_row(c))["reason"] == "Priority"


def test_cancel_pending_and_running(store: JobStore):
    register(store)
    run = store.submit(body(), 1.0)
    schedule(store, 2.0)
    pend = store.submit(body(hold=True), 3.0)
    assert store.cancel(pend, 4.0, uid=5) is None
    assert store.public(store.get_row(pend))["state"] == "CANCELLED"
    with pytest.raises(Conflict):
        store.cancel(pend, 4.5)
    assert store.cancel(run, 5.0) == "node1"
    orders = store.node_sync("node1", {"running": [run], "finished": []}, 5.1)
    assert orders == [{"op": "kill", "job_id": run, "why": "cancel"}]
    store.node_sync("node1", {"running": [], "finished": [{"job_id": run, "signal": 15}]}, 6.0)
    j = store.public(store.get_row(run))
    assert (j["state"], j["steps"][0]["state"], j["steps"][0]["exit_signal"]) == ("CANCELLED", "CANCELLED", 15)
    with pytest.raises(NotFound):
        store.cancel(99999, 1.0)


def test_requeue_then_rerun_and_restart_resumes(store: JobStore):
    register(store)
    jid = store.submit(body(), 1.0)
    schedule(store, 2.0)
    store.node_sync("node1", {"running": [jid], "finished": []}, 2.5)
    store.requeue(jid, 3.0)
    assert store.node_sync("node1", {"running": [jid], "finished": []}, 3.1)[0]["why"] == "requeue"
    store.node_sync("node1", {"running": [], "finished": [{"job_id": jid, "signal": 15}]}, 4.0)
    j = store.public(store.get_row(jid))
    assert (j["state"], j["restarts"], j["nodes"]) == ("PENDING", 1, "")
    # a new store over the same database (a restarted controller) sees the same queue
    again = JobStore(store.engine, CONF)
    assert again.public(again.get_row(jid))["restarts"] == 1
    schedule(again, 5.0)
    orders = again.node_sync("node1", {"running": [], "finished": []}, 5.1)
    assert orders[0]["op"] == "launch" and orders[0]["restarts"] == 1


def test_restarted_agent_loses_its_jobs_to_requeue(store: JobStore):
    register(store)
    keep = store.submit(body(requeue=True), 1.0)
    lose = store.submit(body(requeue=False), 1.0)
    schedule(store, 2.0)
    assert {store.public(store.get_row(j))["batch_host"] for j in (keep, lose)} == {"node1"}
    orders = store.node_sync("node1", {"running": [], "finished": []}, 2.5)  # the agent is told to start them
    assert sorted(o["job_id"] for o in orders if o["op"] == "launch") == sorted([keep, lose])
    # the agent restarts: it registers again and runs nothing
    store.node_sync("node1", {"resources": RES, "running": [], "finished": []}, 3.0)
    assert store.public(store.get_row(keep))["state"] == "PENDING"
    assert store.public(store.get_row(lose))["state"] == "NODE_FAIL"


def test_a_job_placed_after_the_node_was_last_heard_from_is_launched_by_its_new_agent(store: JobStore):
    """A cluster started again: the database shows node1 up from before, a job is placed on it before
    its new agent registers; no agent was ever told to start it, so the registration launches it."""
    register(store)
    jid = store.submit(body(requeue=False), 5.0)
    schedule(store, 6.0)
    orders = store.node_sync("node1", {"resources": RES, "running": [], "finished": []}, 7.0)
    assert store.public(store.get_row(jid))["state"] == "RUNNING"
    assert [o["job_id"] for o in orders if o["op"] == "launch"] == [jid]


def test_orphans_are_killed_and_unknown_nodes_refused(store: JobStore):
    register(store)
    assert store.node_sync("node2", {"running": [4242], "finished": []}, 2.0) == \
        [{"op": "kill", "job_id": 4242, "why": "orphan"}]
    from slurmlet.controller.errors import InvalidRequest
    with pytest.raises(InvalidRequest):
        store.node_sync("node9", {"resources": RES}, 2.0)


@pytest.mark.parametrize("flags,alice,bob", [("PriorityFlags=NO_FAIR_TREE\n", 2500, 10000), ("", 5000, 10000)])
def test_fair_share_comes_from_decayed_usage(tmp_path, flags, alice, bob):
    conf = parse_slurm_conf("ClusterName=t\nNodeName=node[1-2] CPUs=4 RealMemory=1000 Gres=gpu:2\n"
                            "PartitionName=debug Nodes=ALL Default=YES\nPriorityType=priority/multifactor\n"
                            "PriorityWeightFairshare=10000\nPriorityDecayHalfLife=01:00:00\n"
                            "PriorityCalcPeriod=0\n" + flags)
    s = JobStore(make_engine(sqlite_url(str(tmp_path))), conf)
    register(s)
    ran = s.submit(body(user="alice", ntasks=4), 1.0)
    schedule(s, 2.0)
    s.node_sync("node1", {"running": [ran], "finished": []}, 3.0)
    s.node_sync("node1", {"running": [], "finished": [{"job_id": ran, "exit_code": 0, "end_time": 3602.0}]}, 3602.0)
    a = s.submit(body(user="alice", hold=True), 3603.0)
    b = s.submit(body(user="bob", hold=True), 3603.0)
    fac = priorities(s.snapshot(3602.0))
    # alice used everything so far with half of the shares: classic 2^(-1/0.5) = 0.25; Fair Tree
    # ranks bob first of two
    assert (fac[a].fairshare, fac[b].fairshare) == (alice, bob)
    # an hour later her usage has decayed by half, but it is still all the usage there is
    assert priorities(s.snapshot(7202.0))[a].fairshare == alice
    s.engine.dispose()


def test_site_factor_adds_to_the_priority(tmp_path):
    conf = parse_slurm_conf("ClusterName=t\nNodeName=node1 CPUs=4 RealMemory=1000\n"
                            "PartitionName=debug Nodes=ALL Default=YES\nPriorityType=priority/multifactor\n"
                            "PriorityWeightJobSize=1000\n")
    s = JobStore(make_engine(sqlite_url(str(tmp_path))), conf)
    a = s.submit(body(hold=True), 1.0)
    before = priorities(s.snapshot(2.0))[a]
    s.update_job(a, {"site_factor": 500})
    after = priorities(s.snapshot(2.0))[a]
    assert plan(s.snapshot(2.0)).priorities[a] == after.total()
    assert (after.site, after.total()) == (500, before.total() + 500)
    s.engine.dispose()


def test_dependencies_hold_jobs_until_their_targets_end(store: JobStore):
    register(store)
    a = store.submit(body(name="train"), 1.0)
    b = store.submit(body(dependency=f"afterok:{a}"), 2.0)
    c = store.submit(body(dependency=f"afternotok:{a}", kill_on_invalid_dep=True), 3.0)
    d = store.submit(body(dependency=f"afternotok:{a}"), 4.0)
    e = store.submit(body(name="train", dependency="singleton"), 5.0)
    with pytest.raises(InvalidRequest, match="Job dependency problem"):
        store.submit(body(dependency="afterok:"), 6.0)
    assert store.public(store.get_row(b))["dependency"] == f"afterok:{a}(unfulfilled)"
    schedule(store, 10.0)
    pub = {j: store.public(store.get_row(j)) for j in (a, b, c, d, e)}
    assert pub[a]["state"] == "RUNNING"
    assert [(pub[j]["state"], pub[j]["reason"]) for j in (b, c, d, e)] == [("PENDING", "Dependency")] * 4
    assert pub[e]["dependency"] == "singleton(unfulfilled)" and pub[b]["eligible_time"] is None
    store.node_sync("node1", {"running": [a], "finished": []}, 11.0)
    store.node_sync("node1", {"running": [], "finished": [{"job_id": a, "exit_code": 0}]}, 12.0)
    schedule(store, 13.0)
    pub = {j: store.public(store.get_row(j)) for j in (b, c, d, e)}
    assert (pub[b]["state"], pub[b]["dependency"], pub[b]["eligible_time"]) == ("RUNNING", None, 13.0)
    assert (pub[c]["state"], pub[c]["reason"]) == ("CANCELLED", "DependencyNeverSatisfied")
    assert (pub[d]["state"], pub[d]["reason"], pub[d]["dependency"]) == \
        ("PENDING", "DependencyNeverSatisfied", f"afternotok:{a}(failed)")
    assert pub[e]["state"] == "RUNNING"


def test_an_air_runs_timed_out_attempt_is_retried_until_its_retries_are_spent(store: JobStore):
    register(store)
    jid = store.submit(body(max_retries=1, time_limit=1), 1.0)
    for attempt, now in ((0, 2.0), (1, 10.0)):
        schedule(store, now)
        store.node_sync("node1", {"running": [jid], "finished": []}, now + 1)
        store.node_sync("node1", {"running": [], "finished": [
            {"job_id": jid, "exit_code": 0, "signal": 15, "timeout": True, "restarts": attempt}]}, now + 2)
        j = store.public(store.get_row(jid))
        if attempt == 0:
            assert (j["state"], j["restarts"]) == ("PENDING", 1)  # a retry at once, not after the requeue delay
    assert (j["state"], j["restarts"]) == ("TIMEOUT", 1)


def test_job_lists_are_worked_out_again_only_for_changed_rows(store: JobStore):
    register(store)
    a, b = store.submit(body(name="a"), 10.0), store.submit(body(name="b", hold=True), 10.0)
    first = store.public_list(store.job_rows(now=10.0))
    again = store.public_list(store.job_rows(now=10.0))
    assert first == again and first[0] is not again[0]  # new dicts each time (a caller may replace keys)
    again[0]["steps"] = ["replaced"]
    assert store.public_list(store.job_rows(now=10.0))[0]["steps"] != ["replaced"]
    schedule(store, 11.0)  # a starts: its row changed, b's did not
    after = {j["job_id"]: j for j in store.public_list(store.job_rows(now=11.0))}
    assert after[a]["state"] == "RUNNING" and after[a]["nodes"] == "node1"
    assert after[b] == {j["job_id"]: j for j in first}[b]
    assert after[a] == store.public(store.get_row(a))  # the same as worked out afresh


def test_a_kept_job_list_follows_every_change_of_its_jobs(store: JobStore):
    """Queries.listed works out again only the jobs whose rows changed since the last list (each
    update counts up `rev`): after a pass, an agent's report, an update and a cancel it shows what a
    whole read of the rows shows."""
    register(store)
    keys = ["job_id", "state", "reason", "priority", "nodes", "time_limit", "name", "start_time"]
    ids = [store.submit(body(ntasks=4), 10.0) for _ in range(3)]

    def agrees(**filters) -> list[dict]:
        kept = store.listed(keys, **filters)  # (first: nothing else has refreshed the kept views)
        bare = store.listed(keys, False, **filters)
        whole = [{k: store.public(r)[k] for k in keys} for r in store.job_rows(**filters)]  # nothing kept
        assert kept == whole
        assert bare == [{k: v for k, v in j.items() if v is not None} for j in whole]
        assert store.public_list(store.job_rows(**filters), keys) == whole
        return kept

    first = agrees()
    assert [j["state"] for j in first] == ["PENDING"] * 3
    schedule(store, 11.0)
    assert [j["state"] for j in agrees()] == ["RUNNING", "RUNNING", "PENDING"]
    store.node_sync("node1", {"running": [], "finished": [{"job_id": ids[0], "exit_code": 0}]}, 12.0)
    store.update_job(ids[2], {"name": "renamed", "time_limit": 5})
    listed = {j["job_id"]: j for j in agrees()}
    assert listed[ids[0]]["state"] == "COMPLETED"
    assert (listed[ids[2]]["name"], listed[ids[2]]["time_limit"]) == ("renamed", 5)
    store.cancel(ids[2], 13.0)
    assert {j["job_id"]: j["state"] for j in agrees(states=["CANCELLED"])} == {ids[2]: "CANCELLED"}
    assert [j["job_id"] for j in agrees(ids=[ids[1]])] == [ids[1]]
    # a finished job is listed for MinJobAge after its end (the same statement, another time bound)
    age = store.config.min_job_age
    assert ids[0] in [j["job_id"] for j in agrees(now=12.0 + age - 1)]
    assert ids[0] not in [j["job_id"] for j in agrees(now=12.0 + age + 1)]
    assert ids[0] in [j["job_id"] for j in agrees(now=12.0 + age + 1, history=True)]


def test_a_kept_job_list_works_out_only_what_changed(store: JobStore, monkeypatch: pytest.MonkeyPatch):
    """Listing the same jobs again works none of them out again, also when they are more than half
    of what is kept (the kept views count each job once); a changed job alone is worked out again."""
    register(store)
    ids = [store.submit(body(), 10.0) for _ in range(3)]
    monkeypatch.setattr(store.queries, "PUBLIC_KEPT", 5)
    made = []
    public = store.queries.public
    monkeypatch.setattr(store.queries, "public", lambda row: made.append(row.id) or public(row))
    keys = ["job_id", "state", "name"]
    store.listed(keys)
    assert sorted(made) == ids
    made.clear()
    store.listed(keys)
    store.listed(keys, False)
    store.public_list(store.job_rows(), keys)
    assert made == []
    same = store.listed(keys)
    assert store.listed(keys) is same  # nothing changed: the list itself again (GET /jobs resends its answer)
    store.update_job(ids[1], {"name": "renamed"})
    changed = store.listed(keys)
    assert [j["name"] for j in changed] == ["t", "renamed", "t"] and made == [ids[1]] and changed is not same
    assert [j["name"] for j in same] == ["t", "t", "t"]  # (the list given before is left as it was)


def test_a_write_by_another_process_shows_in_the_next_job_list(store: JobStore):
    """squeue in a loop is given its last list again only while nothing was written by anyone: jobs
    changed through another engine on the same database (another process) show in the very next list."""
    register(store)
    ids = [store.submit(body(), 10.0) for _ in range(2)]
    keys = ["job_id", "state", "name"]
    assert [j["name"] for j in store.listed(keys, now=20.0)] == ["t", "t"]
    assert store.listed(keys, now=20.0) == [{"job_id": i, "state": "PENDING", "name": "t"} for i in ids]
    other = JobStore(make_engine(store.engine.url.render_as_string(hide_password=False)), store.config)
    try:
        other.update_job(ids[1], {"name": "renamed"})
        other.cancel(ids[0], 21.0)
    finally:
        other.engine.dispose()
    assert [(j["name"], j["state"]) for j in store.listed(keys, now=22.0)] == [("t", "CANCELLED"),
                                                                             ("renamed", "PENDING")]


def test_a_node_registered_by_another_process_is_known_at_the_next_submission(store: JobStore):
    """The nodes kept for submit-time checks are read again once another process wrote: a node it
    registered is known, and while nothing changes the same list is given again."""
    store.node_sync("node1", {"resources": RES, "running": [], "finished": []}, 1.0)
    assert [r.name for r in store.capacity_rows()] == ["node1"]
    kept = store.capacity_rows()
    store.submit(body(), 2.0)
    assert store.capacity_rows() is kept
    other = JobStore(make_engine(store.engine.url.render_as_string(hide_password=False)), store.config)
    try:
        other.node_sync("node2", {"resources": RES, "running": [], "finished": []}, 3.0)
    finally:
        other.engine.dispose()
    assert [r.name for r in store.capacity_rows()] == ["node1", "node2"]


def test_a_job_list_asked_again_without_a_write_reads_nothing(store: JobStore):
    """squeue in a loop: while nothing is written, the list made last for the same keys and filters is
    given again, at a later time too (within the listed jobs' earliest end), on SQLite without a
    statement about jobs (its data_version says whether any process wrote); a write, other filters, or a
    time past a finished job's MinJobAge read the jobs again."""
    from sqlalchemy import event
    register(store)
    ids = [store.submit(body(), 10.0) for _ in range(2)]
    statements = []
    event.listen(store.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    keys = ["job_id", "state", "name"]
    first = store.listed(keys, now=20.0)
    n = len(statements)
    assert store.listed(keys, now=30.0) is first
    assert len(statements) == n or store.engine.dialect.name != "sqlite"
    assert [j["job_id"] for j in store.listed(keys, ids=[ids[0]], now=30.0)] == [ids[0]] and len(statements) > n
    store.update_job(ids[1], {"name": "renamed"})
    assert [j["name"] for j in store.listed(keys, now=30.0)] == ["t", "renamed"]
    store.cancel(ids[0], 40.0)
    age = store.config.min_job_age
    assert [j["state"] for j in store.listed(keys, now=40.0 + age)] == ["CANCELLED", "PENDING"]
    n = len(statements)
    assert [j["job_id"] for j in store.listed(keys, now=40.0 + age + 1)] == [ids[1]] and len(statements) > n
    # the clock set back: the job MinJobAge had hidden shows again
    assert [j["job_id"] for j in store.listed(keys, now=40.0 + age - 10)] == ids
