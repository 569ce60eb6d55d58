"""sbatch: submit a batch script."""

from __future__ import annotations

import os
import sys

from slurmlet.cli import http


def main(argv: list[str]) -> int:
    from slurmlet.cli.opts import parse_sbatch
    from slurmlet.common.grammar import OptError
    try:  # the user, group and host are this process's (parse_sbatch looks them up)
        req = parse_sbatch(argv, env=dict(os.environ), cwd=os.getcwd(), read_stdin=_read_stdin)
    except OptError as e:
        (sys.stdout if e.stdout else sys.stderr).write("\n".join(e.lines) + "\n")
        return e.code
    if req["version"]:
        print("slurm-wlm 22.05.8")
        return 0
    if req["help"] or req["usage"]:
        from slurmlet.cli.helptext import help_text, usage_text
        sys.stdout.write(help_text() if req["help"] else usage_text())
        return 0
    for line in req.get("warnings") or []:
        print(line, file=sys.stderr)
    if not req["quiet"]:
        for opt, _value in req.get("ignored") or []:  # accepted as Slurm accepts it; no effect here
            print(f"sbatch: warning: {opt} is accepted and ignored", file=sys.stderr)
        for line in req.get("info") or []:
            print(line, file=sys.stderr)
    body = req["submit"]
    if req.get("gpu_type"):
        body["gpu_type"] = req["gpu_type"]
    if req["test_only"]:
        try:
            res = http.request("POST", "/api/v1/jobs", body)
        except http.ControllerError as e:
            if e.error == "Requested node configuration is not available":
                print(f"allocation failure: {e.error}", file=sys.stderr)
                return 1
            raise
        when = "Unknown"
        if res.get("start_time"):
            import time
            when = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(res["start_time"]))
        print(f"sbatch: Job {res['job_id']} to start at {when} using {res['cpus']} processors on nodes "
              f"{res['nodes']} in partition {res['partition']}", file=sys.stderr)
        return 0
    cluster = req.get("clusters")
    if cluster:
        from slurmlet.cli.clusters import check
        good = check("sbatch", cluster)
        if good is None:
            return 1
        cluster = ",".join(good)
    try:
        job_id = submit(body)
    except http.ControllerError as e:
        for line in e.pre:
            print(f"sbatch: error: {line}", file=sys.stderr)
        print(f"sbatch: error: Batch job submission failed: {e.error}", file=sys.stderr)
        return e.code or 1
    if req["parsable"]:
        print(f"{job_id};{cluster}" if cluster else job_id, flush=True)
    elif not req["quiet"]:
        print(f"Submitted batch job {job_id}" + (f" on cluster {cluster}" if cluster else ""), flush=True)
    if req["wait"]:
        return wait_for(job_id)
    return 0


def submit(body: dict) -> int:
    return http.submit_once("/api/v1/jobs", body)["job_id"]


def _read_stdin() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    # bytes as they are: text mode would turn DOS line breaks into \n and hide them from the check
    return sys.stdin.buffer.read().decode("utf-8", "surrogateescape")


def wait_for(job_id: int) -> int:
    """sbatch -W: wait until the job, and every task of an array, has ended; exit with the highest of
    their exit codes (1 for one that ended otherwise unsuccessfully without one: cancelled, timed out,
    killed by a signal), as 22.05's sbatch does."""
    wait_on = job_id
    while True:  # the controller answers as soon as the job ends (or after 10 s: ask again)
        job = http.request("GET", f"/api/v1/jobs/{wait_on}?wait=10", timeout=60)
        if not _ended(job):
            continue
        if job.get("array_job_id") is None:
            return _exit_code(job)
        tasks = http.request("GET", f"/api/v1/jobs?ids={job_id}")["jobs"]
        left = [t for t in tasks if not _ended(t)]
        if not left:
            return max(_exit_code(t) for t in tasks)
        wait_on = left[0]["job_id"]


def _ended(job: dict) -> bool:
    return job["state"] not in ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING")


def _exit_code(job: dict) -> int:
    return 0 if job["state"] == "COMPLETED" else job["exit_code"] or 1
