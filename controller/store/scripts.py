"""Prolog and Epilog on every node of a job, PrologSlurmctld and EpilogSlurmctld on the controller.

When a job starts, each of its nodes gets a `prolog` order (slurm.conf Prolog), and the controller a
`prolog_slurmctld` row; the batch script is launched once every one of them reported success. A
node whose prolog fails is drained ("Prolog error") and the job goes back to the queue held; a
failing PrologSlurmctld requeues it (not held), draining nothing. When the job ends, the nodes other
than the batch host get an `epilog` order (the batch host runs its epilog itself, before it reports
the end) and the controller an `epilog_slurmctld` row. Rows are keyed by the job's incarnation
(`run`, its restart count), so a report about an earlier run changes nothing.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from sqlalchemy import and_, bindparam, delete, insert, or_, select, update

from .tables import jobs as J
from .tables import node_scripts as S

CONTROLLER = ""  #: the node name of the controller's own scripts
PROLOGS = ("prolog", "prolog_slurmctld")


def add(c: Any, job_id: int, run: int, nodes: Iterable[str], kind: str, payload: dict, now: float) -> None:
    rows = [{"job_id": job_id, "run": run, "node": n, "kind": kind, "state": "PENDING", "payload": json.dumps(payload),
             "created": now} for n in nodes]
    if rows:
        c.execute(delete(S).where(S.c.job_id == job_id, S.c.run == run, S.c.kind == kind))
        c.execute(insert(S), rows)


#: (made once: each node sync asks, for each job it may launch, and for the node's orders)
# (the kinds as one OR, not IN: an IN's values are bound anew at each execution)
_A_PROLOG = or_(*(S.c.kind == k for k in PROLOGS))
PROLOGS_PENDING = select(S.c.node).where(S.c.job_id == bindparam("_job_id"), S.c.run == bindparam("_run"),
                                         _A_PROLOG, S.c.state != "OK").limit(1)
_FORGET_PROLOGS = delete(S).where(S.c.job_id == bindparam("_job_id"), _A_PROLOG, S.c.state != "FAILED")
ORDERS_FOR = select(S.c.job_id, S.c.run, S.c.kind, S.c.payload).select_from(
    S.outerjoin(J, and_(J.c.id == S.c.job_id, J.c.restarts == S.c.run, J.c.active.is_(True),
                        J.c.state == "RUNNING", J.c.pending_action.is_(None)))
).where(S.c.node == bindparam("_node"), S.c.state == "PENDING",
        (S.c.kind == "epilog") | J.c.id.is_not(None)).order_by(S.c.job_id)


def prologs_pending(c: Any, job_id: int, run: int) -> bool:
    """Some prolog of this run has not succeeded yet: the batch script must wait."""
    return c.execute(PROLOGS_PENDING, {"_job_id": job_id, "_run": run}).first() is not None


def orders_for(c: Any, node: str) -> list[dict]:
    """The prolog and epilog orders waiting for `node` (sent until it reports them done). A prolog
    only while its run is the job's current one and the job still runs."""
    return [dict(json.loads(r.payload), op=r.kind, run=r.run) for r in c.execute(ORDERS_FOR, {"_node": node})]


def record(c: Any, node: str, reports: list[dict]) -> list[dict]:
    """Apply reports of finished scripts; returns those that changed a row (stale repeats do not)."""
    out = []
    for rep in reports:
        key = (S.c.job_id == rep["job_id"], S.c.run == rep["run"], S.c.node == node, S.c.kind == rep["kind"])
        ok = not rep.get("exit_code")
        if rep["kind"].startswith("epilog") and ok:
            res = c.execute(delete(S).where(*key, S.c.state.in_(("PENDING", "RUNNING"))))
        else:
            res = c.execute(update(S).where(*key, S.c.state.in_(("PENDING", "RUNNING"))).values(
                state="OK" if ok else "FAILED", exit_code=rep.get("exit_code") or 0))
        if res.rowcount:
            out.append(rep)
    return out


def forget_prologs(c: Any, job_id: int) -> None:
    """The job's run is over: its prolog rows have served their purpose."""
    c.execute(_FORGET_PROLOGS, {"_job_id": job_id})


def claim_controller(c: Any) -> list[Any]:
    """The controller's scripts waiting to run, marked RUNNING."""
    rows = list(c.execute(select(S.c.job_id, S.c.run, S.c.kind, S.c.payload).where(
        S.c.node == CONTROLLER, S.c.state == "PENDING").order_by(S.c.job_id)))
    for r in rows:
        c.execute(update(S).where(S.c.job_id == r.job_id, S.c.run == r.run, S.c.node == CONTROLLER,
                                  S.c.kind == r.kind).values(state="RUNNING"))
    return rows


def reset_controller(c: Any) -> None:
    """At start-up: scripts a previous controller was running when it stopped run again."""
    c.execute(update(S).where(S.c.node == CONTROLLER, S.c.state == "RUNNING").values(state="PENDING"))


def controller_environment(r: Any, context: str, cluster: str) -> dict[str, str]:
    """PrologSlurmctld's and EpilogSlurmctld's environment: the job's SLURM_* variables."""
    spec = json.loads(r.spec)
    env = {"SLURM_JOB_ID": str(r.id), "SLURM_JOBID": str(r.id), "SLURM_JOB_NAME": r.name,
           "SLURM_JOB_USER": r.user, "SLURM_JOB_UID": str(r.uid), "SLURM_JOB_GID": str(r.gid),
           "SLURM_JOB_GROUP": r.grp, "SLURM_JOB_ACCOUNT": r.account, "SLURM_JOB_PARTITION": r.partition,
           "SLURM_JOB_QOS": r.qos, "SLURM_JOB_NODELIST": r.nodes or "", "SLURM_CLUSTER_NAME": cluster,
           "SLURM_JOB_WORK_DIR": spec.get("workdir") or "/", "SLURM_JOB_RESTART_COUNT": str(r.restarts),
           "SLURM_SCRIPT_CONTEXT": context, "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}
    if r.comment:
        env["SLURM_JOB_COMMENT"] = r.comment
    if r.array_job_id is not None:
        env.update(SLURM_ARRAY_JOB_ID=str(r.array_job_id), SLURM_ARRAY_TASK_ID=str(r.array_task_id))
    return env
