"""srun. Inside an allocation it runs the command as a job step on the batch node (steps across
all allocated nodes come with the distributed-launch work); outside one it allocates, runs and
releases, as Slurm does, by submitting the command and relaying its output and exit code."""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    from cli.opts import OptError, parse_srun
    try:
        req = parse_srun(argv, env=dict(os.environ), cwd=os.getcwd())
    except OptError as e:
        sys.stderr.write("\n".join(e.lines) + "\n")
        return e.code
    o = req["opts"]
    if "version" in o:
        print("slurm-wlm 22.05.8")
        return 0
    if "help" in o or "usage" in o:
        print("Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]]")
        return 0
    if not req["command"]:
        print("srun: fatal: No command given to execute.", file=sys.stderr)
        return 1
    if os.environ.get("SLURM_JOB_ID") and "jobid" not in o or o.get("jobid"):
        return _step(req)
    return _allocate_and_run(req)


def _step(req: dict) -> int:
    import subprocess
    env = dict(os.environ)
    step = int(env.get("SLURMLET_NEXT_STEP", "0"))
    env.update(SLURM_STEP_ID=str(step), SLURM_STEPID=str(step), SLURM_STEP_NODELIST=env.get("SLURMD_NODENAME", ""),
               SLURM_STEP_NUM_NODES="1", SLURM_STEP_NUM_TASKS="1", SLURM_STEP_TASKS_PER_NODE="1",
               SLURM_PROCID="0", SLURM_LOCALID="0", SLURM_NODEID="0", SLURM_DISTRIBUTION="block")
    label = "label" in req["opts"]
    if label:
        p = subprocess.Popen(req["command"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert p.stdout is not None
        for line in p.stdout:
            sys.stdout.buffer.write(b"0: " + line)
        rc = p.wait()
    else:
        rc = subprocess.call(req["command"], env=env)
    if rc:
        print(f"srun: error: {env.get('SLURMD_NODENAME', 'localhost')}: task 0: Exited with exit code {rc}",
              file=sys.stderr)
    return rc if rc >= 0 else 128 - rc


def _allocate_and_run(req: dict) -> int:
    import shlex
    import tempfile
    from cli import http
    from cli.opts import build_submit
    from cli.common import current_user
    from cli.sbatch import wait_for
    o = dict(req["opts"])
    out = tempfile.NamedTemporaryFile(prefix="srun-", suffix=".out", delete=False)
    out.close()
    script = "#!/bin/sh\n" + " ".join(shlex.quote(a) for a in req["command"]) + "\n"
    o["output"] = out.name
    try:
        body = build_submit(o, script=script, default_name=os.path.basename(req["command"][0]), script_args=[],
                            env=dict(os.environ), cwd=os.getcwd(), user=current_user(), uid=os.getuid(),
                            gid=os.getgid(), group=str(os.getgid()), host=os.uname().nodename, now=None,
                            prog="srun")
        job_id = http.request("POST", "/api/v1/jobs", body)["job_id"]
        rc = wait_for(job_id)
        with open(out.name, "rb") as f:
            data = f.read()
        if "label" in req["opts"]:
            data = b"".join(b"0: " + line for line in data.splitlines(keepends=True))
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return rc
    finally:
        os.unlink(out.name)
