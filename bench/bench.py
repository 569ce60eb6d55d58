"""slurmlet benchmarks: prints medians and throughput against the targets of the issues.

    .venv/bin/python bench/bench.py [--quick] [--only NAME] [--editable] [--torch]

It measures slurmlet as a user installs it: it builds the wheel (`pip wheel .`), installs it with
its dependencies into a virtual environment of its own (build/bench-venv) and runs itself there
(`--editable` measures the interpreter it was started with instead; `--torch` installs torch==2.13.0
there too, for the llama-sft example, which is skipped without it). The CLI's figures are printed
beside `python3 -c pass` measured in the same run, as a ratio: the floor any command pays.

`submit` and `agents` are the submission-throughput figures (REST single and batch, sbatch, and
latency while 100 simulated agents long-poll); bench/loadgen.py generates their load.

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
        for line in r.stdout.splitlines():  # what a user's eval "$(slurmlet up)" sets (PATH is BIN's below)
            k, _, v = line.removeprefix("export ").partition("=")
            if k.startswith("SLURMLET_"):
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
        from slurmlet.cli import http
        os.environ["SLURMLET_KEY_FILE"] = self.env["SLURMLET_KEY_FILE"]  # signed like the CLI's
        return http.request("POST", path, body, url=self.env["SLURMLET_CONTROLLER"])

    def api(self, path: str) -> dict:
        sys.path.insert(0, str(ROOT))
        from slurmlet.cli import http
        return http.request("GET", path, url=self.env["SLURMLET_CONTROLLER"])


def installed_python(torch: bool = False) -> str:
    """build/bench-venv's interpreter, with this tree's wheel installed (built and installed anew),
    and torch 2.13.0 (the CPU build, as the README's Quickstart installs it) when asked for."""
    venv = ROOT / "build" / "bench-venv"
    wheels = ROOT / "build" / "bench-wheel"
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    for old in wheels.glob("*.whl"):
        old.unlink()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)], check=True)
    wheel = next(wheels.glob("slurmlet-*.whl"))
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(wheel),
                    *(["torch==2.13.0"] if torch else [])], check=True)
    return str(venv / "bin" / "python")


def floor_ms(n: int) -> float:
    """`python3 -c pass` of the interpreter the commands run on: the floor of every CLI figure."""
    return median_ms([_timed([sys.executable, "-c", "pass"]) for _ in range(n)])


def vs_floor(ms: float, floor: float) -> str:
    return f"{ms:.1f} ms ({ms / floor:.1f}x)"


def median_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def row(name: str, value: str, target: str, slurm: str) -> None:
    print(f"{name:<48} {value:>18} {target:>12} {slurm:>14}")


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
        sc = [c.timed("scontrol", "show", "job", jid) for _ in range(n)]
        floor = floor_ms(n)
        print(f"\n2-node local cluster, medians of {n} runs; CLI figures beside python3 -c pass ({floor:.1f} ms)")
        row("benchmark", "slurmlet", "target", "real Slurm")
        row("python3 -c pass (the floor, this run)", f"{floor:.1f} ms", "", "")
        row("sbatch --wrap true (round trip)", vs_floor(median_ms(sb), floor), "<= 1.5x", "5.4 ms")
        row("squeue", vs_floor(median_ms(sq), floor), "<= 1.5x", "5.0 ms")
        row("sacct -j ID", vs_floor(median_ms(sa), floor), "<= 1.5x", "90 ms")
        row("scontrol show job ID", vs_floor(median_ms(sc), floor), "<= 1.5x", "")
        row("submit -> script running (idle cluster)", f"{median_ms(lat):.1f} ms", "<= 50 ms", "0.5-2 s")
        row("srun -N1 true (outside an allocation)", vs_floor(median_ms(sr), floor), "<= 60 ms", "135 ms")
        row("submit -> 4 ranks of a 2-node srun step running", f"{median_ms(ranks):.1f} ms", "", "")
    finally:
        c.down()


def _timed(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, capture_output=True)
    return time.perf_counter() - t


