"""The node's fence (`python -m slurmlet.nodeagent.fence`, started by the agent): when the agent dies
and no agent takes its spool over in time, the jobs it left running are killed before the
controller takes the node for dead and runs them elsewhere, so no job runs twice at once.

The agent starts it in a session of its own and, before a clean exit, ends it with SIGTERM. The
fence watches its parent, the agent, through a pidfd (polling its parent pid where pidfds are
missing): when the agent is gone without that (killed, crashed), the fence waits `--after`
seconds, watching the spool's lock: an agent started on the spool meanwhile takes over (it kills
and reports what was left, see records.py) and the fence exits. Otherwise it kills every process
of the spool's unfinished records, their whole trees (SIGTERM, SIGKILL after `--kill-wait`), and
everything in the agent's job cgroups (`--cgroups`), marks the records `fenced` with the time, and
exits. The agent chooses `--after` so that this ends well before the controller's SlurmdTimeout
runs out (`fence_after`)."""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import logging
import os
import sys
import time

from . import records as records_mod

log = logging.getLogger("slurmlet.fence")


def fence_after(slurmd_timeout: float | None, kill_wait: float) -> float:
    """How long the fence waits for a new agent: at most 5 s, and short enough that the jobs are dead
    (KillWait included) within a quarter of SlurmdTimeout (Slurm's default, 300 s, when unset). An
    agent started later would kill what its predecessor left anyway (see records.py): waiting longer
    would keep nothing alive, only risk the job running twice."""
    timeout = slurmd_timeout or 300.0
    return max(0.2, min(5.0, timeout / 4 - kill_wait))


def _agent_holds(spool: str) -> bool:
    """Whether an agent holds the spool's lock (records.lock_spool); the lock is not kept."""
    try:
        fd = os.open(os.path.join(spool, "agent.lock"), os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # (closing drops a lock taken here)
    return False


def fence(spool: str, after: float, kill_wait: float, cgroups: dict | None = None) -> int:
    """After the agent's death: wait for a successor, else kill what it left (`cgroups`: the
    agent's part of the cgroup hierarchy, {"kind": ..., "base": ...}). Returns the number of
    processes of its records killed."""
    deadline = time.monotonic() + after
    while time.monotonic() < deadline:
        if _agent_holds(spool):
            return 0
        time.sleep(0.1)
    if _agent_holds(spool):
        return 0
    if cgroups:  # whatever left its session and cleared its environment is still in its cgroup
        from .cgroup import Hierarchy
        h = Hierarchy(cgroups["kind"], cgroups["base"])
        for jid in h.stale_jobs():
            asyncio.run(h.group(jid).remove(kill_wait))
    recs = records_mod.Records(spool)
    left = {name: rec for name, rec in recs.load().items() if not rec.get("finished") and not rec.get("lost")}
    if not left:
        return 0
    killed = asyncio.run(records_mod.stop(list(left.values()), kill_wait))
    now = time.time()
    for name, rec in left.items():
        recs.save(name, dict(rec, fenced=now))
    log.warning("the agent is gone: killed %d processes of %s", killed, ", ".join(sorted(left)))
    return killed


def wait_for_exit(pid: int) -> None:
    """Return once process `pid`, this process's parent, has exited (however it exits)."""
    import select
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfds here (Linux < 5.3): poll whose child we are
        while os.getppid() == pid:
            time.sleep(0.1)
        return
    try:
        if os.getppid() != pid:  # it was gone before the pidfd was taken: the pid may be another's
            return
        select.select([fd], [], [])  # readable once it has exited
    finally:
        os.close(fd)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m slurmlet.nodeagent.fence")
    ap.add_argument("--spool", required=True)
    ap.add_argument("--after", type=float, required=True)
    ap.add_argument("--kill-wait", type=float, default=30.0)
    ap.add_argument("--agent", type=int, required=True, help="the agent's pid (this process's parent)")
    ap.add_argument("--cgroups", type=json.loads, default=None, help="the agent's cgroups (JSON: kind, base)")
    args = ap.parse_args(argv)
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    wait_for_exit(args.agent)  # a clean exit ends the fence first (SIGTERM)
    fence(args.spool, args.after, args.kill_wait, args.cgroups)
    return 0


if __name__ == "__main__":
    sys.exit(main())
