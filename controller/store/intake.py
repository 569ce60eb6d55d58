"""Submission: jobs, arrays, batches and idempotency keys, each in one transaction."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError

from slurmlet.common.grammar import parse_array
from slurmlet.controller.core.limits import billing, request_tres
from slurmlet.controller.errors import DomainError, InvalidRequest

from . import deps
from .accounts import enforce_flags
from .base import INSERT_JOB, INSERT_JOB_IDS, INSERT_KEY, SPEC_KEYS, Part, request_of
from .tables import jobs as J
from .tables import submit_keys as KEYS


class Intake(Part):
    """New jobs: admitted, then written."""

    # ---------------------------------------------------------------- jobs: intake
    def job_for_key(self, user: str, key: str, digest: str | None = None) -> int | None:
        """The job a submission with this idempotency key made (None: none did). With the
        `digest` of the request, a key that came with another request is refused: a client that
        reuses a key for a different job must not be told that job was made."""
        with self.engine.connect() as c:
            r = c.execute(select(KEYS.c.job_id, KEYS.c.digest).where(KEYS.c.user == user, KEYS.c.key == key)).first()
        if r is None:
            return None
        if digest is not None and r.digest is not None and r.digest != digest:
            raise InvalidRequest("Idempotency-Key: already used for a different request")
        return r.job_id

    def purge_keys(self, before: float) -> int:
        """Forget idempotency keys stored before `before` (a retry comes within seconds; a day is
        plenty): how many went."""
        with self.engine.begin() as c:
            return c.execute(delete(KEYS).where(KEYS.c.created < before)).rowcount

    def submit(self, body: dict, now: float, *, key: str | None = None, digest: str | None = None) -> int:
        """A new job (the first task's id for an array); see submit_keyed."""
        return self.submit_keyed(body, now, key, digest)[0]

    def submit_keyed(self, body: dict, now: float, key: str | None = None,
                     digest: str | None = None) -> tuple[int, bool]:
        """A new job (the first task's id for an array) and True; with an idempotency `key` (per
        user) that a job has already (a retry, or two requests with one key at once), that job's id
        and False, nothing added. The key is stored in the job's own transaction, so a job exists
        with its key or not at all: nothing is looked up before (a retry is rare). A key that came
        with another request is refused (job_for_key)."""
        try:
            return self._submit(body, now, key, digest), True
        except IntegrityError:  # the key made a job already
            known = None if key is None else self.job_for_key(body["user"], key, digest)
            if known is None:
                raise
            return known, False

    def _submit(self, body: dict, now: float, key: str | None, digest: str | None = None) -> int:
        row, spec, n = self._prepare(body, now)
        comps = []
        for comp in body.get("het") or []:  # a heterogeneous job: each component admitted as a job
            crow, _, k = self._prepare(dict(comp, dependency=None), now, n)
            comps.append(crow)
            n += k
        with self.engine.begin() as c:
            job_id = self._insert(c, body.get("array"), row, spec, key, digest)
            if comps:
                self._het(c, job_id, row, comps)
            return job_id

    @staticmethod
    def _het(c: Any, leader: int, row: dict, comps: list[dict]) -> None:
        """The other components of the heterogeneous job `leader` (its first), each a row of its own
        after it, pending with it. Their state follows the leader's (het.follow)."""
        ids = [leader]
        for offset, crow in enumerate(comps, 1):
            ids.append(int(c.execute(INSERT_JOB, dict(
                crow, het_job_id=leader, het_job_offset=offset, held=row["held"], reason=row["reason"],
                eligible_time=row["eligible_time"], dependency=None)).inserted_primary_key[0]))
        # every component's spec names them all (scontrol's HetJobIdSet)
        for offset, (jid, r) in enumerate(zip(ids, [row, *comps])):
            spec = dict(json.loads(r["spec"]), het_ids=ids)
            c.execute(update(J).where(J.c.id == jid).values(het_job_id=leader, het_job_offset=offset,
                                                            spec=json.dumps(spec)))

    def submit_many(self, bodies: list[dict], now: float) -> list[int]:
        """Many jobs at once (POST /api/v1/jobs/batch): all admitted, then all written in one
        transaction, or none; their ids in the order of `bodies`. Submit-count limits
        (MaxSubmitJobs, GrpSubmitJobs) count every job of the batch before each one, whichever
        user, account or QOS it names: a batch is never admitted past a limit."""
        prepared = []
        before = 0
        for i, body in enumerate(bodies):
            try:
                row, spec, n = self._prepare(body, now, before)
            except DomainError as e:  # refused: the whole batch is, naming the job
                e.error = f"jobs[{i}]: {e.error}"
                raise
            prepared.append((body.get("array"), row, spec))
            before += n
        with self.engine.begin() as c:
            if not any(array for array, _, _ in prepared):
                # one multi-row INSERT ... RETURNING, its ids in the order of the rows
                got = c.execute(INSERT_JOB_IDS, [row for _, row, _ in prepared])
                return [int(r.id) for r in got]
            return [self._insert(c, array, row, spec, None) for array, row, spec in prepared]

    def _prepare(self, body: dict, now: float, before: int = 0) -> tuple[dict, dict, int]:
        """A validated body's row, spec and number of jobs (an array's tasks), once admitted
        (accounting: account, QOS, limits) with `before` jobs of the same request ahead of it."""
        spec = {k: body.get(k) for k in SPEC_KEYS}
        part = body["partition"]
        time_limit = body.get("time_limit")
        pconf = self.config.partition(part)
        if time_limit is None and pconf is not None and pconf.default_time is not None:
            time_limit = pconf.default_time
        tres = request_tres(request_of(spec), self.config.def_mem_per_cpu or 0)
        n_jobs = 1
        if body.get("array"):
            try:
                n_jobs = len(parse_array(body["array"], self.config.max_array_size)[0])
            except ValueError:
                pass  # refused below, with its own message
        account, qos, time_limit = self.shared.accounts.admit(
            user=body["user"], account=body.get("account"), partition=part, qos=body.get("qos"),
            enforce=enforce_flags(self.config), time_limit=time_limit, tres=tres,
            bill=billing(tres, self.shared.billing_weights(part)), n_jobs=n_jobs + before)
        requeue = body.get("requeue")
        dep_text = None
        if body.get("dependency"):
            dep_text = self._check_dependency(body["dependency"])
        row = dict(
            name=body["name"], user=body["user"], uid=body["uid"], gid=body["gid"], grp=body["group"],
            account=account, qos=qos, partition=part,
            state="PENDING", priority=self._base_priority(body), nice=body.get("nice") or 0,
            held="user" if body.get("hold") else None, submit_time=now,
            eligible_time=None if body.get("hold") or dep_text else max(now, body.get("begin_time") or now),
            begin_time=body.get("begin_time"), time_limit=time_limit, spec=json.dumps(spec),
            script=body["script"], environment=json.dumps(body.get("environment") or {}),
            nodes="", active=False, exit_code=0, exit_signal=0, restarts=0,
            requeue=self.config.job_requeue if requeue is None else bool(requeue),
            comment=body.get("comment") or None, dependency=dep_text,
            # a held job's reason from the start: no scheduling pass is owed to it (api/jobs.py, wakes_scheduler)
            reason="JobHeldUser" if body.get("hold") else "Dependency" if dep_text else "None",
        )
        return row, spec, n_jobs

    def _insert(self, c: Any, array: str | None, row: dict, spec: dict, key: str | None,
                digest: str | None = None) -> int:
        """Write one prepared job (an array's tasks) in the transaction `c`; its id."""
        if array:
            job_id = self._submit_array(c, array, row, spec)
        else:  # parameters, not .values(): the compiled statement is cached across submissions
            job_id = int(c.execute(INSERT_JOB, row).inserted_primary_key[0])
        if key is not None:
            c.execute(INSERT_KEY, {"user": row["user"], "key": key, "job_id": job_id, "created": row["submit_time"],
                                    "digest": digest})
        return job_id

    def _submit_array(self, c: Any, array: str, row: dict, spec: dict) -> int:
        """One row per task, in index order; the first one's id is the array's job id.

        (Slurm gives a task its own id only when it starts, the last one keeping the array's id;
        here every task has its id from the start, so later jobs' ids come after all of them.)"""
        tasks, throttle = parse_array(array, self.config.max_array_size)
        step = tasks[1] - tasks[0] if len(tasks) > 1 else 1
        if any(b - a != step for a, b in zip(tasks, tasks[1:])):
            step = 1
        spec = dict(spec, array_count=len(tasks), array_min=tasks[0], array_max=tasks[-1], array_step=step)
        row = dict(row, spec=json.dumps(spec), array_max_tasks=throttle or None)
        first = int(c.execute(INSERT_JOB, dict(row, array_task_id=tasks[0])).inserted_primary_key[0])
        c.execute(update(J).where(J.c.id == first).values(array_job_id=first))
        if len(tasks) > 1:
            c.execute(INSERT_JOB, [dict(row, array_job_id=first, array_task_id=t) for t in tasks[1:]])
        return first

    def _check_dependency(self, spec: str) -> str:
        """Refuses a malformed dependency, as slurmctld does; returns what squeue shows until the first
        scheduling pass evaluates it. A job it names that does not exist is taken as one that ended
        long ago (22.05 submits `afterok:999999` and runs the job: deps.item_status)."""
        try:
            dep = deps.parse(spec)
        except ValueError as e:
            raise InvalidRequest(str(e)) from None
        text = [f"{it.kind}:{it.text}(unfulfilled)" if it.target is not None else "singleton(unfulfilled)"
                for it in dep.items]
        return ("?" if dep.any_of else ",").join(text)

    @staticmethod
    def _base_priority(body: dict) -> int:
        """Placeholder until the multifactor plugin lands: equal base, lowered by --nice."""
        return max(1, 10000 - int(body.get("nice") or 0))

