"""Reads: jobs as the API shows them (squeue, sacct), steps, nodes, arrays, air runs, counts."""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, and_, bindparam, event, func, or_, select

from slurmlet.common.grammar import fmt_ranges
from slurmlet.controller.core.limits import alloc_tres, billing, request_tres
from slurmlet.controller.core.model import NodeAlloc, Request
from slurmlet.controller.core.nodes import requested_cpus
from slurmlet.controller.errors import NotFound

from . import steps
from .base import BY_ID, FINAL_STATES, Part, Shared, pattern_path, request_of
from .guard import data_version, wrote
from .tables import clusters as CL
from .tables import job_runs as RUNS
from .tables import jobs as J
from .tables import nodes as N

#: the columns a job list reads: all but the script and the environment, kilobytes a job that no
#: list shows (squeue over 1,000 jobs read megabytes of them)
LISTED = tuple(c for c in J.c if c.name not in ("script", "environment"))
#: what submit-time checks read of the nodes (capacity_rows)
CAPACITY = select(N.c.name, N.c.cpus, N.c.memory, N.c.gpus, N.c.gpu_type, N.c.pool)
#: what `listed` reads first: which jobs, and whether each changed since the last list
HEADS = (J.c.id, J.c.rev, J.c.submit_time)


class _Listed(NamedTuple):
    """The list `listed` made last for a set of keys, and what it may be given again under."""

    asked: tuple  #: (writes committed then, the filters but `shown_after`, whether it had one)
    out: list  #: the list itself
    heads: list  #: (id, rev, submit time) of its jobs
    ends: float  #: the earliest end of a listed job: a larger `shown_after` may leave it out
    after: float  #: the `shown_after` it was made with: a smaller one may show more


class _Kept(NamedTuple):
    """The public views `public_list` keeps, and the lists `listed` cut from them."""

    config: Any  #: the configuration they were made under (a new one makes them anew)
    views: dict[int, tuple[tuple[int, float], dict]]  #: job id -> ((rev, submit time), view)
    cuts: dict[tuple[tuple[str, ...], bool], dict[Any, Any]]  #: (keys, nulls) -> {job id: (stamp, cut), None: _Listed}


