"""Missed heartbeats: a node whose agent has been silent for SlurmdTimeout is DOWN ("Not responding",
computed from its last sync) and its jobs end NODE_FAIL, or are requeued when allowed. Also the
housekeeping of idempotency keys (forgotten after KEY_TTL)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger("slurmlet.controller")

#: how long a submission's Idempotency-Key is remembered (seconds): its retries come within seconds
KEY_TTL = 86400.0


async def reaper_loop(ctl: Any, interval: float = 1.0) -> None:
    """Every `interval` seconds (at most a quarter of SlurmdTimeout): end the jobs of silent nodes,
    tell their other nodes, and ask for a scheduling pass (a requeued job may start elsewhere).
    Silence counts from the controller's start at the earliest: after a restart the agents get a
    whole SlurmdTimeout to sync again, however long the controller was away."""
    started = ctl.clock()
    purge_at = started
    while True:
        await asyncio.sleep(min(interval, max(ctl.config.slurmd_timeout / 4, 0.05)))
        if ctl.clock() >= purge_at:  # hourly: idempotency keys older than a day go
            purge_at = ctl.clock() + 3600
            try:
                ctl.store.purge_keys(ctl.clock() - KEY_TTL)
            except Exception:
                log.exception("forgetting old idempotency keys failed", extra={"action": "purge_keys"})
        if ctl.clock() - started <= ctl.config.slurmd_timeout:
            continue
        try:
            others = ctl.store.reap(ctl.clock())
        except Exception:  # a failing check must not kill the daemon; log loudly and go on
            log.exception("reaping silent nodes failed", extra={"action": "reap"})
            continue
        if others is not None:
            log.warning("jobs of silent nodes ended or requeued", extra={"action": "reap"})
            ctl.notify(others)
            ctl.jobs_changed()
            ctl.wake.set()
