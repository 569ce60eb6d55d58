"""Multifactor priority: the reference cluster's numbers, and monotone in age."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from slurmlet.controller.core.model import Node, Partition, PendingJob, Request, Snapshot
from slurmlet.controller.core.order import priorities
from slurmlet.controller.core.plan import plan
from slurmlet.controller.core.priority import Weights, factors

# the reference cluster: 4 nodes x 8 CPUs, weights Age 1000, FairShare 10000, JobSize 1000,
# Partition 10000, QOS 1000, PriorityMaxAge 7 days
W = Weights(age=1000, fairshare=10000, jobsize=1000, partition=10000, qos=1000, max_age=7 * 86400)
NODES = tuple(Node(f"node{i}", 8, 32000, 8) for i in range(1, 5))
PART = Partition("debug", tuple(n.name for n in NODES))


def snap(jobs, now=100.0):
    return Snapshot(now=now, nodes=NODES, partitions=(PART,), pending=tuple(jobs), weights=W)


def test_reference_values():
    jobs = [PendingJob(1, "debug", Request(), eligible_time=100.0),
            PendingJob(2, "debug", Request(), eligible_time=100.0, nice=100),
            PendingJob(3, "debug", Request(nodes_min=10), eligible_time=100.0)]
    f = priorities(snap(jobs))
    assert (f[1].total(), f[1].jobsize, f[1].fairshare, f[1].partition, f[1].age) == (20140, 141, 10000, 10000, 0)
    assert f[2].total() == 20040 and f[2].nice == 100
    assert (f[3].total(), f[3].jobsize) == (21000, 1000)


def test_plan_orders_by_multifactor_priority():
    small_niced = PendingJob(1, "debug", Request(nodes_min=4, exclusive=True), eligible_time=100.0, nice=500)
    big = PendingJob(2, "debug", Request(nodes_min=4, exclusive=True), eligible_time=100.0)
    p = plan(snap([small_niced, big]))
    assert [s.job_id for s in p.starts] == [2]
    assert p.priorities[2] > p.priorities[1]


def test_no_weights_keeps_the_stored_priority():
    s = Snapshot(now=1.0, nodes=NODES, partitions=(PART,), pending=(PendingJob(1, "debug", Request()),))
    assert priorities(s) == {} and plan(s).priorities == {}


@given(a=st.floats(0, 30 * 86400), b=st.floats(0, 30 * 86400))
def test_priority_never_falls_with_age(a, b):
    lo, hi = sorted((a, b))
    kw = dict(w=W, eligible=0.0, nodes=1, cpus=1, total_nodes=4, total_cpus=32, partition_factor=1,
              max_partition_factor=1)
    assert factors(now=hi, **kw).total() >= factors(now=lo, **kw).total()


def test_usage_decays_by_half_life_and_fair_share_follows_usage():
    from slurmlet.controller.core.priority import decayed, fair_shares
    assert decayed(1000.0, 0, 3600) == 1000.0
    assert decayed(1000.0, 3600, 3600) == 500.0 and decayed(1000.0, 7200, 3600) == 250.0
    assert decayed(1000.0, 7200, 0) == 1000.0  # no decay configured
    fs = fair_shares({"alice": 300.0, "bob": 100.0}, {"alice": 1.0, "bob": 1.0, "carol": 2.0})
    assert fs == {"alice": (0.75, 0.25), "bob": (0.25, 0.25), "carol": (0.0, 0.5)}
    w = Weights(fairshare=10000)
    f = {u: factors(w=w, now=0, eligible=None, nodes=1, cpus=1, total_nodes=1, total_cpus=1, partition_factor=1,
                    max_partition_factor=1, usage=x[0], shares=x[1]).fairshare for u, x in fs.items()}
    # 2^(-U/S): over its share halves it per share used; no usage keeps the full weight
    assert f == {"alice": round(10000 * 2 ** -3), "bob": 5000, "carol": 10000}


@given(jobs=st.lists(st.tuples(st.integers(1, 4), st.floats(0, 30 * 86400), st.integers(-500, 500),
                               st.floats(0, 1), st.integers(-100, 100)), min_size=1, max_size=20),
       now=st.floats(0, 40 * 86400))
def test_scheduler_totals_equal_sprio_components_and_plan_order(jobs, now):
    from slurmlet.controller.core.order import priority_totals
    pend = [PendingJob(i, "debug", Request(nodes_min=n), eligible_time=e, nice=nice, usage=u, shares=0.5, site=site,
                       submit_time=float(i), held="user") for i, (n, e, nice, u, site) in enumerate(jobs)]
    s = snap(pend, now=now)
    parts = priorities(s)
    assert priority_totals(s) == {jid: f.total() for jid, f in parts.items()}
    # with age alone, a job eligible earlier never ranks below one eligible later
    aged = snap([PendingJob(i, "debug", Request(), eligible_time=e, submit_time=0.0) for i, (_, e, *_r) in
                 enumerate(jobs)], now=now)
    tot = priority_totals(aged)
    for a in aged.pending:
        for b in aged.pending:
            if a.eligible_time <= b.eligible_time:
                assert tot[a.job_id] >= tot[b.job_id]


def test_tres_weights_add_each_tres_part_of_the_partition():
    from dataclasses import replace

    from slurmlet.controller.config import ConfigError, parse_slurm_conf
    w = replace(W, tres=(("cpu", 1000), ("gres/gpu", 2000)))
    # 8 of the partition's 32 CPUs and 16 of its 32 GPUs: 1000/4 + 2000/2
    job = PendingJob(1, "debug", Request(ntasks=8, gpus=16), eligible_time=100.0)
    plain = PendingJob(2, "debug", Request(), eligible_time=100.0)
    s = Snapshot(now=100.0, nodes=NODES, partitions=(PART,), pending=(job, plain), weights=w)
    f = priorities(s)
    assert f[1].tres == (("cpu", 250.0), ("gres/gpu", 1000.0))
    assert f[1].total() - priorities(snap([job]))[1].total() == 1250
    assert plan(s).priorities[1] == f[1].total()  # the fast path agrees
    conf = parse_slurm_conf("PriorityType=priority/multifactor\nPriorityWeightTRES=CPU=1000,Mem=2000,GRES/gpu=3000\n")
    assert conf.priority_weights().tres == (("cpu", 1000), ("mem", 2000), ("gres/gpu", 3000))
    try:
        parse_slurm_conf("PriorityType=priority/multifactor\nPriorityWeightTRES=CPU\n")
    except ConfigError as e:
        assert "PriorityWeightTRES" in str(e)
    else:
        raise AssertionError("a bad PriorityWeightTRES was accepted")
