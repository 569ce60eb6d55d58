"""`sacct -P -X` dumps as replayable history: the reader of `slurmlet simulate --sacct`.

The input is what Slurm 22.05's `sacct --parsable2 --allocations` prints (`-a` for every user,
`-D` to keep the runs of requeued jobs): a header line of `|`-separated field names, then one
line per job allocation. The fields read (by name, in any order; others are ignored):

    JobIDRaw (else JobID)  Submit  Eligible  Start  End  Elapsed  Timelimit  State
    ReqTRES (cpu=N) / ReqCPUS / NCPUS  Partition  Account  User (the report's groups)  JobID

How records become replayed jobs (see docs/simulate.md, *Replaying sacct records*):

* a job arrives at its Eligible time (Submit where Eligible is Unknown or absent): dependencies,
  --begin, holds and array throttles are replayed as they happened, not re-decided;
* it holds its CPUs for its Elapsed time (End - Start where Elapsed is absent); a job that
  started and ended within the same second holds them for 1 s (sacct's resolution);
* its time limit is Timelimit; UNLIMITED (and Partition_Limit, the partition's, which the
  replayed single partition does not have) is no limit, as in Slurm: backfill plans such a job
  as never ending (the core's `time_limit=None`);
* its size is the CPUs it asked for: `cpu=` of ReqTRES, else ReqCPUS, else NCPUS;
* Start None or Unknown with a final state (a job CANCELLED before it started, or one that never
  ran): skipped as "never started". Slurm records such a job with no start and no elapsed time;
  it held no CPUs, so it is not replayed as work (its time in the queue is not replayed either);
* PENDING, RUNNING, REQUEUED without an end, SUSPENDED: skipped as "not finished";
* array tasks (`J_N`) are jobs of their own (JobIDRaw is each task's id), as Slurm runs them;
* a requeued job: with `-D` sacct lists each run (State REQUEUED, then the last run's state); each
  run that held CPUs is replayed, the later one arriving at its own Eligible time (Slurm gives a
  requeued job a new Submit and a BeginTime 121 s later). Without `-D` only the last run is there;
* heterogeneous job components (`J+N`) are replayed as separate jobs (each its own JobIDRaw and
  size); the simulator does not start them together as Slurm does.
"""

from __future__ import annotations

import io
import math
from datetime import datetime

from .swf import SKIP_TOO_WIDE, SwfError, SwfJob, Trace, open_text

SKIP_NEVER_STARTED = "never started"
SKIP_NOT_FINISHED = "not finished"
SKIP_NO_CPUS = "no CPU count"

NO_TIME = ("None", "Unknown", "")
NO_LIMIT = ("UNLIMITED", "Partition_Limit", "INVALID", "")


class SacctError(SwfError):
    """The dump cannot be read, or it is not `sacct -P` output with the fields a replay needs."""


def _stamp(v: str) -> float | None:
    if v in NO_TIME:
        return None
    return datetime.fromisoformat(v).timestamp()


def duration(v: str) -> int | None:
    """Seconds of a Slurm duration ([D-]HH:MM:SS, MM:SS, HH:MM:SS.mmm); None for no limit."""
    if v in NO_LIMIT:
        return None
    days = 0
    if "-" in v:
        d, v = v.split("-", 1)
        days = int(d)
    parts = [float(p) for p in v.split(":")]
    secs = 0.0
    for p in parts:
        secs = secs * 60 + p
    return days * 86400 + int(secs)


def _cpus(row: dict[str, str]) -> int:
    for item in row.get("ReqTRES", "").split(","):
        k, _, v = item.partition("=")
        if k == "cpu" and v.isdigit():
            return int(v)
    for key in ("ReqCPUS", "NCPUS"):
        v = row.get(key, "")
        if v.isdigit() and int(v) > 0:
            return int(v)
    return 0


