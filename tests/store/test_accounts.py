"""Accounting over real SQLite and PostgreSQL: sacctmgr's writes, admission under
AccountingStorageEnforce, running limits with Slurm's reasons, usage, fair-share and preempt/qos."""

from __future__ import annotations

import pytest

from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.core.fairshare import walk
from slurmlet.controller.core.order import priorities
from slurmlet.controller.core.plan import plan
from slurmlet.controller.errors import InvalidRequest
from slurmlet.controller.store.accounts import AcctError
from slurmlet.controller.store.engine import make_engine, sqlite_url
from slurmlet.controller.store.jobs import JobStore
from tests.store.conftest import store_fixture

BASE = ("ClusterName=t\nNodeName=node[1-2] CPUs=4 RealMemory=1000 Gres=gpu:2\n"
        "PartitionName=debug Nodes=ALL Default=YES\nSlurmletRequeueDelay=0\n")
ENFORCE = BASE + "AccountingStorageEnforce=associations,limits,qos\n"
RES = {"cpus": 4, "memory": 1000, "gpus": 2}


store = store_fixture(parse_slurm_conf(ENFORCE), defaults=True)
open_store = store_fixture(parse_slurm_conf(BASE), defaults=True)  #: no AccountingStorageEnforce: anyone may submit


def body(user: str = "alice", **kw) -> dict:
    b = dict(script="#!/bin/sh\ntrue\n", name="t", partition="debug", user=user, uid=1000, gid=1000,
             group=user, workdir="/tmp", environment={})
    b.update(kw)
    return b


def register(store: JobStore, now: float = 1.0) -> None:
    for n in ("node1", "node2"):
        store.node_sync(n, {"resources": RES, "running": [], "finished": []}, now)


def cycle(store: JobStore, now: float) -> None:
    store.apply(plan(store.snapshot(now)), now)


def state(store: JobStore, jid: int) -> tuple[str, str]:
    p = store.public(store.get_row(jid))
    return p["state"], p["reason"]


def team(store: JobStore) -> None:
    a = store.accounts
    a.add("account", ["ml"], {"fairshare": "10"}, 1.0)
    a.add("account", ["bio"], {"fairshare": "10"}, 1.0)
    a.add("user", ["alice"], {"account": "ml"}, 1.0)
    a.add("user", ["bob"], {"account": "bio"}, 1.0)


# ---------------------------------------------------------------- sacctmgr
def test_defaults_add_modify_delete(store: JobStore):
    a = store.accounts
    t = a.tree()
    assert t.clusters == ["t"] and set(t.accounts) == {"root"} and t.users["root"].admin_level == "Administrator"
    assert list(t.qos) == ["normal"]
    assert a.add("account", ["ml"], {"fairshare": "10", "description": "ML team"}, 1.0) == [
        " Adding Account(s)", "  ml", " Settings", "  Description     = ml team",
        "  Organization    = Parent/Account Name", " Associations", "  A = ml         C = t         ",
        " Settings", "  Fairshare     = 10", "  Parent        = root"]
    assert a.add("account", ["ml"], {}, 1.0) == []  # nothing new
    assert a.add("user", ["alice"], {"account": "ml", "adminlevel": "operator"}, 1.0) == [
        " Adding User(s)", "  alice", " Settings =", "  Admin Level     = Operator", " Associations =",
        "  U = alice     A = ml         C = t         ", " Non Default Settings"]
    t = a.tree()
    assert t.users["alice"].default_account == "ml" and t.users["alice"].admin_level == "Operator"
    assert t.by_key[("ml", "", "")].shares == 10 and t.accounts["ml"].description == "ml team"
    assert a.add("qos", ["high"], {"priority": "10", "maxjobsperuser": "2", "maxtresperuser": "gres/gpu=2",
                                   "maxwall": "1:00:00", "preempt": "normal", "flags": "DenyOnLimit"}, 1.0) == [
        " Adding QOS(s)", "  high", " Settings", "  Description    = high", "  Flags                    = DenyOnLimit",
        "  MaxJobsPerUser = 2", "  MaxTRESPerUser           = gres/gpu=2", "  MaxWall                  = 01:00:00",
        "  Preempt                  = normal", "  Priority                 = 10"]
    q = a.tree().qos["high"]
    assert (q.priority, q.preempt, q.flags) == (10, ["normal"], ["DenyOnLimit"])
    assert q.limits == {"MaxJobsPerUser": 2, "MaxTRESPerUser": {"gres/gpu": 2}, "MaxWall": 60}
    assert a.modify("qos", {"name": "high"}, {"maxjobsperuser": "-1", "grptres": "cpu=8"}) == [
        " Modified qos...", "  high"]
    assert a.tree().qos["high"].limits == {"MaxTRESPerUser": {"gres/gpu": 2}, "MaxWall": 60, "GrpTRES": {"cpu": 8}}
    assert a.modify("user", {"name": "alice"}, {"qos+": "high", "defaultqos": "high"}) == [
        " Modified user associations...", "  C = t          A = ml                   U = alice    "]
    with pytest.raises(AcctError, match="bad qos 'nosuch'"):
        a.modify("user", {"name": "alice"}, {"qos+": "nosuch"})
    with pytest.raises(AcctError, match="aren't associated with new default account 'root'"):
        a.modify("user", {"name": "alice"}, {"defaultaccount": "root"})
    al = a.tree().by_key[("ml", "alice", "")]
    assert a.tree().allowed_qos(al) == ["normal", "high"] and a.tree().default_qos(al) == "high"
    assert a.modify("qos", {"name": "nosuch"}, {"priority": "1"}) == []
    assert a.delete("user", {"name": "alice"}) == [" Deleting users...", "  alice"]
    assert "alice" not in a.tree().users and ("ml", "alice", "") not in a.tree().by_key
    assert a.delete("account", {"name": "ml"}) == [" Deleting accounts...", "  ml"]
    assert "ml" not in a.tree().accounts
    assert a.delete("qos", {"name": "nosuch"}) == []


