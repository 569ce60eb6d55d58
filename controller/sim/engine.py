"""The trace replayer: a discrete-event loop around the scheduling core's `plan()`.

The machine is `procs` single-CPU nodes (n0001, n0002, ...), in one partition or in a slurm.conf's
partitions, each spanning all of them (`Policy.partitions`). A job of size k asks for k nodes
(`Request(nodes_min=k)`), its time limit is its requested time (else its partition's MaxTime), and
it holds its nodes for `SwfJob.occupied` seconds, killed at that limit. At every instant where
jobs complete or arrive, all completions and then all arrivals are applied, and then (at most)
one scheduling pass runs:
a `Snapshot` of the nodes, the pending queue and the running jobs goes to `plan()`, and the
plan's starts are applied. The clock then jumps to the next arrival or completion.

With policy slurm the passes follow the controller's own cycle (controller/loops/scheduler.py):
an event (an arrival, a completion) gets a main pass, and a backfill pass (main pass and backfill)
runs once bf_interval seconds have passed since the last one, if anything changed since: at the
first event after that, or at the instant it comes due when no event comes first (right after the
last pass when it was due by then). fcfs and easy backfill in every pass, as the literature's
simulators do.

Nothing is rebuilt that did not change: every node exists as two prebuilt `Node` values (free and
busy) and a start or completion swaps only its own nodes; pending jobs are prebuilt `PendingJob`
values; the partition tuple is built once. A pass is skipped when it cannot start anything:

* always when no pending job is small enough for the free processors (a start needs that);
* with the main pass only and equal priorities (policy fcfs), when the queue's head does not fit,
  and the pass sees only the jobs that can matter: the head, the jobs behind it that fit with it,
  and the first one that does not (the core starts a prefix of the queue and stops there);
* with EASY backfill and equal priorities, unless something completed or a job that fits arrived
  since the last pass (a job that neither the main pass nor backfill could start stays unstartable
  while nothing completes: the head's reservation does not move and time only runs out); and the
  pass sees only the prefix the main pass starts, the first job that does not fit (the only one
  that reserves) and, of the jobs behind it, those that fit in the processors left.

* with multifactor priority (policy slurm), the pass sees only the head of the queue in the
  core's own order that holds every job it can start (`Ranking.head`): the jobs the main pass
  starts, the one it stops at, and the jobs backfill tests after it (bf_max_job_test) down to
  the last one no wider than the free processors. The head is cut between two integer
  priorities, so it is exactly the first jobs of the core's order; whether it reached far
  enough is checked on the plan, and the pass is redone with the whole queue when not.

Every pass asks the core for its starts only (`plan(..., only_starts=True)`): backfill stops once
none of the jobs it has left to test can start now (their start times are not needed here).

`exact=True` turns the last three and that off (a full pass with the full queue at every instant
at which some pending job fits); the tests check that both give the same schedule.

The core is controller/core's, compiled with mypyc where the package was built with it
(`slurmlet.controller.sim.native`, from the same sources, with `Ranking`: about 1.7 times faster),
else the Python modules themselves: `core()` says which (SLURMLET_SIM_CORE=python or compiled
chooses).
"""

from __future__ import annotations

import heapq
import math
import os
import time
from bisect import bisect_left, bisect_right, insort
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from types import ModuleType
from typing import Any

from slurmlet.controller.config import ClusterConfig
from slurmlet.controller.core import memo as py_memo
from slurmlet.controller.core import model as py_model
from slurmlet.controller.core import order as py_order
from slurmlet.controller.core import plan as py_plan
from slurmlet.controller.core.model import Node, PendingJob, SchedConfig
from slurmlet.controller.core.priority import Weights

from . import ranking as py_ranking
from .swf import SwfJob, Trace

