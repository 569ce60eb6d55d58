"""Partition preemption (preempt/partition_prio): victims, modes, exempt time, suspend and resume."""

from __future__ import annotations

from dataclasses import replace

from slurmlet.controller.core.model import (
    Node,
    NodeAlloc,
    Partition,
    PendingJob,
    Preemption,
    Reason,
    Request,
    RunningJob,
    SchedConfig,
    Snapshot,
)
from slurmlet.controller.core.plan import plan

NOW = 1000.0


def low_job(jid: int, cpus: int, prio: int, start: float = 0.0, **kw) -> RunningJob:
    return RunningJob(job_id=jid, partition="low", allocs=(NodeAlloc("n1", cpus, 100, (), cpus),), start_time=start,
                      end_time=None, priority=prio, **kw)


def high_job(jid: int, cpus: int, part: str = "high") -> PendingJob:
    return PendingJob(job_id=jid, partition=part, request=Request(ntasks=cpus, mem_per_node=100),
                      submit_time=float(jid), time_limit=10)


def snap(run: list[RunningJob], jobs: list[PendingJob], mode: str = "REQUEUE", exempt: int = 0,
         preempt: bool = True, cpus: int = 4) -> Snapshot:
    used = sum(a.cpus for r in run if not r.suspended for a in r.allocs)
    mem = sum(a.memory for r in run for a in r.allocs)
    parts = (Partition("low", ("n1",), priority_tier=1, preempt_mode=mode, grace_time=7),
             Partition("high", ("n1",), priority_tier=10),
             Partition("peer", ("n1",), priority_tier=1))
    return Snapshot(now=NOW, nodes=(Node("n1", cpus, 1000, 0, cpus_used=used, memory_used=mem),), partitions=parts,
                    pending=tuple(jobs), running=tuple(run),
                    config=SchedConfig(preempt=preempt, preempt_exempt_time=exempt))


def test_lowest_priority_youngest_victim_only_as_many_as_needed():
    run = [low_job(1, 2, prio=100), low_job(2, 1, prio=50, start=10.0), low_job(3, 1, prio=50, start=20.0)]
    p = plan(snap(run, [high_job(9, 1)]))
    # one CPU is enough: the youngest of the two lowest-priority jobs goes
    assert p.preemptions == [Preemption(3, 9, "REQUEUE", 7)]
    assert p.starts == [] and p.reasons[9] == Reason.RESOURCES  # starts once job 3 is gone


def test_victims_are_pruned_to_the_needed_set():
    # the cheapest victim alone is not enough; with the second it is, and then the first is not needed
    run = [low_job(1, 1, prio=10), low_job(2, 2, prio=20), low_job(3, 1, prio=30)]
    p = plan(snap(run, [high_job(9, 2)]))
    assert [x.victim for x in p.preemptions] == [2]


def test_waits_for_victims_on_their_way_out_instead_of_preempting_more():
    run = [low_job(1, 2, prio=100), low_job(2, 2, prio=50, preempting=True)]
    p = plan(snap(run, [high_job(9, 2)]))
    assert p.preemptions == [] and p.starts == [] and p.reasons[9] == Reason.RESOURCES


def test_requeue_falls_back_to_cancel_when_the_job_may_not_requeue_and_cancel_mode():
    p = plan(snap([low_job(1, 4, prio=1, requeue=False)], [high_job(9, 1)]))
    assert p.preemptions == [Preemption(1, 9, "CANCEL", 7)]
    p = plan(snap([low_job(1, 4, prio=1)], [high_job(9, 1)], mode="CANCEL"))
    assert p.preemptions[0].mode == "CANCEL"


def test_exempt_time_same_tier_and_mode_off_protect_running_jobs():
    run = [low_job(1, 4, prio=1, start=NOW - 30)]
    assert plan(snap(run, [high_job(9, 1)], exempt=60)).preemptions == []
    assert plan(snap(run, [high_job(9, 1)], exempt=30)).preemptions != []
    assert plan(snap(run, [high_job(9, 1, part="peer")])).preemptions == []  # same tier
    assert plan(snap(run, [high_job(9, 1)], mode="OFF")).preemptions == []
    assert plan(snap(run, [high_job(9, 1)], preempt=False)).preemptions == []


def test_suspend_starts_the_preemptor_at_once_and_the_victim_resumes_later():
    run = [low_job(1, 4, prio=1)]
    p = plan(snap(run, [high_job(9, 4)], mode="SUSPEND"))
    assert p.preemptions == [Preemption(1, 9, "SUSPEND", 7)]
    assert [s.job_id for s in p.starts] == [9]
    # while the preemptor runs, the suspended job keeps its memory and stays stopped
    hi = RunningJob(9, "high", (NodeAlloc("n1", 4, 100, (), 4),), NOW, NOW + 600, priority=1)
    later = snap([replace(run[0], suspended=True), hi], [], mode="SUSPEND")
    assert plan(later).resumes == []
    # once it is gone, the victim resumes before any pending job of its partition starts
    low_pending = PendingJob(20, "low", Request(ntasks=4), submit_time=0.0)
    done = snap([replace(run[0], suspended=True)], [low_pending], mode="SUSPEND")
    p = plan(done)
    assert p.resumes == [1] and p.starts == [] and p.reasons[20] == Reason.RESOURCES


def test_preemptors_are_ordered_first():
    # a lower-tier job submitted earlier does not take the CPUs a preemptor frees
    run = [low_job(1, 4, prio=1)]
    low_pending = PendingJob(20, "low", Request(ntasks=1), submit_time=0.0, priority=10**6)
    p = plan(snap(run, [low_pending, high_job(9, 4)], mode="SUSPEND"))
    assert [s.job_id for s in p.starts] == [9]


def test_lower_tier_jobs_keep_off_the_nodes_a_waiting_preemptor_needs():
    # job 2 is already on its way out for job 9; the CPUs job 1 left are not for the low queue
    run = [low_job(2, 2, prio=50, preempting=True)]
    low_pending = PendingJob(20, "low", Request(ntasks=1, mem_per_node=100), submit_time=0.0, time_limit=60)
    s = snap(run, [high_job(9, 4), low_pending])
    for bf in (False, True):
        p = plan(s, backfill=bf)
        assert p.starts == [] and p.preemptions == []
        assert p.reasons == {9: Reason.RESOURCES, 20: Reason.PRIORITY}


def test_an_operators_suspension_is_not_ended_by_the_scheduler():
    """scontrol suspend: the job's CPUs are free for others, and only scontrol resume ends it."""
    run = [replace(low_job(1, 4, prio=1), suspended=True, held_stopped=True)]
    low_pending = PendingJob(20, "low", Request(ntasks=4), submit_time=0.0)
    p = plan(snap(run, [low_pending], mode="SUSPEND"))
    assert p.resumes == [] and [s.job_id for s in p.starts] == [20]
