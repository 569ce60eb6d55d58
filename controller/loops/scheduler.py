"""The scheduling cycle: `run_pass(ctl)` once, `scheduler_loop(ctl)` for the daemon's lifetime.

One pass, as slurmctld's schedule() and backfill run it:

1. **Snapshot.** `store.snapshot(now)`: nodes, running and pending jobs, the configuration, read
   in one transaction into frozen values (controller/core/model.py).
2. **Plan.** `core.plan.plan(snapshot, backfill=..., memo=...)`: pure; no database, clock or I/O
   (the loop keeps the core's `Memo`, what one cycle keeps for the next).
3. **Apply.** `store.apply(plan, now)`: one transaction, every state change a compare-and-set.
   Only then do the nodes that got orders hear of them (`Controller.notify`), and the
   PrologSlurmctld/EpilogSlurmctld runs the plan asked for start.

The loop only waits and paces. Routes and agents' reports set `Controller.wake`; the loop then
runs a main pass after a short debounce (a burst of events makes one pass; the first wake-up after a
quiet spell starts one after a millisecond), a backfill pass every
`bf_interval` seconds while anything changed since the last one, and a pass when a `--begin` time
or an `after:ID+minutes` dependency comes due. Nothing changed: no pass at all. When to wake next
is `next_wait`, a pure function of the loop's state, unit-tested on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.memo import Memo
from ..core.plan import plan
from ..errors import Unavailable

if TYPE_CHECKING:
    from ..runtime import Controller, Settings

log = logging.getLogger("slurmlet.controller")


@dataclass(frozen=True)
class PassResult:
    """What one pass did: for statistics and for tests."""

    started: int
    backfilled: int
    preempted: int
    pending: int  #: pending jobs in the snapshot
    tested: int  #: jobs the pass examined
    elapsed_us: int


def run_pass(ctl: Controller, backfill: bool = False, memo: Memo | None = None) -> PassResult:
    """One cycle: snapshot, plan (main pass, and backfill when asked), apply in one transaction;
    then wake the nodes with new orders and record the pass in `ctl.stats`. `memo`: the core's,
    kept by the caller across passes (none: the core starts from nothing)."""
    t0 = time.perf_counter()
    store = ctl.store
    now = ctl.clock()
    snap = store.snapshot(now)
    p = plan(snap, backfill=backfill, memo=memo)
    done = store.apply(p, now)
    if done.cancelled or p.starts or p.preemptions:  # jobs cancelled because their dependency can never be satisfied, or
        ctl.jobs_changed()  # started (an srun waits for its allocation)
    future = [j.begin_time for j in snap.pending if j.begin_time and j.begin_time > now and not j.held]
    if done.next_dep_time is not None:  # an after:ID+minutes dependency comes due
        future.append(done.next_dep_time)
    ctl.next_begin = min(future) if future else None
    ctl.notify(done.woken | store.take_notify())
    ctl.run_controller_scripts()
    us = int((time.perf_counter() - t0) * 1e6)
    s = ctl.stats
    s.jobs_started += len(p.starts)
    s.backfilled += len(p.backfilled)
    s.preempted += len(p.preemptions)
    tested = p.bf_tested if backfill else len(snap.pending)
    if backfill:
        s.backfill.add(us, p.bf_tested, len(snap.pending), now)
        ctl.bf_dirty = False
        ctl.next_bf = now + ctl.bf_interval
    else:
        s.main.add(us, len(snap.pending), len(snap.pending), now)
        ctl.bf_dirty = ctl.bf_enabled
    s.history.append((round(now, 3), "backfill" if backfill else "main", us, tested, len(snap.pending), len(p.starts)))
    return PassResult(started=len(p.starts), backfilled=len(p.backfilled), preempted=len(p.preemptions),
                      pending=len(snap.pending), tested=tested, elapsed_us=us)


def next_wait(now: float, interval: float, next_begin: float | None, bf_dirty: bool, next_bf: float) -> float:
    """Seconds until the loop must look again without a wake-up: the periodic interval, or sooner
    when a begin time comes due or a backfill pass is owed."""
    timeout = interval
    if next_begin is not None:
        timeout = max(0.0, min(timeout, next_begin - now))
    if bf_dirty:
        timeout = max(0.0, min(timeout, next_bf - now))
    return timeout


def due(now: float, woken: bool, next_begin: float | None, bf_dirty: bool, next_bf: float) -> tuple[bool, bool]:
    """(run a pass at all, make it a backfill pass): a wake-up, a begin time come due, or a backfill
    pass owed; nothing of these, no pass (an unchanged queue costs nothing)."""
    bf_due = bf_dirty and now >= next_bf
    begin_due = next_begin is not None and now >= next_begin
    return woken or begin_due or bf_due, bf_due


#: even a lone wake-up waits this long: the answer to the request that woke the loop (relayed, over
#: the Unix socket) goes out before the pass holds the event loop; at once, a client submitting job
#: after job waited for the pass and the launch it ordered (8-10 ms a job, measured)
LONE_DELAY = 0.001


def pass_delay(now: float, last_end: float, next_pass: float, settings: Settings, place_now: bool = False) -> float:
    """Seconds a woken loop waits before its pass: `settings.debounce` for more events to join it,
    only LONE_DELAY when no pass ended within `settings.debounce_after` (a lone submission starts
    almost at once) or an allocation is waited for (`place_now`: an srun's or salloc's), and at least
    until `next_pass` (the spacing after a long pass)."""
    debounce = settings.debounce if now - last_end < settings.debounce_after and not place_now else LONE_DELAY
    return max(debounce, next_pass - now, 0.0)


async def scheduler_loop(ctl: Controller) -> None:
    """Event-driven main passes (debounced), plus a backfill pass every bf_interval seconds while
    anything changed since the last one. A quiet queue costs no pass at all."""
    interval = ctl.settings.sched_interval
    memo = Memo()  #: what the core keeps from one pass to the next
    ctl.wake.set()
    while True:
        timeout = next_wait(ctl.clock(), interval, ctl.next_begin, ctl.bf_dirty, ctl.next_bf)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(ctl.wake.wait(), timeout)
        run, bf_due = due(ctl.clock(), ctl.wake.is_set(), ctl.next_begin, ctl.bf_dirty, ctl.next_bf)
        if not run:
            ctl.stats.skipped += 1  # nothing changed: an unchanged queue costs no pass
            continue
        # debounce: a burst of submissions or exits lands before the pass (Slurm's batch_sched_delay),
        # unless none ran for a while (Settings.debounce_after: a lone submission starts almost at once);
        # right after a long pass, wait in proportion to it (Settings.pass_spacing)
        await asyncio.sleep(pass_delay(time.monotonic(), ctl.last_pass_end, ctl.next_pass, ctl.settings,
                                       ctl.place_now))
        ctl.wake.clear()
        ctl.place_now = False
        t0 = time.monotonic()
        try:
            run_pass(ctl, backfill=bf_due, memo=memo)
        except Unavailable:  # the database is gone: said once, loudly, where it was found
            await asyncio.sleep(interval)
        except Exception:  # a failing pass must not kill the daemon; log loudly and go on
            log.exception("scheduling pass failed", extra={"action": "schedule"})
            await asyncio.sleep(interval)
        t1 = ctl.last_pass_end = time.monotonic()
        ctl.next_pass = t1 + (t1 - t0) * ctl.settings.pass_spacing
