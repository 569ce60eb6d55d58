"""`plan(snapshot) -> Plan`: the only entry point of the scheduling core.

One cycle, as Slurm's slurmctld runs it:

1. **Priority.** Multifactor priority of every pending job (when weights are configured).
2. **Main pass.** Jobs are taken in (can preempt, partition tier desc, priority desc, submit
   time, job id) order; a job that fits starts; the first job of a partition that does not fit
   gets `Resources` and blocks the rest of that partition (`Priority`). Under
   `preempt/partition_prio` a job that does not fit may first preempt running jobs of lower
   PriorityTier partitions; suspended jobs resume, in the same order, once their CPUs are free.
3. **Backfill** (sched/backfill, when asked for). Pending jobs are walked again in the same order
   over a time map of when running jobs give their resources back (see `timemap`): a job
   starts now if that delays no reservation made for a job ahead of it; otherwise it reserves its
   earliest start, which `squeue --start` shows (`bf_policy=easy`: only the first blocked job
   reserves).

Jobs that can never run where they are queued carry the partition-limit reasons instead.
Deterministic and independent of the order of the snapshot's tuples.

Each phase is a module over the cycle's state (`cycle.Cycle`): `order` (priority and queue
order), `mainpass`, `preempt`, `backfill`. What cycles keep from one another is the caller's
`memo.Memo`; the core holds no state of its own.
"""

from __future__ import annotations

from .backfill import backfill as backfill_pass
from .cycle import Cycle
from .mainpass import main_pass
from .memo import Memo
from .model import Plan, Snapshot
from .order import queue


def plan(snap: Snapshot, backfill: bool | None = None, *, only_starts: bool = False, memo: Memo | None = None) -> Plan:
    """One scheduling cycle. `backfill`: run the backfill pass after the main pass (default: as
    `snap.config.backfill` says, i.e. sched/backfill).

    `memo`: what the caller keeps from one cycle to the next (one `Memo` per sequence of snapshots
    of one cluster: the scheduler loop's, a simulation's); none: the cycle starts from nothing. The
    plan is the same either way.

    `only_starts`: the caller reads only what the cycle starts, preempts and resumes (a trace
    replay): backfill may then stop once none of the jobs it has left to test can start now.
    `starts`, `backfilled`, `preemptions`, `resumes` and `priorities` are those of the full cycle;
    `start_times`, `bf_tested` and the accounting-limit reasons backfill gives lack the jobs it
    did not reach. (Whole-node backfill only: with the per-node time map it tests every job.)"""
    cyc = Cycle(snap, Memo() if memo is None else memo)
    cyc.only_starts = only_starts
    items = queue(cyc)
    main_pass(cyc, items)
    if snap.config.backfill if backfill is None else backfill:
        backfill_pass(cyc, items)
    return cyc.out
