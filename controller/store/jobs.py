"""JobStore: the only place with SQL. Every state change is one transaction and a compare-and-set."""

from __future__ import annotations

import json
import os
from operator import attrgetter
from dataclasses import asdict
from typing import Any, Iterable

import hostlist
from sqlalchemy import Engine, and_, bindparam, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from slurmlet.common.grammar import parse_array
from slurmlet.common.patterns import default_output, expand_pattern
from slurmlet.controller.config import ClusterConfig
from slurmlet.controller.core.model import (Node, NodeAlloc, Partition, PendingJob, Plan, Reason, Request, RunningJob,
                                   Snapshot, natural_key)
from slurmlet.controller.core.plan import requested_cpus
from slurmlet.controller.core import fairshare
from slurmlet.controller.core.limits import Counter, alloc_tres, billing, request_tres
from slurmlet.controller.core.priority import decayed_span
from slurmlet.controller.errors import Conflict, DomainError, InvalidRequest, NotFound
from slurmlet.common.scripts import exit_code_env

from . import deps, scripts, steps
from .accounts import AccountStore, enforce_flags
from .tables import jobs as J
from .tables import code_blobs as CODE
from .tables import job_runs as RUNS
from .tables import secrets as SEC
from .tables import nodes as N
from .tables import steps as S
from .tables import submit_keys as KEYS

ACTIVE_STATES = ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING")
FINAL_STATES = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
                "BOOT_FAIL", "DEADLINE")
_SPEC_KEYS = ("nodes_min", "nodes_max", "ntasks", "ntasks_per_node", "cpus_per_task", "mem_per_node",
              "mem_per_cpu", "gpus", "gpus_per_node", "gpus_per_task", "exclusive", "workdir", "submit_dir",
              "stdin", "open_mode", "signal", "nodelist", "exclude", "submit_host", "argv", "stdout",
              "stderr", "kill_on_invalid_dep", "dependency", "array", "max_retries", "gpu_type", "secrets",
              "code", "py_deps")


_INSERT_JOB = insert(J)
_INSERT_JOB_IDS = insert(J).returning(J.c.id, sort_by_parameter_order=True)
_INSERT_KEY = insert(KEYS)
_ID = attrgetter("id")


def compress(names: Iterable[str]) -> str:
    names = list(names)
    return hostlist.collect_hostlist(names) if names else ""


def request_of(spec: dict) -> Request:
    return Request(
        nodes_min=spec.get("nodes_min") or 1,
        nodes_max=spec.get("nodes_max"),
        ntasks=spec.get("ntasks"),
        ntasks_per_node=spec.get("ntasks_per_node"),
        cpus_per_task=spec.get("cpus_per_task") or 1,
        mem_per_node=spec.get("mem_per_node"),
        mem_per_cpu=spec.get("mem_per_cpu"),
        gpus=spec.get("gpus"),
        gpus_per_node=spec.get("gpus_per_node"),
        gpus_per_task=spec.get("gpus_per_task"),
        exclusive=bool(spec.get("exclusive")),
        nodelist=tuple(hostlist.expand_hostlist(spec["nodelist"])) if spec.get("nodelist") else (),
        exclude=tuple(hostlist.expand_hostlist(spec["exclude"])) if spec.get("exclude") else (),
        gpu_type=spec.get("gpu_type") or None,
    )


def _port_free(port: int) -> bool:
    """Nothing listens on `port` here (on a local cluster, here is every node)."""
    import socket
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


#: pending_action values under which the job's processes are being stopped for good or for a requeue
_KILL_WHY = {"cancel": "cancel", "requeue": "requeue", "requeue_hold": "requeue", "preempt": "preempt",
             "preempt_requeue": "preempt"}


