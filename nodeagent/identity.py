"""Jobs run as the user who submitted them, when the agent can arrange it (it runs as root).

`spawn_kwargs(order)` gives asyncio.create_subprocess_exec the user, group and supplementary
groups of the job's uid; `own(path, order)` hands a file the agent created for the job (its script,
its output files) to that user. An agent that is not root runs every job as itself, as before.
"""

from __future__ import annotations

import os
import pwd


def job_identity(order: dict) -> tuple[int, int, list[int]] | None:
    """(uid, gid, groups) to run the job as, or None to run it as the agent itself: when the agent
    is not root, when the job is root's, or when its uid is unknown on this node."""
    uid = order.get("uid")
    if os.geteuid() != 0 or not isinstance(uid, int) or uid == 0:
        return None
    try:
        pw = pwd.getpwuid(uid)
    except KeyError:
        return None
    gid = order.get("gid") if isinstance(order.get("gid"), int) else pw.pw_gid
    try:
        groups = os.getgrouplist(pw.pw_name, gid)
    except OSError:
        groups = [gid]
    return uid, gid, groups


def spawn_kwargs(order: dict) -> dict:
    ident = job_identity(order)
    if ident is None:
        return {}
    uid, gid, groups = ident
    return {"user": uid, "group": gid, "extra_groups": groups}


def own(path: str, order: dict) -> None:
    """Give a file the agent made for the job to the job's user (no-op when it runs as the agent)."""
    ident = job_identity(order)
    if ident is not None:
        try:
            os.chown(path, ident[0], ident[1])
        except OSError:
            pass


def script_dir(order: dict) -> str | None:
    """Where a job run as another user keeps its batch script: a directory of that user's own under
    the system's temporary directory (the agent's spool may not be reachable to them); None when the
    job runs as the agent."""
    ident = job_identity(order)
    if ident is None:
        return None
    import tempfile
    path = os.path.join(tempfile.gettempdir(), f"slurmlet-job{order['job_id']}-{ident[0]}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    os.chown(path, ident[0], ident[1])
    return path