def test_bad_sacctmgr_input_is_refused_and_changes_nothing(store: JobStore):
    a = store.accounts
    with pytest.raises(AcctError, match="Parent account 'nope' doesn't exist"):
        a.add("account", ["x"], {"parent": "nope"}, 1.0)
    with pytest.raises(AcctError, match="account 'nope' doesn't exist"):
        a.add("user", ["bob"], {"account": "nope"}, 1.0)
    with pytest.raises(AcctError, match="Bad MaxWall"):
        a.add("qos", ["q"], {"maxwall": "abc"}, 1.0)
    with pytest.raises(AcctError, match="Unknown option: badopt=1"):
        a.add("qos", ["q"], {"badopt": "1"}, 1.0)
    with pytest.raises(AcctError, match="Bad MaxJobsPerUser"):
        a.add("qos", ["q"], {"maxjobsperuser": "-5"}, 1.0)
    with pytest.raises(AcctError, match="TRES"):
        a.add("qos", ["q"], {"grptres": "cpu=lots"}, 1.0)
    t = a.tree()
    assert set(t.accounts) == {"root"} and set(t.users) == {"root"} and list(t.qos) == ["normal"]


def test_a_dry_run_writes_nothing(store: JobStore):
    assert store.accounts.add("account", ["ml"], {}, 1.0, commit=False)[:2] == [" Adding Account(s)", "  ml"]
    assert "ml" not in store.accounts.tree().accounts
    assert store.accounts.add("account", ["ml"], {}, 1.0)
    assert store.accounts.delete("account", {"name": "ml"}, commit=False) == [" Deleting accounts...", "  ml"]
    assert "ml" in store.accounts.tree().accounts


def test_deleting_what_running_jobs_use_is_refused(store: JobStore):
    team(store)
    register(store)
    store.submit(body(), 2.0)
    with pytest.raises(AcctError, match="Job\\(s\\) active"):
        store.accounts.delete("user", {"name": "alice"})


# ---------------------------------------------------------------- admission
def test_associations_refuse_and_admit(store: JobStore):
    team(store)
    with pytest.raises(InvalidRequest, match="Invalid account or account/partition combination specified"):
        store.submit(body("carol"), 2.0)  # no association at all
    with pytest.raises(InvalidRequest, match="Invalid account or account/partition combination specified"):
        store.submit(body(account="bio"), 2.0)  # alice is not in bio
    with pytest.raises(InvalidRequest, match="Invalid qos specification"):
        store.submit(body(qos="nosuch"), 2.0)
    store.accounts.add("qos", ["high"], {}, 1.0)
    with pytest.raises(InvalidRequest, match="Invalid qos specification"):
        store.submit(body(qos="high"), 2.0)  # exists, but not in alice's association
    jid = store.submit(body(), 2.0)  # the default account and QOS
    row = store.get_row(jid)
    assert (row.account, row.qos) == ("ml", "normal")


