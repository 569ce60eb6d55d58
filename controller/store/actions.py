"""What users and operators do to jobs: cancel, hold, release, requeue, update."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from sqlalchemy import func, insert, select, update

from slurmlet.controller.errors import Conflict, InvalidRequest, NotFound

from . import het
from .base import FINAL_STATES, Part, Shared
from .tables import job_runs as RUNS
from .tables import jobs as J

if TYPE_CHECKING:  # (queries -> steps -> actions)
    from .queries import Queries


def relinquish(c: Any, job_id: int, state: str, exit_code: int, now: float, signal: int = 0) -> None:
    """An allocation given back (salloc's, an srun's) while in `state`: it ends COMPLETED, or FAILED
    with a non-zero exit code or a signal; its holder and steps are stopped as under a cancel."""
    failed = exit_code != 0 or signal != 0
    c.execute(update(J).where(J.c.id == job_id, J.c.state == state, J.c.active.is_(True)).values(
        state="FAILED" if failed else "COMPLETED", reason="NonZeroExitCode" if failed else "None",
        exit_code=exit_code, exit_signal=signal, end_time=now, pending_action="cancel"))


def archive_run(c: Any, r: Any, state: str, now: float, code: int = 0, sig: int = 0) -> None:
    """Keep the run that just ended for sacct -D before the job goes back to the queue."""
    if r.start_time is None or c.execute(select(RUNS.c.run).where(RUNS.c.job_id == r.id,
                                                                  RUNS.c.run == r.restarts)).first():
        return
    c.execute(insert(RUNS).values(job_id=r.id, run=r.restarts, state=state, start_time=r.start_time,
                                  end_time=now, exit_code=code, exit_signal=0, nodes=r.nodes or "",
                                  alloc=r.alloc, batch_host=r.batch_host, batch_state="CANCELLED" if sig else
                                  ("FAILED" if code else "COMPLETED"), batch_exit_code=code,
                                  batch_exit_signal=sig))


F = TypeVar("F", bound=Callable[..., Any])


def _then_follow(action: F) -> F:
    """An action on a job, after which heterogeneous jobs' components follow their leaders."""
    @functools.wraps(action)
    def run(self: Actions, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        try:
            return action(self, *args, **kwargs)
        finally:
            self.follow(args[0] if args else kwargs["job_id"])
    return cast(F, run)


class Actions(Part):
    """What users and operators do to jobs."""

    def __init__(self, shared: Shared, queries: Queries):
        super().__init__(shared)
        self.queries = queries  #: (sacct -D shows earlier runs as it shows jobs)

    # ---------------------------------------------------------------- user actions
    def _leader(self, job_id: int) -> int:
        """What an action on `job_id` acts on: its heterogeneous job as a whole (its leader), or it."""
        with self.engine.connect() as c:
            return het.leader_of(c, job_id)

    def follow(self, job_id: int) -> None:
        """A heterogeneous job's components take what an action did to it (through any of them)."""
        with self.engine.begin() as c:
            het.follow(c, [het.leader_of(c, job_id)])

    @_then_follow
    def cancel(self, job_id: int, now: float, *, signal: int | None = None, uid: int = 0) -> str | None:
        """scancel. Returns the batch host to notify, if any."""
        job_id = self._leader(job_id)
        with self.engine.begin() as c:
            row = c.execute(select(J.c.state, J.c.active, J.c.batch_host, J.c.pending_action)
                            .where(J.c.id == job_id)).first()
            if row is None:
                raise NotFound()
            if signal is not None:
                if row.state != "RUNNING" or not row.active:
                    raise Conflict("Job is pending execution" if row.state == "PENDING" else None)
                c.execute(update(J).where(J.c.id == job_id).values(pending_signal=signal))
                return row.batch_host
            if row.state in FINAL_STATES:
                raise Conflict()
            if row.state == "PENDING":
                # as slurmctld does, a job cancelled while pending "started" when it ended
                c.execute(update(J).where(J.c.id == job_id, J.c.state == "PENDING").values(
                    state="CANCELLED", start_time=now, end_time=now, cancelled_by=uid))
                return None
            c.execute(update(J).where(J.c.id == job_id, J.c.state == row.state).values(
                state="CANCELLED", end_time=now, cancelled_by=uid, pending_action="cancel"))
            return row.batch_host

    @_then_follow
    def complete(self, job_id: int, now: float, exit_code: int) -> str | None:
        """salloc relinquishes its allocation: the job ends COMPLETED (FAILED with the command's non-zero
        exit code), its holder and steps are stopped as under a cancel. A pending one is cancelled.
        Returns the batch host to notify, if any."""
        job_id = self._leader(job_id)
        with self.engine.begin() as c:
            row = c.execute(select(J.c.state, J.c.active).where(J.c.id == job_id)).first()
            if row is None:
                raise NotFound()
            if row.state in FINAL_STATES or not row.active and row.state != "PENDING":
                raise Conflict()
        if row.state == "PENDING":
            return self.cancel(job_id, now)
        with self.engine.begin() as c:
            relinquish(c, job_id, row.state, exit_code, now)
            return c.execute(select(J.c.batch_host).where(J.c.id == job_id)).scalar()

    @_then_follow
    def hold(self, job_id: int, who: str) -> None:
        job_id = self._leader(job_id)
        with self.engine.begin() as c:
            row = c.execute(select(J.c.state).where(J.c.id == job_id)).first()
            if row is None:
                raise NotFound()
            if row.state != "PENDING":
                raise Conflict("Job is no longer pending execution")
            c.execute(update(J).where(J.c.id == job_id).values(
                held=who, reason="JobHeldUser" if who == "user" else "JobHeldAdmin"))

    @_then_follow
    def suspend(self, job_id: int, now: float, resume: bool = False) -> str | None:
        """scontrol suspend|resume: a running job is stopped (its CPUs and GPUs lent, as under SUSPEND
        preemption, but the scheduler never resumes it) or goes on; Slurm 22.05's refusals. Returns its
        batch host (its agent must act), None when nothing changed (suspending a suspended job)."""
        job_id = self._leader(job_id)
        with self.engine.begin() as c:
            r = c.execute(select(J.c.state, J.c.active, J.c.pending_action, J.c.suspend_time, J.c.batch_host)
                          .where(J.c.id == job_id).with_for_update()).first()
            if r is None:
                raise NotFound("Unexpected message received")  # (22.05's answer to suspending no job)
            if r.state == "PENDING":
                raise Conflict("Job is pending execution")
            if not r.active or r.pending_action or r.state not in ("RUNNING", "SUSPENDED"):
                raise Conflict("Job/step already completing or completed")
            if resume:
                if r.state != "SUSPENDED":
                    raise Conflict("Job is not suspended")
                c.execute(update(J).where(J.c.id == job_id, J.c.state == "SUSPENDED").values(
                    state="RUNNING", suspend_time=None,
                    suspended_secs=J.c.suspended_secs + max(0.0, now - (r.suspend_time or now))))
                return r.batch_host
            if r.state == "SUSPENDED":
                return None
            # preempt_time None: an operator's suspension, which only `scontrol resume` ends
            c.execute(update(J).where(J.c.id == job_id, J.c.state == "RUNNING").values(
                state="SUSPENDED", suspend_time=now, preempt_time=None))
            return r.batch_host

    @_then_follow
    def release(self, job_id: int, now: float) -> None:
        job_id = self._leader(job_id)
        with self.engine.begin() as c:
            row = c.execute(select(J.c.state, J.c.held).where(J.c.id == job_id)).first()
            if row is None:
                raise NotFound()
            if row.state != "PENDING":
                raise Conflict("Job is no longer pending execution")
            c.execute(update(J).where(J.c.id == job_id).values(
                held=None, reason="None", eligible_time=func.coalesce(J.c.eligible_time, now)))

    def release_all_held(self, now: float, ids: list[int] | None = None) -> int:
        cond = [J.c.state == "PENDING", J.c.held.is_not(None)]
        if ids:
            cond.append(J.c.id.in_(ids))
        with self.engine.begin() as c:
            return c.execute(update(J).where(*cond).values(
                held=None, reason="None", eligible_time=func.coalesce(J.c.eligible_time, now))).rowcount

    @_then_follow
    def requeue(self, job_id: int, now: float, *, hold: bool = False) -> str | None:
        job_id = self._leader(job_id)
        with self.engine.begin() as c:
            row = c.execute(select(J.c.state, J.c.active, J.c.batch_host, J.c.requeue)
                            .where(J.c.id == job_id)).first()
            if row is None:
                raise NotFound()
            if row.state == "PENDING":
                if hold:
                    c.execute(update(J).where(J.c.id == job_id).values(held="admin", reason="JobHeldAdmin"))
                return None
            if not row.requeue:
                raise Conflict("Requested operation is presently disabled")
            action = "requeue_hold" if hold else "requeue"
            if row.active:
                c.execute(update(J).where(J.c.id == job_id, J.c.active.is_(True)).values(
                    pending_action=action, state="RUNNING"))
                return row.batch_host
            c.execute(update(J).where(J.c.id == job_id).values(**self.shared.requeued_values(now, hold)))
            return None

    def earlier_runs(self, rows: list[Any]) -> dict[int, list[dict]]:
        """sacct -D: the earlier runs of these jobs, as job dicts (oldest first)."""
        from types import SimpleNamespace
        ids = [r.id for r in rows if r.restarts]
        if not ids:
            return {}
        by_id = {r.id: r for r in rows}
        out: dict[int, list[dict]] = {}
        with self.engine.connect() as c:
            for run in c.execute(select(RUNS).where(RUNS.c.job_id.in_(ids)).order_by(RUNS.c.job_id, RUNS.c.run)):
                base = by_id[run.job_id]
                fake = SimpleNamespace(**{k: getattr(base, k) for k in base._fields})
                for k in ("state", "start_time", "end_time", "exit_code", "exit_signal", "nodes", "alloc",
                          "batch_host", "batch_state", "batch_exit_code", "batch_exit_signal"):
                    setattr(fake, k, getattr(run, k))
                fake.restarts, fake.active, fake.reason = run.run, False, "None"
                fake.batch_max_rss = fake.batch_user_cpu = fake.batch_system_cpu = None  # not kept per run
                out.setdefault(run.job_id, []).append(self.queries.public(fake))
        return out

    def update_job(self, job_id: int, changes: dict) -> None:
        with self.engine.begin() as c:
            row = c.execute(select(J.c.state).where(J.c.id == job_id)).first()
            if row is None:
                raise NotFound()
            values: dict = {}
            for k, v in changes.items():
                if k == "partition":
                    if self.config.partition(v) is None:
                        raise InvalidRequest("Invalid partition name specified")
                    if row.state != "PENDING":
                        raise Conflict("Job is no longer pending execution")
                    values["partition"] = v
                elif k == "begin_time":
                    if row.state != "PENDING":
                        raise Conflict("Job is no longer pending execution")
                    values["begin_time"] = values["eligible_time"] = v
                elif k in ("time_limit", "name", "comment", "nice", "site_factor"):
                    values[k] = v
                    if k == "nice":
                        values["priority"] = max(1, 10000 - int(v))
                else:
                    raise InvalidRequest(f"Update of {k} is not supported")
            if values:
                c.execute(update(J).where(J.c.id == job_id).values(**values))

