"""What the store's caches save: the calls they serve, in-process over a SQLite file with 1,000 held
jobs, each with its cache and without it.

    .venv/bin/python bench/bench_store.py [--jobs 1000]

Prints the median microseconds of: `listed` (squeue's read) given its last list again (nothing
written: one PRAGMA data_version), reading the jobs' heads (what PostgreSQL does every time, and
SQLite after any write), and working every job out again (no views kept); the nodes and accounting
tree a submission reads, kept and read. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable

from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.store.engine import make_engine, sqlite_url
from slurmlet.controller.store.jobs import JobStore

CONF = parse_slurm_conf("ClusterName=t\nNodeName=node[1-2] CPUs=8 RealMemory=8000\n"
                        "PartitionName=debug Nodes=ALL Default=YES\n")
KEYS = ["job_id", "state", "name", "user", "partition", "time_limit", "nodes", "reason", "start_time"]


def median_us(f: Callable[[], object], n: int = 200) -> float:
    f()
    xs = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        xs.append(time.perf_counter() - t0)
    return statistics.median(xs) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1000)
    args = ap.parse_args()
    s = JobStore(make_engine(sqlite_url(os.path.join(tempfile.mkdtemp(), "db.sqlite"))), CONF)
    s.accounts.ensure_defaults(0.0)
    for n in ("node1", "node2"):
        s.node_sync(n, {"resources": {"cpus": 8, "memory": 8000, "gpus": 0}, "running": [], "finished": []}, 1.0)
    body = dict(script="#!/bin/sh\ntrue\n", name="t", partition="debug", user="root", uid=0, gid=0, group="root",
                workdir="/tmp", environment={}, hold=True)
    s.submit_many([dict(body) for _ in range(args.jobs)], 10.0)
    q, acc = s.queries, s.accounts

    def listed() -> object:
        return s.listed(KEYS, False, now=20.0)

    def heads_read() -> object:
        q.commits += 1  # (as after a write)
        return listed()

    def none_kept() -> object:
        q._public_kept = None
        return listed()

    def capacity_read() -> object:
        q.capacity = None
        return s.capacity_rows()

    def tree_read() -> object:
        acc._changed()
        return acc.tree()

    rows = [(f"listed, {args.jobs} jobs: the last list again", median_us(listed)),
            ("listed: the jobs' heads read, views kept", median_us(heads_read)),
            ("listed: every job worked out (no views kept)", median_us(none_kept, 10)),
            ("capacity_rows: kept", median_us(s.capacity_rows)),
            ("capacity_rows: read", median_us(capacity_read)),
            ("accounts.tree: kept", median_us(acc.tree)),
            ("accounts.tree: read", median_us(tree_read))]
    for what, us in rows:
        print(f"{what:<48} {us:>10.0f} us")


if __name__ == "__main__":
    main()