def test_without_enforcement_anyone_submits(open_store: JobStore):
    jid = open_store.submit(body("carol", account="whatever"), 2.0)
    assert open_store.get_row(jid).account == "whatever"
    assert open_store.get_row(open_store.submit(body("carol"), 2.0)).account == "carol"


def test_submit_limits_refuse_with_the_limit_named(store: JobStore):
    team(store)
    store.accounts.modify("qos", {"name": "normal"}, {"maxsubmitjobsperuser": "2"})
    store.submit(body(), 2.0)
    store.submit(body(), 2.0)
    with pytest.raises(InvalidRequest) as e:
        store.submit(body(), 2.0)
    assert e.value.error == "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
    assert e.value.pre == ["QOSMaxSubmitJobPerUserLimit"]
    store.submit(body("bob"), 2.0)  # per user: bob has his own two
    with pytest.raises(InvalidRequest):  # an array counts task by task
        store.submit(body("bob", array="0-1"), 2.0)
    store.accounts.modify("user", {"name": "bob"}, {"maxsubmitjobs": "1"})
    store.accounts.modify("qos", {"name": "normal"}, {"maxsubmitjobsperuser": "-1"})
    with pytest.raises(InvalidRequest) as e:
        store.submit(body("bob"), 2.0)
    assert e.value.pre == ["AssocMaxSubmitJobLimit"]


def test_per_job_limits_pend_or_with_deny_on_limit_refuse(store: JobStore):
    team(store)
    register(store)
    store.accounts.modify("qos", {"name": "normal"}, {"maxwall": "60", "maxtresperjob": "cpu=2"})
    long = store.submit(body(time_limit=120), 2.0)
    wide = store.submit(body(ntasks=3), 2.0)
    ok = store.submit(body(time_limit=30, ntasks=2), 2.0)
    unset = store.submit(body(), 2.0)
    assert store.get_row(unset).time_limit == 60  # no --time: the QOS's MaxWall
    cycle(store, 3.0)
    assert state(store, long) == ("PENDING", "QOSMaxWallDurationPerJobLimit")
    assert state(store, wide) == ("PENDING", "QOSMaxCpuPerJobLimit")
    assert state(store, ok)[0] == "RUNNING" and state(store, unset)[0] == "RUNNING"
    store.accounts.modify("qos", {"name": "normal"}, {"flags": "DenyOnLimit", "maxtresperuser": "gres/gpu=1",
                                                      "grptres": "gres/gpu=3"})
    with pytest.raises(InvalidRequest) as e:
        store.submit(body(time_limit=120), 4.0)
    assert e.value.pre == ["QOSMaxWallDurationPerJobLimit"]
    with pytest.raises(InvalidRequest) as e:  # alone past the per-user GPU limit (checked before the group's)
        store.submit(body(time_limit=30, gpus=4), 4.0)
    assert e.value.pre == ["QOSMaxGRESPerUser"]
    store.submit(body(time_limit=30, gpus=1), 4.0)  # within both: admitted


# ---------------------------------------------------------------- running limits
def test_max_jobs_per_user_holds_back_the_rest_with_its_reason(store: JobStore):
    team(store)
    register(store)
    store.accounts.modify("qos", {"name": "normal"}, {"maxjobsperuser": "1"})
    a1, a2 = store.submit(body(), 2.0), store.submit(body(), 2.0)
    b1 = store.submit(body("bob"), 2.0)
    cycle(store, 3.0)
    assert state(store, a1)[0] == "RUNNING" and state(store, b1)[0] == "RUNNING"
    assert state(store, a2) == ("PENDING", "QOSMaxJobsPerUserLimit")
    store.node_sync("node1", {"running": [], "finished": [{"job_id": a1, "exit_code": 0}]}, 4.0)
    store.node_sync("node2", {"running": [], "finished": [{"job_id": a1, "exit_code": 0}]}, 4.0)
    cycle(store, 5.0)
    assert state(store, a2)[0] == "RUNNING"


