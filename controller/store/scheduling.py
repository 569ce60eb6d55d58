"""The scheduling pass's side of the store: the snapshot it plans on (nodes, jobs, limits,
dependencies, usage and fair share) and `apply`, which writes a plan in one transaction."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import AbstractSet, Any, Iterable

from sqlalchemy import bindparam, func, or_, select, update

from slurmlet.controller.core import fairshare
from slurmlet.controller.core.admit import per_job_reason
from slurmlet.controller.core.limits import Counter, alloc_tres, billing, request_tres
from slurmlet.controller.core.model import (
    Node,
    NodeAlloc,
    Partition,
    PendingJob,
    Plan,
    Reason,
    RunningJob,
    Snapshot,
    natural_key,
)
from slurmlet.controller.core.priority import decayed_span

from . import deps, het
from .accounts import enforce_flags
from .base import Part, Shared, compress, pattern_path, port_free, request_of
from .nodesync import NodeSync
from .tables import jobs as J
from .tables import nodes as N

# Every pass runs these: made once, with their values bound at each execution (building a statement and
# its cache key costs more than SQLite takes to run it; see prepared.py)
_PENDING = select(J.c.id, J.c.partition, J.c.priority, J.c.submit_time, J.c.time_limit, J.c.begin_time, J.c.held,
                  J.c.reason, J.c.nice, J.c.eligible_time, J.c.est_start, J.c.user, J.c.site_factor, J.c.dependency,
                  J.c.name, J.c.array_job_id, J.c.array_task_id, J.c.array_max_tasks, J.c.account,
                  J.c.qos, J.c.het_job_id, J.c.het_job_offset).where(J.c.state == "PENDING")
_ACTIVE = select(J.c.id, J.c.alloc, J.c.spec, J.c.state, J.c.partition, J.c.start_time, J.c.time_limit,
                 J.c.priority, J.c.requeue, J.c.pending_action, J.c.suspended_secs, J.c.user, J.c.account, J.c.qos,
                 J.c.preempt_time).where(J.c.active.is_(True))
_NODES = select(N)
_PORTS = select(J.c.master_port).where(J.c.active.is_(True), J.c.master_port.is_not(None))
_TO_START = select(J.c.id, J.c.name, J.c.user, J.c.spec, J.c.array_job_id,
                   J.c.array_task_id).where(J.c.id == bindparam("jid"))
_START = update(J).where(J.c.id == bindparam("jid"), J.c.state == "PENDING").values(
    master_port=bindparam("master_port"), state="RUNNING", reason="None", start_time=bindparam("now"), active=True,
    batch_host=bindparam("batch_host"), alloc=bindparam("alloc"), nodes=bindparam("nodes"),
    eligible_time=func.coalesce(J.c.eligible_time, bindparam("now", type_=J.c.eligible_time.type)),
    stdout=bindparam("stdout"), stderr=bindparam("stderr"), batch_state=None, batch_exit_code=None, batch_exit_signal=None, end_time=None,
    est_start=None, suspended_secs=0.0, suspend_time=None, preempt_time=None, preempt_grace=None)
_REASON = update(J).where(J.c.id == bindparam("jid"), J.c.state == "PENDING").values(reason=bindparam("r"))
_PRIORITY = update(J).where(J.c.id == bindparam("jid")).values(priority=bindparam("p"))
_EST_START = update(J).where(J.c.id == bindparam("jid"), J.c.state == "PENDING").values(est_start=bindparam("t"))


@dataclass(frozen=True)
class Applied:
    """What `apply` wrote that the scheduling loop acts on."""

    woken: set[str]  #: the batch hosts that got work (their agents have orders)
    cancelled: tuple[int, ...]  #: pending jobs cancelled because their dependency can never be satisfied
    next_dep_time: float | None  #: when an after:ID+minutes dependency comes due (None: none waits)


@dataclass
class _Pass:
    """What `snapshot` found that `apply` writes with the plan: the pending jobs' reasons, priorities
    and expected starts as the database has them (only changes are written), and their dependencies'
    verdicts."""

    reasons: dict[int, str] = field(default_factory=dict)
    priorities: dict[int, int] = field(default_factory=dict)
    est_starts: dict[int, float | None] = field(default_factory=dict)
    dep_updates: dict[int, str | None] = field(default_factory=dict)  #: job -> the dependency squeue shows now
    dep_kill: list[int] = field(default_factory=list)  #: jobs to cancel: their dependency can never be satisfied
    next_dep_time: float | None = None
    het: set[int] = field(default_factory=set)  #: the heterogeneous jobs' leaders (their components follow)


class Scheduling(Part):
    """The scheduling pass's snapshot and the writing of its plan; usage and fair share."""

    def __init__(self, shared: Shared, nodes: NodeSync):
        super().__init__(shared)
        self.nodes = nodes  #: (a started job's prologs)
        self._pass = _Pass()
        self._deps: dict[int, tuple[deps.Dependency, bool]] = {}  #: parsed once per pending job
        self._usage_at: float | None = None  #: when per-association usage was last computed
        self._assoc_usage: dict[tuple[str, str], float] = {}
        #: (accounts version, usage time, keys) -> fair-share factors
        self._fs: tuple[tuple[int, float | None, frozenset[tuple[str, str]]],
                        dict[tuple[str, str], tuple[float, float]]] | None = None

    def forget_usage(self) -> None:
        """Work usage out anew at the next pass (a new configuration)."""
        self._usage_at = None

    # ---------------------------------------------------------------- scheduling
    def snapshot(self, now: float) -> Snapshot:
        with self.engine.connect() as c:
            pend = list(c.execute(_PENDING))
            comps: dict[int, list[Any]] = {}  # heterogeneous jobs: their leaders stand for them
            if any(r.het_job_offset for r in pend):
                for r in sorted((r for r in pend if r.het_job_offset), key=lambda r: r.het_job_offset):
                    comps.setdefault(r.het_job_id, []).append(r)
                pend = [r for r in pend if not r.het_job_offset]
            # a job's request never changes after submission: parse each spec once
            missing = [r.id for r in pend + [x for rs in comps.values() for x in rs] if r.id not in self.shared.requests]
            for i in range(0, len(missing), 500):
                for jid, spec in c.execute(select(J.c.id, J.c.spec).where(J.c.id.in_(missing[i:i + 500]))):
                    self.shared.requests[jid] = request_of(json.loads(spec))
            self._pass = found = _Pass()
            blocked = self._dependencies(c, [r for r in pend if r.dependency], now, found)
            blocked.update(self._throttled(c, [r for r in pend if r.array_max_tasks and r.id not in blocked]))
            act = list(c.execute(_ACTIVE))
            node_rows = list(c.execute(_NODES))
        live = {r.id for r in pend} | {x.id for rs in comps.values() for x in rs}
        if len(self.shared.requests) > 2 * len(live) + 1000:
            self.shared.requests = {k: v for k, v in self.shared.requests.items() if k in live}
        if len(self._deps) > 2 * len(live) + 1000:
            self._deps = {k: v for k, v in self._deps.items() if k in live}
        fs: dict[tuple[str, str], tuple[float, float]] = {}
        if self.shared.weights.fairshare:
            fs = self.fairshare_factors(now, {(r.account, r.user) for r in pend})
        tree = self.shared.accounts.tree()
        qos_top = max((q.priority for q in tree.qos.values()), default=0)
        qos_factor = {name: q.priority / qos_top for name, q in tree.qos.items()} if qos_top > 0 else {}
        counters, charges = self._limits(tree, pend, act, blocked)
        pending = tuple(PendingJob(
            job_id=r.id, partition=r.partition, request=self.shared.requests[r.id], priority=r.priority,
            submit_time=r.submit_time, time_limit=r.time_limit, begin_time=r.begin_time, held=r.held,
            nice=r.nice, eligible_time=r.eligible_time,
            fs_factor=fs[(r.account, r.user)][0] if fs else None, site=r.site_factor or 0,
            blocked_reason=blocked.get(r.id), qos=r.qos, qos_factor=qos_factor.get(r.qos, 0.0),
            limits=charges.get(r.id, ()),
            het=tuple((x.partition, self.shared.requests[x.id]) for x in comps.get(r.id, ())))
            for r in pend)
        found.reasons = {r.id: r.reason for r in pend}
        found.het = set(comps) | {r.id for r in act if r.alloc and '"het"' in r.alloc}
        found.priorities = {r.id: r.priority for r in pend}
        found.est_starts = {r.id: r.est_start for r in pend}
        running = tuple(self._running_job(r) for r in act if r.alloc)
        return Snapshot(now=now, nodes=self._sched_nodes(node_rows, act, now),
                        partitions=self._sched_partitions(node_rows), pending=pending,
                        def_mem_per_cpu=self.config.def_mem_per_cpu or 0, weights=self.shared.weights,
                        running=running, config=self.shared.sched, counters=counters,
                        qos_preempt={n: tuple(q.preempt) for n, q in tree.qos.items() if q.preempt},
                        qos_preempt_mode={n: self._qos_mode(q) for n, q in tree.qos.items()})

    def _qos_mode(self, q: Any) -> str:
        """A QOS's PreemptMode; `cluster`: the cluster's PreemptMode."""
        from slurmlet.controller.config import _preempt_mode
        return q.preempt_mode.upper() if q.preempt_mode != "cluster" else _preempt_mode(self.config.preempt_mode,
                                                                                             "PreemptMode")

    def admin_level(self, user: str) -> int:
        """sacctmgr AdminLevel of a user: 0 None, 1 Operator, 2 Administrator."""
        row = self.shared.accounts.tree().users.get(user)
        return {"Operator": 1, "Administrator": 2}.get(row.admin_level, 0) if row is not None else 0

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
                got = memo[key] = self.shared.accounts.job_limits(tree, user=user, account=account, partition=partition,
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
            bill = billing(amounts, self.shared.billing_weights(r.partition))
            for key, tres, _cap, _why in lims:
                used[key] = used.get(key, 0.0) + (1 if tres == "jobs" else bill if tres == "billing"
                                                  else amounts.get(tres, 0))
        charges: dict[int, tuple[str, ...]] = {}
        def_mem = self.config.def_mem_per_cpu or 0
        verdicts: dict[tuple, Reason | None] = {}  # queues hold many equal requests: one check each
        for r in pend:
            lims, a, q = of(r.user, r.account, r.partition, r.qos)
            if a is not None and r.id not in blocked:
                req = self.shared.requests[r.id]
                vkey = (r.user, r.account, r.partition, r.qos, req, r.time_limit)
                if vkey not in verdicts:
                    tres = request_tres(req, def_mem)
                    verdicts[vkey] = per_job_reason(
                        tree, a, q, tres, billing(tres, self.shared.billing_weights(r.partition)), r.time_limit)
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

    def _dependencies(self, c: Any, rows: list[Any], now: float, verdicts: _Pass) -> dict[int, Reason]:
        """Evaluate the dependencies of pending jobs: their blocking reasons; what changed in what
        squeue shows, the jobs to cancel and when to look again go in `verdicts`, for `apply`."""
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
            if it.target is None:  # (singleton: no target)
                return []
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
                verdicts.dep_updates[r.id] = shown
            if verdict == "never":
                out[r.id] = Reason.DEPENDENCY_NEVER
                if kill or kill_all:
                    verdicts.dep_kill.append(r.id)
            elif verdict == "wait":
                out[r.id] = Reason.DEPENDENCY
            if wake is not None:
                verdicts.next_dep_time = wake if verdicts.next_dep_time is None else min(verdicts.next_dep_time, wake)
        return out

    def assoc_usage(self, now: float) -> dict[tuple[str, str], float]:
        """Raw usage per (account, user): billing-weighted TRES-seconds (TRESBillingWeights of the
        job's partition; CPU-seconds without weights) times the QOS's UsageFactor, decayed by
        PriorityDecayHalfLife second by second. Recomputed every PriorityCalcPeriod."""
        if self._usage_at is not None and now - self._usage_at < self.config.priority_calc_period():
            return self._assoc_usage
        half = self.shared.weights.decay_half_life
        factor = {n: q.usage_factor for n, q in self.shared.accounts.tree().qos.items()}
        use: dict[tuple[str, str], float] = {}
        with self.engine.connect() as c:
            rows = c.execute(select(J.c.user, J.c.account, J.c.qos, J.c.partition, J.c.alloc, J.c.start_time,
                                    J.c.end_time, J.c.suspended_secs)
                             .where(J.c.start_time.is_not(None), J.c.alloc.is_not(None)))
            for r in rows:
                end = r.end_time or now
                amounts = alloc_tres([NodeAlloc(a["node"], a["cpus"], a["memory"], tuple(a["gpu_ids"]), a["tasks"])
                                      for a in json.loads(r.alloc)])
                rate = billing(amounts, self.shared.billing_weights(r.partition)) * factor.get(r.qos, 1.0)
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
                tres = alloc_tres([NodeAlloc(a["node"], a["cpus"], a["memory"], tuple(a["gpu_ids"]), a["tasks"])
                                   for a in json.loads(r.alloc)])
                amounts: dict[str, float] = {**tres, "billing": billing(tres, self.shared.billing_weights(r.partition))}
                mine = out.setdefault((r.account, r.user), {})
                for k, v in amounts.items():
                    mine[k] = mine.get(k, 0.0) + v * left
        return out

    def share_tree(self, now: float, extra: AbstractSet[tuple[str, str]] = frozenset()) -> fairshare.ShareNode:
        """The fair-share tree with usage and factors. Users with jobs but no association (no
        AccountingStorageEnforce) join their account, else root, with one share each."""
        tree = self.shared.accounts.tree()
        usage = self.assoc_usage(now)
        users: dict[tuple[str, str], int] = {}
        for a in tree.assocs:
            if a.user:
                users.setdefault((a.account, a.user), a.shares)
        for acct, user in set(usage) | set(extra):
            if (acct, user) not in users:
                users[(acct if acct in tree.accounts else "root", user)] = 1
        accounts = {name: (row.parent, top.shares if (top := tree.by_key.get((name, "", ""))) else 1)
                    for name, row in tree.accounts.items()}
        if usage:  # implicit users filed under root: their usage follows them there
            usage = {(k[0] if k[0] in tree.accounts else "root", k[1]): v for k, v in usage.items()}
        root = fairshare.build_tree(accounts, [(a, u, sh) for (a, u), sh in users.items()], usage)
        return fairshare.compute(root, self.config.fair_tree())

    def fairshare_factors(self, now: float, keys: set[tuple[str, str]]) -> dict[tuple[str, str], tuple[float, float]]:
        """(account, user) -> (fair-share factor, NormShares), for the priority of pending jobs."""
        self.assoc_usage(now)  # recomputed every PriorityCalcPeriod: the memo below follows it
        memo_key = (self.shared.accounts.version, self._usage_at, frozenset(keys))
        if self._fs is not None and self._fs[0] == memo_key:
            return self._fs[1]
        got = fairshare.factors(self.share_tree(now, keys))
        tree = self.shared.accounts.tree()
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
                          held_stopped=r.state == "SUSPENDED" and r.preempt_time is None,
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
                               preempt_mode=self.config.preempt_mode_of(p), grace_time=p.grace_time,
                               max_nodes=p.max_nodes)
                     for p in self.config.partitions)

    def apply(self, plan: Plan, now: float) -> Applied:
        """Write a plan (of the last `snapshot`) in one transaction."""
        woken: set[str] = set()
        found = self._pass
        last = found.reasons
        with self.engine.begin() as c:
            ports = {p for (p,) in c.execute(_PORTS)} if plan.starts else set()
            for jid, shown in found.dep_updates.items():
                vals: dict = {"dependency": shown}
                if shown is None:  # all satisfied: the job becomes eligible (the age factor starts)
                    vals["eligible_time"] = func.coalesce(J.c.eligible_time, now)
                c.execute(update(J).where(J.c.id == jid, J.c.state == "PENDING").values(**vals))
            for jid in found.dep_kill:
                c.execute(update(J).where(J.c.id == jid, J.c.state == "PENDING").values(
                    state="CANCELLED", reason="DependencyNeverSatisfied", start_time=now, end_time=now))
            for s in plan.starts:
                row = c.execute(_TO_START, {"jid": s.job_id}).one()
                spec = json.loads(row.spec)
                host = s.allocs[0].node
                port = 29500 + s.job_id % 1000  # a port per job: no two running jobs share one
                while port in ports or not port_free(port):
                    port += 1
                ports.add(port)
                res = c.execute(_START, {
                    "jid": s.job_id, "master_port": port, "now": now, "batch_host": host,
                    "alloc": het.alloc_json(s.allocs), "nodes": compress([a.node for a in s.allocs if not a.het]),
                    "stdout": pattern_path(row, spec, "stdout", host),
                    "stderr": pattern_path(row, spec, "stderr", host)})
                if res.rowcount == 1:
                    woken.add(host)
                    woken.update(self.nodes.start_prologs(c, s.job_id, now))
            changed = [{"jid": jid, "r": r.value} for jid, r in plan.reasons.items() if last.get(jid) != r.value]
            if changed:
                c.execute(_REASON, changed)
            prio = [{"jid": jid, "p": p} for jid, p in plan.priorities.items() if found.priorities.get(jid) != p]
            if prio:
                c.execute(_PRIORITY, prio)
            est = [{"jid": jid, "t": t} for jid, t in plan.start_times.items() if found.est_starts.get(jid) != t]
            if est:
                c.execute(_EST_START, est)
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
                    woken.add(c.execute(select(J.c.batch_host).where(J.c.id == p.victim)).scalar_one())
            for jid in plan.resumes:
                held = c.execute(select(J.c.suspend_time, J.c.batch_host).where(
                    J.c.id == jid, J.c.state == "SUSPENDED", J.c.active.is_(True))).first()
                if held is None:
                    continue
                c.execute(update(J).where(J.c.id == jid, J.c.state == "SUSPENDED").values(
                    state="RUNNING", suspend_time=None,
                    suspended_secs=J.c.suspended_secs + max(0.0, now - (held.suspend_time or now))))
                woken.add(held.batch_host)
            het.follow(c, found.het)
        return Applied(woken, tuple(found.dep_kill), found.next_dep_time)