class Queries(Part):
    """Reads for the API; the job views it worked out, kept while their rows are unchanged."""

    #: the most jobs public_list keeps the answers of
    PUBLIC_KEPT = 20000

    def __init__(self, shared: Shared):
        super().__init__(shared)
        self._selects_made: dict[tuple[int, tuple[str, ...]], tuple[tuple, Any]] = {}
        self._public_kept: _Kept | None = None
        #: writes committed on this engine so far: with SQLite's data_version (_writes), whether
        #: `listed` may give the list it made last again without reading
        self.commits = 0
        event.listen(self.engine, "commit", self._committed)
        #: node rows for submit-time checks (capacity_rows) and the data_version they were read at;
        #: None: read them again (a node registered here)
        self.capacity: tuple[tuple[int, int] | None, list[Any]] | None = None

    # ---------------------------------------------------------------- jobs: reads
    def job_rows(self, *, ids: list[int] | None = None, states: list[str] | None = None,
                 users: list[str] | None = None, partitions: list[str] | None = None,
                 names: list[str] | None = None, since: float | None = None, until: float | None = None,
                 now: float | None = None, history: bool = False, accounts: list[str] | None = None,
                 qos: list[str] | None = None, columns: tuple = LISTED) -> list[Any]:
        """Jobs' rows (`columns` of them) matching every filter given, by id."""
        params = self._filter_params(ids=ids, states=states, users=users, partitions=partitions, names=names,
                                     since=since, until=until, now=now, history=history, accounts=accounts, qos=qos)
        with self.engine.connect() as c:
            # sorted here: ORDER BY id would make the database scan by id rather than use the
            # end-time or array index (sacct over a long history)
            return sorted(c.execute(self._select(columns, params), params), key=BY_ID)

    def _select(self, columns: tuple, params: dict) -> Any:  # noqa: ANN401 - a Select
        """A select of `columns` under the filters `params` names (_filter_params; `among`: only these
        job ids), their values bound at execution: made once for each set of filters (building a
        statement and its cache key cost more than SQLite takes to run it: sacct -j, scontrol show job)."""
        which = (id(columns), tuple(sorted(params)))
        made = self._selects_made
        hit = made.get(which)
        if hit is None or hit[0] is not columns:
            if len(made) >= 64:
                made.clear()
            hit = made[which] = (columns, select(*columns).where(*_conditions(params)))
        return hit[1]

    def _filter_params(self, *, ids: list[int] | None = None, states: list[str] | None = None,
                       users: list[str] | None = None, partitions: list[str] | None = None,
                       names: list[str] | None = None, since: float | None = None, until: float | None = None,
                       now: float | None = None, history: bool = False, accounts: list[str] | None = None,
                       qos: list[str] | None = None) -> dict:
        """job_rows' filters as the parameters of _conditions (a filter not given, or empty, is none)."""
        params: dict = {}
        if ids:
            params["ids"] = params["array_ids"] = list(ids)
        for name, value in (("states", states), ("users", users), ("partitions", partitions), ("names", names),
                            ("accounts", accounts), ("qos", qos)):
            if value:
                params[name] = list(value)
        if not history and now is not None:
            params["shown_after"] = now - self.config.min_job_age  # (what squeue shows: see _shown)
        if since is not None:
            params["since"] = since
        if until is not None:
            params["until"] = until
        return params

    # ---------------------------------------------------------------- steps
    def create_step(self, job_id: int, req: dict, now: float) -> dict:
        with self.engine.begin() as c:
            return steps.create(c, job_id, req, now)

    def cancel_step(self, job_id: int, step_id: int, now: float, running_only: bool = False) -> list[str]:
        with self.engine.begin() as c:
            return steps.cancel(c, job_id, step_id, now, running_only)

    def step_rows(self, job_ids: list[int], srun: bool = False) -> dict[int, list[dict]]:
        """sacct's step rows of these jobs, by job (`srun`: with the host and pid of a running step's srun)."""
        out: dict[int, list[dict]] = {}
        if not job_ids:
            return out
        with self.engine.connect() as c:
            for i in range(0, len(job_ids), 500):
                out.update(steps.public(c, job_ids[i:i + 500], srun))
        return out

    def get_row(self, job_id: int) -> Any:
        with self.engine.connect() as c:
            row = c.execute(select(J).where(J.c.id == job_id)).first()
        if row is None:
            raise NotFound()
        return row

    def public_list(self, rows: list[Any], keys: list[str] | None = None, nulls: bool = True) -> list[dict]:
        """`public` of each row (LISTED columns), each a new dict (its nested values, such as the batch
        step's dict in `steps`, are shared between answers: replace them, never change them in place),
        with only `keys` where given (a key a job lacks left out; without `nulls`, one that is None
        too); a job unchanged since the last list (its `rev`), under the same configuration, is not
        worked out again (a dashboard and squeue in a loop ask for the same jobs every second)."""
        if len(rows) > self.PUBLIC_KEPT:  # (sacct over a long history: not kept)
            return [only_keys(self.public(r), keys, nulls) for r in rows]
        cache = self._kept([r.id for r in rows])
        out = []
        for r in rows:
            hit = cache.get(r.id)
            if hit is None or hit[0] != (r.rev, r.submit_time):
                hit = cache[r.id] = ((r.rev, r.submit_time), self.public(r))
            out.append(only_keys(hit[1], keys, nulls))
        return out

    def listed(self, keys: list[str] | None = None, nulls: bool = True, **filters: Any) -> list[dict]:
        """public_list(job_rows(**filters), keys, nulls), reading the whole row only of a job that
        changed since the last list (each update of a job counts up its `rev`): squeue in a loop over
        1,000 jobs reads their ids and revs, not 1,000 rows of fifty columns. With `keys`, the dicts
        are shared with other answers: send them, never change them."""
        params = self._filter_params(**filters)
        # the list made last for these keys is given again, reading no job, while nothing was written
        # since by any process (`_writes`: on SQLite only) under the same filters (the clock's only moves `shown_after`, which shows no job more as
        # it grows, and none fewer while it stays within the listed jobs' earliest end; a clock set back
        # below the `shown_after` the list was made with reads again): squeue in a loop
        after = params.get("shown_after", -math.inf)
        with self.engine.connect() as c:
            writes = self._writes(c)
            asked = (writes, repr(sorted((k, v) for k, v in params.items() if k != "shown_after")),
                     "shown_after" in params)
            kept = self._public_kept
            last = None
            if keys is not None and kept is not None and kept.config is self.config:
                last = kept.cuts.get((tuple(keys), nulls), {}).get(None)
                if writes is not None and last is not None and last.asked == asked and last.after <= after <= last.ends:
                    return last.out
            # (id, rev, submit time) as plain tuples, by id: a Row's attributes cost more than its items
            heads = sorted(map(tuple, c.execute(self._select(HEADS, params), params).all()))
            if len(heads) > self.PUBLIC_KEPT:
                return self.public_list(sorted(c.execute(self._select(LISTED, params), params), key=BY_ID), keys,
                                        nulls)
            if last is not None and kept is not None and keys is not None and last.heads == heads:
                # nothing changed (a write elsewhere): the same list
                kept.cuts[(tuple(keys), nulls)][None] = last._replace(asked=asked, after=after)
                return last.out
            cache = self._kept([h[0] for h in heads])
            stale = [jid for jid, rev, sub in heads if (hit := cache.get(jid)) is None or hit[0] != (rev, sub)]
            fresh = set()
            # (with the filters again: a job changed since the first read may no longer match them)
            changed = self._select(LISTED, {**params, "among": stale})
            for i in range(0, len(stale), 500):
                for r in c.execute(changed, {**params, "among": stale[i:i + 500]}):
                    cache[r.id] = ((r.rev, r.submit_time), self.public(r))
                    fresh.add(r.id)
        shown = [(jid, hit) for jid, rev, sub in heads
                 if (hit := cache.get(jid)) is not None and (jid in fresh or hit[0] == (rev, sub))]
        if keys is None:
            return [dict(hit[1]) for _, hit in shown]
        # each job's view cut to `keys` is kept too (squeue asks for the same keys each time), with the
        # stamp of the view it was cut from; and the last list itself, with the heads it was made
        # from: the same heads again (nothing changed: squeue in a loop) give the same list object
        # (GET /jobs then sends the answer it made of it before)
        assert self._public_kept is not None  # (made by _kept above)
        cuts, which = self._public_kept.cuts, (tuple(keys), nulls)
        if which not in cuts and len(cuts) >= 8:
            cuts.clear()
        cut = cuts.setdefault(which, {})
        out = []
        for jid, (stamp, view) in shown:
            mine = cut.get(jid)
            if mine is None or mine[0] != stamp:
                mine = cut[jid] = (stamp, only_keys(view, keys, nulls))
            out.append(mine[1])
        ends = min((hit[1]["end_time"] for _, hit in shown if hit[1]["end_time"] is not None), default=math.inf)
        cut[None] = _Listed(asked, out, heads, ends, after)
        return out

    def _writes(self, c: Any) -> tuple[tuple[int, int], int] | None:  # noqa: ANN401 - a Connection
        """What changes whenever the database is written: another connection's commits (data_version)
        and this engine's; None where nothing so cheap tells (PostgreSQL): then the jobs are read again."""
        mark = data_version(c)
        return None if mark is None else (mark, self.commits)

    def _committed(self, conn: Any) -> None:  # noqa: ANN401 - a Connection
        if wrote(conn):
            self.commits += 1

    def _kept(self, ids: list[int]) -> dict:
        """The public views kept (job id -> ((rev, submit time), view)), begun anew under a new
        configuration or before the jobs `ids` would take them past PUBLIC_KEPT (with the cuts of
        them `listed` keeps)."""
        kept = self._public_kept
        if kept is None or kept.config is not self.config or \
                len(kept.views) + sum(1 for i in ids if i not in kept.views) > self.PUBLIC_KEPT:
            kept = self._public_kept = _Kept(self.config, {}, {})
        return kept.views

    def public(self, row: Any) -> dict:
        spec = json.loads(row.spec)
        req = request_of(spec)
        alloc = json.loads(row.alloc) if row.alloc else []
        het_id, het_offset = getattr(row, "het_job_id", None), getattr(row, "het_job_offset", None)
        if het_id is not None and not het_offset:  # a heterogeneous job's leader: its own component
            alloc = [a for a in alloc if not a.get("het")]
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
        interactive = bool(spec.get("interactive"))  # salloc's: its holder is no batch step
        if row.batch_host and not interactive and not het_offset:  # (the leader's runs the script)
            batch_alloc = alloc[0] if alloc else {"cpus": 1, "node": row.batch_host}
            steps.append({
                "step": "batch", "name": "batch",
                "state": row.batch_state or ("RUNNING" if row.active else row.state),
                "exit_code": row.batch_exit_code or 0, "exit_signal": row.batch_exit_signal or 0,
                "start_time": row.start_time, "end_time": row.end_time if row.batch_state else None,
                "nodes": row.batch_host or "", "num_nodes": 1, "num_cpus": batch_alloc["cpus"], "num_tasks": 1,
                **_batch_memory(row), "user_cpu": getattr(row, "batch_user_cpu", None) or 0.0,
                "system_cpu": getattr(row, "batch_system_cpu", None) or 0.0,
                "total_cpu": (getattr(row, "batch_user_cpu", None) or 0.0) + (getattr(row, "batch_system_cpu", None) or 0.0),
            })
        if alloc and row.start_time is not None and "contain" in self.config.prolog_flags:
            # PrologFlags=Contain: the extern step that holds the job's nodes, which 22.05's sacct lists
            # COMPLETED 0:0 whatever became of the job
            live = row.active or row.state in ("RUNNING", "SUSPENDED")
            steps.append({"step": "extern", "name": "extern", "state": "RUNNING" if live else "COMPLETED",
                          "exit_code": 0, "exit_signal": 0, "start_time": row.start_time, "end_time": row.end_time,
                          "nodes": row.nodes or "", "num_nodes": len(alloc), "num_cpus": num_cpus,
                          "num_tasks": len(alloc), "user_cpu": 0.0, "system_cpu": 0.0, "total_cpu": 0.0})
        return {
            "job_id": row.id, "array_job_id": row.array_job_id, "array_task_id": row.array_task_id,
            "het_job_id": het_id, "het_job_offset": het_offset,
            "het_job_id_set": fmt_ranges(spec["het_ids"]) if spec.get("het_ids") else None,
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
            "alloc_cpus": [a["cpus"] for a in alloc], "alloc_tasks": [a["tasks"] for a in alloc],
            "exit_code": row.exit_code, "exit_signal": row.exit_signal,
            "derived_exit_code": 0, "derived_exit_signal": 0,
            "workdir": spec.get("workdir"), "submit_dir": spec.get("submit_dir"),
            "stdout": row.stdout or pattern_path(row, spec, "stdout"),
            "stderr": row.stderr or pattern_path(row, spec, "stderr"),
            "stdin": spec.get("stdin") or "/dev/null",
            "stdout_pattern": spec.get("stdout"), "stderr_pattern": spec.get("stderr"),
            "comment": row.comment, "dependency": row.dependency, "command": None,
            "requeue": bool(row.requeue), "restarts": row.restarts, "batch": not interactive,
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
        weights = self.shared.billing_weights(partition)
        if alloc:
            tres = alloc_tres([NodeAlloc(a["node"], a["cpus"], a["memory"], tuple(a["gpu_ids"]), a["tasks"])
                               for a in alloc])
        else:
            tres = request_tres(req, self.config.def_mem_per_cpu or 0)
        return int(billing(tres, weights) + 1e-9)

    def node_rows(self) -> list[Any]:
        with self.engine.connect() as c:
            return list(c.execute(select(N)))

    def usage_records(self, start: float, end: float) -> tuple[list, float | None]:
        """sreport's input: every allocation (jobs and the earlier runs of requeued ones) that overlaps
        [start, end) as core.report.Used, and when this cluster was made (None: unknown)."""
        from slurmlet.controller.core.report import Used
        out = []
        with self.engine.connect() as c:
            created = c.execute(select(CL.c.created).where(CL.c.name == self.config.cluster_name)).scalar()
            overlaps = and_(J.c.start_time.is_not(None), J.c.start_time < end,
                            or_(J.c.end_time.is_(None), J.c.end_time > start))
            rows = list(c.execute(select(J.c.id, J.c.user, J.c.account, J.c.alloc, J.c.start_time, J.c.end_time,
                                         J.c.active).where(overlaps)))
            runs = list(c.execute(select(RUNS.c.job_id, RUNS.c.alloc, RUNS.c.start_time, RUNS.c.end_time).where(
                RUNS.c.start_time.is_not(None), RUNS.c.start_time < end,
                or_(RUNS.c.end_time.is_(None), RUNS.c.end_time > start))))
            owners = {r.id: (r.user, r.account) for r in rows}
            missing = {r.job_id for r in runs} - set(owners)
            if missing:
                for o in c.execute(select(J.c.id, J.c.user, J.c.account).where(J.c.id.in_(missing))):
                    owners[o.id] = (o.user, o.account)
        for r in rows:
            alloc = json.loads(r.alloc) if r.alloc else []
            if alloc:
                out.append(Used(r.user, r.account or r.user, sum(a["cpus"] for a in alloc), r.start_time,
                                None if r.active else (r.end_time or r.start_time), _gpus(alloc)))
        for run in runs:
            alloc = json.loads(run.alloc) if run.alloc else []
            user, account = owners.get(run.job_id, ("", ""))
            if alloc:
                out.append(Used(user, account or user, sum(a["cpus"] for a in alloc), run.start_time,
                                run.end_time or run.start_time, _gpus(alloc)))
        return out, created

    def capacity_rows(self) -> list[Any]:
        """The nodes' names, capacities, GPUs and pools, for submit-time checks: kept between
        submissions and read again after a node registers here or another process wrote (SQLite's
        data_version; on PostgreSQL they are read each time). The same list is given again while they
        are unchanged (views.py works out what a list of them allows once)."""
        with self.engine.connect() as c:
            mark = data_version(c)
            kept = self.capacity
            if kept is not None and mark is not None and kept[0] == mark:
                return kept[1]
            rows = list(c.execute(CAPACITY))
        if kept is not None and kept[1] == rows:
            rows = kept[1]
        self.capacity = (mark, rows)
        return rows

    def active_allocs(self) -> list[Any]:
        with self.engine.connect() as c:
            return list(c.execute(select(J.c.alloc, J.c.spec).where(J.c.active.is_(True))))


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
                    req = self.shared.requests.get(r.id) or request_of(json.loads(r.spec))
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


    def state_counts(self) -> dict[str, int]:
        """How many jobs are in each state (sdiag)."""
        with self.engine.connect() as c:
            return {st: n for st, n in c.execute(select(J.c.state, func.count()).group_by(J.c.state))}

    def _shown(self, now: float):  # noqa: ANN202
        """The jobs squeue shows: like slurmctld, finished jobs are forgotten MinJobAge seconds after they end."""
        return _shown_after(now - self.config.min_job_age)

    def state_partition_counts(self, now: float) -> dict[tuple[str, str], int]:
        """(state, partition) -> how many jobs `squeue -t all` shows in it (/metrics)."""
        q = select(J.c.state, J.c.partition, func.count()).where(self._shown(now)).group_by(J.c.state, J.c.partition)
        with self.engine.connect() as c:
            return {(st, part): n for st, part, n in c.execute(q)}

    def max_job_id(self) -> int:
        with self.engine.connect() as c:
            return c.execute(select(func.max(J.c.id))).scalar() or 0


#: job_rows' filters on a column: one of the values given
_ONE_OF = (("states", J.c.state), ("users", J.c.user), ("partitions", J.c.partition), ("names", J.c.name),
           ("accounts", J.c.account), ("qos", J.c.qos))


def _conditions(params: dict) -> list:
    """The conditions of the filters `params` names (Queries._filter_params), each value a bound
    parameter of that name."""
    conds: list[ColumnElement[bool]] = []
    if "among" in params:
        conds.append(J.c.id.in_(bindparam("among", expanding=True)))
    if "ids" in params:  # (a job, an array's tasks by the array's id, a heterogeneous job's components by its)
        conds.append(or_(J.c.id.in_(bindparam("ids", expanding=True)),
                         J.c.array_job_id.in_(bindparam("array_ids", expanding=True)),
                         J.c.het_job_id.in_(bindparam("array_ids", expanding=True))))
    conds += [column.in_(bindparam(name, expanding=True)) for name, column in _ONE_OF if name in params]
    if "shown_after" in params:
        conds.append(_shown_after(bindparam("shown_after")))
    if "since" in params:
        conds.append(or_(J.c.end_time.is_(None), J.c.end_time >= bindparam("since")))
    if "until" in params:
        conds.append(J.c.submit_time <= bindparam("until"))
    return conds


def _shown_after(after: Any):  # noqa: ANN202, ANN401 - a time or a bound parameter; a condition
    """Unfinished jobs, active ones and those that ended at `after` or later."""
    return or_(J.c.end_time.is_(None), J.c.end_time >= after, J.c.active.is_(True))


def _batch_memory(row: Any) -> dict:
    """sacct's memory figures of a batch step: its one task's, on its batch host."""
    rss, vms = getattr(row, "batch_max_rss", None), getattr(row, "batch_max_vms", None)
    if rss is None:
        return {"max_rss": None}
    out = {"max_rss": rss, "max_rss_node": row.batch_host, "max_rss_task": 0, "ave_rss": rss}
    if vms is not None:
        out.update(max_vmsize=vms, max_vmsize_node=row.batch_host, max_vmsize_task=0, ave_vmsize=vms)
    return out


def _gpus(alloc: list[dict]) -> int:
    return sum(len(a.get("gpu_ids") or ()) for a in alloc)


def only_keys(job: dict, keys: list[str] | None, nulls: bool = True) -> dict:
    """A new dict of `job`: whole, or only `keys` (those it has; without `nulls`, those not None)."""
    if keys is None:
        return dict(job)
    return {k: job[k] for k in keys if k in job} if nulls else {k: job[k] for k in keys if job.get(k) is not None}