DASH_PROBE = """
import json, statistics, sys
from playwright.sync_api import sync_playwright
url, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
marks = lambda page, name: [m["startTime"] for m in page.evaluate("() => performance.getEntriesByType('mark').map(m => m.toJSON())")
                            if m["name"] == name]
shown, data = [], []
with sync_playwright() as p:
    b = p.chromium.launch(executable_path=sys.argv[4], args=["--no-sandbox"])
    for _ in range(n):
        page = b.new_page()
        page.goto(f"{url}/?token={token}#/queue")
        page.wait_for_selector('#queue tr[data-job]', timeout=60000)
        page.wait_for_function("() => performance.getEntriesByType('mark').length > 0", timeout=60000)
        shown.append(marks(page, "page-shown")[0])
        data.append(max(r["responseEnd"] for r in page.evaluate(
            "() => performance.getEntriesByType('resource').map(r => r.toJSON())") if "/api/v1/jobs" in r["name"]))
        page.close()
    b.close()
print(json.dumps({"shown": statistics.median(shown), "data": statistics.median(data)}))
"""


def bench_dashboard(n: int) -> None:
    """The dashboard's queue page with 1,000 jobs queued, opened fresh in headless Chromium: when its
    rows show (the page's own `page-shown` mark, from the start of navigation) and when the job
    list had arrived. Needs Playwright (the test extras: the development tree's .venv drives the
    browser) and Chromium; the controller is the one installed."""
    import shutil
    sys.path.insert(0, str(ROOT / "bench"))
    import asyncio
    import json

    import loadgen
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = next((str(p) for p in (ROOT / ".venv" / "bin" / "python", Path(sys.executable))
                   if p.exists() and subprocess.run([str(p), "-c", "import playwright"], capture_output=True).returncode == 0),
                  None)
    if not browser or not driver:
        print("\nthe dashboard: skipped (needs chromium and Playwright: ./test.sh installs both)")
        return
    c = LocalCluster(2)
    try:
        asyncio.run(loadgen.submit(c.env["SLURMLET_CONTROLLER"], _key(c), loadgen.job_body(str(c.work)), 1000, batch=500))
        token = c.run("scontrol", "token", "lifespan=3600").strip().removeprefix("SLURM_JWT=")
        r = subprocess.run([driver, "-c", DASH_PROBE, c.env["SLURMLET_CONTROLLER"], token, str(n), browser],
                           capture_output=True, text=True, timeout=600)
        if r.returncode:
            print(f"\nthe dashboard: the browser failed: {r.stderr[-2000:]}")
            return
        got = json.loads(r.stdout.splitlines()[-1])
        print(f"\nthe dashboard in headless Chromium, 1,000 jobs queued, medians of {n} fresh page opens")
        row("benchmark", "slurmlet", "target", "real Slurm")
        row("queue page: rows shown", f"{got['shown']:.0f} ms", "< 300 ms", "(no web page)")
        row("queue page: job list arrived", f"{got['data']:.0f} ms", "", "")
    finally:
        c.down()