class JobStore:
    """All reads and writes of jobs and nodes."""

    def __init__(self, engine: Engine, config: ClusterConfig):
        self.engine = engine
        self.config = config
        self._requests: dict[int, Request] = {}
        self._last_reasons: dict[int, str] = {}
        self._last_priority: dict[int, int] = {}
        self._last_est: dict[int, float | None] = {}
        self.weights = config.priority_weights()
        self.sched = config.sched_config()
        self._deps: dict[int, tuple[deps.Dependency, bool]] = {}  #: parsed once per pending job
        self._dep_updates: dict[int, str | None] = {}
        self._dep_kill: list[int] = []
        self.next_dep_time: float | None = None
        self._usage_at: float | None = None  #: when per-association usage was last computed
        self._assoc_usage: dict[tuple[str, str], float] = {}
        self.accounts = AccountStore(engine, config.cluster_name)
        self._fs: tuple | None = None  #: (accounts version, usage time) -> fair-share factors
        #: nodes whose agents have new orders outside a scheduling pass (prologs done, epilogs to run)
        self.notify_hosts: set[str] = set()
        #: PrologSlurmctld/EpilogSlurmctld rows may be waiting for the controller
        self.controller_scripts = True
        #: node rows for submit-time checks (capacity_rows); None: read them again
        self._capacity_rows: list[Any] | None = None

    def set_config(self, config: ClusterConfig) -> None:
        """scontrol reconfigure: the new configuration, for the next request and pass on."""
        self.config = config
        self.weights = config.priority_weights()
        self.sched = config.sched_config()
        self._usage_at = None

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
        """A new job (the first task's id for an array). With an idempotency `key` (per user), the
        key is stored in the job's own transaction, so a job exists with its key or not at all; if a
        job already has the key (the caller looks first, `job_for_key`: this is the race of two
        requests with the same key), that job's id is returned and nothing is added."""
        try:
            return self._submit(body, now, key, digest)
        except IntegrityError:  # the same key at the same moment: the other one made the job
            known = None if key is None else self.job_for_key(body["user"], key, digest)
            if known is None:
                raise
            return known

    def _submit(self, body: dict, now: float, key: str | None, digest: str | None = None) -> int:
        row, spec, _ = self._prepare(body, now)
        with self.engine.begin() as c:
            return self._insert(c, body.get("array"), row, spec, key, digest)

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
                got = c.execute(_INSERT_JOB_IDS, [row for _, row, _ in prepared])
                return [int(r.id) for r in got]
            return [self._insert(c, array, row, spec, None) for array, row, spec in prepared]

    def _prepare(self, body: dict, now: float, before: int = 0) -> tuple[dict, dict, int]:
        """A validated body's row, spec and number of jobs (an array's tasks), once admitted
        (accounting: account, QOS, limits) with `before` jobs of the same request ahead of it."""
        spec = {k: body.get(k) for k in _SPEC_KEYS}
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
        account, qos, time_limit = self.accounts.admit(
            user=body["user"], account=body.get("account"), partition=part, qos=body.get("qos"),
            enforce=enforce_flags(self.config), time_limit=time_limit, tres=tres,
            bill=billing(tres, self.billing_weights(part)), n_jobs=n_jobs + before)
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
            # a held job's reason from the start: no scheduling pass is owed to it (app.wakes_scheduler)
            reason="JobHeldUser" if body.get("hold") else "Dependency" if dep_text else "None",
        )
        return row, spec, n_jobs

    def _insert(self, c: Any, array: str | None, row: dict, spec: dict, key: str | None,
                digest: str | None = None) -> int:
        """Write one prepared job (an array's tasks) in the transaction `c`; its id."""
        if array:
            job_id = self._submit_array(c, array, row, spec)
        else:  # parameters, not .values(): the compiled statement is cached across submissions
            job_id = int(c.execute(_INSERT_JOB, row).inserted_primary_key[0])
        if key is not None:
            c.execute(_INSERT_KEY, {"user": row["user"], "key": key, "job_id": job_id, "created": row["submit_time"],
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
        first = int(c.execute(_INSERT_JOB, dict(row, array_task_id=tasks[0])).inserted_primary_key[0])
        c.execute(update(J).where(J.c.id == first).values(array_job_id=first))
        if len(tasks) > 1:
            c.execute(_INSERT_JOB, [dict(row, array_job_id=first, array_task_id=t) for t in tasks[1:]])
        return first

    def _check_dependency(self, spec: str) -> str:
        """Refuses a malformed dependency or one naming unknown jobs, as slurmctld does; returns
        what squeue shows until the first scheduling pass evaluates it."""
        try:
            dep = deps.parse(spec)
        except ValueError as e:
            raise InvalidRequest(str(e)) from None
        ids = {it.target for it in dep.items if it.target is not None}
        if ids:
            with self.engine.connect() as c:
                known = {r.id for r in c.execute(select(J.c.id).where(J.c.id.in_(ids)))}
            if ids - known:
                raise InvalidRequest("Job dependency problem")
        text = [f"{it.kind}:{it.text}(unfulfilled)" if it.target is not None else "singleton(unfulfilled)"
                for it in dep.items]
        return ("?" if dep.any_of else ",").join(text)

    @staticmethod
    def _base_priority(body: dict) -> int:
        """Placeholder until the multifactor plugin lands: equal base, lowered by --nice."""
        return max(1, 10000 - int(body.get("nice") or 0))

    # ---------------------------------------------------------------- jobs: reads
    def job_rows(self, *, ids: list[int] | None = None, states: list[str] | None = None,
                 users: list[str] | None = None, partitions: list[str] | None = None,
                 names: list[str] | None = None, since: float | None = None, until: float | None = None,
                 now: float | None = None, history: bool = False, accounts: list[str] | None = None,
                 qos: list[str] | None = None) -> list[Any]:
        q = select(J)
        conds = []
        if ids:
            conds.append(or_(J.c.id.in_(ids), J.c.array_job_id.in_(ids)))
        if states:
            conds.append(J.c.state.in_(states))
        if users:
            conds.append(J.c.user.in_(users))
        if partitions:
            conds.append(J.c.partition.in_(partitions))
        if names:
            conds.append(J.c.name.in_(names))
        if accounts:
            conds.append(J.c.account.in_(accounts))
        if qos:
            conds.append(J.c.qos.in_(qos))
        if not history and now is not None:
            conds.append(self._shown(now))
        if since is not None:
            conds.append(or_(J.c.end_time.is_(None), J.c.end_time >= since))
        if until is not None:
            conds.append(J.c.submit_time <= until)
        if conds:
            q = q.where(and_(*conds))
        with self.engine.connect() as c:
            # sorted here: ORDER BY id would make the database scan by id rather than use the
            # end-time or array index (sacct over a long history)
            return sorted(c.execute(q), key=_ID)

    # ---------------------------------------------------------------- steps
    def create_step(self, job_id: int, req: dict, now: float) -> dict:
        with self.engine.begin() as c:
            return steps.create(c, job_id, req, now)

    def cancel_step(self, job_id: int, step_id: int, now: float) -> list[str]:
        with self.engine.begin() as c:
            return steps.cancel(c, job_id, step_id, now)

    def step_rows(self, job_ids: list[int]) -> dict[int, list[dict]]:
        """sacct's step rows of these jobs, by job."""
        out: dict[int, list[dict]] = {}
        if not job_ids:
            return out
        with self.engine.connect() as c:
            for i in range(0, len(job_ids), 500):
                out.update(steps.public(c, job_ids[i:i + 500]))
        return out

    def get_row(self, job_id: int) -> Any:
        with self.engine.connect() as c:
            row = c.execute(select(J).where(J.c.id == job_id)).first()
        if row is None:
            raise NotFound()
        return row

    def public(self, row: Any) -> dict:
        spec = json.loads(row.spec)
        req = request_of(spec)
        alloc = json.loads(row.alloc) if row.alloc else []
        num_cpus = sum(a["cpus"] for a in alloc) if alloc else requested_cpus(req)
        num_nodes = len(alloc) if alloc else req.nodes_min
        num_tasks = sum(a["tasks"] for a in alloc) if alloc else (
            req.ntasks or req.nodes_min * (req.ntasks_per_node or 1))
        gpn = req.gpus_per_node or 0
        if not gpn and alloc:
            gpn = max(len(a["gpu_ids"]) for a in alloc)
        elif not gpn:
            gpn = (req.gpus_per_task or 0) * (req.ntasks_per_node or 1) or (req.gpus or 0)
        mem_per_cpu = req.mem_per_cpu
        if req.mem_per_node is None and mem_per_cpu is None and self.config.def_mem_per_cpu:
            mem_per_cpu = self.config.def_mem_per_cpu
        steps = []
        if row.batch_host:
            batch_alloc = alloc[0] if alloc else {"cpus": 1, "node": row.batch_host}
            steps.append({
                "step": "batch", "name": "batch",
                "state": row.batch_state or ("RUNNING" if row.active else row.state),
                "exit_code": row.batch_exit_code or 0, "exit_signal": row.batch_exit_signal or 0,
                "start_time": row.start_time, "end_time": row.end_time if row.batch_state else None,
                "nodes": row.batch_host or "", "num_nodes": 1, "num_cpus": batch_alloc["cpus"], "num_tasks": 1,
                "max_rss": getattr(row, "batch_max_rss", None), "user_cpu": getattr(row, "batch_user_cpu", None) or 0.0,
                "system_cpu": getattr(row, "batch_system_cpu", None) or 0.0,
                "total_cpu": (getattr(row, "batch_user_cpu", None) or 0.0) + (getattr(row, "batch_system_cpu", None) or 0.0),
            })
        return {
            "job_id": row.id, "array_job_id": row.array_job_id, "array_task_id": row.array_task_id,
            "name": row.name, "user": row.user, "uid": row.uid, "gid": row.gid, "group": row.grp,
            "account": row.account, "qos": row.qos, "partition": row.partition,
            "state": row.state, "reason": row.reason,
            "priority": 0 if row.held else row.priority, "nice": row.nice,
            "submit_time": row.submit_time, "eligible_time": row.eligible_time,
            "start_time": row.start_time, "end_time": row.end_time, "time_limit": row.time_limit,
            "nodes": row.nodes or "", "node_list": [a["node"] for a in alloc], "batch_host": row.batch_host,
            "num_nodes": num_nodes, "num_cpus": num_cpus, "num_tasks": num_tasks,
            "cpus_per_task": req.cpus_per_task, "ntasks_per_node": req.ntasks_per_node,
            "mem_per_node": req.mem_per_node, "mem_per_cpu": mem_per_cpu,
            "alloc_memory": sum(a["memory"] for a in alloc) if alloc else None,
            "gpus_per_node": gpn, "tres_per_node": f"gres:gpu:{gpn}" if gpn else None,
            "gpu_ids": {a["node"]: a["gpu_ids"] for a in alloc if a["gpu_ids"]},
            "exit_code": row.exit_code, "exit_signal": row.exit_signal,
            "derived_exit_code": 0, "derived_exit_signal": 0,
            "workdir": spec.get("workdir"), "submit_dir": spec.get("submit_dir"),
            "stdout": row.stdout or self._pattern_path(row, spec, "stdout"),
            "stderr": row.stderr or self._pattern_path(row, spec, "stderr"),
            "stdin": spec.get("stdin") or "/dev/null",
            "comment": row.comment, "dependency": row.dependency, "command": None,
            "requeue": bool(row.requeue), "restarts": row.restarts, "batch": True,
            "held": row.held, "cancelled_by": row.cancelled_by, "time_left": None,
            "cluster": self.config.cluster_name, "steps": steps,
            "nodes_max": spec.get("nodes_max"), "exclusive": bool(spec.get("exclusive")),
            "req_nodes": spec.get("nodelist"), "exc_nodes": spec.get("exclude"),
            "alloc_node": spec.get("submit_host"), "begin_time": row.begin_time,
            "expected_start": row.est_start if row.state == "PENDING" else None,
            "array_max_tasks": row.array_max_tasks or 0,
            "suspend_time": row.suspend_time, "suspended_secs": row.suspended_secs or 0.0,
            "pre_sus_time": (row.suspend_time - row.start_time - (row.suspended_secs or 0.0))
            if row.state == "SUSPENDED" and row.suspend_time and row.start_time else None,
            "preempt_time": row.preempt_time,
            "billing": self._billing_of(row.partition, alloc, req),
        }

    def _billing_of(self, partition: str, alloc: list, req: Request) -> int:
        """The job's billing TRES (TRESBillingWeights of its partition; its CPUs without them)."""
        weights = self.billing_weights(partition)
        if alloc:
            tres = alloc_tres([NodeAlloc(a["node"], a["cpus"], a["memory"], tuple(a["gpu_ids"]), a["tasks"])
                               for a in alloc])
        else:
            tres = request_tres(req, self.config.def_mem_per_cpu or 0)
        return int(billing(tres, weights) + 1e-9)

    def _pattern_path(self, row: Any, spec: dict, which: str, node: str | None = None) -> str:
        pattern = spec.get(which)
        if which == "stderr" and not pattern:
            pattern = spec.get("stdout")
        if not pattern:
            pattern = default_output(row.array_task_id is not None)
        path = expand_pattern(pattern, job_id=row.id, array_job_id=row.array_job_id or row.id,
                              array_task_id=row.array_task_id, name=row.name,
                              node=node or row.batch_host or "", user=row.user)
        return path if os.path.isabs(path) else os.path.join(spec.get("workdir") or "/", path)

    # ---------------------------------------------------------------- scheduling
    def snapshot(self, now: float) -> Snapshot:
        with self.engine.connect() as c:
            pend = list(c.execute(select(J.c.id, J.c.partition, J.c.priority, J.c.submit_time, J.c.time_limit,
                                         J.c.begin_time, J.c.held, J.c.reason, J.c.nice, J.c.eligible_time,
                                         J.c.est_start, J.c.user, J.c.site_factor, J.c.dependency, J.c.name,
                                         J.c.array_job_id, J.c.array_task_id, J.c.array_max_tasks,
                                         J.c.account, J.c.qos)
                                  .where(J.c.state == "PENDING")))
            # a job's request never changes after submission: parse each spec once
            missing = [r.id for r in pend if r.id not in self._requests]
            for i in range(0, len(missing), 500):
                for jid, spec in c.execute(select(J.c.id, J.c.spec).where(J.c.id.in_(missing[i:i + 500]))):
                    self._requests[jid] = request_of(json.loads(spec))
            blocked = self._dependencies(c, [r for r in pend if r.dependency], now)
            blocked.update(self._throttled(c, [r for r in pend if r.array_max_tasks and r.id not in blocked]))
            act = list(c.execute(select(J.c.id, J.c.alloc, J.c.spec, J.c.state, J.c.partition, J.c.start_time,
                                        J.c.time_limit, J.c.priority, J.c.requeue, J.c.pending_action,
                                        J.c.suspended_secs, J.c.user, J.c.account, J.c.qos)
                                  .where(J.c.active.is_(True))))
            node_rows = list(c.execute(select(N)))
        live = {r.id for r in pend}
        if len(self._requests) > 2 * len(live) + 1000:
            self._requests = {k: v for k, v in self._requests.items() if k in live}
        if len(self._deps) > 2 * len(live) + 1000:
            self._deps = {k: v for k, v in self._deps.items() if k in live}
        fs: dict[tuple[str, str], tuple[float, float]] = {}
        if self.weights.fairshare:
            fs = self.fairshare_factors(now, {(r.account, r.user) for r in pend})
        tree = self.accounts.tree()
        qos_top = max((q.priority for q in tree.qos.values()), default=0)
        qos_factor = {name: q.priority / qos_top for name, q in tree.qos.items()} if qos_top > 0 else {}
        counters, charges = self._limits(tree, pend, act, blocked)
        pending = tuple(PendingJob(
            job_id=r.id, partition=r.partition, request=self._requests[r.id], priority=r.priority,
            submit_time=r.submit_time, time_limit=r.time_limit, begin_time=r.begin_time, held=r.held,
            nice=r.nice, eligible_time=r.eligible_time,
            fs_factor=fs[(r.account, r.user)][0] if fs else None, site=r.site_factor or 0,
            blocked_reason=blocked.get(r.id), qos=r.qos, qos_factor=qos_factor.get(r.qos, 0.0),
            limits=charges.get(r.id, ()))
            for r in pend)
        self._last_reasons = {r.id: r.reason for r in pend}
        self._last_priority = {r.id: r.priority for r in pend}
        self._last_est = {r.id: r.est_start for r in pend}
        running = tuple(self._running_job(r) for r in act if r.alloc)
        return Snapshot(now=now, nodes=self._sched_nodes(node_rows, act, now),
                        partitions=self._sched_partitions(node_rows), pending=pending,
                        def_mem_per_cpu=self.config.def_mem_per_cpu or 0, weights=self.weights,
                        running=running, config=self.sched, counters=counters,
                        qos_preempt={n: tuple(q.preempt) for n, q in tree.qos.items() if q.preempt},
                        qos_preempt_mode={n: self._qos_mode(q) for n, q in tree.qos.items()})

    def _qos_mode(self, q: Any) -> str:
        """A QOS's PreemptMode; `cluster`: the cluster's PreemptMode."""
        from slurmlet.controller.config import _preempt_mode
        return q.preempt_mode.upper() if q.preempt_mode != "cluster" else _preempt_mode(self.config.preempt_mode,
                                                                                             "PreemptMode")

    def admin_level(self, user: str) -> int:
        """sacctmgr AdminLevel of a user: 0 None, 1 Operator, 2 Administrator."""
        row = self.accounts.tree().users.get(user)
        return {"Operator": 1, "Administrator": 2}.get(row.admin_level, 0) if row is not None else 0

    def billing_weights(self, partition: str) -> dict[str, float]:
        p = self.config.partition(partition)
        return dict(p.billing_weights) if p is not None else {}

    def _limits(self, tree: Any, pend: list[Any], act: list[Any], blocked: dict[int, Reason]
                ) -> tuple[dict[str, Counter], dict[int, tuple[str, ...]]]:
        """AccountingStorageEnforce=limits: the running-limit counters, what running jobs hold of
        them, and the ones each pending job charges. Per-job limits become blocking reasons."""
        if "limits" not in enforce_flags(self.config):
            return {}, {}
        memo: dict[tuple, tuple] = {}

        def of(user: str, account: str, partition: str, qos: str) -> tuple:
            key = (user, account, partition, qos)
            got = memo.get(key)
            if got is None:
                got = memo[key] = self.accounts.job_limits(tree, user=user, account=account, partition=partition,
                                                           qos=qos)
            return got
        counters: dict[str, Counter] = {}
        used: dict[str, float] = {}
        for r in act:
            if not r.alloc:
                continue
            lims = of(r.user, r.account, r.partition, r.qos)[0]
            if not lims:
                continue
            amounts = alloc_tres([NodeAlloc(a["node"], a["cpus"], a["memory"], tuple(a["gpu_ids"]), a["tasks"])
                                  for a in json.loads(r.alloc)])
            bill = billing(amounts, self.billing_weights(r.partition))
            for key, tres, _cap, _why in lims:
                used[key] = used.get(key, 0.0) + (1 if tres == "jobs" else bill if tres == "billing"
                                                  else amounts.get(tres, 0))
        charges: dict[int, tuple[str, ...]] = {}
        def_mem = self.config.def_mem_per_cpu or 0
        verdicts: dict[tuple, Reason | None] = {}  # queues hold many equal requests: one check each
        for r in pend:
            lims, a, q = of(r.user, r.account, r.partition, r.qos)
            if a is not None and r.id not in blocked:
                req = self._requests[r.id]
                vkey = (r.user, r.account, r.partition, r.qos, req, r.time_limit)
                if vkey not in verdicts:
                    tres = request_tres(req, def_mem)
                    verdicts[vkey] = self.accounts.per_job_reason(
                        tree, a, q, tres, billing(tres, self.billing_weights(r.partition)), r.time_limit)
                why = verdicts[vkey]
                if why is not None:
                    blocked[r.id] = why
            if lims:
                for key, tres, cap, why in lims:
                    if key not in counters:
                        counters[key] = Counter(tres, cap, used.get(key, 0.0), why)
                charges[r.id] = tuple(k for k, *_ in lims)
        return counters, charges

    @staticmethod
    def _throttled(c: Any, rows: list[Any]) -> dict[int, Reason]:
        """`--array=...%N`: pending tasks beyond the N an array may run at once wait
        (`JobArrayTaskLimit`); the lowest indexes go first."""
        if not rows:
            return {}
        arrays = {r.array_job_id for r in rows}
        running = dict(c.execute(select(J.c.array_job_id, func.count()).where(
            J.c.array_job_id.in_(arrays), J.c.active.is_(True)).group_by(J.c.array_job_id)).all())
        out: dict[int, Reason] = {}
        left: dict[int, int] = {}
        for r in sorted(rows, key=lambda r: (r.array_job_id, r.array_task_id)):
            n = left.setdefault(r.array_job_id, r.array_max_tasks - running.get(r.array_job_id, 0))
            if n > 0:
                left[r.array_job_id] = n - 1
            else:
                out[r.id] = Reason.ARRAY_TASK_LIMIT
        return out

    def _dependencies(self, c: Any, rows: list[Any], now: float) -> dict[int, Reason]:
        """Evaluate the dependencies of pending jobs: their blocking reasons; what changed in what
        squeue shows, and the jobs to cancel, are kept for `apply`."""
        self._dep_updates: dict[int, str | None] = {}
        self._dep_kill: list[int] = []
        self.next_dep_time: float | None = None
        if not rows:
            return {}
        parsed = {}
        for r in rows:
            got = self._deps.get(r.id)
            if got is None:
                spec = json.loads(c.execute(select(J.c.spec).where(J.c.id == r.id)).scalar() or "{}")
                try:
                    got = (deps.parse(spec.get("dependency") or ""), bool(spec.get("kill_on_invalid_dep")))
                except ValueError:
                    got = (deps.Dependency((), False), False)
                self._deps[r.id] = got
            parsed[r.id] = got
        ids = {it.target for d, _ in parsed.values() for it in d.items if it.target is not None}
        by_id: dict[int, deps.Target] = {}
        arrays: dict[int, dict[int, deps.Target]] = {}  # array id -> task index -> task
        for i in range(0, len(ids), 500):
            chunk = sorted(ids)[i:i + 500]
            for t in c.execute(select(J.c.id, J.c.state, J.c.start_time, J.c.end_time, J.c.exit_code,
                                      J.c.array_job_id, J.c.array_task_id)
                               .where(or_(J.c.id.in_(chunk), J.c.array_job_id.in_(chunk)))):
                tgt = deps.Target(t.state, t.start_time, t.end_time, t.exit_code)
                by_id[t.id] = tgt
                if t.array_job_id is not None:
                    arrays.setdefault(t.array_job_id, {})[t.array_task_id] = tgt

        def lookup(it: deps.Item) -> list[deps.Target]:
            tasks = arrays.get(it.target)
            if tasks is None:
                return [by_id[it.target]] if it.target in by_id else []
            if it.task is not None:
                return [tasks[it.task]] if it.task in tasks else []
            return list(tasks.values())
        first: dict[tuple[str, str], int] = {}  # singleton: the earliest active job per (user, name)
        names = {r.name for r in rows if any(it.kind == "singleton" for it in parsed[r.id][0].items)}
        if names:
            for t in c.execute(select(J.c.id, J.c.user, J.c.name).where(J.c.name.in_(names),
                                                                          J.c.state.in_(deps.ACTIVE))):
                key = (t.user, t.name)
                first[key] = min(first.get(key, t.id), t.id)
        kill_all = "kill_invalid_depend" in self.config.sched_params()
        out: dict[int, Reason] = {}
        for r in rows:
            dep, kill = parsed[r.id]
            verdict, shown, wake = deps.evaluate(dep, lookup, first.get((r.user, r.name), r.id) < r.id, now)
            if shown != r.dependency:
                self._dep_updates[r.id] = shown
            if verdict == "never":
                out[r.id] = Reason.DEPENDENCY_NEVER
                if kill or kill_all:
                    self._dep_kill.append(r.id)
            elif verdict == "wait":
                out[r.id] = Reason.DEPENDENCY
            if wake is not None:
                self.next_dep_time = wake if self.next_dep_time is None else min(self.next_dep_time, wake)
        return out

    def assoc_usage(self, now: float) -> dict[tuple[str, str], float]:
        """Raw usage per (account, user): billing-weighted TRES-seconds (TRESBillingWeights of the
        job's partition; CPU-seconds without weights) times the QOS's UsageFactor, decayed by
        PriorityDecayHalfLife second by second. Recomputed every PriorityCalcPeriod."""
        if self._usage_at is not None and now - self._usage_at < self.config.priority_calc_period():
            return self._assoc_usage
        half = self.weights.decay_half_life
        factor = {n: q.usage_factor for n, q in self.accounts.tree().qos.items()}
        use: dict[tuple[str, str], float] = {}
        with self.engine.connect() as c:
            rows = c.execute(select(J.c.user, J.c.account, J.c.qos, J.c.partition, J.c.alloc, J.c.start_time,
                                    J.c.end_time, J.c.suspended_secs)
                             .where(J.c.start_time.is_not(None), J.c.alloc.is_not(None)))
            for r in rows:
                end = r.end_time or now
                amounts = alloc_tres([NodeAlloc(a["node"], a["cpus"], a["memory"], tuple(a["gpu_ids"]), a["tasks"])
                                      for a in json.loads(r.alloc)])
                rate = billing(amounts, self.billing_weights(r.partition)) * factor.get(r.qos, 1.0)
                # suspended time is not used: count it off the start
                start = min(end, r.start_time + (r.suspended_secs or 0.0))
                key = (r.account, r.user)
                use[key] = use.get(key, 0.0) + rate * decayed_span(start, end, now, half)
        self._usage_at, self._assoc_usage = now, use
        return use

    def tres_run_mins(self, now: float) -> dict[tuple[str, str], dict[str, float]]:
        """Per (account, user): what running jobs hold of each TRES times the minutes left of their
        time limits (sshare's TRESRunMins; jobs without a limit count nothing)."""
        out: dict[tuple[str, str], dict[str, float]] = {}
        with self.engine.connect() as c:
            rows = c.execute(select(J.c.account, J.c.user, J.c.partition, J.c.alloc, J.c.start_time, J.c.time_limit,
                                    J.c.suspended_secs).where(J.c.active.is_(True), J.c.alloc.is_not(None)))
            for r in rows:
                if not r.time_limit or r.start_time is None:
                    continue
                left = max(0.0, r.time_limit * 60 - (now - r.start_time - (r.suspended_secs or 0.0))) / 60
                amounts = alloc_tres([NodeAlloc(a["node"], a["cpus"], a["memory"], tuple(a["gpu_ids"]), a["tasks"])
                                      for a in json.loads(r.alloc)])
                amounts["billing"] = billing(amounts, self.billing_weights(r.partition))
                mine = out.setdefault((r.account, r.user), {})
                for k, v in amounts.items():
                    mine[k] = mine.get(k, 0.0) + v * left
        return out

    def share_tree(self, now: float, extra: set[tuple[str, str]] = frozenset()) -> fairshare.ShareNode:
        """The fair-share tree with usage and factors. Users with jobs but no association (no
        AccountingStorageEnforce) join their account, else root, with one share each."""
        tree = self.accounts.tree()
        usage = self.assoc_usage(now)
        users: dict[tuple[str, str], int] = {}
        for a in tree.assocs:
            if a.user:
                users.setdefault((a.account, a.user), a.shares)
        for acct, user in set(usage) | set(extra):
            if (acct, user) not in users:
                users[(acct if acct in tree.accounts else "root", user)] = 1
        accounts = {name: (row.parent, a.shares if (a := tree.by_key.get((name, "", ""))) else 1)
                    for name, row in tree.accounts.items()}
        if usage:  # implicit users filed under root: their usage follows them there
            usage = {(k[0] if k[0] in tree.accounts else "root", k[1]): v for k, v in usage.items()}
        root = fairshare.build_tree(accounts, [(a, u, sh) for (a, u), sh in users.items()], usage)
        return fairshare.compute(root, self.config.fair_tree())

    def fairshare_factors(self, now: float, keys: set[tuple[str, str]]) -> dict[tuple[str, str], tuple[float, float]]:
        """(account, user) -> (fair-share factor, NormShares), for the priority of pending jobs."""
        self.assoc_usage(now)  # recomputed every PriorityCalcPeriod: the memo below follows it
        memo_key = (self.accounts.version, self._usage_at, frozenset(keys))
        if self._fs is not None and self._fs[0] == memo_key:
            return self._fs[1]
        got = fairshare.factors(self.share_tree(now, keys))
        tree = self.accounts.tree()
        out = {}
        for acct, user in keys:
            k = (acct, user) if acct in tree.accounts else ("root", user)
            out[(acct, user)] = got.get(k, (0.0, 0.0))
        self._fs = (memo_key, out)
        return out

    @staticmethod
    def _running_job(r: Any) -> RunningJob:
        allocs = tuple(NodeAlloc(a["node"], a["cpus"], a["memory"], tuple(a["gpu_ids"]), a["tasks"])
                       for a in json.loads(r.alloc))
        end = None
        if r.time_limit and r.start_time is not None:
            end = r.start_time + r.time_limit * 60 + (r.suspended_secs or 0)
        return RunningJob(job_id=r.id, partition=r.partition, allocs=allocs, start_time=r.start_time or 0.0,
                          end_time=end, priority=r.priority, requeue=bool(r.requeue),
                          suspended=r.state == "SUSPENDED" and not r.pending_action,
                          preempting=bool(r.pending_action), qos=r.qos)

    def _usage(self, active_rows: Iterable[Any]) -> dict[str, list]:
        """What active jobs hold per node; a suspended job keeps only its memory."""
        use: dict[str, list] = {}
        for r in active_rows:
            excl = bool(json.loads(r.spec).get("exclusive"))
            stopped = r.state == "SUSPENDED" and not r.pending_action
            for a in json.loads(r.alloc or "[]"):
                u = use.setdefault(a["node"], [0, 0, [], False])
                u[1] += a["memory"]
                if not stopped:
                    u[0] += a["cpus"]
                    u[2].extend(a["gpu_ids"])
                    u[3] = u[3] or excl
        return use

    def node_up(self, row: Any, now: float) -> bool:
        """The node may get jobs: not drained or down, and its agent answers."""
        return row.admin_state == "UP" and self.responding(row, now)

    def responding(self, row: Any, now: float) -> bool:
        return now - row.last_seen <= self.config.slurmd_timeout

    def _sched_nodes(self, node_rows: list[Any], active_rows: list[Any], now: float) -> tuple[Node, ...]:
        use = self._usage(active_rows)
        out = []
        for r in node_rows:
            u = use.get(r.name, [0, 0, [], False])
            out.append(Node(name=r.name, cpus=r.cpus, memory=r.memory, gpus=r.gpus,
                            available=self.node_up(r, now), cpus_used=u[0], memory_used=u[1],
                            gpus_used=tuple(u[2]), exclusive_used=u[3], gpu_type=r.gpu_type))
        known = {r.name for r in node_rows}
        for nc in self.config.nodes:  # configured but never registered: known, unavailable
            if nc.name not in known:
                out.append(Node(name=nc.name, cpus=nc.cpus or 1, memory=nc.real_memory or 1,
                                gpus=nc.gpus or 0, available=False))
        return tuple(out)

    def node_names(self, node_rows: list[Any] | None = None) -> list[str]:
        if node_rows is None:
            with self.engine.connect() as c:
                node_rows = list(c.execute(select(N.c.name)))
        names = {r.name for r in node_rows} | {n.name for n in self.config.nodes}
        return sorted(names, key=natural_key)

    def _sched_partitions(self, node_rows: list[Any]) -> tuple[Partition, ...]:
        known = self.node_names(node_rows)
        features = self.config.node_features(node_rows)
        return tuple(Partition(name=p.name, nodes=tuple(self.config.partition_nodes(p, known, features)),
                               max_time=p.max_time, priority_tier=p.priority_tier, up=p.state == "UP",
                               priority_job_factor=p.priority_job_factor,
                               preempt_mode=self.config.preempt_mode_of(p), grace_time=p.grace_time)
                     for p in self.config.partitions)

    def apply(self, plan: Plan, now: float) -> set[str]:
        """Write a plan in one transaction; returns the batch hosts that got work."""
        woken: set[str] = set()
        last = self._last_reasons
        with self.engine.begin() as c:
            ports = {p for (p,) in c.execute(select(J.c.master_port).where(
                J.c.active.is_(True), J.c.master_port.is_not(None)))} if plan.starts else set()
            for jid, shown in self._dep_updates.items():
                vals: dict = {"dependency": shown}
                if shown is None:  # all satisfied: the job becomes eligible (the age factor starts)
                    vals["eligible_time"] = func.coalesce(J.c.eligible_time, now)
                c.execute(update(J).where(J.c.id == jid, J.c.state == "PENDING").values(**vals))
            for jid in self._dep_kill:
                c.execute(update(J).where(J.c.id == jid, J.c.state == "PENDING").values(
                    state="CANCELLED", reason="DependencyNeverSatisfied", start_time=now, end_time=now))
            for s in plan.starts:
                row = c.execute(select(J.c.id, J.c.name, J.c.user, J.c.spec, J.c.array_job_id,
                                       J.c.array_task_id).where(J.c.id == s.job_id)).first()
                spec = json.loads(row.spec)
                host = s.allocs[0].node
                port = 29500 + s.job_id % 1000  # a port per job: no two running jobs share one
                while port in ports or not _port_free(port):
                    port += 1
                ports.add(port)
                res = c.execute(update(J).where(J.c.id == s.job_id, J.c.state == "PENDING").values(
                    master_port=port, state="RUNNING", reason="None", start_time=now, active=True, batch_host=host,
                    alloc=json.dumps([asdict(a) for a in s.allocs]), nodes=compress(s.node_names),
                    eligible_time=func.coalesce(J.c.eligible_time, now),
                    stdout=self._pattern_path(row, spec, "stdout", host),
                    stderr=self._pattern_path(row, spec, "stderr", host),
                    batch_state=None, batch_exit_code=None, batch_exit_signal=None, end_time=None,
                    est_start=None, suspended_secs=0.0, suspend_time=None, preempt_time=None,
                    preempt_grace=None))
                if res.rowcount == 1:
                    woken.add(host)
                    woken.update(self._start_prologs(c, s.job_id, now))
            changed = [{"jid": jid, "r": r.value} for jid, r in plan.reasons.items() if last.get(jid) != r.value]
            if changed:
                c.execute(update(J).where(J.c.id == bindparam("jid"), J.c.state == "PENDING")
                          .values(reason=bindparam("r")), changed)
            prio = [{"jid": jid, "p": p} for jid, p in plan.priorities.items() if self._last_priority.get(jid) != p]
            if prio:
                c.execute(update(J).where(J.c.id == bindparam("jid")).values(priority=bindparam("p")), prio)
            est = [{"jid": jid, "t": t} for jid, t in plan.start_times.items() if self._last_est.get(jid) != t]
            if est:
                c.execute(update(J).where(J.c.id == bindparam("jid"), J.c.state == "PENDING")
                          .values(est_start=bindparam("t")), est)
            for p in plan.preemptions:
                action = {"CANCEL": "preempt", "REQUEUE": "preempt_requeue"}.get(p.mode)
                if action is None:  # SUSPEND: the agent stops the processes; resources are lent
                    res = c.execute(update(J).where(J.c.id == p.victim, J.c.state == "RUNNING",
                                                    J.c.active.is_(True), J.c.pending_action.is_(None))
                                    .values(state="SUSPENDED", suspend_time=now, preempt_time=now))
                else:
                    res = c.execute(update(J).where(J.c.id == p.victim, J.c.state == "RUNNING",
                                                    J.c.active.is_(True), J.c.pending_action.is_(None))
                                    .values(pending_action=action, preempt_time=now,
                                            preempt_grace=p.grace_time))
                if res.rowcount:
                    woken.add(c.execute(select(J.c.batch_host).where(J.c.id == p.victim)).scalar())
            for jid in plan.resumes:
                row = c.execute(select(J.c.suspend_time, J.c.batch_host).where(
                    J.c.id == jid, J.c.state == "SUSPENDED", J.c.active.is_(True))).first()
                if row is None:
                    continue
                c.execute(update(J).where(J.c.id == jid, J.c.state == "SUSPENDED").values(
                    state="RUNNING", suspend_time=None,
                    suspended_secs=J.c.suspended_secs + max(0.0, now - (row.suspend_time or now))))
                woken.add(row.batch_host)
        return woken

    # ---------------------------------------------------------------- user actions
    def cancel(self, job_id: int, now: float, *, signal: int | None = None, uid: int = 0) -> str | None:
        """scancel. Returns the batch host to notify, if any."""
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

    def hold(self, job_id: int, who: str) -> None:
        with self.engine.begin() as c:
            row = c.execute(select(J.c.state).where(J.c.id == job_id)).first()
            if row is None:
                raise NotFound()
            if row.state != "PENDING":
                raise Conflict("Job is no longer pending execution")
            c.execute(update(J).where(J.c.id == job_id).values(
                held=who, reason="JobHeldUser" if who == "user" else "JobHeldAdmin"))

    def release(self, job_id: int, now: float) -> None:
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

    def requeue(self, job_id: int, now: float, *, hold: bool = False) -> str | None:
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
            c.execute(update(J).where(J.c.id == job_id).values(**self._requeued_values(now, hold)))
            return None

    @staticmethod
    def _archive_run(c: Any, r: Any, state: str, now: float, code: int = 0, sig: int = 0) -> None:
        """Keep the run that just ended for sacct -D before the job goes back to the queue."""
        if r.start_time is None or c.execute(select(RUNS.c.run).where(RUNS.c.job_id == r.id,
                                                                      RUNS.c.run == r.restarts)).first():
            return
        c.execute(insert(RUNS).values(job_id=r.id, run=r.restarts, state=state, start_time=r.start_time,
                                      end_time=now, exit_code=code, exit_signal=0, nodes=r.nodes or "",
                                      alloc=r.alloc, batch_host=r.batch_host, batch_state="CANCELLED" if sig else
                                      ("FAILED" if code else "COMPLETED"), batch_exit_code=code,
                                      batch_exit_signal=sig))

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
                out.setdefault(run.job_id, []).append(self.public(fake))
        return out

    def _requeued_values(self, now: float, hold: bool) -> dict:
        begin = now + self.config.requeue_delay
        return dict(state="PENDING", reason="JobHeldAdmin" if hold else "BeginTime", active=False,
                    alloc=None, nodes="", batch_host=None, start_time=None, end_time=None,
                    begin_time=begin, eligible_time=begin, restarts=J.c.restarts + 1, pending_action=None,
                    held="admin" if hold else None, exit_code=0, exit_signal=0, pending_signal=None,
                    suspend_time=None, est_start=None)

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
                elif k in ("time_limit", "name", "comment", "nice", "site_factor"):
                    values[k] = v
                    if k == "nice":
                        values["priority"] = max(1, 10000 - int(v))
                else:
                    raise InvalidRequest(f"Update of {k} is not supported")
            if values:
                c.execute(update(J).where(J.c.id == job_id).values(**values))

    # ---------------------------------------------------------------- nodes
    def node_sync(self, name: str, body: dict, now: float) -> list[dict]:
        """One agent round trip: register/heartbeat, apply its reports, return its orders."""
        with self.engine.begin() as c:
            self._upsert_node(c, name, body, now)
            # steps first: a job's end cancels its steps still running, not those that just ended
            steps.record(c, name, body.get("steps_finished") or [], now)
            for fin in body.get("finished") or []:
                self._finish(c, name, fin, now)
            self._scripts_done(c, name, body.get("scripts_done") or [], now)
            for lost in body.get("lost") or []:
                self._lost(c, name, lost, now)
            running = set(body.get("running") or [])
            stopped = set(body.get("suspended") or [])
            done = {f["job_id"] for f in body.get("finished") or []}
            step_orders = steps.orders_for(c, name, set(body.get("steps_running") or []),
                                           {f"{f['job_id']}.{f['step_id']}" for f in body.get("steps_finished") or []})
            rows = list(c.execute(select(J).where(J.c.batch_host == name, J.c.active.is_(True))))
            if body.get("resources"):
                # a (re)starting agent runs nothing we do not hear about: those jobs were lost with it
                for r in rows:
                    if r.id not in running and r.id not in done:
                        self._node_failed(c, r, now)
                rows = [r for r in rows if r.id in running or r.id in done]
            orders: list[dict] = []
            active_ids = set()
            for r in rows:
                active_ids.add(r.id)
                if r.id in done:
                    continue
                if r.id in running:
                    if r.pending_action:
                        order = {"op": "kill", "job_id": r.id, "why": _KILL_WHY.get(r.pending_action, "cancel")}
                        if r.pending_action.startswith("preempt") and r.preempt_grace:
                            order["grace"] = r.preempt_grace
                        orders.append(order)
                    elif r.state == "SUSPENDED" and r.id not in stopped:
                        orders.append({"op": "suspend", "job_id": r.id})
                    elif r.state == "RUNNING" and r.id in stopped:
                        orders.append({"op": "resume", "job_id": r.id})
                    elif r.pending_signal is not None:
                        orders.append({"op": "signal", "job_id": r.id, "signal": r.pending_signal})
                        c.execute(update(J).where(J.c.id == r.id).values(pending_signal=None))
                elif r.pending_action:
                    # its processes are gone (or never started): finish the transition now
                    self._finish(c, name, {"job_id": r.id, "exit_code": 0, "signal": 15}, now)
                elif not scripts.prologs_pending(c, r.id, r.restarts):  # else: wait for every prolog to succeed
                    order = self._launch_order(r, name)
                    refs = json.loads(r.spec).get("secrets")
                    if refs:  # resolved at launch only: they are stored nowhere else
                        order["environment"] = {**order["environment"], **self._resolve_secrets(c, refs)}
                    alloc_nodes = [a["node"] for a in order["alloc"]]
                    order["node_addrs"] = dict(c.execute(select(N.c.name, N.c.addr).where(N.c.name.in_(alloc_nodes))).all())
                    orders.append(order)
            for jid in sorted(running - active_ids - done):
                orders.append({"op": "kill", "job_id": jid, "why": "orphan"})
            orders += scripts.orders_for(c, name)
        return orders + step_orders

    def _upsert_node(self, c: Any, name: str, body: dict, now: float) -> None:
        res = body.get("resources")
        exists = c.execute(select(N.c.name).where(N.c.name == name)).first() is not None
        if exists and not res:
            vals = {"last_seen": now}
            if body.get("cpu_load") is not None:
                vals["cpu_load"] = body["cpu_load"]
            if body.get("free_mem") is not None:
                vals["free_mem"] = body["free_mem"]
            c.execute(update(N).where(N.c.name == name).values(**vals))
            return
        if not res:
            raise NotFound(f"Node {name} is not registered")
        nc = self.config.node(name)
        if nc is None and not self.config.dynamic_nodes:
            raise InvalidRequest(f"Node {name} is not in the cluster configuration")
        vals = dict(
            addr=(nc.addr if nc and nc.addr else None) or res.get("addr") or "127.0.0.1",
            hostname=res.get("hostname") or name,
            cpus=(nc.cpus if nc and nc.cpus else None) or res["cpus"],
            memory=(nc.real_memory if nc and nc.real_memory else None) or res["memory"],
            gpus=nc.gpus if nc and nc.gpus is not None else res.get("gpus", 0),
            gpu_type=(nc.gpu_type if nc else None) or res.get("gpu_type"),
            last_seen=now, boot_time=res.get("boot_time"), arch=res.get("arch"), os=res.get("os"),
            version=res.get("version"), cpu_load=body.get("cpu_load"), free_mem=body.get("free_mem"),
            pool=res.get("pool"),
        )
        self._capacity_rows = None  # a node (re)registers: its capacity may change
        if exists:
            c.execute(update(N).where(N.c.name == name).values(registered_at=now, **vals))
        else:
            c.execute(insert(N).values(name=name, admin_state="UP", registered_at=now, **vals))

    def _launch_order(self, r: Any, node: str) -> dict:
        spec = json.loads(r.spec)
        return {
            "op": "launch", "job_id": r.id, "name": r.name, "user": r.user, "uid": r.uid, "gid": r.gid,
            "script": r.script, "environment": json.loads(r.environment), "workdir": spec.get("workdir"),
            "stdout": r.stdout, "stderr": r.stderr, "stdin": spec.get("stdin"),
            # a requeued job's new run appends to its files, as slurmctld sets it up
            "open_mode": "append" if r.restarts else spec.get("open_mode") or "truncate", "time_limit": r.time_limit,
            "start_time": r.start_time, "alloc": json.loads(r.alloc), "nodes": r.nodes,
            "partition": r.partition, "account": r.account, "qos": r.qos, "argv": spec.get("argv") or [],
            "submit_dir": spec.get("submit_dir"), "submit_host": spec.get("submit_host"),
            "ntasks": spec.get("ntasks"), "ntasks_per_node": spec.get("ntasks_per_node"),
            "cpus_per_task": spec.get("cpus_per_task") or 1, "mem_per_node": spec.get("mem_per_node"),
            "mem_per_cpu": spec.get("mem_per_cpu"), "gpus_per_task": spec.get("gpus_per_task"),
            "restarts": r.restarts, "signal": spec.get("signal"), "comment": r.comment,
            "suspended_secs": r.suspended_secs or 0.0, "master_port": r.master_port, "code": spec.get("code"),
            "py_deps": spec.get("py_deps"),
            "epilog": self.config.script_list("epilog"),
            "home": os.path.join(self.config.home_storage, r.user) if self.config.home_storage else None,
            "array_count": spec.get("array_count"), "array_min": spec.get("array_min"),
            "array_max": spec.get("array_max"), "array_step": spec.get("array_step"),
            "array_job_id": r.array_job_id, "array_task_id": r.array_task_id, "nice": r.nice,
        }

    def _finish(self, c: Any, node: str, fin: dict, now: float) -> None:
        """The batch script of a job ended on `node` (or its processes are gone)."""
        r = c.execute(select(J).where(J.c.id == fin["job_id"], J.c.batch_host == node,
                                      J.c.active.is_(True))).first()
        if r is None or (fin.get("restarts") is not None and fin["restarts"] != r.restarts):
            return  # already applied, or about an earlier incarnation: reports are idempotent
        steps.end_job_steps(c, r.id, now)  # the batch script is done: so are its steps
        if fin.get("epilog_failed") or fin.get("prolog_failed"):
            what = "Prolog" if fin.get("prolog_failed") else "Epilog"
            c.execute(update(N).where(N.c.name == node).values(admin_state="DRAIN", reason=f"{what} error",
                                                             reason_time=now))
        if fin.get("prolog_failed"):  # the job never ran: back to the queue, held, as slurmctld does
            c.execute(update(J).where(J.c.id == r.id, J.c.active.is_(True)).values(**self._requeued_values(now, True)))
            return
        code, sig = int(fin.get("exit_code") or 0), int(fin.get("signal") or 0)
        self._end_scripts(c, r, code, sig, now)
        end = fin.get("end_time") or now
        action = r.pending_action
        if action in ("requeue", "requeue_hold", "preempt_requeue"):
            self._archive_run(c, r, "PREEMPTED" if action == "preempt_requeue" else "REQUEUED", now,
                              int(fin.get("exit_code") or 0), int(fin.get("signal") or 0))
            c.execute(update(J).where(J.c.id == r.id, J.c.active.is_(True)).values(
                **self._requeued_values(now, action == "requeue_hold")))
            return
        vals: dict = dict(active=False, pending_action=None, pending_signal=None,
                          batch_exit_code=code, batch_exit_signal=sig, batch_max_rss=fin.get("max_rss"),
                          batch_user_cpu=fin.get("user_cpu"), batch_system_cpu=fin.get("system_cpu"))
        if action == "cancel":
            vals.update(batch_state="CANCELLED")
        elif action == "preempt":
            vals.update(state="PREEMPTED", reason="None", end_time=end, batch_state="CANCELLED",
                        exit_code=0, exit_signal=0)
        elif (fin.get("timeout") or sig or code or fin.get("launch_failed")) and \
                r.restarts < (json.loads(r.spec).get("max_retries") or 0):
            # an air run's failed attempt: run it again under the same id (the attempt counter is restarts)
            self._archive_run(c, r, "TIMEOUT" if fin.get("timeout") else "FAILED", now, code, sig)
            retry = self._requeued_values(now, False)
            retry.update(begin_time=now, eligible_time=now, reason="None")
            c.execute(update(J).where(J.c.id == r.id, J.c.active.is_(True)).values(**retry))
            return
        elif fin.get("timeout"):
            vals.update(state="TIMEOUT", reason="TimeLimit", end_time=end, batch_state="CANCELLED",
                        exit_code=0, exit_signal=0)
        elif fin.get("launch_failed"):
            vals.update(state="FAILED", reason="JobLaunchFailure", end_time=end, batch_state="FAILED",
                        exit_code=code or 1, exit_signal=0)
        elif sig:
            vals.update(state="FAILED", reason="JobLaunchFailure", end_time=end, batch_state="CANCELLED",
                        exit_code=0, exit_signal=sig)
        elif code:
            vals.update(state="FAILED", reason="NonZeroExitCode", end_time=end, batch_state="FAILED",
                        exit_code=code, exit_signal=0)
        else:
            vals.update(state="COMPLETED", reason="None", end_time=end, batch_state="COMPLETED",
                        exit_code=0, exit_signal=0)
        c.execute(update(N).where(N.c.name == node).values(last_busy=now))
        c.execute(update(J).where(J.c.id == r.id, J.c.active.is_(True)).values(**vals))

    def _start_prologs(self, c: Any, job_id: int, now: float) -> list[str]:
        """A job just started: Prolog rows for each of its nodes, PrologSlurmctld's for the controller.
        Returns the nodes to wake (their agents have a prolog to run)."""
        prolog, ctld = self.config.script_list("prolog"), self.config.script_list("prologslurmctld")
        if not prolog and not ctld:
            return []
        r = c.execute(select(J).where(J.c.id == job_id)).first()
        nodes = [a["node"] for a in json.loads(r.alloc)]
        if prolog:
            scripts.add(c, r.id, r.restarts, nodes, "prolog", dict(self._launch_order(r, ""), script="", prolog=prolog),
                        now)
        if ctld:
            env = scripts.controller_environment(r, "prolog_slurmctld", self.config.cluster_name)
            scripts.add(c, r.id, r.restarts, [scripts.CONTROLLER], "prolog_slurmctld", {"env": env, "script": ctld}, now)
            self.controller_scripts = True
        return nodes if prolog else []

    def _end_scripts(self, c: Any, r: Any, code: int, sig: int, now: float) -> None:
        """A job's run ended: Epilog on its nodes other than the batch host (which ran its own before
        reporting), EpilogSlurmctld on the controller."""
        scripts.forget_prologs(c, r.id)
        epilog, ctld = self.config.script_list("epilog"), self.config.script_list("epilogslurmctld")
        others = [a["node"] for a in json.loads(r.alloc or "[]") if a["node"] != r.batch_host]
        if epilog and others:
            order = dict(self._launch_order(r, ""), script="", exit_code=code, signal=sig)
            scripts.add(c, r.id, r.restarts, others, "epilog", order, now)
            self.notify_hosts.update(others)
        if ctld:
            env = dict(scripts.controller_environment(r, "epilog_slurmctld", self.config.cluster_name),
                       **exit_code_env(code, sig))
            scripts.add(c, r.id, r.restarts, [scripts.CONTROLLER], "epilog_slurmctld", {"env": env, "script": ctld}, now)
            self.controller_scripts = True

    def _scripts_done(self, c: Any, node: str, reports: list[dict], now: float) -> None:
        """Prologs and epilogs that ended on `node` (or the controller): a failing one drains its
        node; a failing prolog requeues the job held; the last prolog to succeed lets it launch."""
        for rep in scripts.record(c, node, reports):
            failed = bool(rep.get("exit_code"))
            if failed and node != scripts.CONTROLLER:
                what = "Prolog" if rep["kind"] == "prolog" else "Epilog"
                c.execute(update(N).where(N.c.name == node).values(admin_state="DRAIN", reason=f"{what} error",
                                                                 reason_time=now))
            if rep["kind"] not in scripts.PROLOGS:
                continue
            r = c.execute(select(J.c.id, J.c.batch_host).where(
                J.c.id == rep["job_id"], J.c.restarts == rep["run"], J.c.active.is_(True), J.c.state == "RUNNING",
                J.c.pending_action.is_(None))).first()
            if r is None:
                continue
            if failed:
                # the job never ran: back to the queue. A node's prolog holds it (the node is
                # drained); PrologSlurmctld's requeues it as it is, after the requeue delay, and
                # sacct -D keeps the run as REQUEUED (as a real slurmctld 22.05 does)
                ctld = rep["kind"] == "prolog_slurmctld"
                if ctld:
                    row = c.execute(select(J).where(J.c.id == r.id)).first()
                    self._archive_run(c, row, "REQUEUED", now)
                c.execute(update(J).where(J.c.id == r.id, J.c.active.is_(True)).values(
                    **self._requeued_values(now, not ctld)))
            elif not scripts.prologs_pending(c, r.id, rep["run"]):
                self.notify_hosts.add(r.batch_host)

    def claim_controller_scripts(self) -> list[Any]:
        """PrologSlurmctld/EpilogSlurmctld runs waiting for the controller (marked running)."""
        if not self.controller_scripts:
            return []
        self.controller_scripts = False
        with self.engine.begin() as c:
            return scripts.claim_controller(c)

    def reset_controller_scripts(self) -> None:
        with self.engine.begin() as c:
            scripts.reset_controller(c)
        self.controller_scripts = True

    def controller_script_done(self, report: dict, now: float) -> None:
        with self.engine.begin() as c:
            self._scripts_done(c, scripts.CONTROLLER, [report], now)

    def take_notify(self) -> set[str]:
        out, self.notify_hosts = self.notify_hosts, set()
        return out

    def _node_failed(self, c: Any, r: Any, now: float) -> None:
        """The job's node lost it: requeue when allowed (JobRequeue / --requeue), else NODE_FAIL."""
        steps.end_job_steps(c, r.id, now)
        self._end_scripts(c, r, 0, 9, now)
        if r.pending_action == "cancel":
            c.execute(update(J).where(J.c.id == r.id).values(active=False, pending_action=None,
                                                              batch_state="CANCELLED", batch_exit_signal=9))
        elif r.pending_action == "preempt":
            c.execute(update(J).where(J.c.id == r.id).values(
                state="PREEMPTED", active=False, end_time=now, pending_action=None, batch_state="CANCELLED",
                batch_exit_signal=9))
        elif r.requeue and r.pending_action != "requeue_hold" or r.pending_action in ("requeue",
                                                                                    "preempt_requeue"):
            self._archive_run(c, r, "NODE_FAIL", now, 0, 9)
            c.execute(update(J).where(J.c.id == r.id).values(**self._requeued_values(now, False)))
        else:
            c.execute(update(J).where(J.c.id == r.id).values(
                state="NODE_FAIL", reason="NodeDown", active=False, end_time=now, pending_action=None,
                batch_state="CANCELLED", batch_exit_code=0, batch_exit_signal=9, exit_code=0, exit_signal=0))

    def _lost(self, c: Any, node: str, rep: dict, now: float) -> None:
        """The restarted agent of `node` found the job's batch script (or its tasks of a step) left
        running by its crashed predecessor, and killed them: the job lost the node, as in `reap`
        (NODE_FAIL, or requeued when allowed). Reports about an earlier run or an ended step are
        stale and change nothing."""
        r = c.execute(select(J).where(J.c.id == rep["job_id"], J.c.active.is_(True)).with_for_update()).first()
        if r is None:
            return
        nodes = {a["node"] for a in json.loads(r.alloc or "[]")}
        if node not in nodes:
            return
        if rep.get("step_id") is not None:
            st = c.execute(select(S.c.state).where(S.c.job_id == r.id, S.c.step_id == rep["step_id"])).first()
            if st is None or st.state != "RUNNING":
                return
        elif r.batch_host != node or (rep.get("restarts") is not None and rep["restarts"] != r.restarts):
            return
        self._node_failed(c, r, now)
        self.notify_hosts.update(nodes - {node})  # their agents stop what is left of it

    def reap(self, now: float) -> set[str] | None:
        """Jobs on a node whose agent has been silent for SlurmdTimeout lose it: requeued when allowed,
        else NODE_FAIL (see `_node_failed`). Returns None when no job changed, else the job's other nodes
        (their agents must stop what is left of it)."""
        limit = now - self.config.slurmd_timeout
        with self.engine.begin() as c:
            silent = set(c.execute(select(N.c.name).where(N.c.last_seen < limit)).scalars())
            if not silent:
                return None
            changed = False
            alive: set[str] = set()
            for r in c.execute(select(J).where(J.c.active.is_(True)).with_for_update()).all():
                nodes = {a["node"] for a in json.loads(r.alloc or "[]")}
                if nodes & silent:
                    self._node_failed(c, r, now)
                    changed = True
                    alive |= nodes - silent
        return alive if changed else None

    def node_rows(self) -> list[Any]:
        with self.engine.connect() as c:
            return list(c.execute(select(N)))

    def capacity_rows(self) -> list[Any]:
        """Node rows for submit-time checks, which read a node's name, capacity, GPUs and pool only:
        kept between submissions (not one query each) and read again after a node registers, the
        one change to those columns. Their heartbeat columns (last_seen, ...) may be stale."""
        rows = self._capacity_rows
        if rows is None:
            rows = self._capacity_rows = self.node_rows()
        return rows

    def active_allocs(self) -> list[Any]:
        with self.engine.connect() as c:
            return list(c.execute(select(J.c.alloc, J.c.spec).where(J.c.active.is_(True))))

    def set_node_state(self, name: str, state: str, reason: str | None, now: float) -> None:
        with self.engine.begin() as c:
            res = c.execute(update(N).where(N.c.name == name).values(
                admin_state=state, reason=reason, reason_time=now if reason else None))
            if res.rowcount == 0:
                raise NotFound("Invalid node name specified")

    def run_rows(self) -> list[list]:
        """air list: every job, as [id, name, state, comment, gpus, nodes, submit, start, end] (no spec parsing)."""
        with self.engine.connect() as c:
            rows = c.execute(select(J.c.id, J.c.name, J.c.state, J.c.comment, J.c.alloc, J.c.spec, J.c.submit_time,
                                    J.c.start_time, J.c.end_time).order_by(J.c.id))
            out = []
            for r in rows:
                if r.comment and r.comment.startswith("air: "):
                    gpus = r.comment.split()[1]
                elif r.alloc:
                    gpus = sum(len(a["gpu_ids"]) for a in json.loads(r.alloc)) or "-"
                else:
                    req = self._requests.get(r.id) or request_of(json.loads(r.spec))
                    gpus = (req.gpus_per_node or 0) * req.nodes_min or req.gpus or "-"
                out.append([r.id, r.name, r.state, str(gpus), r.submit_time, r.start_time, r.end_time])
            return out

    def array_members(self, array_job_id: int) -> list[int]:
        """The unfinished tasks of a job array (empty when `array_job_id` is no array's id)."""
        with self.engine.connect() as c:
            return [r.id for r in c.execute(select(J.c.id).where(
                J.c.array_job_id == array_job_id, J.c.state.not_in(FINAL_STATES)).order_by(J.c.id))]

    def array_task(self, array_job_id: int, task: int) -> int | None:
        with self.engine.connect() as c:
            return c.execute(select(J.c.id).where(J.c.array_job_id == array_job_id,
                                                  J.c.array_task_id == task)).scalar()

    # ---------------------------------------------------------------- air runs' code
    def put_code(self, data: bytes, now: float) -> str:
        import hashlib
        sha = hashlib.sha256(data).hexdigest()
        with self.engine.begin() as c:
            if c.execute(select(CODE.c.sha).where(CODE.c.sha == sha)).first() is None:
                c.execute(insert(CODE).values(sha=sha, data=data, created=now))
        return sha

    def get_code(self, sha: str) -> bytes:
        with self.engine.connect() as c:
            data = c.execute(select(CODE.c.data).where(CODE.c.sha == sha)).scalar()
        if data is None:
            raise NotFound(f"no code {sha}")
        return bytes(data)

    def has_code(self, sha: str) -> bool:
        with self.engine.connect() as c:
            return c.execute(select(CODE.c.sha).where(CODE.c.sha == sha)).first() is not None

    # ---------------------------------------------------------------- secrets
    def put_secret(self, scope: str, key: str, value: str, now: float) -> None:
        with self.engine.begin() as c:
            if c.execute(update(SEC).where(SEC.c.scope == scope, SEC.c.key == key)
                         .values(value=value, updated=now)).rowcount == 0:
                c.execute(insert(SEC).values(scope=scope, key=key, value=value, updated=now))

    def delete_secret(self, scope: str, key: str) -> None:
        with self.engine.begin() as c:
            if c.execute(SEC.delete().where(SEC.c.scope == scope, SEC.c.key == key)).rowcount == 0:
                raise NotFound(f"no secret {scope}/{key}")

    def secret_names(self) -> list[dict]:
        with self.engine.connect() as c:
            return [{"scope": r.scope, "key": r.key, "updated": r.updated}
                    for r in c.execute(select(SEC.c.scope, SEC.c.key, SEC.c.updated).order_by(SEC.c.scope, SEC.c.key))]

    def missing_secrets(self, refs: dict[str, str]) -> list[str]:
        """The `NAME` of each reference (`scope/key`) that names no stored secret."""
        with self.engine.connect() as c:
            have = {(r.scope, r.key) for r in c.execute(select(SEC.c.scope, SEC.c.key))}
        return [name for name, ref in refs.items() if tuple(ref.split("/", 1)) not in have]

    @staticmethod
    def _resolve_secrets(c: Any, refs: dict[str, str]) -> dict[str, str]:
        out = {}
        for name, ref in refs.items():
            scope, _, key = ref.partition("/")
            value = c.execute(select(SEC.c.value).where(SEC.c.scope == scope, SEC.c.key == key)).scalar()
            if value is not None:
                out[name] = value
        return out

    def state_counts(self) -> dict[str, int]:
        """How many jobs are in each state (sdiag)."""
        with self.engine.connect() as c:
            return {st: n for st, n in c.execute(select(J.c.state, func.count()).group_by(J.c.state))}

    def _shown(self, now: float):  # noqa: ANN202
        """The jobs squeue shows: like slurmctld, finished jobs are forgotten MinJobAge seconds after they end."""
        return or_(J.c.end_time.is_(None), J.c.end_time >= now - self.config.min_job_age, J.c.active.is_(True))

    def state_partition_counts(self, now: float) -> dict[tuple[str, str], int]:
        """(state, partition) -> how many jobs `squeue -t all` shows in it (/metrics)."""
        q = select(J.c.state, J.c.partition, func.count()).where(self._shown(now)).group_by(J.c.state, J.c.partition)
        with self.engine.connect() as c:
            return {(st, part): n for st, part, n in c.execute(q)}

    def max_job_id(self) -> int:
        with self.engine.connect() as c:
            return c.execute(select(func.max(J.c.id))).scalar() or 0