POLICIES = ("fcfs", "easy", "slurm")
#: `slurm` without --config: age and job size, PriorityMaxAge 7 days
DEFAULT_SLURM_WEIGHTS = Weights(age=1000, jobsize=1000, max_age=7 * 86400.0)
HUGE = 1_000_000_000  #: bf_max_job_test for easy: no limit in practice
HEAD_MIN = 24  #: slurm: shorter queues go to the core whole (the head would not save much)
PARTITION = "batch"
SKIP_OVER_MAX_TIME = "time limit over its partition's MaxTime"
#: slurm without --config: the defaults of a slurm.conf that sets nothing (bf_interval, the
#: requeue delay), read where the controller reads them
CONF_DEFAULTS = ClusterConfig()


@dataclass(frozen=True)
class Core:
    """The scheduling core a simulation runs on: the modules of it the engine calls (and the
    engine's `Ranking`, compiled with them)."""

    name: str  #: "compiled" or "python"
    model: ModuleType
    plan: ModuleType
    order: ModuleType  #: `priorities`
    memo: ModuleType  #: `Memo`: one per run
    ranking: ModuleType
    why: str = ""  #: python: why not the compiled core ("" when asked for)

    @property
    def label(self) -> str:
        """What `slurmlet simulate` and bench_sim.py print: the core, and why not the compiled one."""
        return core_label(self.name, self.why)

    def convert(self, obj: Any) -> Any:
        """A SchedConfig or Weights of the Python core as this core's own (its classes differ)."""
        cls = getattr(self.model, type(obj).__name__)
        return obj if type(obj) is cls else cls(**{f.name: getattr(obj, f.name) for f in fields(obj)})


_CORES: dict[str, Core] = {}


def core_label(name: str, why: str = "") -> str:
    return ("compiled (mypyc)" if name == "compiled" else name) + (f" ({why})" if why else "")


def core(which: str | None = None) -> Core:
    """The core to simulate on: `which` (or $SLURMLET_SIM_CORE) is "compiled", "python" or "auto"
    (the default: the compiled core where it is built and matches the installed sources)."""
    source = "" if which else " (from $SLURMLET_SIM_CORE)"
    which = which or os.environ.get("SLURMLET_SIM_CORE") or "auto"
    if which not in ("auto", "compiled", "python"):
        raise ValueError(f"unknown core {which!r}{source} (choose from auto, compiled, python)")
    if which not in _CORES:
        why = ""
        if which != "python":
            try:
                from . import native
                if "compiled" not in _CORES:
                    mods = native.load()
                    _CORES["compiled"] = Core("compiled", mods["model"], mods["plan"], mods["order"], mods["memo"],
                                              mods["ranking"])
                _CORES[which] = _CORES["compiled"]
                return _CORES[which]
            except ImportError as e:
                if which == "compiled":
                    raise
                why = f"the compiled core is {e}"
        _CORES[which] = Core("python", py_model, py_plan, py_order, py_memo, py_ranking, why)
    return _CORES[which]


class SimulationError(RuntimeError):
    """The core produced a plan the simulator cannot apply (or left jobs that can never start)."""


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    config: SchedConfig
    weights: Weights = Weights()
    #: seconds between backfill passes, as the controller's loop spaces them (bf_interval); None:
    #: every pass backfills (EASY as the literature simulates it)
    bf_interval: float | None = None
    #: a slurm.conf's partitions (their nodes left out: each one spans the whole machine), the
    #: first Default=YES one first; none: one partition
    partitions: tuple[py_model.Partition, ...] = ()
    #: seconds before a job requeued by preemption may start again
    requeue_delay: float = float(CONF_DEFAULTS.requeue_delay)


def easy_window_minutes(jobs: Sequence[SwfJob]) -> int:
    """A backfill window that covers the whole trace: the span of its submit times plus twice its
    longest requested time (no reservation or backfilled job can end further ahead than that);
    unlimited jobs (requested time infinite) reserve nothing and are left out."""
    if not jobs:
        return 1
    span = max(j.submit for j in jobs) - min(j.submit for j in jobs)
    longest = max((j.requested for j in jobs if j.requested != math.inf), default=0)
    return max(1, math.ceil((span + 2 * longest) / 60) + 1)


