"""Missed heartbeats: a node whose agent has been silent for SlurmdTimeout is DOWN ("Not responding",
computed from its last sync) and its jobs end NODE_FAIL, or are requeued when allowed. Silence the
controller caused itself (its start, its database refusing changes, its loop standing still) is not
counted. Also the housekeeping of idempotency keys (forgotten after KEY_TTL)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..errors import Unavailable

log = logging.getLogger("slurmlet.controller")

#: how long a submission's Idempotency-Key is remembered (seconds): its retries come within seconds
KEY_TTL = 86400.0


def may_reap(now: float, timeout: float, since: float, failing: float | None) -> bool:
    """Whether a node may be taken for silent now: the controller has heard for a whole SlurmdTimeout
    since `since` (its start, or the end of its own last outage: DbHealth) and its database takes
    changes (`failing` is None). A heartbeat the controller could not record is not the node's silence."""
    return failing is None and now - since > timeout


def stalled(gap: float, step: float, timeout: float) -> bool:
    """The loop slept `step` seconds and woke `gap` seconds after it last looked: more than a quarter
    of SlurmdTimeout late, the controller stood still (its event loop blocked, e.g. in a database
    lock, or the process stopped) and heard no one meanwhile."""
    return gap - step > timeout / 4


async def reaper_loop(ctl: Any, interval: float = 1.0) -> None:
    """Every `interval` seconds (at most a quarter of SlurmdTimeout): end the jobs of silent nodes,
    tell their other nodes, and ask for a scheduling pass (a requeued job may start elsewhere).
    Silence counts from the controller's start at the earliest: after a restart the agents get a
    whole SlurmdTimeout to sync again, however long the controller was away. The same holds after
    the controller's own outage (its database refused changes, or it stood still): see `may_reap`."""
    purge_at = last = ctl.clock()
    while True:
        step = min(interval, max(ctl.config.slurmd_timeout / 4, 0.05))
        await asyncio.sleep(step)
        now = ctl.clock()
        if stalled(now - last, step, ctl.config.slurmd_timeout):
            log.warning("the controller stood still for %.1f s: the nodes' silence counts from now", now - last,
                        extra={"action": "reap"})
            ctl.db.away(now)
        last = now
        if now >= purge_at:  # hourly: idempotency keys older than a day go
            purge_at = now + 3600
            try:
                ctl.store.purge_keys(now - KEY_TTL)
            except Unavailable:
                pass
            except Exception:
                log.exception("forgetting old idempotency keys failed", extra={"action": "purge_keys"})
        try:
            others = reap_silent(ctl, now)
        except Unavailable:  # the database is gone: said once, loudly, where it was found
            continue
        except Exception:  # a failing check must not kill the daemon; log loudly and go on
            log.exception("reaping silent nodes failed", extra={"action": "reap"})
            continue
        if others is not None:
            log.warning("%s", others, extra={"action": "reap"})  # the nodes by name, each job and its fate
            ctl.notify(others.others)
            ctl.jobs_changed()
            ctl.wake.set()


def reap_silent(ctl: Any, now: float) -> Any:  # store.Reaped | None
    """End the jobs of nodes silent for SlurmdTimeout (store.reap), unless the controller's own
    outage may explain their silence (`may_reap`). Returns store.reap's answer: None when no job
    changed, else what it did (nodes, jobs, and the nodes whose agents must stop what is left)."""
    if not may_reap(now, ctl.config.slurmd_timeout, ctl.db.since, ctl.db.failing):
        return None
    return ctl.store.reap(now)
