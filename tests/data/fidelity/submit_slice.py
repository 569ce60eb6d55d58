"""Submits a slice of a real SWF trace to a running Slurm, at a compressed time scale, and waits.

    python3 submit_slice.py TRACE.swf.gz --first N --minutes M --scale F --max-run S --log FILE

Takes the trace's jobs from the N-th record (0-based, records with a run time and a size) whose
submit time lies within M * 60 * F seconds of that record's, and submits each one at its own
arrival time divided by F (the first at once): `sbatch -J swf-ID -n PROCS -t LIMIT --wrap 'sleep RUN'`,
where RUN = min(run, requested) / F (at least 1 s, at most `--max-run` s, and 3 s inside the limit)
and LIMIT = requested / F in whole minutes, rounded up (Slurm's time limits are minutes). Writes one
line per job to the log: `slurm_job_id swf_job_id arrival procs run limit_min`. Returns when none
of the jobs it submitted is pending or running.
"""

from __future__ import annotations

import argparse
import gzip
import math
import subprocess
import time


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("trace")
    p.add_argument("--first", type=int, required=True)
    p.add_argument("--minutes", type=float, required=True)
    p.add_argument("--scale", type=float, required=True)
    p.add_argument("--max-run", type=int, required=True)
    p.add_argument("--log", required=True)
    a = p.parse_args()
    recs = []
    with gzip.open(a.trace, "rt") as f:
        for line in f:
            if line.startswith(";") or not line.strip():
                continue
            v = line.split()
            jid, sub, run, procs, req = int(v[0]), int(v[1]), int(v[3]), max(int(v[4]), int(v[7])), int(v[8])
            if run > 0 and procs > 0:
                recs.append((jid, sub, run, procs, req if req > 0 else run))
    first = recs[a.first][1]
    span = a.minutes * 60 * a.scale
    jobs = []
    for jid, sub, run, procs, req in recs[a.first:]:
        if sub - first >= span:
            break
        limit = max(1, math.ceil(req / a.scale / 60))
        secs = max(1, min(round(min(run, req) / a.scale), a.max_run, limit * 60 - 3))
        jobs.append((jid, (sub - first) / a.scale, procs, secs, limit))
    ids = []
    t0 = time.monotonic()
    with open(a.log, "w") as log:
        for jid, arrive, procs, secs, limit in jobs:
            delay = t0 + arrive - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            out = subprocess.run(["/usr/bin/sbatch", "--parsable", "-J", f"swf-{jid}", "-p", "debug",
                                  "-n", str(procs), "-t", str(limit), "-o", "/dev/null",
                                  "--wrap", f"sleep {secs}"], check=True, capture_output=True, text=True)
            sid = out.stdout.strip().split(";")[0]
            ids.append(sid)
            log.write(f"{sid} {jid} {arrive:.1f} {procs} {secs} {limit}\n")
            log.flush()
    print(f"submitted {len(ids)} jobs in {time.monotonic() - t0:.0f} s; waiting for them to end", flush=True)
    while True:
        q = subprocess.run(["/usr/bin/squeue", "-h", "-j", ",".join(ids), "-o", "%i"],
                           capture_output=True, text=True).stdout.split()
        if not q:
            break
        time.sleep(10)
    print(f"all ended after {time.monotonic() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
