"""The pure scheduling core: first fit, task layouts, pending reasons, and properties."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from slurmlet.controller.core.model import Node, Partition, PendingJob, Reason, Request, Snapshot
from slurmlet.controller.core.plan import plan


def nodes(n: int = 2, cpus: int = 8, mem: int = 32000, gpus: int = 8, **kw) -> tuple[Node, ...]:
    return tuple(Node(name=f"node{i}", cpus=cpus, memory=mem, gpus=gpus, **kw) for i in range(1, n + 1))


def part(ns, name="debug", **kw) -> Partition:
    return Partition(name=name, nodes=tuple(n.name for n in ns), **kw)


def job(i: int, req: Request | None = None, **kw) -> PendingJob:
    kw.setdefault("partition", "debug")
    kw.setdefault("submit_time", float(i))
    return PendingJob(job_id=i, request=req or Request(), **kw)


def snap(ns, jobs, parts=None, now=100.0) -> Snapshot:
    return Snapshot(now=now, nodes=ns, partitions=tuple(parts or [part(ns)]), pending=tuple(jobs))


def test_single_job_starts_on_first_node():
    ns = nodes()
    p = plan(snap(ns, [job(1)]))
    assert [(s.job_id, s.node_names) for s in p.starts] == [(1, ("node1",))]
    assert p.starts[0].allocs[0].cpus == 1


def test_gpus_get_distinct_indices_and_blocked_job_gets_resources_then_priority():
    ns = nodes(1)
    jobs = [job(1, Request(gpus_per_node=5)), job(2, Request(gpus_per_node=3)),
            job(3, Request(gpus_per_node=1)), job(4, Request(gpus_per_node=1))]
    p = plan(snap(ns, jobs))
    got = {s.job_id: s.allocs[0].gpu_ids for s in p.starts}
    assert got == {1: (0, 1, 2, 3, 4), 2: (5, 6, 7)}
    assert p.reasons == {3: Reason.RESOURCES, 4: Reason.PRIORITY}


def test_running_jobs_hold_their_gpus():
    ns = (Node("node1", 8, 32000, 8, cpus_used=1, gpus_used=(0, 1, 2, 3, 4, 5)),)
    p = plan(snap(ns, [job(1, Request(gpus_per_node=2))]))
    assert p.starts[0].allocs[0].gpu_ids == (6, 7)


def test_layouts_nodes_tasks_cpus():
    ns = nodes(4)
    p = plan(snap(ns, [job(1, Request(nodes_min=2, ntasks_per_node=2, cpus_per_task=2))]))
    a = p.starts[0].allocs
    assert [(x.node, x.tasks, x.cpus) for x in a] == [("node1", 2, 4), ("node2", 2, 4)]
    # -n 10 without -N packs onto as few 8-CPU nodes as possible
    p = plan(snap(ns, [job(1, Request(ntasks=10))]))
    assert [(x.node, x.tasks) for x in p.starts[0].allocs] == [("node1", 8), ("node2", 2)]
    # -N2 -n3: block distribution 2,1
    p = plan(snap(ns, [job(1, Request(nodes_min=2, nodes_max=2, ntasks=3))]))
    assert [x.tasks for x in p.starts[0].allocs] == [2, 1]
    # -N2 -n4 -c2 packs the first node, leaving a task for the second (Slurm 22.05: 3,1 and 6,2 CPUs)
    p = plan(snap(ns, [job(1, Request(nodes_min=2, ntasks=4, cpus_per_task=2))]))
    assert [(x.tasks, x.cpus) for x in p.starts[0].allocs] == [(3, 6), (1, 2)]
    # -N2 -n12: as many as the first node holds; -N3 -n2 runs on two nodes (sbatch warns of it)
    p = plan(snap(ns, [job(1, Request(nodes_min=2, ntasks=12))]))
    assert [x.tasks for x in p.starts[0].allocs] == [8, 4]
    p = plan(snap(ns, [job(1, Request(nodes_min=3, ntasks=2))]))
    assert [x.tasks for x in p.starts[0].allocs] == [1, 1]
    # a busy first node takes what it has free
    busy = (Node("node1", 8, 32000, 8, cpus_used=6),) + ns[1:]
    p = plan(snap(busy, [job(1, Request(nodes_min=2, ntasks=8))]))
    assert [(x.node, x.tasks) for x in p.starts[0].allocs] == [("node1", 2), ("node2", 6)]


def test_step_layouts_are_slurms_block_distribution():
    from slurmlet.controller.store.steps import plan_layout

    def counts(cpus, **kw):
        alloc = [{"node": f"n{i}", "cpus": c, "gpu_ids": []} for i, c in enumerate(cpus)]
        out = plan_layout(alloc, kw.get("nodes"), kw.get("ntasks"), kw.get("per_node"), kw.get("cpt", 1),
                          exact=kw.get("exact", False))
        return [(len(x["ranks"]), x["cpus"]) for x in out]

    assert counts([3, 1], ntasks=4) == [(3, 3), (1, 1)]  # dealt round the nodes while CPUs last
    assert counts([4, 4], ntasks=4) == [(2, 4), (2, 4)]
    assert counts([6, 2], ntasks=2, cpt=2, exact=True) == [(1, 2), (1, 2)]  # -c: the tasks' CPUs only
    assert counts([3, 1], nodes=1, ntasks=1) == [(1, 3)]  # no -c: all of the job's CPUs on the node


def test_memory_and_exclusive():
    ns = nodes(2, mem=1000)
    p = plan(snap(ns, [job(1, Request(mem_per_node=600)), job(2, Request(mem_per_node=600)),
                       job(3, Request(mem_per_node=600))]))
    assert [s.node_names for s in p.starts] == [("node1",), ("node2",)]
    assert p.reasons[3] == Reason.RESOURCES
    p = plan(snap(ns, [job(1), job(2, Request(exclusive=True))]))
    assert [s.node_names for s in p.starts] == [("node1",), ("node2",)]
    assert p.starts[1].allocs[0].cpus == 8 and p.starts[1].allocs[0].memory == 1000


def test_static_reasons():
    ns = nodes(2)
    parts = [part(ns, max_time=10)]
    jobs = [job(1, held="user"), job(2, held="admin"), job(3, begin_time=500.0),
            job(4, time_limit=20), job(5, Request(nodes_min=3)), job(6, Request(ntasks=17)),
            job(7, partition="nope")]
    p = plan(snap(ns, jobs, parts))
    assert p.reasons == {1: Reason.HELD_USER, 2: Reason.HELD_ADMIN, 3: Reason.BEGIN_TIME,
                         4: Reason.PARTITION_TIME_LIMIT, 5: Reason.PARTITION_NODE_LIMIT,
                         6: Reason.PARTITION_CONFIG, 7: Reason.PARTITION_CONFIG}
    assert not p.starts


def test_unavailable_nodes_are_not_used_and_nodelist_is_honoured():
    ns = (Node("node1", 8, 100, 0, available=False), Node("node2", 8, 100, 0))
    p = plan(snap(ns, [job(1)]))
    assert p.starts[0].node_names == ("node2",)
    ns = nodes(3)
    p = plan(snap(ns, [job(1, Request(nodelist=("node3",)))]))
    assert p.starts[0].node_names == ("node3",)
    p = plan(snap(ns, [job(1, Request(nodes_min=2, exclude=("node1",)))]))
    assert p.starts[0].node_names == ("node2", "node3")


def test_priority_and_tier_order():
    ns = nodes(1, gpus=0, cpus=1)
    parts = [part(ns, "low", priority_tier=1), part(ns, "high", priority_tier=10)]
    jobs = [job(1, partition="low", priority=100), job(2, partition="high", priority=1)]
    p = plan(snap(ns, jobs, parts))
    assert [s.job_id for s in p.starts] == [2]
    jobs = [job(1, priority=1), job(2, priority=50)]
    p = plan(snap(ns, jobs))
    assert [s.job_id for s in p.starts] == [2]


requests = st.builds(
    Request,
    nodes_min=st.integers(1, 3),
    ntasks_per_node=st.one_of(st.none(), st.integers(1, 4)),
    cpus_per_task=st.integers(1, 4),
    mem_per_node=st.one_of(st.none(), st.integers(1, 4000)),
    gpus_per_node=st.one_of(st.none(), st.integers(0, 4)),
    exclusive=st.booleans(),
)


@settings(max_examples=200, deadline=None)
@given(reqs=st.lists(requests, min_size=1, max_size=12), seed=st.integers(0, 1000),
       held=st.lists(st.booleans(), min_size=12, max_size=12))
def test_properties_no_oversubscription_and_order_independence(reqs, seed, held):
    ns = (Node("node1", 8, 8000, 4), Node("node2", 4, 4000, 2, cpus_used=1, memory_used=100, gpus_used=(0,)),
          Node("node3", 8, 8000, 0))
    jobs = [job(i + 1, r, priority=(i * 7) % 5, held="user" if held[i] else None) for i, r in enumerate(reqs)]
    p = plan(snap(ns, jobs))
    by = {n.name: n for n in ns}
    used = {n.name: [n.cpus_used, n.memory_used, set(n.gpus_used)] for n in ns}
    for s in p.starts:
        for a in s.allocs:
            u = used[a.node]
            u[0] += a.cpus
            u[1] += a.memory
            assert not (u[2] & set(a.gpu_ids)), "a GPU was given twice"
            u[2] |= set(a.gpu_ids)
    for name, (c, m, g) in used.items():
        assert c <= by[name].cpus and m <= by[name].memory and len(g) <= by[name].gpus
    # every pending job that did not start has a reason; started ones have none
    started = {s.job_id for s in p.starts}
    assert started.isdisjoint(p.reasons) and started | set(p.reasons) == {j.job_id for j in jobs}
    assert all(j.job_id not in started for j in jobs if j.held)
    # shuffled input gives the same plan
    shuffled = list(jobs)
    random.Random(seed).shuffle(shuffled)
    q = plan(Snapshot(now=100.0, nodes=tuple(reversed(ns)), partitions=(part(ns),), pending=tuple(shuffled)))
    assert q.starts == p.starts and q.reasons == p.reasons


@settings(max_examples=100, deadline=None)
@given(req=requests)
def test_property_head_job_that_fits_on_idle_nodes_starts(req):
    ns = nodes(3, cpus=16, mem=8000, gpus=4)
    p = plan(snap(ns, [job(1, req)]))
    fits = req.nodes_min <= 3 and (req.ntasks_per_node or 1) * req.cpus_per_task <= 16 \
        and (req.mem_per_node or 0) <= 8000 and (req.gpus_per_node or 0) <= 4
    assert bool(p.starts) == fits


def test_a_typed_gpu_request_only_gets_nodes_with_that_model():
    ns = (Node("node1", 8, 32000, 8, gpu_type="a100"), Node("node2", 8, 32000, 8, gpu_type="H100"))
    p = plan(snap(ns, [job(1, Request(gpus_per_node=2, gpu_type="h100")), job(2, Request(gpus_per_node=2))]))
    assert {s.job_id: s.node_names for s in p.starts} == {1: ("node2",), 2: ("node1",)}
    p = plan(snap(ns, [job(1, Request(gpus_per_node=2, gpu_type="V100"))]))
    assert p.starts == [] and p.reasons[1] == Reason.PARTITION_CONFIG


def test_an_equal_partition_object_is_remembered_and_a_changed_one_is_not_mistaken_for_it():
    from slurmlet.controller.core.memo import Memo
    ns = nodes(2)
    jobs = [job(1, Request(nodes_min=2))]
    memo = Memo()
    first = plan(snap(ns, jobs, [part(ns)]), memo=memo)
    again = part(ns)  # equal, another object (a new simulator or controller builds its own)
    assert plan(snap(ns, jobs, [again]), memo=memo) == first
    assert memo.nodes is not None and memo.nodes.parts["debug"].part is again  # later cycles find it by identity
    limited = plan(snap(ns, jobs, [part(ns, max_nodes=1)]), memo=memo)
    assert not limited.starts and limited.reasons[1] == Reason.PARTITION_NODE_LIMIT
    assert plan(snap(ns, jobs, [part(ns)]), memo=memo) == first


# ---------------------------------------------------------------- heterogeneous jobs
def het(i: int, *reqs: Request, **kw) -> PendingJob:
    """A heterogeneous job whose first component asks for the first request, the others the rest."""
    return job(i, reqs[0], het=tuple(("debug", r) for r in reqs[1:]), **kw)


def test_a_heterogeneous_job_starts_every_component_on_nodes_of_its_own():
    ns = nodes(3, cpus=4)
    p = plan(snap(ns, [het(1, Request(ntasks=1), Request(ntasks=2), Request(nodes_min=1))]))
    (s,) = p.starts
    assert [(a.node, a.het, a.tasks) for a in s.allocs] == [("node1", 0, 1), ("node2", 1, 2), ("node3", 2, 1)]


def test_a_heterogeneous_job_starts_whole_or_not_at_all():
    ns = nodes(2, cpus=4)
    # each component alone fits, both together do not (a node each, and only one node is free enough)
    busy = (ns[0], Node(name="node2", cpus=4, memory=32000, gpus=8, cpus_used=2))
    p = plan(snap(busy, [het(1, Request(cpus_per_task=3), Request(cpus_per_task=3))]))
    assert p.starts == [] and p.reasons[1] == Reason.RESOURCES
    p = plan(snap(ns, [het(1, Request(cpus_per_task=4), Request(cpus_per_task=4))]))
    assert [[a.node for a in s.allocs] for s in p.starts] == [["node1", "node2"]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(1, 4), min_size=1, max_size=3), min_size=1, max_size=4))
def test_property_components_never_share_a_node_and_all_of_a_job_start(jobs):
    ns = nodes(4, cpus=4)
    p = plan(snap(ns, [het(i, *[Request(ntasks=n) for n in comps]) for i, comps in enumerate(jobs, 1)]))
    for s in p.starts:
        comps = jobs[s.job_id - 1]
        assert sorted({a.het for a in s.allocs}) == list(range(len(comps)))
        owner = {}
        for a in s.allocs:
            assert owner.setdefault(a.node, a.het) == a.het
        for k, n in enumerate(comps):
            assert sum(a.tasks for a in s.allocs if a.het == k) == n