def test_group_gres_limit_of_an_account_spans_its_users(store: JobStore):
    team(store)
    register(store)
    store.accounts.add("user", ["carol"], {"account": "ml"}, 1.0)
    store.accounts.modify("account", {"name": "ml"}, {"grptres": "gres/gpu=2"})
    a = store.submit(body(gpus_per_node=2), 2.0)
    c = store.submit(body("carol", gpus_per_node=1), 2.0)
    b = store.submit(body("bob", gpus_per_node=2), 2.0)
    cycle(store, 3.0)
    assert state(store, a)[0] == "RUNNING" and state(store, b)[0] == "RUNNING"
    assert state(store, c) == ("PENDING", "AssocGrpGRES")


def test_qos_group_jobs_and_per_user_tres(store: JobStore):
    team(store)
    register(store)
    store.accounts.modify("qos", {"name": "normal"}, {"grpjobs": "2", "maxtresperuser": "cpu=4"})
    a1 = store.submit(body(ntasks=3), 2.0)
    a2 = store.submit(body(ntasks=2), 2.0)  # 3 + 2 > 4 CPUs for alice
    b1 = store.submit(body("bob"), 2.0)
    b2 = store.submit(body("bob"), 2.0)  # a third job in the QOS
    cycle(store, 3.0)
    assert state(store, a1)[0] == "RUNNING" and state(store, b1)[0] == "RUNNING"
    assert state(store, a2) == ("PENDING", "QOSMaxCpuPerUserLimit")
    assert state(store, b2) == ("PENDING", "QOSGrpJobsLimit")


# ---------------------------------------------------------------- usage and fair-share
def test_usage_is_billing_weighted_and_decays(tmp_path):
    conf = (BASE.replace("PartitionName=debug Nodes=ALL Default=YES",
                         'PartitionName=debug Nodes=ALL Default=YES TRESBillingWeights="CPU=1.0,Mem=0.5G,GRES/gpu=4"')
            + "PriorityType=priority/multifactor\nPriorityWeightFairshare=1000\nPriorityDecayHalfLife=1:00:00\n"
              "PriorityCalcPeriod=0\n")
    s = JobStore(make_engine(sqlite_url(str(tmp_path))), parse_slurm_conf(conf))
    s.accounts.ensure_defaults(0.0)
    register(s)
    jid = s.submit(body(ntasks=2, mem_per_node=512, gpus_per_node=1), 0.0)
    cycle(s, 0.0)
    for n in ("node1", "node2"):
        s.node_sync(n, {"running": [], "finished": [{"job_id": jid, "exit_code": 0}]}, 100.0)
    # 2 CPUs + 0.5 GB * 0.5 + 1 GPU * 4 = 6.25 billing, for 100 s
    assert s.assoc_usage(100.0)[("alice", "alice")] == pytest.approx(625.0, rel=0.02)
    # one half-life later it counts half
    assert s.assoc_usage(3700.0)[("alice", "alice")] == pytest.approx(312.5, rel=0.02)


FAIRSHARE = ENFORCE + "PriorityType=priority/multifactor\nPriorityWeightFairshare=10000\nPriorityCalcPeriod=0\n"


def after_heavy_use(tmp_path, conf: str) -> JobStore:
    """alice (account ml) has used the whole cluster for 10 minutes; bob (bio) nothing."""
    s = JobStore(make_engine(sqlite_url(str(tmp_path))), parse_slurm_conf(conf))
    s.accounts.ensure_defaults(0.0)
    team(s)
    register(s)
    heavy = s.submit(body(ntasks=8), 0.0)
    cycle(s, 0.0)
    for n in ("node1", "node2"):
        s.node_sync(n, {"running": [], "finished": [{"job_id": heavy, "exit_code": 0}]}, 600.0)
    return s


