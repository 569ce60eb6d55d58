"""sdiag: scheduler statistics (main and backfill cycle times, depths, job counters)."""

from __future__ import annotations

import sys
import time

from slurmlet.cli import common, http
from slurmlet.cli.argv import Opt

TABLE: list[Opt] = [
    ("a", "all", 0, "all"), ("r", "reset", 0, "reset"), ("i", "sort-by-id", 0, "sort_id"),
    ("M", "cluster", 1, "cluster"), ("V", "version", 0, "version"), ("h", "help", 0, "help"),
    ("", "usage", 0, "usage"), ("", "json", 0, "json"),
]
USAGE = "Usage: sdiag [-M cluster] [-aritT] [--json]"
STARS = "*" * 55


def _when(t: float | None) -> str:
    if not t:
        return "N/A"
    return f"{time.strftime('%a %b %d %H:%M:%S %Y', time.localtime(t))} ({int(t)})"


def lines(d: dict) -> list[str]:
    """Slurm 22.05's sdiag layout and labels, over /api/v1/diag."""
    jobs = d.get("jobs") or {}
    m, b = d["main"], d["backfill"]
    minutes = max((d["now"] - d["started"]) / 60.0, 1.0)
    out = [STARS, f"sdiag output at {_when(d['now'])}", f"Data since      {_when(d['started'])}", STARS,
           "Server thread count:  1", "Agent queue size:     0", "Agent count:          0",
           "Agent thread count:   0", "DBD Agent queue size: 0", "",
           f"Jobs submitted: {sum(jobs.values())}", f"Jobs started:   {d['jobs_started']}",
           f"Jobs completed: {jobs.get('COMPLETED', 0)}", f"Jobs canceled:  {jobs.get('CANCELLED', 0)}",
           f"Jobs failed:    {sum(jobs.get(s, 0) for s in ('FAILED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY'))}",
           "", f"Job states ts:  {_when(d['now'])}", f"Jobs pending:   {jobs.get('PENDING', 0)}",
           f"Jobs running:   {jobs.get('RUNNING', 0) + jobs.get('SUSPENDED', 0)}", "",
           "Main schedule statistics (microseconds):",
           f"\tLast cycle:   {m['last_cycle_us']}", f"\tMax cycle:    {m['max_cycle_us']}",
           f"\tTotal cycles: {m['cycles']}", f"\tMean cycle:   {m['mean_cycle_us']}",
           f"\tMean depth cycle:  {m['mean_depth']}", f"\tCycles per minute: {int(m['cycles'] / minutes)}",
           f"\tLast queue length: {m['last_queue_length']}", f"\tSkipped passes (queue unchanged): {d['skipped']}",
           ""]
    if not d.get("backfill_enabled"):
        return out
    out += ["Backfilling stats",
            f"\tTotal backfilled jobs (since last slurm start): {d['backfilled_jobs']}",
            f"\tTotal backfilled jobs (since last stats cycle start): {d['backfilled_jobs']}",
            "\tTotal backfilled heterogeneous job components: 0",
            f"\tTotal cycles: {b['cycles']}", f"\tLast cycle when: {_when(b['last_cycle_when'])}",
            f"\tLast cycle: {b['last_cycle_us']}", f"\tMax cycle:  {b['max_cycle_us']}",
            f"\tMean cycle: {b['mean_cycle_us']}", f"\tLast depth cycle: {b['last_depth']}",
            f"\tLast depth cycle (try sched): {b['last_depth']}", f"\tDepth Mean: {b['mean_depth']}",
            f"\tDepth Mean (try sched): {b['mean_depth']}", f"\tLast queue length: {b['last_queue_length']}",
            f"\tQueue length mean: {b['mean_queue_length']}", ""]
    return out


def main(argv: list[str]) -> int:
    res = common.command_options("sdiag", argv, TABLE, USAGE)
    if isinstance(res, int):
        return res
    o, pos = res
    if pos:
        print(f"sdiag: error: Unknown argument: {pos[0]}", file=sys.stderr)
        return 1
    if "reset" in o:
        http.request("POST", "/api/v1/diag/reset", {})
        print("Reset scheduling statistics")
        return 0
    d = http.request("GET", "/api/v1/diag")
    if "json" in o:
        import json
        print(json.dumps(d, indent=2))
        return 0
    sys.stdout.write("".join(line + "\n" for line in lines(d)))
    return 0