def policy(name: str, jobs: Sequence[SwfJob] = (), conf=None) -> Policy:  # noqa: ANN001 - ClusterConfig
    """The SchedConfig and priority weights of a named policy.

    fcfs: main pass only, equal priorities (submit time, then job id). easy: EASY backfilling
    (bf_easy, a window covering the trace, 1 s resolution, no job-test limit), equal priorities.
    slurm: multifactor priority (`conf.priority_weights()` when a slurm.conf is given, else
    age + job size) and Slurm's backfill defaults (or the conf's SchedulerType and
    SchedulerParameters), on the controller's cycle: a main pass at each event, a backfill pass
    at most every bf_interval seconds (30 by default) while anything changed since the last one.
    """
    if name == "fcfs":
        return Policy(name, SchedConfig(backfill=False))
    if name == "easy":
        return Policy(name, SchedConfig(backfill=True, bf_easy=True, bf_window=easy_window_minutes(jobs),
                                        bf_resolution=1, bf_max_job_test=HUGE))
    if name == "slurm":
        if conf is None:
            return Policy(name, SchedConfig(), DEFAULT_SLURM_WEIGHTS, CONF_DEFAULTS.bf_interval())
        return Policy(name, conf.sched_config(), conf.priority_weights(), conf.bf_interval(), conf_partitions(conf),
                      float(conf.requeue_delay))
    raise ValueError(f"unknown policy {name!r} (choose from {', '.join(POLICIES)})")


def conf_partitions(conf) -> tuple[py_model.Partition, ...]:  # noqa: ANN001 - ClusterConfig
    """A slurm.conf's partitions as the simulator runs them: name, MaxTime, PriorityTier,
    PriorityJobFactor, PreemptMode and GraceTime, and no nodes (each spans the machine); the
    default partition first (Default=YES, else the first)."""
    default = conf.default_partition()
    parts = [py_model.Partition(p.name, (), max_time=p.max_time, priority_tier=p.priority_tier,
                                priority_job_factor=p.priority_job_factor, preempt_mode=conf.preempt_mode_of(p),
                                grace_time=p.grace_time)
             for p in conf.partitions]
    return tuple(sorted(parts, key=lambda p: p.name != default.name)) if default is not None else tuple(parts)


def homes(jobs: Sequence[SwfJob], parts: Sequence[Any]) -> list[str]:
    """The partition each job runs in: its own where `parts` has it, else the first (the default)."""
    names = {p.name for p in parts}
    return [j.partition if j.partition in names else parts[0].name for j in jobs]


def over_max_time(jobs: Sequence[SwfJob], parts: Sequence[Any]) -> list[bool]:
    """Per job: whether its time limit is above its partition's MaxTime (such a job waits for ever
    with PartitionTimeLimit, under EnforcePartLimits=NO as under Slurm's default)."""
    if not parts:
        return [False] * len(jobs)
    max_time = {p.name: p.max_time for p in parts}
    return [max_time[h] is not None and j.requested != math.inf and j.requested > max_time[h] * 60
            for j, h in zip(jobs, homes(jobs, parts))]


