"""Backfill: the time map of running jobs, reservations, squeue --start estimates, bf_policy=easy."""

from __future__ import annotations

from slurmlet.controller.core.model import (
    Node,
    NodeAlloc,
    Partition,
    PendingJob,
    Reason,
    Request,
    RunningJob,
    SchedConfig,
    Snapshot,
)
from slurmlet.controller.core.plan import plan

NOW = 1000.0


def running(jid: int, node: str, cpus: int, ends_in: float | None, **kw) -> RunningJob:
    return RunningJob(job_id=jid, partition="debug", allocs=(NodeAlloc(node, cpus, 0, (), cpus),), start_time=0.0,
                      end_time=None if ends_in is None else NOW + ends_in, **kw)


def pending(jid: int, minutes: float | None, prio: int, **req) -> PendingJob:
    return PendingJob(job_id=jid, partition="debug", request=Request(**req), priority=prio, submit_time=float(jid),
                      time_limit=minutes)


def cluster(nodes: dict[str, int], run: list[RunningJob], jobs: list[PendingJob], **cfg) -> Snapshot:
    used: dict[str, int] = {}
    for r in run:
        for a in r.allocs:
            used[a.node] = used.get(a.node, 0) + a.cpus
    ns = tuple(Node(n, c, 64000, 0, cpus_used=used.get(n, 0)) for n, c in nodes.items())
    return Snapshot(now=NOW, nodes=ns, partitions=(Partition("debug", tuple(nodes)),), pending=tuple(jobs),
                    running=tuple(run), config=SchedConfig(**cfg))


def test_short_job_backfills_before_the_blocked_head_and_long_one_waits():
    # one 4-CPU node; 2 CPUs busy for 10 more minutes
    snap = cluster({"n1": 4}, [running(1, "n1", 2, 600)], [
        pending(10, 60, 300, ntasks=4),  # needs the whole node: waits for job 1
        pending(11, 5, 200, ntasks=2),  # 5 minutes: done before the head can start
        pending(12, 20, 100, ntasks=2),  # 20 minutes: would delay the head
    ])
    main = plan(snap, backfill=False)
    assert main.starts == [] and main.reasons == {10: Reason.RESOURCES, 11: Reason.PRIORITY, 12: Reason.PRIORITY}
    p = plan(snap)
    assert [s.job_id for s in p.starts] == [11] and p.backfilled == {11}
    assert p.reasons == {10: Reason.RESOURCES, 12: Reason.PRIORITY}
    # squeue --start: the head when job 1 ends, job 12 after the head's hour
    assert p.start_times == {10: NOW + 600, 12: NOW + 600 + 3600}
    assert p.bf_tested == 3


def test_sched_builtin_never_backfills():
    snap = cluster({"n1": 4}, [running(1, "n1", 2, 600)], [pending(10, 60, 300, ntasks=4), pending(11, 5, 200, ntasks=2)],
                   backfill=False)
    p = plan(snap)
    assert p.starts == [] and p.start_times == {}


def test_easy_reserves_only_for_the_first_blocked_job():
    # n1 frees at +10 min, n2 at +20 min, n3 is free now
    run = [running(1, "n1", 2, 600), running(2, "n2", 2, 1200)]
    jobs = [pending(10, 60, 300, nodes_min=3, ntasks_per_node=2),  # everything: at +20 min
            pending(11, 10, 200, nodes_min=2, ntasks_per_node=2),  # n1+n3 from +10 to +20 min
            pending(12, 15, 100, nodes_min=1, ntasks_per_node=2)]  # n3 now, until +15 min
    conservative = plan(cluster({"n1": 2, "n2": 2, "n3": 2}, run, jobs))
    assert conservative.starts == []  # job 12 would delay job 11's reservation
    assert conservative.start_times[10] == NOW + 1200 and conservative.start_times[11] == NOW + 600
    easy = plan(cluster({"n1": 2, "n2": 2, "n3": 2}, run, jobs, bf_easy=True))
    assert [s.job_id for s in easy.starts] == [12] and easy.starts[0].node_names == ("n3",)
    assert easy.start_times[10] == NOW + 1200


def test_no_reservation_behind_jobs_without_time_limits():
    # the running job has no end: the head can never be placed, so anything that fits now starts
    snap = cluster({"n1": 4}, [running(1, "n1", 2, None)], [pending(10, 60, 300, ntasks=4),
                                                            pending(11, None, 100, ntasks=2)])
    p = plan(snap)
    assert [s.job_id for s in p.starts] == [11] and 10 not in p.start_times


def test_unlimited_pending_job_never_backfills_in_front_of_a_reservation():
    snap = cluster({"n1": 4}, [running(1, "n1", 2, 600)], [pending(10, 60, 300, ntasks=4),
                                                           pending(11, None, 100, ntasks=2)])
    p = plan(snap)
    # job 11 would run for ever: it may only start once the head is done
    assert p.starts == [] and p.start_times == {10: NOW + 600, 11: NOW + 600 + 3600}


def test_resolution_rounds_release_times_up_and_window_limits_estimates():
    snap = cluster({"n1": 4}, [running(1, "n1", 4, 90)], [pending(10, 60, 300, ntasks=4)], bf_resolution=60)
    assert plan(snap).start_times == {10: NOW + 120}
    far = cluster({"n1": 4}, [running(1, "n1", 4, 7200)], [pending(10, 60, 300, ntasks=4)], bf_window=60)
    assert plan(far).start_times == {}


def test_bf_max_job_test_limits_depth():
    jobs = [pending(10 + i, 60, 300 - i, ntasks=4) for i in range(5)]
    p = plan(cluster({"n1": 4}, [running(1, "n1", 4, 600)], jobs, bf_max_job_test=2))
    assert p.bf_tested == 2 and sorted(p.start_times) == [10, 11]


def test_backfilled_job_respects_gpus_reserved_later():
    ns = (Node("g1", 8, 64000, 4, cpus_used=1, gpus_used=(0, 1)),)
    run = [RunningJob(1, "debug", (NodeAlloc("g1", 1, 0, (0, 1), 1),), 0.0, NOW + 600)]
    jobs = [pending(10, 60, 300, gpus_per_node=4), pending(11, 30, 200, gpus_per_node=2),
            pending(12, 5, 100, gpus_per_node=2)]
    snap = Snapshot(now=NOW, nodes=ns, partitions=(Partition("debug", ("g1",)),), pending=tuple(jobs),
                    running=tuple(run))
    p = plan(snap)
    # job 11 would hold GPUs 2-3 past +10 min when the head needs all four; job 12 is done by then
    assert [(s.job_id, s.allocs[0].gpu_ids) for s in p.starts] == [(12, (2, 3))]
    assert p.start_times[10] == NOW + 600


def test_slurms_lx_example_backfills_on_the_nodes_the_head_does_not_need():
    # backfill.c's example: lx[01-04] busy; the head needs five nodes including lx05, the next any three
    names = {f"lx0{i}": 1 for i in range(1, 9)}
    run = [running(i, f"lx0{i}", 1, 600) for i in range(1, 5)]
    head = PendingJob(10, "debug", Request(nodes_min=5, nodelist=("lx05",)), priority=300, submit_time=1.0,
                      time_limit=60)
    nxt = pending(11, 60, 200, nodes_min=3)
    p = plan(cluster(names, run, [head, nxt]))
    assert [(s.job_id, s.node_names) for s in p.starts] == [(11, ("lx06", "lx07", "lx08"))]
    assert p.start_times == {10: NOW + 600}