def load(path: str, max_procs: int | None = None) -> Trace:
    with open_text(path) as f:
        try:
            return parse_lines(f, path, max_procs)
        except OSError as e:
            raise SacctError(f"cannot read {path}: {e}") from None


def parse(text: str, path: str = "<string>", max_procs: int | None = None) -> Trace:
    return parse_lines(io.StringIO(text), path, max_procs)


def parse_lines(lines, path: str, max_procs: int | None = None) -> Trace:  # noqa: ANN001 - any iterable of str
    """The replayable jobs of a dump. `max_procs` is the machine (jobs wider are skipped); None
    sizes it to the largest job. Times are seconds from the earliest arrival."""
    it = iter(enumerate(lines, 1))
    header: list[str] = []
    for _, line in it:
        if line.strip():
            header = line.rstrip("\r\n").split("|")
            break
    need = [k for k in ("Submit", "Start", "End", "State") if k not in header]
    if not any(k in header for k in ("JobIDRaw", "JobID")):
        need.insert(0, "JobIDRaw")
    if not any(k in header for k in ("ReqTRES", "ReqCPUS", "NCPUS")):
        need.append("ReqTRES")
    if need:
        raise SacctError(f"{path}:1: not a `sacct -P` header with the fields a replay needs "
                         f"(missing {', '.join(need)})")
    raw: list[tuple[int, float, int, int, int | None, dict[str, str]]] = []
    skipped: dict[str, int] = {}
    records = 0

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1

    for lineno, line in it:
        s = line.rstrip("\r\n")
        if not s:
            continue
        vals = s.split("|")
        if len(vals) != len(header):
            raise SacctError(f"{path}:{lineno}: expected {len(header)} fields, found {len(vals)}")
        row = dict(zip(header, vals))
        records += 1
        try:
            submit = _stamp(row["Submit"])
            eligible = _stamp(row.get("Eligible", ""))
            start, end = _stamp(row["Start"]), _stamp(row["End"])
            elapsed = duration(row["Elapsed"]) if row.get("Elapsed") else None
            limit = duration(row.get("Timelimit", ""))
        except ValueError as e:
            raise SacctError(f"{path}:{lineno}: {e}") from None
        if start is None:
            state = row["State"].split()[0] if row["State"] else ""
            skip(SKIP_NOT_FINISHED if state in ("PENDING", "REQUEUED", "REQUEUE_HOLD", "SUSPENDED")
                 else SKIP_NEVER_STARTED)
            continue
        if end is None or submit is None:
            skip(SKIP_NOT_FINISHED)
            continue
        run = elapsed if elapsed is not None else int(end - start)
        cpus = _cpus(row)
        if cpus <= 0:
            skip(SKIP_NO_CPUS)
            continue
        arrive = eligible if eligible is not None and eligible <= start else submit
        raw.append((lineno, arrive, max(run, 1), cpus, limit, row))
    if not raw:
        return Trace(path=path, max_procs=max_procs or 1, machine_source="largest job", jobs=[],
                     records=records, skipped=skipped)
    t0 = min(r[1] for r in raw)
    width = max_procs if max_procs is not None else max(r[3] for r in raw)
    jobs: list[SwfJob] = []
    for lineno, arrive, run, cpus, limit, row in raw:
        if cpus > width:
            skip(SKIP_TOO_WIDE)
            continue
        jid = row.get("JobIDRaw") or row["JobID"].split("_")[0].split("+")[0]
        jobs.append(SwfJob(job_id=int(jid), submit=int(arrive - t0), run=run, procs=cpus,
                           requested=limit if limit is not None and limit > 0 else math.inf, line=lineno,
                           name=row.get("JobID", jid), partition=row.get("Partition", ""),
                           account=row.get("Account", ""), user_name=row.get("User", "")))
    return Trace(path=path, max_procs=width, machine_source="slurm.conf" if max_procs else "largest job",
                 jobs=jobs, records=records, skipped=skipped)
