"""Trace-replay benchmark: `slurmlet simulate` in-process on every trace and policy.

    .venv/bin/python bench/bench_sim.py [--jobs 10000] [--traces DIR] [--policies fcfs,easy,slurm]
                                        [--core auto|compiled|python]

Prints one row per trace and policy: jobs, the simulation's wall time (and the part spent in the
scheduling core's plan()), jobs/s, mean wait and utilization. Target (from the issue): the first
10,000 jobs of each trace in <= 2 s per policy. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_S = 2.0


def main(argv: list[str] | None = None) -> int:
    from slurmlet.controller.sim import engine, swf
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10000, help="first N jobs of each trace (default 10000)")
    ap.add_argument("--traces", default="/work/shared/traces", help="directory of *.swf[.gz] traces")
    ap.add_argument("--policies", default=",".join(engine.POLICIES), help="comma-separated policies")
    ap.add_argument("--core", choices=("auto", "compiled", "python"), default=None,
                    help="the scheduling core (default: the compiled one where it is built)")
    args = ap.parse_args(argv)
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