def bench_queue(n: int) -> None:
    """The CLI against a full queue: squeue printing 1,000 held jobs, squeue -j of one job with 10 and
    with 10,000 queued (flat in the jobs not printed), 500 sequential sbatch -H."""
    sys.path.insert(0, str(ROOT / "bench"))
    import asyncio

    import loadgen
    c = LocalCluster(2)
    try:
        floor = floor_ms(n)
        url = c.env["SLURMLET_CONTROLLER"]
        body = loadgen.job_body(str(c.work))  # held

        def fill(total: int) -> None:  # held jobs through the batch endpoint, up to `total` queued
            have = len(c.api("/api/v1/jobs?states=PENDING")["jobs"])
            if total > have:
                asyncio.run(loadgen.submit(url, _key(c), body, total - have, batch=500))
        fill(10)
        one = c.run("sbatch", "--parsable", "-H", "-o", "/dev/null", "--wrap", "true").strip()
        few = [c.timed("squeue", "-j", one) for _ in range(n)]
        fill(1000)
        full = [c.timed("squeue") for _ in range(n)]
        t = time.perf_counter()
        for _ in range(500 if n >= 20 else 100):
            c.run("sbatch", "-H", "-o", "/dev/null", "--wrap", "true")
        seq = (500 if n >= 20 else 100) / (time.perf_counter() - t)
        fill(10000)
        many = [c.timed("squeue", "-j", one) for _ in range(n)]
        print(f"\nthe CLI against a full queue (2-node local cluster), medians of {n}; python3 -c pass {floor:.1f} ms")
        row("benchmark", "slurmlet", "target", "real Slurm")
        row("squeue, 1,000 jobs queued", vs_floor(median_ms(full), floor), "<= 1.5x", "")
        row("squeue -j ID, 10 jobs queued", vs_floor(median_ms(few), floor), "<= 1.5x", "")
        row("squeue -j ID, 10,000 jobs queued", vs_floor(median_ms(many), floor), "as with 10", "")
        row(f"{500 if n >= 20 else 100} sequential sbatch -H --wrap true", f"{seq:.1f} jobs/s", ">= 70/s", "240 jobs/s")
    finally:
        c.down()


def bench_example() -> None:
    """The llama-sft example (2 nodes x 2 gloo ranks, 40 steps): submit -> all ranks in one
    process group, and submit -> done. Needs torch."""
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        print("\nllama-sft example: skipped (no torch here: bench.py --torch installs it)")
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


def core_snapshot(njobs: int, nnodes: int):  # a controller.core Snapshot
    """A busy synthetic cluster: each 32-CPU node runs two 16-CPU jobs (half of the nodes one),
    ending over the next four hours; a queue of mixed multi-node GPU jobs with time limits."""
    from slurmlet.controller.core.model import Node, NodeAlloc, Partition, PendingJob, Request, RunningJob, Snapshot
    from slurmlet.controller.core.priority import Weights
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
    from slurmlet.controller.core.memo import Memo
    from slurmlet.controller.core.plan import plan
    print("\nscheduling core: one cycle on a busy synthetic cluster (multifactor weights on, bf_max_job_test=100);"
          "\n'cold' = the first cycle, 'warm' = the next ones (node order and partition checks kept)")
    row("pending jobs x nodes", "main, cold", "full, cold", "full, warm <= 1 s")
    for njobs, nnodes in ((1000, 100), (10000, 1000), (50000, 1000)):
        snap = core_snapshot(njobs, nnodes)
        times = []
        for backfill in (False, True, True):
            if len(times) < 2:
                memo = Memo()  # cold: nothing kept from an earlier cycle
            t = time.perf_counter()
            p = plan(snap, backfill=backfill, memo=memo)
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

        from slurmlet.controller.store.tables import jobs as J
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



# ---------------------------------------------------------------- submission throughput and load
def _key(c) -> bytes:
    return Path(c.env["SLURMLET_KEY_FILE"]).read_bytes().strip()


def _controller_proc(c):  # the psutil.Process of a cluster's controller
    import json

    import psutil
    return psutil.Process(json.loads((Path(c.state) / "pids.json").read_text())["controller"])


def _cpu(p) -> float:
    t = p.cpu_times()
    return t.user + t.system


