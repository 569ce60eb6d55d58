"""GET /metrics: the controller in Prometheus' text exposition format (version 0.0.4).

Read at scrape time: jobs by state and partition (the jobs `squeue -r -t all` shows: finished
ones until MinJobAge), nodes by the state sinfo shows, the pending queue, CPUs and GPUs, sdiag's
scheduler statistics (reset by `sdiag -r`, like the counters of sdiag) and the process's memory.
Recorded as requests pass: the API's latency per route template and method (a histogram) and
its answers per status code, by the gate (gate.py), at a cost per request of two clock reads, a
bisect and a few additions.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Callable
from typing import TYPE_CHECKING

from fastapi.responses import Response

if TYPE_CHECKING:
    from fastapi import FastAPI

    from slurmlet.controller.runtime import Controller

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: histogram bounds in seconds: a GET takes about a millisecond, a long-poll up to 30 s
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: the states that are always exported (as 0 when no node or job is in them), so a series never vanishes
NODE_STATES = ("idle", "mixed", "allocated", "draining", "drained", "down")
JOB_STATES = ("PENDING", "RUNNING")
UNMATCHED = "unmatched"  #: the route label of requests that match no route (404s): one series, not one per path
#: other methods are labelled "other": a client inventing methods must not grow the series without bound
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class Latency:
    """Request durations by (method, route template): bucket counts (not cumulative), sum, count;
    and answers by (method, route template, status code)."""

    def __init__(self) -> None:
        self.hist: dict[tuple[str, str], list] = {}
        self.codes: dict[tuple[str, str, int], int] = {}
        #: changes made through the API (2xx answers to anything but GET, HEAD, OPTIONS and the agents'
        #: syncs): the dashboard's event stream tells of each (an update, a drain, a hold)
        self.writes = 0

    def observe(self, method: str, route: str, code: int, seconds: float) -> None:
        h = self.hist.get((method, route))
        if h is None:
            h = self.hist[(method, route)] = [[0] * (len(BUCKETS) + 1), 0.0, 0]
        h[0][bisect_left(BUCKETS, seconds)] += 1  # the first bound >= seconds: Prometheus' `le`
        h[1] += seconds
        h[2] += 1
        key = (method, route, code)
        self.codes[key] = self.codes.get(key, 0) + 1
        if 200 <= code < 300 and method not in ("GET", "HEAD", "OPTIONS") and route != "/api/v1/nodes/{name}/sync":
            self.writes += 1


def install(app: FastAPI, ctl: Callable[[], Controller], nodes: Callable[[Controller], list[dict]]) -> Latency:
    """Add GET /metrics; its Latency, which the gate (gate.py) records every request in."""
    latency = Latency()
    app.state.latency = latency

    @app.get("/metrics", include_in_schema=True, response_class=Response,
             responses={200: {"content": {"text/plain": {}}}})
    async def metrics() -> Response:
        """Prometheus metrics: jobs, nodes, queue depth, scheduler cycles, API latency, memory."""
        c = ctl()
        return Response(render(c, nodes(c), latency), media_type=CONTENT_TYPE)

    return latency


class _Out:
    """Lines of the exposition: one HELP and TYPE header per family, then its samples."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, kind: str, help_: str) -> None:
        self.lines.append(f"# HELP {name} {help_}")
        self.lines.append(f"# TYPE {name} {kind}")

    def sample(self, name: str, value: float, **labels: object) -> None:
        if labels:
            inner = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
            self.lines.append(f"{name}{{{inner}}} {_num(value)}")
        else:
            self.lines.append(f"{name} {_num(value)}")

    def one(self, name: str, kind: str, help_: str, value: float) -> None:
        self.family(name, kind, help_)
        self.sample(name, value)


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _num(v: float) -> str:
    if isinstance(v, int):
        return str(v)
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


def render(c: Controller, node_list: list[dict], latency: Latency) -> str:
    """The whole exposition text."""
    out = _Out()
    from slurmlet.controller.runtime import VERSION
    out.family("slurmlet_info", "gauge", "The controller's cluster name and Slurm version (always 1).")
    out.sample("slurmlet_info", 1, cluster=c.config.cluster_name, version=VERSION)
    _jobs(out, c)
    _nodes(out, node_list)
    out.one("slurmlet_agent_long_polls", "gauge",
            "Agent syncs waiting for orders (at most one per node: a new one ends the one before).",
            len(c.node_waits))
    _scheduler(out, c)
    _http(out, latency)
    _process(out)
    return "\n".join(out.lines) + "\n"


def _jobs(out: _Out, c: Controller) -> None:
    counts = c.store.state_partition_counts(c.clock())
    for p in c.config.partitions:
        for st in JOB_STATES:
            counts.setdefault((st, p.name), 0)
    out.family("slurmlet_jobs", "gauge",
               "Jobs by state and partition, as squeue -r -t all counts them (finished ones until MinJobAge).")
    for (st, part), n in sorted(counts.items(), key=lambda kv: (kv[0][1] or "", kv[0][0])):
        out.sample("slurmlet_jobs", n, state=st, partition=part or "")
    out.one("slurmlet_queue_depth", "gauge", "Pending jobs (squeue -t PD).",
            sum(n for (st, _), n in counts.items() if st == "PENDING"))


