"""Fidelity of `slurmlet simulate --sacct` against the real Slurm that wrote the history.

    .venv/bin/python bench/bench_fidelity.py [--sacct DUMP] [--config slurm.conf] [--worst N] [--json]

Replays the dump under the conf (policy slurm, as `slurmlet simulate --sacct` does) and prints
`controller/sim/fidelity.py`'s figures: the error |start_sim - start_slurm| per job (median, p95,
max), the shares of jobs within 0, 1 and 60 s, and the waits. Default: the KTH slice that
tests/data/fidelity/run_reference.sh ran on Slurm 22.05 (see docs/simulate.md, *Fidelity against
Slurm 22.05*). `--no-backfill` replays with the main pass only (the conf's SchedulerType as
sched/builtin), to see how much of the error is the backfill pass's. `--worst N` lists the N jobs
with the largest errors. `--against DUMP2`: instead of a replay, Slurm against itself: the same jobs
(matched by JobName) in another run's dump, the error being |wait in DUMP2 - wait in DUMP|.
Figures only.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "fidelity"


def main(argv: list[str] | None = None) -> int:
    from slurmlet.controller.commands.simulate import _machine
    from slurmlet.controller.config import load_config
    from slurmlet.controller.sim import engine, fidelity, report, sacct
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sacct", default=str(DATA / "kth-slice-sacct.txt"))
    ap.add_argument("--config", default=str(DATA / "slurm.conf"))
    ap.add_argument("--no-backfill", action="store_true")
    ap.add_argument("--worst", type=int, default=0, metavar="N")
    ap.add_argument("--against", metavar="DUMP2")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.against:
        return against(args.sacct, args.against)
    conf = load_config(args.config)
    trace = sacct.load(args.sacct, _machine(conf))
    pol = engine.policy("slurm", trace.jobs, conf)
    if args.no_backfill:
        pol = replace(pol, config=replace(pol.config, backfill=False))
    res = engine.simulate(trace, pol)
    fid = fidelity.compare(args.sacct, res)
    if args.json:
        print(json.dumps(fid.as_dict()))
        return 0
    print(f"{args.sacct}: {fid.jobs} jobs on {res.max_procs} CPUs ({args.config}"
          f"{', main pass only' if args.no_backfill else ''})")
    for k, v in fid.as_dict().items():
        print(f"  {k:<24} {v}")
    waits = fidelity.recorded_waits(args.sacct, {j.line for j in res.jobs})
    for label, keep in (("waited <= 3 s in Slurm", lambda w: w <= 3), ("waited > 3 s in Slurm", lambda w: w > 3)):
        err = [abs(s - j.submit - waits[j.line]) for j, s in zip(res.jobs, res.start) if keep(waits[j.line])]
        if err:
            print(f"  {label}: {len(err)} jobs, error median {report.percentile(err, 50):.0f} s, "
                  f"p95 {report.percentile(err, 95):.0f} s")
    print(f"  started by the backfill pass: {sum(res.backfilled)} of {len(res.jobs)} jobs")
    if args.worst:
        rows = sorted(((s - j.submit - waits[j.line], j, s, b) for j, s, b in zip(res.jobs, res.start, res.backfilled)),
                      key=lambda r: -abs(r[0]))
        print(f"\n{'job':>6} {'cpus':>4} {'limit':>6} {'run':>5} {'arrive':>6} {'wait_slurm':>10} {'wait_sim':>8} "
              f"{'error':>6} sim_backfilled")
        for d, j, s, b in rows[:args.worst]:
            print(f"{j.job_id:>6} {j.procs:>4} {j.requested:>6} {j.run:>5} {j.submit:>6} {waits[j.line]:>10.0f} "
                  f"{s - j.submit:>8.0f} {d:>+6.0f} {b}")
    return 0


def against(a: str, b: str) -> int:
    """Slurm against itself: per JobName, |wait in b - wait in a| (waits from Eligible to Start)."""
    from datetime import datetime

    from slurmlet.controller.sim import report

    def waits(path: str) -> dict[str, float]:
        lines = Path(path).read_text().splitlines()
        head = lines[0].split("|")
        rows = [dict(zip(head, line.split("|"))) for line in lines[1:] if line]
        return {r["JobName"]: datetime.fromisoformat(r["Start"]).timestamp()
                - datetime.fromisoformat(r["Eligible"]).timestamp() for r in rows}
    wa, wb = waits(a), waits(b)
    err = [abs(wb[k] - w) for k, w in wa.items() if k in wb]
    n = len(err)
    print(f"{b} against {a}: {n} jobs in both")
    print(f"  error median {report.percentile(err, 50):.0f} s, p95 {report.percentile(err, 95):.0f} s, "
          f"max {max(err):.0f} s, mean {sum(err) / n:.1f} s")
    print(f"  within 1 s {sum(e <= 1 for e in err) / n:.1%}, within 60 s {sum(e <= 60 for e in err) / n:.1%}")
    print(f"  mean wait {sum(wa.values()) / len(wa):.1f} s and {sum(wb.values()) / len(wb):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
