"""A month of a 1,000-node site as Slurm 22.05's `sacct -P -X -D -a` prints it, and its slurm.conf.

    .venv/bin/python bench/sacctgen.py OUT_DIR [--records 100000] [--seed 1]

writes OUT_DIR/sacct.txt (the dump), OUT_DIR/a.conf (the site) and OUT_DIR/b.conf (the site with
PriorityWeightAge ten times higher): the input of `slurmlet simulate --sacct sacct.txt --config
a.conf --vs b.conf`, used by bench/bench_sim.py --sacct and tests/unit/sim/test_sacctgen.py.
The same records and seed give the same bytes.

The site (`SITE`, `PARTITIONS`): 800 compute nodes of 32 CPUs, 150 large-memory nodes of 48 and
50 GPU nodes of 32 CPUs and 4 GPUs (34,400 CPUs); partitions debug (30 min), compute (2 days,
the default), long (7 days, half of the compute nodes), bigmem (2 days) and gpu (1 day).
Multifactor priority (age, job size, fair-share, partition, QOS), Slurm's backfill defaults.

The history: submissions arrive as a Poisson process that is busier on weekday working hours;
about 3,300 records a day (100,000 records are about 30 days from 2026-11-01T00:00:00). Each
submission is a job or a job array (array tasks `J_N` share the array's Submit), from one of
about 300 users in 40 accounts (a few users submit most of the work). Sizes run from 1 CPU
(most array tasks) through partial and whole nodes to 256 nodes; run times are log-uniform
below the time limit the user asked for, which is a round value up to the partition's MaxTime
(a quarter of the jobs ask for none and get the partition's). The work offered is about 80% of
the machine's CPU-seconds. The records, in sacct's order (by job id, array tasks together):

* COMPLETED, FAILED, TIMEOUT (Elapsed a little over Timelimit), OUT_OF_MEMORY, NODE_FAIL and
  `CANCELLED by UID` while running, with Slurm's ExitCode for each;
* `CANCELLED by UID` before it started: Start `None`, Elapsed 00:00:00, empty AllocTRES,
  NodeList `None assigned`, Timelimit `Partition_Limit` where no limit was asked for;
* requeued jobs: with -D the first run as REQUEUED, then the last run with a new Submit (the
  requeue time) and an Eligible 121 s later, as Slurm 22.05 records them;
* jobs that depend on another (`--dependency=afterany`) or start later (`--begin`): Eligible after
  Submit;
* at the end of the window, jobs still RUNNING (End `Unknown`) and PENDING (Start and End
  `Unknown`; an array's tasks that have not started as one `J_[A-B]` record);
* a few records with no CPU count at all (empty ReqTRES and AllocTRES, ReqCPUS and NCPUS 0), so
  that the reader's "no CPU count" rule has something to skip; a real dump rarely has them.

Starts come from a simple replay of the site's own queue on its CPUs as one pool (in arrival
order, a job that fits starts, one that has waited over two hours blocks those behind it), so
that no instant of the history runs more CPUs than the site has. NodeList is a run of the
partition's nodes of the job's size, not a placement checked against other jobs.
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FIELDS = ("JobID", "JobIDRaw", "JobName", "Partition", "Account", "User", "QOS", "State", "ExitCode", "Submit",
          "Eligible", "Start", "End", "Elapsed", "Timelimit", "NCPUS", "NNodes", "ReqCPUS", "ReqNodes", "ReqTRES",
          "AllocTRES", "NodeList")
HEADER = "|".join(FIELDS)
#: the sacct command that prints such a dump (the window's -S/-E are the generated history's)
COMMAND = "sacct -P -X -D -a -S {start} -E {end} -o " + ",".join(FIELDS)

EPOCH = datetime(2026, 11, 1)
RECORDS_PER_DAY = 3333  #: about 100,000 records in 30 days
TARGET_LOAD = 0.8  #: offered CPU-seconds / the machine's
#: (node-name prefix, count, CPUs, RealMemory MB, GPUs)
SITE = (("cn", 800, 32, 192000, 0), ("bm", 150, 48, 768000, 0), ("gpu", 50, 32, 384000, 4))
CPUS = sum(n * c for _, n, c, _, _ in SITE)
#: name -> (node prefix, first node, last node (1-based), MaxTime seconds, QOS, share of submissions)
PARTITIONS = {
    "debug": ("cn", 1, 16, 1800, "debug", 0.10),
    "compute": ("cn", 1, 800, 2 * 86400, "normal", 0.50),
    "long": ("cn", 401, 800, 7 * 86400, "long", 0.06),
    "bigmem": ("bm", 1, 150, 2 * 86400, "normal", 0.14),
    "gpu": ("gpu", 1, 50, 86400, "gpu", 0.20),
}
#: the time limits users ask for, seconds
LIMITS = (300, 600, 1800, 3600, 2 * 3600, 4 * 3600, 8 * 3600, 12 * 3600, 86400, 2 * 86400, 3 * 86400, 4 * 86400,
          7 * 86400)
#: shortens the drawn run times (the limits users ask for follow them); `_scale` then brings the
#: offered load to TARGET_LOAD
RUN_SCALE = 0.4
MEAN_RECORDS = 1.79  #: records per submission, about (arrays)
WAIT_BLOCKS = 7200  #: a job that has waited this long (seconds) blocks the jobs behind it
NAMES = ("run", "sim", "md", "vasp", "lammps", "gromacs", "train", "infer", "wrap", "bash", "python", "job",
         "cp2k", "nwchem", "openfoam", "wrf", "sweep", "post", "interactive", "align", "assemble")
MEM_PER_CPU = {"cn": 6000, "bm": 16000, "gpu": 12000}


@dataclass(eq=False)
class Run:
    """One record of a job: a run of it, or the job before it ran."""

    name: str
    partition: str
    account: str
    user: str
    uid: int
    cpus: int
    nodes: int
    gpus: int
    limit: int | None  #: seconds; None: asked for none (the partition's MaxTime)
    submit: int
    run: int  #: seconds it runs once started
    state: str  #: its final state, if it gets to run
    eligible: int | None = None  #: None: not yet known (the job it waits for, or its previous run, has not ended)
    exclusive: bool = False
    task: int | None = None  #: an array task's index
    start: int | None = None
    #: the next record of the same job: its run after a requeue (see `Run.requeue`)
    again: Run | None = None
    #: jobs submitted with --dependency=afterany on this one (they arrive when its last run ends)
    followers: list[Run] = field(default_factory=list)
    after: bool = False  #: submitted with --dependency (its Eligible is Unknown until that is met)
    raw: int = 0  #: JobIDRaw
    job_id: str = ""  #: JobID


@dataclass(eq=False)
class Submission:
    runs: list[Run]  #: one job, or an array's tasks in task order
    array: bool = False
    raw: int = 0  #: the job id (an array's: its last task's JobIDRaw, the others' follow it)


def _stamp(t: int) -> str:
    return (EPOCH + timedelta(seconds=t)).isoformat()


def _dur(s: int) -> str:
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"


def _rate(t: float) -> float:
    """Submissions per second at `t`, relative to the mean (busier on weekday working hours)."""
    day = (EPOCH + timedelta(seconds=t)).weekday()
    hour = (t % 86400) / 3600
    daily = (0.45 + 1.1 * math.exp(-((hour - 13.5) / 4.0) ** 2)) / 0.775  # (its mean over a day is 1)
    return daily * (0.55 if day >= 5 else 1.18)


PEAK = 1.55 / 0.775 * 1.18  #: the largest `_rate`


class Site:
    """The site's users and their habits, and the shapes and times of their jobs."""

    def __init__(self, rnd: random.Random):
        self.rnd = rnd
        self.accounts = [f"{p}{i:02d}" for i, p in
                         enumerate(("chem", "phys", "bio", "eng", "ml", "geo", "astro", "mat") * 5)]
        self.users: list[tuple[str, int, str]] = []  # (user, uid, account)
        for k in range(300):
            acct = self.accounts[min(int(rnd.paretovariate(0.8)) - 1, 39) if rnd.random() < 0.5
                                 else rnd.randrange(40)]
            self.users.append((f"u{k:03d}{chr(97 + k % 26)}", 20000 + k, acct))
        self.user_weights = [1.0 / (k + 1) ** 0.9 for k in range(len(self.users))]
        self.parts = list(PARTITIONS)
        self.part_weights = [PARTITIONS[p][5] for p in self.parts]
        #: each user's favourite partition and job name
        self.habit = {u[0]: (rnd.choices(self.parts, self.part_weights)[0], rnd.choice(NAMES)) for u in self.users}

    def user(self) -> tuple[str, int, str]:
        return self.rnd.choices(self.users, self.user_weights)[0]

    def shape(self, part: str) -> tuple[int, int, int, bool]:
        """(CPUs, nodes, GPUs, exclusive) of one job in `part`."""
        rnd = self.rnd
        per_node = _per_node(part)
        if part == "debug":
            cpus = rnd.choice((1, 1, 2, 4, 8, 16, 32, 64, 128))
            return cpus, max(1, math.ceil(cpus / per_node)), 0, False
        if part == "gpu":
            g = rnd.choice((1, 1, 1, 2, 4, 4, 8, 16))
            return 8 * g, max(1, g // 4), g, False
        x = rnd.random()
        if x < 0.22:
            return rnd.choice((1, 2, 4, 8, 12, 16, 24)), 1, 0, False
        if x < 0.30:  # one core, the node to itself (--exclusive)
            return 1, 1, 0, True
        if x < 0.62:
            return per_node, 1, 0, False
        if part in ("long", "bigmem"):
            nodes = rnd.choice((2, 2, 3, 4, 4, 6, 8))
        elif x < 0.90:
            nodes = rnd.choice((2, 2, 2, 3, 4, 4, 4, 6, 8, 8, 12, 16))
        elif x < 0.985:
            nodes = rnd.choice((16, 24, 32, 32, 48, 64, 64))
        else:
            nodes = rnd.choice((96, 128, 128, 192, 256))
        return nodes * per_node, nodes, 0, False

    def timing(self, part: str, limit: int | None = None, asked: bool = True) -> tuple[int | None, int, str]:
        """(limit asked for or None, run seconds, final state); `limit` given: an array's, shared by its tasks."""
        rnd = self.rnd
        cap = PARTITIONS[part][3]
        want = math.exp(rnd.uniform(math.log(60), math.log(cap))) * RUN_SCALE
        if limit is None and asked:
            over = want * rnd.uniform(1.1, 4.0)
            limit = min(next((v for v in LIMITS if v >= over), cap), cap)
        hard = limit if limit is not None else cap
        x = rnd.random()
        if x < 0.07:  # the limit was too short: killed at it, a little late
            return limit, hard + rnd.randint(1, 90), "TIMEOUT"
        run = int(min(want, hard - 1)) + 1
        for top, state, most in ((0.15, "FAILED", 0.3), (0.165, "OUT_OF_MEMORY", 0.6), (0.168, "NODE_FAIL", 1.0),
                                 (0.21, "CANCELLED", 1.0)):
            if x < top:
                return limit, max(1, int(run * rnd.uniform(0, most))), state
        return limit, run, "COMPLETED"


def _per_node(part: str) -> int:
    prefix = PARTITIONS[part][0]
    return next(c for p, _, c, _, _ in SITE if p == prefix)


def _draw(site: Site, want: int) -> tuple[list[Submission], int]:
    """Submissions holding at most `want` records, in submit order; and the window's end (the
    last submission's second)."""
    rnd = site.rnd
    gap = 86400 / RECORDS_PER_DAY * MEAN_RECORDS
    t = 0.0
    subs: list[Submission] = []
    lines = 0
    while lines < want:
        t += rnd.expovariate(PEAK / gap)
        if rnd.random() * PEAK > _rate(t):
            continue
        user, uid, acct = site.user()
        fav, name = site.habit[user]
        part = fav if rnd.random() < 0.7 else rnd.choices(site.parts, site.part_weights)[0]
        sub = int(t)
        begin = sub + rnd.choice((600, 3600, 4 * 3600, 8 * 3600)) if rnd.random() < 0.03 else sub  # --begin
        asked = rnd.random() >= 0.25
        tasks = 1
        if part in ("compute", "bigmem") and rnd.random() < 0.12:
            tasks = min(int(rnd.paretovariate(1.5) * 4), 200, want - lines)
        if tasks > 1:
            cpus, nodes, gpus, excl = rnd.choice((1, 1, 1, 2, 4)), 1, 0, False
            limit = site.timing(part, asked=asked)[0]
        else:
            cpus, nodes, gpus, excl = site.shape(part)
            limit = None
        runs: list[Run] = []
        for k in range(tasks):
            lim, run, state = site.timing(part, limit, asked)
            r = Run(name, part, acct, user, uid, cpus, nodes, gpus, lim, sub, run, state, begin, excl,
                    k if tasks > 1 else None)
            runs.append(r)
            lines += 1
            if rnd.random() < 0.006 and lines < want:  # requeued once: the first run ends as REQUEUED
                again = Run(name, part, acct, user, uid, cpus, nodes, gpus, lim, sub, 0, "COMPLETED", None, excl,
                            r.task)
                again.run, again.state = site.timing(part, lim, asked)[1:]
                r.run, r.state, r.again = max(1, int(r.run * rnd.uniform(0.05, 0.9))), "REQUEUED", again
                lines += 1
        subs.append(Submission(runs, tasks > 1))
        if tasks == 1 and rnd.random() < 0.03 and lines < want:  # a job that waits for this one
            lim, run, state = site.timing(part, asked=True)
            last = runs[0]
            while last.again is not None:
                last = last.again
            dep = Run("post", part, acct, user, uid, min(cpus, _per_node(part)), 1, 0, lim, sub, run, state,
                      after=True)
            last.followers.append(dep)
            subs.append(Submission([dep]))
            lines += 1
    end = int(t) + 1
    _scale(subs, end)
    return subs, end


def _work(subs: list[Submission], end: int) -> float:
    """CPU-seconds the runs would use within the window (run at once, requeues left out)."""
    return sum(r.cpus * min(r.run, end - r.submit) for s in subs for r in s.runs)


def _scale(subs: list[Submission], end: int) -> None:
    """Stretches or shrinks the run times (within their limits) to offer TARGET_LOAD of the machine."""
    for _ in range(3):
        f = TARGET_LOAD * CPUS * end / _work(subs, end)
        for s in subs:
            for r in s.runs:
                if r.state not in ("TIMEOUT", "REQUEUED"):
                    hard = r.limit if r.limit is not None else PARTITIONS[r.partition][3]
                    r.run = max(1, min(int(r.run * f), hard - 1))


def _schedule(subs: list[Submission], end: int, cpus: int) -> None:
    """Starts of the runs on `cpus` CPUs as one pool, up to the window's `end` (see the module)."""
    arrivals: list[tuple[int, int, Run]] = []
    for s in subs:
        for r in s.runs:
            if r.eligible is not None:
                arrivals.append((r.eligible, len(arrivals), r))
    seq = len(arrivals)
    heapq.heapify(arrivals)
    ends: list[tuple[int, int]] = []  # (end, cpus)
    queue: list[Run] = []  # in arrival order
    free = cpus
    while arrivals or ends:
        t = arrivals[0][0] if arrivals else ends[0][0]
        if ends and ends[0][0] < t:
            t = ends[0][0]
        if t > end:
            return
        ended = False
        while ends and ends[0][0] <= t:
            free += heapq.heappop(ends)[1]
            ended = True
        # free CPUs only grow when a job ends: without one, the jobs that waited still do not
        # fit, and only the arrivals are tried (unless the oldest job blocks them)
        first = 0 if ended else len(queue)
        while arrivals and arrivals[0][0] <= t:
            queue.append(heapq.heappop(arrivals)[2])
        if first and t - (queue[0].eligible or 0) > WAIT_BLOCKS and queue[0].cpus > free:
            first = len(queue)  # the oldest job blocks the arrivals
        kept = queue[:first]
        for n in range(first, len(queue)):
            r = queue[n]
            if r.cpus > free:
                kept.append(r)
                if t - (r.eligible or 0) > WAIT_BLOCKS:
                    kept.extend(queue[n + 1:])
                    break
                continue
            r.start = t
            free -= r.cpus
            done = t + r.run
            heapq.heappush(ends, (done, r.cpus))
            nxt = []
            if r.again is not None:  # requeued at `done`: a new Submit, eligible 121 s later
                r.again.submit, r.again.eligible = done, done + 121
                nxt.append(r.again)
            for f in r.followers:
                f.eligible = max(f.submit, done)
                nxt.append(f)
            for f in nxt:
                heapq.heappush(arrivals, (f.eligible, seq, f))
                seq += 1
        queue = kept


def _hostlist(prefix: str, first: int, n: int) -> str:
    width = 4 if prefix == "cn" else 3
    if n == 1:
        return f"{prefix}{first:0{width}d}"
    return f"{prefix}[{first:0{width}d}-{first + n - 1:0{width}d}]"


def _tres(cpus: int, nodes: int, gpus: int, mem: int) -> str:
    g = f"gres/gpu={gpus}," if gpus else ""
    return f"billing={cpus},cpu={cpus},{g}mem={mem}M,node={nodes}"


def _line(r: Run, end: int, rnd: random.Random, job_id: str | None = None) -> str:
    """The record of `r` as sacct prints it at the window's `end`."""
    prefix, lo, hi, cap, qos, _ = PARTITIONS[r.partition]
    mem = MEM_PER_CPU[prefix]
    req = _tres(r.cpus, r.nodes, r.gpus, mem * r.cpus) if r.cpus else ""
    limit = _dur(r.limit if r.limit is not None else cap)
    head = (job_id or r.job_id, str(r.raw), r.name, r.partition, r.account, r.user, qos)
    if r.start is None:
        eligible = "Unknown" if r.eligible is None or r.after and r.eligible > end else _stamp(r.eligible)
        if r.state == "CANCELLED":  # cancelled before it started
            state, code, began, fin = f"CANCELLED by {r.uid}", "0:0", "None", _stamp(r.submit + r.run)
        elif r.state == "FAILED":  # failed as it was launched (and holds no CPU count)
            state, code, began, fin = "FAILED", "1:0", _stamp(r.submit), _stamp(r.submit)
        else:  # pending at the end of the window
            state, code, began, fin = "PENDING", "0:0", "Unknown", "Unknown"
        return "|".join((*head, state, code, _stamp(r.submit), eligible, began, fin, "00:00:00",
                         limit if r.limit is not None else "Partition_Limit", str(r.cpus), str(r.nodes),
                         str(r.cpus), str(r.nodes), req, "", "None assigned"))
    ncpus = r.nodes * _per_node(r.partition) if r.exclusive else r.cpus
    alloc = _tres(ncpus, r.nodes, r.gpus, mem * ncpus)
    first = rnd.randint(lo, hi - r.nodes + 1) if hi - lo + 1 >= r.nodes else lo
    if r.start + r.run > end:
        state, code, fin, elapsed = "RUNNING", "0:0", "Unknown", end - r.start
    else:
        state, fin, elapsed = r.state, _stamp(r.start + r.run), r.run
        code = {"COMPLETED": "0:0", "FAILED": f"{rnd.choice((1, 1, 1, 2, 127, 139))}:0", "TIMEOUT": "0:0",
                "OUT_OF_MEMORY": "0:125", "NODE_FAIL": "0:0", "REQUEUED": "0:0", "CANCELLED": "0:15"}[state]
        if state == "CANCELLED":
            state = f"CANCELLED by {r.uid}"
    assert r.eligible is not None
    return "|".join((*head, state, code, _stamp(r.submit), _stamp(r.eligible), _stamp(r.start), fin, _dur(elapsed),
                     limit, str(ncpus), str(r.nodes), str(r.cpus), str(r.nodes), req, alloc,
                     _hostlist(prefix, first, r.nodes)))


def _unstarted(site: Site, end: int, state: str) -> Submission:
    """A job that never ran: cancelled before it started (or, `state` FAILED, a record without CPUs)."""
    rnd = site.rnd
    user, uid, acct = site.user()
    part = site.habit[user][0] if rnd.random() < 0.7 else rnd.choices(site.parts, site.part_weights)[0]
    cpus, nodes, gpus, _ = site.shape(part)
    limit = rnd.choice([v for v in LIMITS if v <= PARTITIONS[part][3]]) if rnd.random() >= 0.4 else None
    sub = rnd.randint(0, max(0, end - 120))
    r = Run(rnd.choice(NAMES), part, acct, user, uid, cpus, nodes, gpus, limit, sub,
            min(end - sub, int(rnd.expovariate(1 / 1800)) + 1), state, sub)
    if state == "FAILED":
        r.cpus = r.gpus = 0
    return Submission([r])


def _requeued_by(r: Run, end: int) -> bool:
    """Whether `r` was requeued by the window's `end` (so that its next run has a record)."""
    return r.again is not None and r.again.eligible is not None and r.again.submit <= end


def dump(records: int = 100_000, seed: int = 1) -> str:
    """The dump: a header line and `records` records (see the module)."""
    if records < 100:
        raise ValueError("records: at least 100")
    site = Site(random.Random(seed))
    no_cpus = max(1, records // 5000)
    subs, end = _draw(site, records - records * 5 // 100 - no_cpus)
    _schedule(subs, end, CPUS)
    # what sacct lists at `end`: every run that exists by then, an array's tasks that never
    # started as one record; the rest of `records` are jobs cancelled before they started
    listed = 0
    for s in subs:
        waiting = sum(r.start is None for r in s.runs)
        listed += len(s.runs) - waiting + (1 if waiting and s.array else waiting)
        listed += sum(1 for r in s.runs if _requeued_by(r, end))
    subs += [_unstarted(site, end, "FAILED" if k < no_cpus else "CANCELLED") for k in range(records - listed)]
    # job ids in submit order; an array takes one per task
    subs.sort(key=lambda s: s.runs[0].submit)
    raw = 7_000_000
    for s in subs:
        s.raw = raw + len(s.runs) - 1 if s.array else raw
        for k, r in enumerate(s.runs):
            r.raw = s.raw if not s.array or k == len(s.runs) - 1 else raw + k
            r.job_id = f"{s.raw}_{k}" if s.array else str(s.raw)
            if r.again is not None:
                r.again.raw, r.again.job_id = r.raw, r.job_id
        raw += len(s.runs)
    out: list[str] = [HEADER]
    rnd = site.rnd
    for s in subs:
        waiting = [r for r in s.runs if r.start is None]
        for r in s.runs:
            if r.start is None and s.array:
                continue
            out.append(_line(r, end, rnd))
            if _requeued_by(r, end):
                out.append(_line(r.again, end, rnd))
        if waiting and s.array:
            a, b = waiting[0].task, waiting[-1].task
            ids = f"{a}" if a == b else f"[{a}-{b}]" if b - a + 1 == len(waiting) else \
                "[" + ",".join(str(r.task) for r in waiting) + "]"
            rep = waiting[-1]
            rep.raw = s.raw
            out.append(_line(rep, end, rnd, f"{s.raw}_{ids}"))
    assert len(out) == records + 1, (len(out), records)
    return "\n".join(out) + "\n"


def slurm_conf(nodes: int = 1000, age_weight: int = 1000) -> str:
    """The site's slurm.conf (`nodes` of them, compute nodes added or removed first)."""
    extra = nodes - sum(n for _, n, _, _, _ in SITE)
    lines = ["ClusterName=month", "SchedulerType=sched/backfill", "SelectType=select/cons_tres",
             "SelectTypeParameters=CR_Core_Memory", "PriorityType=priority/multifactor", "PriorityMaxAge=7-0",
             f"PriorityWeightAge={age_weight}", "PriorityWeightJobSize=2000", "PriorityWeightFairshare=5000",
             "PriorityWeightPartition=1000", "PriorityWeightQOS=1000", "GresTypes=gpu"]
    for prefix, n, c, mem, g in SITE:
        n += extra if prefix == "cn" else 0
        width = 4 if prefix == "cn" else 3
        gres = f" Gres=gpu:{g}" if g else ""
        lines.append(f"NodeName={prefix}[{1:0{width}d}-{n:0{width}d}] CPUs={c} RealMemory={mem}{gres} State=UNKNOWN")
    for name, (prefix, lo, hi, cap, _, _) in PARTITIONS.items():
        width = 4 if prefix == "cn" else 3
        default = " Default=YES" if name == "compute" else ""
        lines.append(f"PartitionName={name} Nodes={prefix}[{lo:0{width}d}-{hi:0{width}d}] MaxTime={_dur(cap)}"
                     f"{default} State=UP")
    return "\n".join(lines) + "\n"


def write(out: Path, records: int = 100_000, seed: int = 1) -> tuple[Path, Path, Path]:
    """(dump, a.conf, b.conf) under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    paths = (out / "sacct.txt", out / "a.conf", out / "b.conf")
    paths[0].write_text(dump(records, seed))
    paths[1].write_text(slurm_conf())
    paths[2].write_text(slurm_conf(age_weight=10000))
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="directory for sacct.txt, a.conf and b.conf")
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    for p in write(Path(args.out), args.records, args.seed):
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
