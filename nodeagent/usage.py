"""Resource use of a job's (or a step task's) process tree, sampled while it runs: the largest
resident set and virtual memory size seen (sacct's MaxRSS, MaxVMSize) and the CPU time of every
process seen (TotalCPU, UserCPU, SystemCPU). Processes are found as the kill path finds them (by
session id, and in the task's cgroup where it has one; the CPU times a cgroup counts replace these
samples at the end: see cgroup.py)."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable

import psutil

from ..common.scripts import session_pids

#: the most points a series keeps: when full, every other one goes and the spacing doubles (a run
#: of any length keeps its whole course, at most this many points)
SERIES_MAX = 512


class Usage:
    def __init__(self) -> None:
        self.max_rss = 0  #: KB
        self.max_vms = 0  #: KB
        self.cpu: dict[int, tuple[float, float]] = {}  #: pid -> (user, system) seconds, last seen
        #: (time, resident KB, CPU seconds so far) over the run, for the dashboard's plots
        self.series: list[tuple[float, int, float]] = []
        self.spacing = 1.0
        self.sampled_at = 0.0  #: when the series' latest point was taken
        self.running = True  #: still sampled (its processes run)

    def sample(self, pids: list[int]) -> None:
        rss = vms = 0
        for pid in pids:
            try:
                p = psutil.Process(pid)
                with p.oneshot():
                    mem = p.memory_info()
                    rss += mem.rss
                    vms += mem.vms
                    t = p.cpu_times()
                    self.cpu[pid] = (t.user + t.children_user, t.system + t.children_system)
            except (psutil.Error, OSError):
                continue
        self.max_rss = max(self.max_rss, rss // 1024)
        self.max_vms = max(self.max_vms, vms // 1024)
        now = time.time()
        if not self.series or now - self.sampled_at >= 0.9 * self.spacing:
            self.sampled_at = now
            self.series.append((round(now, 2), rss // 1024, round(sum(u + s for u, s in self.cpu.values()), 3)))
            if len(self.series) >= SERIES_MAX:
                self.series = self.series[::2]
                self.spacing *= 2

    def live(self, sid: int, pids: Callable[[], list[int]] | None = None) -> dict:
        """sstat's view of a running task: sampled now, its peaks so far, its CPU time, its processes."""
        now = sorted(pids() if pids else session_pids(sid))
        self.sample(now)
        cpu = sum(u + s for u, s in self.cpu.values())
        return {"max_rss": self.max_rss, "max_vms": self.max_vms, "cpu": round(cpu, 3), "pid": sid, "pids": now}

    def report(self) -> dict:
        user = sum(u for u, _ in self.cpu.values())
        system = sum(s for _, s in self.cpu.values())
        return {"max_rss": self.max_rss, "max_vms": self.max_vms, "user_cpu": round(user, 3),
                "system_cpu": round(system, 3)}


class Book:
    """The Usage of each job's process trees on this node, by job and source ("batch", or a step's
    task "STEP.RANK"), kept after they end for the last JOBS jobs: what the dashboard plots."""

    JOBS = 256

    def __init__(self) -> None:
        self.jobs: OrderedDict[int, dict[str, Usage]] = OrderedDict()

    def new(self, job_id: int, source: str) -> Usage:
        u = Usage()
        self.jobs.setdefault(job_id, {})[source] = u
        self.jobs.move_to_end(job_id)
        while len(self.jobs) > self.JOBS:
            self.jobs.popitem(last=False)
        return u

    def series(self, job_id: int) -> list[dict]:
        return [{"source": src, "live": u.running, "points": [list(p) for p in u.series]}
                for src, u in self.jobs.get(job_id, {}).items()]


async def watch(pids: int | Callable[[], list[int]], usage: Usage, done: asyncio.Event,
                interval: float = 1.0) -> None:
    """Sample the processes (of session `pids`, or that `pids()` lists) every `interval` seconds
    until `done` (and once right away)."""
    try:
        while True:
            usage.sample(session_pids(pids) if isinstance(pids, int) else pids())
            try:
                await asyncio.wait_for(done.wait(), interval)
                return
            except TimeoutError:
                continue
    finally:
        usage.running = False