@dataclass(slots=True)
class SimResult:
    policy: str
    max_procs: int
    jobs: list[SwfJob]  #: in queue order: (submit time, job id)
    start: list[float]  #: per job, same order
    end: list[float]
    wall_s: float = 0.0  #: the event loop's own run time
    passes: int = 0  #: plan() calls
    idle_passes: int = 0  #: plan() calls that started nothing
    queued: int = 0  #: pending jobs handed to plan(), summed over the passes
    instants: int = 0  #: distinct event times
    core_s: float = 0.0  #: time spent inside plan()
    #: slurm: passes handed only the head of the queue whose plan had to be redone with all of it
    redone: int = 0
    bf_tested: int = 0  #: jobs backfill examined, summed over the passes (fast mode: it stops when none can start)
    skipped: dict[str, int] = field(default_factory=dict)  #: from the trace's cleaning
    core: str = "python"  #: the core it ran on: "compiled" (mypyc) or "python"
    backfilled: list[bool] = field(default_factory=list)  #: per job: started by the backfill pass
    preempted: list[int] = field(default_factory=list)  #: per job: times it was preempted (cancelled or requeued)
    #: per job: the CPU-seconds it held, every run (a preempted run until it gave its CPUs back)
    work: list[float] = field(default_factory=list)

    def summary(self) -> dict:
        n = len(self.jobs)
        out: dict = {"policy": self.policy, "machine_procs": self.max_procs, "jobs": n,
                     "skipped": sum(self.skipped.values()), "skipped_by_reason": dict(self.skipped)}
        if n:
            first = min(j.submit for j in self.jobs)
            last = max(self.end)
            makespan = last - first
            waits = [s - j.submit for j, s in zip(self.jobs, self.start)]
            work = sum(self.work)
            bsld = sum(bounded_slowdown(w, j.occupied) for j, w in zip(self.jobs, waits))
            out.update(makespan_s=_num(makespan),
                       utilization=round(work / (self.max_procs * makespan), 6) if makespan > 0 else 0.0,
                       mean_wait_s=round(sum(waits) / n, 3), mean_bounded_slowdown=round(bsld / n, 4),
                       max_wait_s=_num(max(waits)))
        else:
            out.update(makespan_s=0, utilization=0.0, mean_wait_s=0.0, mean_bounded_slowdown=0.0, max_wait_s=0)
        out.update(preemptions=sum(self.preempted))
        out.update(passes=self.passes, idle_passes=self.idle_passes, core=self.core, wall_s=round(self.wall_s, 4),
                   core_s=round(self.core_s, 4), jobs_per_s=round(n / self.wall_s, 1) if self.wall_s > 0 else 0.0)
        return out

    def schedule_lines(self) -> list[str]:
        """`job_id submit start end procs`, sorted by job id (trace ids and seconds)."""
        rows = sorted(zip(self.jobs, self.start, self.end), key=lambda r: (r[0].job_id, r[0].submit, r[0].line))
        return [f"{j.job_id} {_num(j.submit)} {_num(s)} {_num(e)} {j.procs}" for j, s, e in rows]


def bounded_slowdown(wait: float, run: float, tau: float = 10) -> float:
    """max(1, (wait + run) / max(run, tau)): a job's slowdown, short jobs counted as `tau` long."""
    return max(1.0, (wait + run) / max(run, tau))


def minutes(seconds: float) -> float:
    """`seconds` as a time limit in minutes whose `* 60` is never above `seconds`.

    The core works in seconds (`limit * 60`) and rounds times up to its backfill resolution; for
    about 3% of integers r, `r / 60 * 60` is r plus one ulp, which would round up to r + 1 s.
    One step down gives r minus one ulp, which rounds up to r.
    """
    m = seconds / 60
    if m * 60 > seconds:
        m = math.nextafter(m, -math.inf)
    return m


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def simulate(trace: Trace, pol: Policy, *, exact: bool = False, on: Core | None = None) -> SimResult:
    """Replays `trace` under `pol` on the core `on` (default: `core()`). Jobs whose time limit is
    above their partition's MaxTime would wait for ever: they are skipped and counted."""
    over = over_max_time(trace.jobs, pol.partitions)
    jobs = [j for j, bad in zip(trace.jobs, over) if not bad] if any(over) else trace.jobs
    res = Engine(jobs, trace.max_procs, pol.config, pol.weights, exact=exact, name=pol.name, on=on,
                 bf_interval=pol.bf_interval, partitions=pol.partitions, requeue_delay=pol.requeue_delay).run()
    res.skipped = dict(trace.skipped)
    if len(jobs) < len(trace.jobs):
        res.skipped[SKIP_OVER_MAX_TIME] = len(trace.jobs) - len(jobs)
    return res