def test_fair_share_orders_the_light_user_first(tmp_path):
    s = after_heavy_use(tmp_path, FAIRSHARE)
    a = s.submit(body(ntasks=8), 601.0)
    b = s.submit(body("bob", ntasks=8), 602.0)  # later, but bob has used nothing
    snap = s.snapshot(603.0)
    prio = priorities(snap)
    assert prio[b].fairshare > prio[a].fairshare
    p = plan(snap)
    assert [st.job_id for st in p.starts] == [b]
    tree = {(n.account, n.user): n for _, n in walk(s.share_tree(603.0))}
    assert tree[("bio", "bob")].fairshare > tree[("ml", "alice")].fairshare
    assert tree[("ml", "")].raw_usage > 0 and tree[("bio", "")].raw_usage == 0


def test_classic_fair_share_without_fair_tree(tmp_path):
    s = after_heavy_use(tmp_path, FAIRSHARE + "PriorityFlags=NO_FAIR_TREE\n")
    a, b = s.submit(body(), 601.0), s.submit(body("bob"), 601.0)
    prio = priorities(s.snapshot(602.0))
    assert prio[b].fairshare > prio[a].fairshare > 0


# ---------------------------------------------------------------- preempt/qos
def test_preempt_qos_requeues_the_lower_qos(tmp_path):
    conf = ENFORCE + "PreemptType=preempt/qos\nPreemptMode=REQUEUE\n"
    s = JobStore(make_engine(sqlite_url(str(tmp_path))), parse_slurm_conf(conf))
    s.accounts.ensure_defaults(0.0)
    team(s)
    s.accounts.add("qos", ["low"], {}, 1.0)
    s.accounts.add("qos", ["high"], {"preempt": "low", "priority": "100"}, 1.0)
    s.accounts.modify("user", {"name": "alice"}, {"qos": "low,normal"})
    s.accounts.modify("user", {"name": "bob"}, {"qos": "high,normal"})
    register(s)
    lows = [s.submit(body(qos="low", ntasks=4, requeue=True), 2.0) for _ in range(2)]
    normal = s.submit(body(ntasks=4), 2.0)
    cycle(s, 3.0)
    assert all(state(s, j)[0] == "RUNNING" for j in lows)
    high = s.submit(body("bob", qos="high", ntasks=4), 4.0)
    p = plan(s.snapshot(5.0))
    # the longest-running of the equal low jobs goes, as a real 22.05 chose
    assert [(x.victim, x.preemptor, x.mode) for x in p.preemptions] == [(lows[0], high, "REQUEUE")]
    assert normal not in [x.victim for x in p.preemptions]


def test_a_tree_read_while_a_write_lands_is_not_kept(store: JobStore, monkeypatch):
    """The controller's loops and requests read the association tree while sacctmgr writes it (and the
    in-process tests write it from their own thread): a tree read from before a write that lands
    during the read is used once, not kept, so the next read sees the write."""
    a = store.accounts
    a.tree()
    a.add("account", ["ml"], {}, 1.0)  # (the kept tree is dropped)
    connect = a.engine.connect

    class Racing:  # the read's connection: when the read is done, the write lands before it is kept
        def __init__(self) -> None:
            self.c = connect()

        def __enter__(self):
            return self.c.__enter__()

        def __exit__(self, *exc) -> None:
            self.c.__exit__(*exc)
            monkeypatch.setattr(a.engine, "connect", connect)
            a.add("user", ["alice"], {"account": "ml"}, 1.0)

    monkeypatch.setattr(a.engine, "connect", Racing)
    assert "alice" not in a.tree().users  # read before the write
    assert "alice" in a.tree().users


def test_an_account_added_by_another_process_is_known_at_the_next_submission(store: JobStore):
    """The accounting tables kept in memory are read again once another process wrote to the database:
    a user added through another engine on it may submit at once (AccountingStorageEnforce)."""
    register(store)
    with pytest.raises(InvalidRequest):
        store.submit(body("dave"), 10.0)
    version = store.accounts.version
    other = JobStore(make_engine(store.engine.url.render_as_string(hide_password=False)), store.config)
    try:
        other.accounts.add("account", ["ml"], {}, 11.0)
        other.accounts.add("user", ["dave"], {"account": "ml"}, 11.0)
    finally:
        other.engine.dispose()
    jid = store.submit(body("dave"), 12.0)
    assert store.public(store.get_row(jid))["account"] == "ml"
    assert store.accounts.version > version  # (what is worked out from the tree, fair share, follows it)