def _nodes(out: _Out, node_list: list[dict]) -> None:
    by_state = dict.fromkeys(NODE_STATES, 0)
    cpus = [0, 0]
    gpus = [0, 0]
    for n in node_list:
        st = n["state"].lower().rstrip("*")
        by_state[st] = by_state.get(st, 0) + 1
        cpus[0] += n["cpus"] or 0
        cpus[1] += n["cpus_alloc"] or 0
        gpus[0] += n["gpus"] or 0
        gpus[1] += n["gpus_alloc"] or 0
    out.family("slurmlet_nodes", "gauge", "Nodes by the state sinfo shows.")
    for st, k in by_state.items():
        out.sample("slurmlet_nodes", k, state=st)
    out.family("slurmlet_cpus", "gauge", "CPUs of all nodes, and those allocated to jobs.")
    out.sample("slurmlet_cpus", cpus[0], kind="total")
    out.sample("slurmlet_cpus", cpus[1], kind="allocated")
    out.family("slurmlet_gpus", "gauge", "GPUs of all nodes, and those allocated to jobs.")
    out.sample("slurmlet_gpus", gpus[0], kind="total")
    out.sample("slurmlet_gpus", gpus[1], kind="allocated")


def _scheduler(out: _Out, c: Controller) -> None:
    s = c.stats
    passes = (("main", s.main), ("backfill", s.backfill))
    for name, kind, help_, get in (
            ("slurmlet_sched_cycles_total", "counter", "Scheduling passes run (sdiag: Total cycles).",
             lambda p: p.cycles),
            ("slurmlet_sched_cycle_microseconds_total", "counter", "Time spent in scheduling passes.",
             lambda p: p.total_us),
            ("slurmlet_sched_cycle_last_microseconds", "gauge", "Duration of the last pass (sdiag: Last cycle).",
             lambda p: p.last_us),
            ("slurmlet_sched_cycle_max_microseconds", "gauge", "Longest pass (sdiag: Max cycle).",
             lambda p: p.max_us),
            ("slurmlet_sched_cycle_mean_microseconds", "gauge", "Mean pass duration (sdiag: Mean cycle).",
             lambda p: p.total_us // p.cycles if p.cycles else 0),
            ("slurmlet_sched_last_queue_length", "gauge", "Pending jobs the last pass looked at.",
             lambda p: p.last_queue)):
        out.family(name, kind, help_)
        for pname, p in passes:
            out.sample(name, get(p), **{"pass": pname})
    out.one("slurmlet_sched_skipped_total", "counter", "Scheduler wake-ups that found nothing changed.", s.skipped)
    out.one("slurmlet_jobs_started_total", "counter", "Jobs started by the scheduler.", s.jobs_started)
    out.one("slurmlet_jobs_backfilled_total", "counter", "Jobs started by backfill.", s.backfilled)
    out.one("slurmlet_jobs_preempted_total", "counter", "Jobs preempted.", s.preempted)
    out.one("slurmlet_stats_reset_time_seconds", "gauge",
            "When the scheduler statistics started (controller start or the last sdiag -r).", s.started)


def _http(out: _Out, latency: Latency) -> None:
    name = "slurmlet_http_request_duration_seconds"
    out.family(name, "histogram", "API request latency by route template and method.")
    for (method, route), (buckets, total, count) in sorted(latency.hist.items(), key=lambda kv: kv[0][::-1]):
        acc = 0
        for le, n in zip((*BUCKETS, float("inf")), buckets):
            acc += n
            out.sample(f"{name}_bucket", acc, method=method, route=route, le=_num(le))
        out.sample(f"{name}_sum", total, method=method, route=route)
        out.sample(f"{name}_count", count, method=method, route=route)
    out.family("slurmlet_http_requests_total", "counter", "API requests by route template, method and status code.")
    for (method, route, code), n in sorted(latency.codes.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
        out.sample("slurmlet_http_requests_total", n, method=method, route=route, code=code)


_PROC: list = []


def _process(out: _Out) -> None:
    import psutil
    if not _PROC:
        _PROC.append(psutil.Process(os.getpid()))
    p = _PROC[0]
    with p.oneshot():
        mem = p.memory_info()
        cpu = p.cpu_times()
        start = p.create_time()
    out.one("process_resident_memory_bytes", "gauge", "Resident memory of the controller process.", mem.rss)
    out.one("process_virtual_memory_bytes", "gauge", "Virtual memory of the controller process.", mem.vms)
    out.one("process_cpu_seconds_total", "counter", "User and system CPU time of the controller process.",
            cpu.user + cpu.system)
    out.one("process_start_time_seconds", "gauge", "When the controller process started (Unix time).", start)
