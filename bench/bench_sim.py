"""Trace-replay benchmark: `slurmlet simulate` in-process on every trace and policy.

    .venv/bin/python bench/bench_sim.py [--jobs 10000] [--traces DIR] [--policies fcfs,easy,slurm]
                                        [--core auto|compiled|python]
    .venv/bin/python bench/bench_sim.py --sacct [--records 100000] [--core ...]

Prints one row per trace and policy: jobs, the simulation's wall time (and the part spent in the
scheduling core's plan()), jobs/s, mean wait and utilization. Target (from the issue): the first
10,000 jobs of each trace in <= 2 s per policy.

`--sacct`: a month of a 1,000-node site's history (bench/sacctgen.py: 100,000 `sacct -P -X -D -a`
records on 34,400 CPUs, generated into a temporary directory) replayed by the installed command,
`slurmlet simulate --sacct DUMP --config a.conf`, then with `--vs b.conf`, policy slurm. Prints
records, the command's wall time and records/s beside `python -c pass` measured in the same
run (the floor any command pays). Target: under a minute. Figures only; nothing is
asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_S = 2.0
SACCT_TARGET_S = 60.0
SLURMLET = Path(sys.executable).parent / "slurmlet"


def floor_ms(n: int = 15) -> float:
    """Median wall time of `python -c pass` (the interpreter the command runs on), ms."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main_sacct(records: int, core: str | None) -> int:
    """The installed `slurmlet simulate --sacct` on a generated month (see the module)."""
    import sacctgen  # (beside this file)
    with tempfile.TemporaryDirectory(prefix="bench-sacct-") as tmp:
        t0 = time.perf_counter()
        dump, a, b = sacctgen.write(Path(tmp), records)
        gen_s = time.perf_counter() - t0
        floor = floor_ms()
        print(f"slurmlet simulate --sacct: {records} records of a {sacctgen.CPUS}-CPU site (bench/sacctgen.py, "
              f"generated in {gen_s:.1f} s); target < {SACCT_TARGET_S:.0f} s")
        print(f"python -c pass (the floor, this run): {floor:.1f} ms")
        head = (f"{'replay':<12} {'records':>8} {'jobs':>7} {'wall s':>8} {'records/s':>10} {'load s':>7} "
                f"{'sim s':>7} {'core s':>7} {'passes':>7} {'util':>7} {'target':>7}")
        print(head)
        print("-" * len(head))
        env = None if core is None else {**os.environ, "SLURMLET_SIM_CORE": core}
        for label, extra in (("A", []), ("A vs B", ["--vs", str(b)])):
            cmd = [str(SLURMLET), "simulate", "--sacct", str(dump), "--config", str(a), *extra, "--json"]
            t0 = time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            wall = time.perf_counter() - t0
            if r.returncode != 0:
                print(f"{label}: exit {r.returncode}: {r.stderr.strip()}", file=sys.stderr)
                return 1
            reps = json.loads(r.stdout)["replays"]
            first = reps["A"]
            ok = "met" if wall < SACCT_TARGET_S else "MISSED"
            print(f"{label:<12} {first['records']:>8} {first['jobs']:>7} {wall:>8.2f} {first['records'] / wall:>10.0f} "
                  f"{sum(x['load_s'] for x in reps.values()):>7.2f} {sum(x['wall_s'] for x in reps.values()):>7.2f} "
                  f"{sum(x['core_s'] for x in reps.values()):>7.2f} {sum(x['passes'] for x in reps.values()):>7} "
                  f"{first['utilization'] * 100:>6.1f}% {ok:>7}", flush=True)
            if label == "A":
                print(f"{'':<12} scheduling core: {first['core']}{' (' + first['core_note'] + ')' if first['core_note'] else ''}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from slurmlet.controller.sim import engine, swf
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10000, help="first N jobs of each trace (default 10000)")
    ap.add_argument("--traces", default="/work/shared/traces", help="directory of *.swf[.gz] traces")
    ap.add_argument("--policies", default=",".join(engine.POLICIES), help="comma-separated policies")
    ap.add_argument("--core", choices=("auto", "compiled", "python"), default=None,
                    help="the scheduling core (default: the compiled one where it is built)")
    ap.add_argument("--sacct", action="store_true",
                    help="replay a generated month of a 1,000-node site's sacct history instead (bench/sacctgen.py)")
    ap.add_argument("--records", type=int, default=100_000, help="--sacct: records in the history (default 100000)")
    args = ap.parse_args(argv)
    if args.sacct:
        return main_sacct(args.records, args.core)
    on = engine.core(args.core)
    paths = sorted(p for p in Path(args.traces).iterdir() if p.name.endswith((".swf", ".swf.gz")))
    if not paths:
        print(f"no traces in {args.traces}", file=sys.stderr)
        return 1
    pols = [p for p in args.policies.split(",") if p]
    print(f"slurmlet simulate: first {args.jobs} jobs per trace; target <= {TARGET_S:.0f} s per trace and policy")
    print(f"scheduling core: {on.label}")
    head = (f"{'trace':<30} {'policy':<6} {'procs':>5} {'jobs':>6} {'load s':>7} {'wall s':>8} {'core s':>8} "
            f"{'jobs/s':>7} {'passes':>7} {'mean wait s':>12} {'util':>7} {'target':>7}")
    print(head)
    print("-" * len(head))
    for path in paths:
        t0 = time.perf_counter()
        trace = swf.load(str(path), args.jobs)
        load_s = time.perf_counter() - t0
        for name in pols:
            res = engine.simulate(trace, engine.policy(name, trace.jobs), on=on)
            s = res.summary()
            ok = "met" if s["wall_s"] <= TARGET_S else "MISSED"
            print(f"{path.name:<30} {name:<6} {trace.max_procs:>5} {s['jobs']:>6} {load_s:>7.3f} {s['wall_s']:>8.2f} "
                  f"{s['core_s']:>8.2f} {s['jobs_per_s']:>7.0f} {s['passes']:>7} {s['mean_wait_s']:>12.0f} "
                  f"{s['utilization'] * 100:>6.1f}% {ok:>7}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