class Engine:
    def __init__(self, jobs: Sequence[SwfJob], procs: int, config: SchedConfig, weights: Weights = Weights(),  # noqa: B008 - frozen: one shared default is safe
                 *, exact: bool = False, name: str = "", on: Core | None = None, bf_interval: float | None = None,
                 partitions: Sequence[py_model.Partition] = (),
                 requeue_delay: float = float(CONF_DEFAULTS.requeue_delay)):
        if procs <= 0:
            raise ValueError("the machine needs at least one processor")
        too_wide = [j.job_id for j in jobs if j.procs > procs or j.procs <= 0 or j.occupied <= 0]
        if too_wide:
            raise ValueError(f"jobs that cannot run on {procs} processors: {too_wide[:5]}")
        self.core = on = on or core()
        Node, Partition, PendingJob, Request = on.model.Node, on.model.Partition, on.model.PendingJob, on.model.Request
        self.procs = procs
        self.config = on.convert(config)
        self.weights = on.convert(weights)
        self.exact = exact
        self.name = name
        self.bf_interval = bf_interval if config.backfill else None
        # queue order: submit time, then job id (the file position breaks exact ties)
        self.jobs = [j for _, j in sorted(enumerate(jobs), key=lambda p: (p[1].submit, p[1].job_id, p[0]))]
        width = max(4, len(str(procs)))
        self.names = tuple(f"n{i:0{width}d}" for i in range(1, procs + 1))
        self.free_nodes = [Node(nm, 1, 0, 0) for nm in self.names]
        self.busy_nodes = [Node(nm, 1, 0, 0, cpus_used=1) for nm in self.names]
        self.index = {nm: i for i, nm in enumerate(self.names)}
        # a conf's partitions, each over the whole machine (so that nodes stay interchangeable);
        # a job whose partition is not one of them runs in the first (the default). Partitions
        # that schedule alike (PriorityTier, PriorityJobFactor, PreemptMode, GraceTime) are one
        # partition of the core, named after the first of them: the core's cost grows with its
        # partitions, and the engine gives each job its own partition's MaxTime as its limit
        self.requeue_delay = requeue_delay
        alike: dict[tuple, str] = {}
        core_of: dict[str, str] = {}
        for p in partitions:
            core_of[p.name] = alike.setdefault((p.priority_tier, p.priority_job_factor, p.preempt_mode, p.grace_time),
                                               p.name)
        self.partitions = (tuple(Partition(name, self.names, priority_tier=tier, priority_job_factor=factor,
                                           preempt_mode=mode, grace_time=grace)
                                 for (tier, factor, mode, grace), name in alike.items())
                           or (Partition(PARTITION, self.names),))
        home = homes(self.jobs, partitions) if partitions else [PARTITION] * len(self.jobs)
        max_s = {p.name: p.max_time * 60.0 for p in partitions if p.max_time is not None}
        #: per job, the seconds its CPUs are planned for: its time limit, else its partition's MaxTime
        self.limit_s = [j.requested if j.requested != math.inf else max_s.get(h, math.inf)
                        for j, h in zip(self.jobs, home)]
        home = [core_of.get(h, h) for h in home]
        reqs: dict[int, py_model.Request] = {}  # (the compiled core's Request where it runs)
        # core job ids are 1 + the position in queue order, so the core's (priority, submit time,
        # job id) order is the trace's (submit time, job id) order even when trace ids repeat
        self.pending_jobs = [
            PendingJob(job_id=k + 1, partition=home[k], request=reqs.setdefault(j.procs, Request(nodes_min=j.procs)),
                       submit_time=float(j.submit), eligible_time=float(j.submit),
                       time_limit=minutes(lim) if lim != math.inf else None)  # inf: unlimited
            for k, (j, lim) in enumerate(zip(self.jobs, self.limit_s))]

    def run(self) -> SimResult:
        t0 = time.perf_counter()
        Snapshot, RunningJob, plan = self.core.model.Snapshot, self.core.model.RunningJob, self.core.plan.plan
        memo = self.core.memo.Memo()  # what the core keeps from one pass to the next, for this run
        jobs, pend_objs = self.jobs, self.pending_jobs
        n, procs = len(jobs), self.procs
        size = [j.procs for j in jobs]
        submit = [j.submit for j in jobs]
        occupied = [j.occupied for j in jobs]
        limit_s = self.limit_s
        start: list[float] = [math.nan] * n
        end: list[float] = [math.nan] * n
        backfilled = [False] * n
        preempted = [0] * n
        work = [0.0] * n  # CPU-seconds each job held, all its runs
        cfg, weights = self.config, self.weights
        free_nodes, busy_nodes, index, parts = self.free_nodes, self.busy_nodes, self.index, self.partitions
        node_list = list(free_nodes)
        nodes_t = tuple(node_list)
        nodes_dirty = False
        # the controller's cycle (controller/loops/scheduler.py): a main pass at each event, a
        # backfill pass once bf_interval has passed since the last one, if anything changed since
        every = self.bf_interval
        bf_dirty, next_bf = cfg.backfill, -math.inf
        last = -math.inf  # the instant of the last pass
        # (the core orders jobs by PriorityTier first: the shortcuts below, and the head cut from
        # priorities alone, need every job's partition to have the same tier; then none can
        # preempt another)
        homes_used = {pj.partition for pj in pend_objs}
        one_tier = len({p.priority_tier for p in parts if p.name in homes_used}) <= 1
        # fcfs and easy: the shortcuts need every pass to backfill (or none)
        fcfs = not cfg.backfill and not weights.active and not self.exact and one_tier
        easy = cfg.backfill and cfg.bf_easy and not weights.active and not self.exact and one_tier and every is None
        fast = not self.exact  # backfill may stop once nothing it has left to test can start
        # multifactor: hand a pass the head of the queue that holds every job it can start
        bf_window = (cfg.bf_max_job_test if cfg.backfill else 0)
        ranked = (self._ranking(nodes_t) if weights.active and not self.exact and bf_window >= 0 and one_tier
                  else None)
        # partition_prio across tiers: a job may start on the CPUs of the jobs it preempts
        preempting = cfg.preempt and not cfg.preempt_qos and not one_tier
        again: list[tuple[float, int]] = []  # (when, queue position): jobs requeued by preemption
        requeue_delay = self.requeue_delay
        redone = 0
        pending: dict[int, PendingJob] = {}  # core id -> job, in queue order
        running: dict[int, py_model.RunningJob] = {}  # (the compiled core's where it runs)
        sizes: list[int] = []  # the pending jobs' sizes, sorted
        heap: list[tuple[float, int]] = []  # (end, queue position)
        free = procs
        head = 0  # fcfs: queue position of the first job not started yet
        i = 0  # next arrival
        passes = instants = idle = queued = bf_tested = 0
        core_s = 0.0
        inf = math.inf
        while i < n or heap or again or (every is not None and bf_dirty and pending):
            while heap and end[heap[0][1]] != heap[0][0]:  # an end a preemption moved
                heapq.heappop(heap)
            t = submit[i] if i < n else inf
            if heap and heap[0][0] <= t:
                t = heap[0][0]
            if again and again[0][0] < t:
                t = again[0][0]
            if every is not None and bf_dirty and next_bf < t:
                # a backfill pass comes due before the next event (right after the last pass
                # when it was due by then, as the controller's loop runs it)
                t = next_bf if next_bf > last else last
            last = t
            instants += 1
            completed = False
            while heap and heap[0][0] == t:
                k = heapq.heappop(heap)[1]
                if end[k] != t:
                    continue
                rj = running.pop(k + 1)
                work[k] += size[k] * (t - start[k])
                for a in rj.allocs:
                    x = index[a.node]
                    node_list[x] = free_nodes[x]
                free += size[k]
                completed = True
                nodes_dirty = True
            new_min = procs + 1
            while i < n and submit[i] == t:
                s = size[i]
                pending[i + 1] = pend_objs[i]
                insort(sizes, s)
                if ranked is not None:
                    ranked.add(i)
                if s < new_min:
                    new_min = s
                i += 1
            while again and again[0][0] == t:  # eligible again after a requeue: a new eligible time
                k = heapq.heappop(again)[1]
                pending[k + 1] = replace(pend_objs[k], eligible_time=float(t))
                insort(sizes, size[k])
                if size[k] < new_min:
                    new_min = size[k]
            if every is None:
                bf_now = cfg.backfill
            else:
                bf_now = bf_dirty and t >= next_bf
                bf_dirty, next_bf = (False, t + every) if bf_now else (True, next_bf)
            window = bf_window if bf_now else 0
            if not pending or (sizes[0] > free and not preempting):
                continue
            if fcfs:
                if size[head] > free:
                    continue
                # the head and the jobs that fit behind it, then the first that does not
                m, room = head, free
                while m < i and size[m] <= room:
                    room -= size[m]
                    m += 1
                queue = tuple(pend_objs[head:min(m + 1, i)])
            elif easy:
                if not completed and new_min > free:
                    continue
                # the main pass starts a prefix of the queue and blocks at the first job that does
                # not fit; that job alone reserves; of the rest, only jobs that fit in what is left
                # can backfill, and they reserve nothing
                room = free
                it = iter(pending.values())
                front = []
                for pj in it:
                    front.append(pj)
                    s = size[pj.job_id - 1]
                    if s > room:
                        break
                    room -= s
                queue = (*front, *[pj for pj in it if size[pj.job_id - 1] <= room])
            else:
                head_q: tuple[PendingJob, ...] | None = None
                if ranked is not None and len(pending) > HEAD_MIN:
                    ranked.advance(t, i)
                    fitting = bisect_right(sizes, free)  # pending jobs no wider than the free processors
                    ks = ranked.head(t, size, free, window, fitting)
                    if ks is not None:
                        head_q = tuple([pend_objs[k] for k in ks])
                        fit_in = sum([size[k] <= free for k in ks])
                queue = head_q if head_q is not None else tuple(pending.values())
            if nodes_dirty:
                nodes_t = tuple(node_list)
                nodes_dirty = False
            snap = Snapshot(now=float(t), nodes=nodes_t, partitions=parts, pending=queue, weights=weights,
                            running=tuple(running.values()), config=cfg)
            queued += len(queue)
            c0 = time.perf_counter()
            p = plan(snap, bf_now, only_starts=fast, memo=memo)
            if len(queue) < len(pending) and not (fcfs or easy):
                # A head of the core's own order (`Ranking.head`) was handed over. The main pass
                # started its first `s` jobs and stopped at job s; backfill tests `window` jobs from
                # there; only jobs no wider than the free processors can start. Those left out all
                # come after the head, so the pass is the full queue's if it stopped inside the
                # head and the jobs backfill tests are in it, or if no job left out could start.
                s = len(p.starts) - len(p.backfilled)
                if not (fit_in == fitting or (s < len(queue) and s + window <= len(queue))
                        or (ranked is not None and ranked.more is not None
                            and self._nothing_fits(ranked.beyond(submit), size, free, len(queue),
                                                   s + max(window, 1)))):
                    redone += 1
                    p = plan(replace(snap, pending=tuple(pending.values())), bf_now, only_starts=fast, memo=memo)
            core_s += time.perf_counter() - c0
            passes += 1
            bf_tested += p.bf_tested
            if not p.starts:
                idle += 1
            for pre in p.preemptions:
                # the victim gives its CPUs back at the end of its GraceTime (cancelled), and a
                # requeued one is eligible again requeue_delay after that, to run all over again
                k = pre.victim - 1
                if pre.mode == "SUSPEND":
                    raise SimulationError(f"the plan suspends job {jobs[k].job_id} (PreemptMode=SUSPEND), "
                                          "which the simulator does not replay")
                victim = running.get(pre.victim)
                if victim is None or victim.preempting:
                    raise SimulationError(f"the plan preempts job {jobs[k].job_id}, which is not running")
                running[pre.victim] = replace(victim, preempting=True)
                preempted[k] += 1
                gone = float(t + pre.grace_time)
                if gone < end[k]:  # (else it ends first, its work done)
                    end[k] = gone
                    heapq.heappush(heap, (gone, k))
                    if pre.mode == "REQUEUE":
                        heapq.heappush(again, (gone + requeue_delay, k))
            for st in p.starts:
                jid = st.job_id
                k = jid - 1
                started = pending.pop(jid, None)
                if started is None:
                    raise SimulationError(f"the plan starts job {jid}, which is not pending")
                used = 0
                for a in st.allocs:
                    x = index[a.node]
                    if node_list[x] is not free_nodes[x]:
                        raise SimulationError(f"the plan puts job {jid} on busy node {a.node}")
                    node_list[x] = busy_nodes[x]
                    used += a.cpus
                s = size[k]
                if used != s:
                    raise SimulationError(f"job {jid} asked for {s} processors and got {used}")
                free -= s
                nodes_dirty = True
                del sizes[bisect_left(sizes, s)]
                start[k] = t
                end[k] = t + min(occupied[k], limit_s[k])  # (killed at its partition's MaxTime)
                if jid in p.backfilled:
                    backfilled[k] = True
                if ranked is not None:
                    ranked.remove(k)
                heapq.heappush(heap, (end[k], k))
                running[jid] = RunningJob(jid, started.partition, st.allocs, float(t),
                                          float(t + limit_s[k]) if limit_s[k] != inf else None)
            if fcfs:
                while head < i and start[head] == start[head]:  # not NaN: started
                    head += 1
        if pending:
            raise SimulationError(f"{len(pending)} jobs never started (the core left them pending), "
                                  f"e.g. trace job {jobs[next(iter(pending)) - 1].job_id}")
        return SimResult(policy=self.name, max_procs=procs, jobs=jobs, start=start, end=end,
                         wall_s=time.perf_counter() - t0, passes=passes, idle_passes=idle, queued=queued,
                         instants=instants, core_s=core_s, redone=redone, bf_tested=bf_tested, core=self.core.name,
                         backfilled=backfilled, preempted=preempted, work=work)

    @staticmethod
    def _nothing_fits(more: list[int] | None, size: list[int], free: int, head: int, reach: int) -> bool:
        """Whether the jobs right after a head of `head` jobs (`more`, in the core's order) reach
        position `reach` and none of them before it is narrow enough to start: then no job after
        the head can start in this pass."""
        return more is not None and head + len(more) >= reach and all(size[k] > free for k in more[:reach - head])

    def _ranking(self, nodes: tuple[Node, ...]) -> Any:  # a Ranking of the core's
        """The `Ranking` of the queue: each job's priority but its age, from the core's own
        `priorities` (with no eligible time, the age part is 0), once per distinct request."""
        w = self.weights
        groups: dict[tuple, PendingJob] = {}
        keys = [(id(pj.request), pj.partition, pj.usage, pj.shares, pj.qos_factor, pj.fs_factor)
                for pj in self.pending_jobs]
        for key, pj in zip(keys, self.pending_jobs):
            groups.setdefault(key, pj)
        reps = tuple(replace(pj, eligible_time=None, site=0, nice=0) for pj in groups.values())
        snap = self.core.model.Snapshot(now=0.0, nodes=nodes, partitions=self.partitions, pending=reps, weights=w,
                                        config=self.config)
        fac = self.core.order.priorities(snap)
        base = {key: fac[r.job_id].exact for key, r in zip(groups, reps)}
        fixed = [base[key] + pj.site - pj.nice for key, pj in zip(keys, self.pending_jobs)]
        return self.core.ranking.Ranking(fixed, [pj.eligible_time for pj in self.pending_jobs], w.age, w.max_age)
