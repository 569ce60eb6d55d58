"""Heterogeneous jobs: components that follow their leader.

A heterogeneous job is a row per component (`het_job_id` the leader's id, `het_job_offset` its
place). The leader (offset 0) is the job that the scheduler starts, the agents run and every action
acts on: its `alloc` holds every component's nodes, each entry naming its component (`het`), and its
`nodes` its own. The other rows show their component in squeue, scontrol and sacct: `follow` copies
the leader's state, times and exit codes onto them, with their own part of the allocation, and they
are never active (they hold no resources and run nothing of their own).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sqlalchemy import bindparam, select, update

from .base import ACTIVE_STATES, compress
from .tables import jobs as J

#: what a component takes from its leader
FOLLOWED = ("state", "reason", "priority", "held", "eligible_time", "start_time", "end_time", "exit_code",
            "exit_signal", "restarts", "suspend_time", "suspended_secs", "preempt_time", "cancelled_by",
            "est_start", "batch_state")

#: the components of these leaders that have not ended (through ix_jobs_het: no scan of the queue)
_UNSETTLED = select(J.c.id, J.c.het_job_id, J.c.het_job_offset, J.c.alloc, *[J.c[k] for k in FOLLOWED]).where(
    J.c.het_job_id.in_(bindparam("leaders", expanding=True)), J.c.het_job_offset > 0,
    J.c.state.in_(ACTIVE_STATES))
_LEADERS = select(J.c.id, J.c.alloc, *[J.c[k] for k in FOLLOWED]).where(
    J.c.id.in_(bindparam("ids", expanding=True)))


def part_of(alloc: list[dict], offset: int) -> list[dict]:
    """A component's entries of its leader's allocation (each without its component mark)."""
    return [{k: v for k, v in a.items() if k != "het"} for a in alloc if a.get("het", 0) == offset]


def follow(c: Any, jobs: Iterable[int]) -> None:  # noqa: ANN401 - a Connection
    """The components of these jobs (those of them that lead a heterogeneous job; others are no
    one's leader) that have not ended take their leader's state, where it changed."""
    ids = sorted(set(jobs))
    if not ids:
        return
    rows = list(c.execute(_UNSETTLED, {"leaders": ids}))
    if not rows:
        return
    leaders = {r.id: r for r in c.execute(_LEADERS, {"ids": sorted({r.het_job_id for r in rows})})}
    for r in rows:
        lead = leaders.get(r.het_job_id)
        if lead is None:
            continue
        vals = {k: getattr(lead, k) for k in FOLLOWED if getattr(lead, k) != getattr(r, k)}
        mine = part_of(json.loads(lead.alloc), r.het_job_offset) if lead.alloc else []
        alloc = json.dumps(mine) if mine else None
        if alloc != r.alloc:
            vals.update(alloc=alloc, nodes=compress([a["node"] for a in mine]) if mine else "",
                        batch_host=mine[0]["node"] if mine else None)
        if vals:
            c.execute(update(J).where(J.c.id == r.id).values(**vals))


def leader_of(c: Any, job_id: int) -> int:  # noqa: ANN401 - a Connection
    """The job that actions on `job_id` act on: its heterogeneous job's leader, or itself."""
    got = c.execute(select(J.c.het_job_id).where(J.c.id == job_id)).scalar()
    return int(got) if got is not None else job_id


def components(c: Any, leader: int) -> list[Any]:  # noqa: ANN401 - a Connection
    """The rows of a heterogeneous job's components, in order (none for another job)."""
    return list(c.execute(select(J).where(J.c.het_job_id == leader).order_by(J.c.het_job_offset)))


def alloc_json(allocs: Iterable[Any]) -> str:
    """An allocation (NodeAllocs) as the `alloc` column holds it: a component mark only where not 0."""
    from dataclasses import asdict
    return json.dumps([{k: v for k, v in asdict(a).items() if k != "het" or v} for a in allocs])
