"""slurmlet benchmarks: prints medians and throughput against the targets of the issues.

    .venv/bin/python bench/bench.py [--quick]

Starts its own local clusters (`slurmlet up --port 0`) in temporary state directories and
stops them afterwards. Figures are wall-clock on this machine; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent


class LocalCluster:
    def __init__(self, nodes: int, cpus: int = 8, gpus: int = 0):
        self.state = tempfile.mkdtemp(prefix="slurmlet-bench-")
        r = subprocess.run([str(BIN / "slurmlet"), "up", "--nodes", str(nodes), "--cpus-per-node", str(cpus),
                            "--gpus-per-node", str(gpus), "--state-dir", self.state, "--port", "0"],
                           capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"slurmlet up failed: {r.stderr}")
        self.env = dict(os.environ)
        for line in r.stdout.splitlines():
            k, _, v = line.removeprefix("export ").partition("=")
            if k in ("SLURMLET_CONTROLLER", "SLURMLET_KEY_FILE"):
                self.env[k] = v
        self.env["PATH"] = f"{BIN}{os.pathsep}{self.env['PATH']}"
        self.work = Path(self.state) / "work"
        self.work.mkdir()

    def run(self, *argv: str, check: bool = True) -> str:
        r = subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, env=self.env,
                           cwd=self.work)
        if check and r.returncode:
            raise SystemExit(f"{argv} failed: {r.stderr}")
        return r.stdout

    def timed(self, *argv: str) -> float:
        t = time.perf_counter()
        self.run(*argv)
        return time.perf_counter() - t

    def down(self) -> None:
        subprocess.run([str(BIN / "slurmlet"), "down", "--state-dir", self.state], capture_output=True)

    def api_post(self, path: str, body: dict) -> dict:
        sys.path.insert(0, str(ROOT))
        from cli import http
        os.environ["SLURMLET_KEY_FILE"] = self.env["SLURMLET_KEY_FILE"]  # signed like the CLI's
        return http.request("POST", path, body, url=self.env["SLURMLET_CONTROLLER"])

    def api(self, path: str) -> dict:
        sys.path.insert(0, str(ROOT))
        from cli import http
        return http.request("GET", path, url=self.env["SLURMLET_CONTROLLER"])


def median_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def row(name: str, value: str, target: str, slurm: str) -> None:
    print(f"{name:<48} {value:>12} {target:>12} {slurm:>14}")


def wait_all_done(c: LocalCluster, ids: list[int], timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    want = set(ids)
    while time.monotonic() < deadline:
        jobs = c.api("/api/v1/jobs?ids=" + ",".join(map(str, ids)))["jobs"]
        if all(j["state"] not in ("PENDING", "RUNNING", "COMPLETING") for j in jobs if j["job_id"] in want):
            return
        time.sleep(0.05)
    raise SystemExit("jobs did not finish in time")


def bench_latency(n: int) -> None:
    c = LocalCluster(2)
    try:
        for _ in range(3):
            c.run("sbatch", "--wrap", "true")  # warm up
        sb = [c.timed("sbatch", "--wrap", "true") for _ in range(n)]
        sq = [c.timed("squeue") for _ in range(n)]
        jid = c.run("sbatch", "--parsable", "--wrap", "true").strip()
        sa = [c.timed("sacct", "-j", jid) for _ in range(n)]
        lat = []
        for i in range(max(5, n // 3)):
            stamp = c.work / f"stamp{i}"
            t0 = time.time()
            c.run("sbatch", "--wrap", f"date +%s.%N > {stamp}")
            deadline = time.monotonic() + 30
            while not (stamp.exists() and stamp.read_text().strip()) and time.monotonic() < deadline:
                time.sleep(0.002)
            lat.append(float(stamp.read_text()) - t0)
        sr = [c.timed("srun", "-N1", "true") for _ in range(n)]
        ranks = []
        for i in range(max(3, n // 6)):
            d = c.work / f"ranks{i}"
            d.mkdir()
            t0 = time.time()
            c.run("sbatch", "-N2", "--ntasks-per-node=2", "--wrap", f"srun sh -c 'date +%s.%N > {d}/$SLURM_PROCID'")
            deadline = time.monotonic() + 30
            while len([p for p in d.iterdir() if p.read_text().strip()]) < 4 and time.monotonic() < deadline:
                time.sleep(0.002)
            ranks.append(max(float(p.read_text()) for p in d.iterdir()) - t0)
        print(f"\n2-node local cluster, medians of {n} runs")
        row("benchmark", "slurmlet", "target", "real Slurm")
        row("sbatch --wrap true (round trip)", f"{median_ms(sb):.1f} ms", "<= 20 ms", "5.4 ms")
        row("squeue", f"{median_ms(sq):.1f} ms", "<= 20 ms", "5.0 ms")
        row("sacct -j ID", f"{median_ms(sa):.1f} ms", "<= 20 ms", "90 ms")
        row("submit -> script running (idle cluster)", f"{median_ms(lat):.1f} ms", "<= 50 ms", "0.5-2 s")
        row("srun -N1 true (outside an allocation)", f"{median_ms(sr):.1f} ms", "<= 100 ms", "135 ms")
        row("submit -> 4 ranks of a 2-node srun step running", f"{median_ms(ranks):.1f} ms", "", "")
        py = [_timed([sys.executable, "-c", "pass"]) for _ in range(n)]
        row("(python3 -c pass, for scale)", f"{median_ms(py):.1f} ms", "", "")
    finally:
        c.down()


def _timed(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, capture_output=True)
    return time.perf_counter() - t


def bench_example() -> None:
    """The llama-sft example (2 nodes x 2 gloo ranks, 40 steps): submit -> all ranks in one
    process group, and submit -> done. Needs torch."""
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        print("\nllama-sft example: skipped (pip install torch==2.13.0)")
        return
    import shutil
    c = LocalCluster(2, cpus=4, gpus=8)
    try:
        work = c.work / "llama-sft"
        shutil.copytree(ROOT / "examples" / "llama-sft", work)
        t0 = time.time()
        jid = subprocess.run([str(BIN / "sbatch"), "--parsable", "--export=ALL,NPROC_PER_NODE=2,STEPS=40",
                              "-o", "sft.out", "llama-sft.sbatch"], capture_output=True, text=True, cwd=work,
                             env=c.env, check=True).stdout.strip()
        out = work / "sft.out"
        joined = done = None
        deadline = time.monotonic() + 300
        while done is None and time.monotonic() < deadline:
            text = out.read_text() if out.exists() else ""
            if joined is None and "process group:" in text:
                joined = time.time() - t0
            if "\ndone\n" in text:
                done = time.time() - t0
            time.sleep(0.01)
        print(f"\nllama-sft example (job {jid}), 2 nodes x 2 gloo ranks, 40 steps")
        row("submit -> all 4 ranks in one process group", f"{joined or float('nan'):.1f} s", "", "")
        row("submit -> done", f"{done or float('nan'):.1f} s", "", "")
    finally:
        c.down()


def bench_air(n: int) -> None:
    """air run -> the command running on node 0; air list with 1,000 runs in the queue."""
    c = LocalCluster(2, cpus=4, gpus=2)
    try:
        work = c.work
        lat = []
        for i in range(n):
            stamp = work / f"air-stamp{i}"
            (work / "w.yaml").write_text(
                "experiment_name: bench\ncompute: {num_accelerators: 2, accelerator_type: GPU_2xH100}\n"
                f"command: '[ $NODE_RANK = 0 ] && date +%s.%N > {stamp} || true'\n")
            t0 = time.time()
            c.run("air", "run", "-f", "w.yaml")
            deadline = time.monotonic() + 30
            while not (stamp.exists() and stamp.read_text().strip()) and time.monotonic() < deadline:
                time.sleep(0.002)
            lat.append(float(stamp.read_text()) - t0)
        for _ in range(1000):
            c.api_post("/api/v1/jobs", {"script": "#!/bin/sh\ntrue\n", "hold": True, "workdir": str(work)})
        ls = [c.timed("air", "list", "runs") for _ in range(max(5, n))]
        print(f"\nair on a 2-node local cluster, medians of {n} runs")
        row("benchmark", "slurmlet", "target", "")
        row("air run -> command running on node 0", f"{median_ms(lat):.1f} ms", "", "")
        row("air list runs, 1,000 runs queued", f"{median_ms(ls):.1f} ms", "<= 50 ms", "")
    finally:
        c.down()


def bench_throughput(n: int) -> None:
    c = LocalCluster(4)
    try:
        t = time.perf_counter()
        for _ in range(n):
            c.run("sbatch", "-o", "/dev/null", "--wrap", "true")
        seq = n / (time.perf_counter() - t)
        ids = [int(c.run("sbatch", "--parsable", "-H", "-o", "/dev/null", "--wrap", "true").strip())
               for _ in range(n)]
        deadline = time.monotonic() + 300
        while any(not j["held"] for j in c.api("/api/v1/jobs?states=PENDING,RUNNING")["jobs"]) \
                and time.monotonic() < deadline:
            time.sleep(0.1)  # the sequential batch drains before the release is timed
        t = time.perf_counter()
        c.run("scontrol", "release", ",".join(map(str, ids)))
        wait_all_done(c, ids)
        rel = time.perf_counter() - t
        diag = c.api("/api/v1/diag")
        print(f"\n4-node local cluster (8 CPUs each), {n} jobs")
        row("benchmark", "slurmlet", "target", "real Slurm")
        row(f"{n} sequential sbatch --wrap true", f"{seq:.1f} jobs/s", ">= 60/s", "58 jobs/s")
        row(f"{n} held jobs released until all finished", f"{rel:.2f} s", "<= 5 s", "14.6 s")
        m, b = diag["main"], diag["backfill"]
        row("main pass (mean / max)", f"{m['mean_cycle_us'] / 1000:.1f}/{m['max_cycle_us'] / 1000:.0f} ms", "", "")
        row("backfill pass (mean / max)", f"{b['mean_cycle_us'] / 1000:.1f}/{b['max_cycle_us'] / 1000:.0f} ms",
            "", "")
        time.sleep(2)  # the backfill pass owed to the last change runs (bf_interval=1)
        before = c.api("/api/v1/diag")
        time.sleep(3)  # an idle queue: wake-ups happen, passes do not
        after = c.api("/api/v1/diag")
        ran = sum(after[k]["cycles"] - before[k]["cycles"] for k in ("main", "backfill"))
        row("passes run / skipped in 3 s of an unchanged queue", f"{ran} / {after['skipped'] - before['skipped']}",
            "0 run", "")
    finally:
        c.down()


def core_snapshot(njobs: int, nnodes: int):  # noqa: ANN201 - a controller.core Snapshot
    """A busy synthetic cluster: each 32-CPU node runs two 16-CPU jobs (half of the nodes one),
    ending over the next four hours; a queue of mixed multi-node GPU jobs with time limits."""
    from controller.core.model import Node, NodeAlloc, Partition, PendingJob, Request, RunningJob, Snapshot
    from controller.core.priority import Weights
    now = 1_000_000.0
    w = Weights(age=1000, fairshare=10000, jobsize=1000, partition=10000, qos=1000)
    nodes, running = [], []
    for i in range(1, nnodes + 1):
        jobs_here = 1 if i % 2 else 2
        for k in range(jobs_here):
            jid = 10_000_000 + 2 * i + k
            running.append(RunningJob(jid, "debug", (NodeAlloc(f"node{i}", 16, 1000, (4 * k, 4 * k + 1), 16),),
                                      now - 600, now + ((i * 37 + k * 11) % 240 + 1) * 60))
        nodes.append(Node(f"node{i}", 32, 256000, 8, cpus_used=16 * jobs_here, memory_used=1000 * jobs_here,
                          gpus_used=tuple(g for k in range(jobs_here) for g in (4 * k, 4 * k + 1))))
    part = Partition("debug", tuple(n.name for n in nodes))
    jobs = tuple(PendingJob(i, "debug", Request(nodes_min=1 + i % 4, ntasks_per_node=1 + i % 8,
                                                gpus_per_node=i % 3), submit_time=float(i), eligible_time=float(i),
                            time_limit=10 + (i * 7) % 230) for i in range(njobs))
    return Snapshot(now=now, nodes=tuple(nodes), partitions=(part,), pending=jobs, running=tuple(running), weights=w)


def bench_core() -> None:
    """The pure scheduling cycle on synthetic queues (pending jobs x nodes)."""
    sys.path.insert(0, str(ROOT))
    from controller.core.plan import clear_caches, plan
    print("\nscheduling core: one cycle on a busy synthetic cluster (multifactor weights on, bf_max_job_test=100);"
          "\n'cold' = the first cycle, 'warm' = the next ones (node order and partition checks kept)")
    row("pending jobs x nodes", "main, cold", "full, cold", "full, warm <= 1 s")
    for njobs, nnodes in ((1000, 100), (10000, 1000), (50000, 1000)):
        snap = core_snapshot(njobs, nnodes)
        times = []
        for backfill in (False, True, True):
            if len(times) < 2:
                clear_caches()
            t = time.perf_counter()
            p = plan(snap, backfill=backfill)
            times.append((time.perf_counter() - t) * 1000)
        row(f"{njobs} x {nnodes}", f"{times[0]:.0f} ms", f"{times[1]:.0f} ms", f"{times[2]:.0f} ms")
        print(f"    started {len(p.starts)} ({len(p.backfilled)} by backfill), "
              f"{len(p.start_times)} expected start times, {p.bf_tested} jobs tested by backfill")


def bench_sacct_history(n_jobs: int, reps: int) -> None:
    """sacct over a long history: `n_jobs` finished jobs over 30 days, written straight into the
    controller's SQLite database, then `sacct -j` with 20 ids and `sacct -S` windows."""
    c = LocalCluster(1)
    try:
        sys.path.insert(0, str(ROOT))
        import json as _json

        from sqlalchemy import create_engine, insert

        from controller.store.tables import jobs as J
        eng = create_engine(f"sqlite:///{c.state}/slurmlet.db")
        now = time.time()
        alloc = _json.dumps([{"node": "node1", "cpus": 1, "memory": 100, "gpu_ids": [], "tasks": 1}])
        rows = []
        for i in range(n_jobs):
            end = now - 30 * 86400 * (n_jobs - i) / n_jobs
            rows.append(dict(name=f"hist{i}", user="root", uid=0, gid=0, grp="root", account="root", qos="normal",
                             partition="debug", state="COMPLETED" if i % 7 else "FAILED", reason="None",
                             priority=1, nice=0, submit_time=end - 120, eligible_time=end - 120,
                             start_time=end - 60, end_time=end, time_limit=60, spec="{}", script="#!/bin/sh\ntrue\n",
                             environment="{}", alloc=alloc, nodes="node1", batch_host="node1", active=False,
                             exit_code=0 if i % 7 else 1, exit_signal=0, restarts=0, requeue=False,
                             suspended_secs=0.0, site_factor=0, batch_state="COMPLETED", batch_exit_code=0,
                             batch_exit_signal=0))
        with eng.begin() as conn:
            first = conn.execute(insert(J), rows[:1]).inserted_primary_key[0]
            for i in range(1, n_jobs, 5000):
                conn.execute(insert(J), rows[i:i + 5000])
        ids = ",".join(str(first + k * (n_jobs // 20)) for k in range(20))
        assert len(c.run("sacct", "-X", "-n", "-j", ids).splitlines()) == 20
        hour = len(c.run("sacct", "-a", "-X", "-n", "-S", "now-1hour").splitlines())
        day = len(c.run("sacct", "-a", "-X", "-n", "-S", "now-1day").splitlines())
        j20 = [c.timed("sacct", "-j", ids) for _ in range(reps)]
        s1h = [c.timed("sacct", "-a", "-S", "now-1hour") for _ in range(reps)]
        s1d = [c.timed("sacct", "-a", "-S", "now-1day") for _ in range(max(3, reps // 3))]
        print(f"\nsacct over {n_jobs:,} finished jobs (30 days), medians of {reps} runs")
        row("benchmark", "slurmlet", "target", "real Slurm")
        row("sacct -j (20 ids)", f"{median_ms(j20):.1f} ms", "<= 50 ms", "")
        row(f"sacct -S now-1hour ({hour} jobs)", f"{median_ms(s1h):.1f} ms", "<= 50 ms", "")
        row(f"sacct -S now-1day ({day} jobs)", f"{median_ms(s1d):.1f} ms", "", "")
    finally:
        c.down()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--only", help="run one benchmark: core, sim, latency, air, example, throughput, sacct")
    args = ap.parse_args()
    # byte-compile first: with PYTHONDONTWRITEBYTECODE set, every CLI run would compile its modules
    subprocess.run([sys.executable, "-m", "compileall", "-q", "cli", "controller", "nodeagent"], cwd=ROOT,
                   check=True, capture_output=True)
    quick = args.quick
    runs = {
        "core": bench_core,
        "sim": lambda: __import__("bench_sim").main(["--jobs", "2000" if quick else "10000"]),
        "latency": lambda: bench_latency(10 if quick else 30),
        "air": lambda: bench_air(5 if quick else 15),
        "example": bench_example,
        "throughput": lambda: bench_throughput(100 if quick else 500),
        "sacct": lambda: bench_sacct_history(20000 if quick else 100000, 5 if quick else 15),
    }
    if args.only and args.only not in runs:
        raise SystemExit(f"--only: expected one of {', '.join(runs)}")
    for name, fn in runs.items():
        if args.only in (None, name):
            fn()
            print()

if __name__ == "__main__":
    main()