class SimCluster:
    """A controller with `real` agents (`slurmlet agent`, as `slurmlet up` starts them) and `sim`
    more nodes in its slurm.conf (node `sim1`.., partition `sim`) for loadgen.SimAgents to play."""

    def __init__(self, real: int = 2, sim: int = 100, cpus: int = 8, memory: int = 16000):
        sys.path.insert(0, str(ROOT))
        from slurmlet.controller.commands.local import ensure_key, generated_conf
        self.state = tempfile.mkdtemp(prefix="slurmlet-bench-")
        conf = generated_conf(real, cpus, memory, 0, None).replace("Nodes=ALL", f"Nodes=node[1-{real}]")
        conf += (f"NodeName=sim[1-{sim}] CPUs={cpus} RealMemory={memory} State=UNKNOWN\n"
                 f"PartitionName=sim Nodes=sim[1-{sim}] MaxTime=INFINITE State=UP\n")
        (Path(self.state) / "slurm.conf").write_text(conf)
        key = ensure_key(self.state)
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.env = dict(os.environ, SLURMLET_CONTROLLER=self.url, SLURMLET_KEY_FILE=key,
                        PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
        self.work = Path(self.state) / "work"
        self.work.mkdir()
        self.procs = [self._spawn("controller", [str(BIN / "slurmlet"), "controller", "--config",
                                                 str(Path(self.state) / "slurm.conf"), "--listen",
                                                 f"127.0.0.1:{port}", "--state-dir", self.state, "--key-file", key])]
        self._wait(lambda: self.api("/api/v1/ping"))
        self.sim_names = [f"sim{i}" for i in range(1, sim + 1)]
        real_names = [f"node{i}" for i in range(1, real + 1)]
        for n in real_names:
            self.procs.append(self._spawn(f"agent-{n}", [str(BIN / "slurmlet"), "agent", "--controller", self.url,
                                                         "--name", n, "--spool", f"{self.state}/spool/{n}",
                                                         "--key-file", key]))
        self._wait(lambda: {x["name"] for x in self.api("/api/v1/nodes")["nodes"] if x["state"] == "IDLE"}
                   >= set(real_names))

    def _spawn(self, what: str, argv: list[str]) -> subprocess.Popen:
        with open(Path(self.state) / f"{what}.log", "ab") as log:
            return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, env=self.env)

    @staticmethod
    def _wait(pred, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if pred():
                    return
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.05)
        raise SystemExit("the cluster did not come up")

    def api(self, path: str) -> dict:
        from slurmlet.cli import http
        return http.request("GET", path, url=self.url)

    def controller(self):
        import psutil
        return psutil.Process(self.procs[0].pid)

    def down(self) -> None:
        import signal
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_submit(n: int, n_sbatch: int) -> None:
    """(a) POST /api/v1/jobs, one job a request, 8 keep-alive clients; (b) POST /api/v1/jobs/batch;
    (c) sbatch, 8 at a time. A 2-node `slurmlet up` cluster; jobs held (-H), except the rows that
    say runnable (`--wrap true`: 16 run at a time, the rest queue). The 8 clients are asyncio httpx
    clients in one process, or split over two (4 each) so the client is not what is measured."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    import loadgen
    print(f"\nsubmission throughput, 2-node local cluster (8 CPUs each), {os.cpu_count()} cores shared by the "
          f"controller, its agents and the clients")
    row("benchmark", "slurmlet", "target", "real Slurm")

    def api_run(c, body, count, batch=0, procs=1):
        ctl = _controller_proc(c)
        cpu0, me0 = _cpu(ctl), time.process_time()
        url = c.env["SLURMLET_CONTROLLER"]
        if procs == 1:
            r = asyncio.run(loadgen.submit(url, _key(c), body, count, batch=batch))
            client = time.process_time() - me0
        else:
            r, client = loadgen.submit_procs(url, _key(c), body, count, batch=batch, procs=procs)
        if r.errors or len(r.ids) != count or len(set(r.ids)) != count:
            raise SystemExit(f"submissions failed: {len(r.ids)} acknowledged, {len(set(r.ids))} distinct, "
                             f"errors {r.errors[:3]}")
        return r, (_cpu(ctl) - cpu0) / r.elapsed, client / r.elapsed

    def report(name, r, count, busy, client, target="", slurm="", per="") -> None:
        row(name, f"{count / r.elapsed:.0f} jobs/s", target, slurm)
        per_job = busy * r.elapsed / count  # controller CPU seconds per job: steadier than jobs/s here
        print(f"    p50/p99{per} {loadgen.percentile(r.latencies, 50) * 1000:.1f}/"
              f"{loadgen.percentile(r.latencies, 99) * 1000:.1f} ms; controller CPU {busy:.0%} of a core "
              f"({per_job * 1000:.2f} ms a job: {1 / per_job:,.0f} jobs/s on a core of its own), "
              f"clients {client:.0%}")

    c = LocalCluster(2)
    try:
        body = loadgen.job_body(str(c.work))
        api_run(c, body, 200)  # warm-up
        for procs in (1, 2):
            for rep in (1, 2):
                r, busy, client = api_run(c, body, n, procs=procs)
                report(f"(a) API submit, 8 clients/{procs} proc, {n} held, #{rep}", r, n, busy, client,
                       ">= 1000/s", "1000/s")
        for rep in (1, 2):
            try:
                r, busy, client = api_run(c, body, n * 5, batch=100)
            except SystemExit as e:
                print(f"(b) batch submission: {str(e)[:200]}")
                break
            report(f"(b) API batch of 100, 8 clients, {n * 5} held, #{rep}", r, n * 5, busy, client,
                   ">= 1000/s", per=" per batch")

        def one(_: int) -> None:
            c.run("sbatch", "--parsable", "-H", "-o", "/dev/null", "--wrap", "true")
        with ThreadPoolExecutor(8) as ex:
            list(ex.map(one, range(16)))  # warm-up
            for rep in (1, 2):
                t = time.perf_counter()
                list(ex.map(one, range(n_sbatch)))
                row(f"(c) sbatch -H --wrap true, 8 at a time, #{rep}",
                    f"{n_sbatch / (time.perf_counter() - t):.0f} jobs/s", "", "")
        queued = len(c.api("/api/v1/jobs?states=PENDING")["jobs"])
        print(f"    ({queued} held jobs in the queue at the end)")
    finally:
        c.down()
    c = LocalCluster(2)
    try:
        body = loadgen.job_body(str(c.work), hold=False)
        api_run(c, dict(body, hold=True), 200)
        for rep in (1, 2):
            r, busy, client = api_run(c, body, n, procs=2)
            report(f"(a') API submit, 8 clients/2 proc, {n} runnable, #{rep}", r, n, busy, client)
    finally:
        c.down()


def bench_agents(n: int) -> None:
    """(d) p50/p99 of ping, GET /api/v1/jobs?ids= (5 ids) and a submit (held), one request at a
    time, on an idle controller and then while 100 simulated agents long-poll it."""
    import asyncio

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    import loadgen
    c = SimCluster(real=2, sim=100)

    async def probes(cl, ids: str, body: dict, at_least: float = 0.0) -> dict[str, list[float]]:
        """`n` rounds of the three calls, and more until `at_least` seconds have passed."""
        out: dict[str, list[float]] = {"ping": [], "jobs?ids=": [], "submit": []}
        t0 = time.perf_counter()
        k = 0
        while k < n or time.perf_counter() - t0 < at_least:
            k += 1
            for what, call in (("ping", lambda: cl.get("/api/v1/ping")),
                               ("jobs?ids=", lambda: cl.get(f"/api/v1/jobs?ids={ids}")),
                               ("submit", lambda: cl.post("/api/v1/jobs", json=body))):
                t = time.perf_counter()
                r = await call()
                out[what].append(time.perf_counter() - t)
                if r.status_code >= 400:
                    raise SystemExit(f"{what}: {r.status_code} {r.text}")
        return out

    async def main() -> None:
        key = _key(c)
        body = loadgen.job_body(str(c.work))
        warm = await loadgen.submit(c.url, key, body, 500)  # a queue to look at
        ids = ",".join(map(str, warm.ids[:5]))
        async with loadgen.client(c.url, key) as cl:
            await probes(cl, ids, body)  # warm-up
            idle = await probes(cl, ids, body)
            sim = loadgen.SimAgents(c.url, key, c.sim_names)
            await sim.start()
            await asyncio.wait_for(sim.all_registered.wait(), 60)
            await asyncio.sleep(loadgen.LONG_POLL + 0.5)  # past the registration burst: steady long-polls
            syncs0, t0 = sim.syncs, time.perf_counter()
            ctl = c.controller()
            cpu0 = _cpu(ctl)
            # each column spans at least three long-poll rounds of every agent
            loaded = [await probes(cl, ids, body, 3 * loadgen.LONG_POLL) for _ in (1, 2)]
            rate = (sim.syncs - syncs0) / (time.perf_counter() - t0)
            busy = (_cpu(ctl) - cpu0) / (time.perf_counter() - t0)
            await sim.stop()
        queued = len(c.api("/api/v1/jobs?states=PENDING")["jobs"])
        if sim.errors:
            print(f"    simulated agents: {len(sim.errors)} errors, e.g. {sim.errors[:3]}")
        print(f"\nlatency, one request at a time (n={n} each), 2 real + 100 simulated nodes, "
              f"{queued} jobs held in the queue at the end")
        row("p50 / p99", "idle", "100 agents #1", "100 agents #2")
        for what in idle:
            cells = [f"{loadgen.percentile(x[what], 50) * 1000:.1f}/{loadgen.percentile(x[what], 99) * 1000:.1f} ms"
                     for x in (idle, *loaded)]
            row(f"{what}", *cells)
        print(f"    agents' syncs: {rate:.0f}/s (wait={loadgen.LONG_POLL:g} s long-polls); "
              f"controller CPU {busy:.0%} of a core")
    try:
        asyncio.run(main())
    finally:
        c.down()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--only", help="run one benchmark: core, sim, sim-sacct, latency, queue, air, example, throughput, "
                                   "sacct, submit, agents, dashboard")
    ap.add_argument("--editable", action="store_true",
                    help="measure this interpreter's slurmlet (the development tree) instead of the wheel")
    ap.add_argument("--torch", action="store_true",
                    help="install torch==2.13.0 beside the wheel, for the llama-sft example")
    args = ap.parse_args()
    if not args.editable and not os.environ.get("SLURMLET_BENCH_INSTALLED"):
        py = installed_python(torch=args.torch)
        os.execve(py, [py, os.path.abspath(__file__), "--editable", *sys.argv[1:]],
                  dict(os.environ, SLURMLET_BENCH_INSTALLED="1"))
    # byte-compile first: with PYTHONDONTWRITEBYTECODE set, every CLI run would compile its modules
    subprocess.run([sys.executable, "-m", "compileall", "-q", "cli", "controller", "nodeagent"], cwd=ROOT,
                   check=True, capture_output=True)
    quick = args.quick
    runs = {
        "core": bench_core,
        "sim": lambda: __import__("bench_sim").main(["--jobs", "2000" if quick else "10000"]),
        "sim-sacct": lambda: __import__("bench_sim").main(["--sacct", "--records", "20000" if quick else "100000"]),
        "latency": lambda: bench_latency(10 if quick else 30),
        "queue": lambda: bench_queue(10 if quick else 20),
        "air": lambda: bench_air(5 if quick else 15),
        "example": bench_example,
        "throughput": lambda: bench_throughput(100 if quick else 500),
        "sacct": lambda: bench_sacct_history(20000 if quick else 100000, 5 if quick else 15),
        "submit": lambda: bench_submit(1000 if quick else 3000, 80 if quick else 200),
        "agents": lambda: bench_agents(100 if quick else 300),
        "dashboard": lambda: bench_dashboard(5 if quick else 15),
    }
    if args.only and args.only not in runs:
        raise SystemExit(f"--only: expected one of {', '.join(runs)}")
    if args.only:
        runs[args.only]()
        print()
        return
    # each benchmark in a process of its own: what one leaves behind (the sacct section's 100,000
    # jobs in memory, threads, a large heap for the garbage collector to walk) must not slow the
    # clients of the next one (it made the submission clients 20 times slower)
    for name in runs:
        sys.stdout.flush()
        subprocess.run([sys.executable, os.path.abspath(__file__), "--only", name, "--editable",
                        *(["--quick"] if quick else [])], check=False)

if __name__ == "__main__":
    main()
