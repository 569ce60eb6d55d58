"""sattach JOB.STEP: attach to a running step's I/O. Its nodes send what each task has printed so far
(slurmstepd's buffer: the last 256 KiB per stream here) and what follows, then the tasks' exits; sattach
exits with the highest exit code, as 22.05's does (tests/data/slurm-2205-sattach.md)."""

from __future__ import annotations

import os
import sys

from slurmlet.cli import http

USAGE = "Usage: sattach [options] <jobid.stepid>"


def main(argv: list[str]) -> int:
    label = quiet = False
    pos: list[str] = []
    for a in argv:
        if a in ("-l", "--label"):
            label = True
        elif a in ("-Q", "--quiet"):
            quiet = True
        elif a in ("-v", "--verbose"):
            continue
        elif a in ("-h", "--help", "--usage"):
            from slurmlet.cli.helptext import text
            sys.stdout.write(text("sattach", "usage" if a == "--usage" else "help"))
            return 0
        elif a in ("-V", "--version"):
            print("slurm-wlm 22.05.8")
            return 0
        elif a.startswith("-"):
            print(f"sattach: unrecognized option '{a}'\nTry \"sattach --help\" for more information", file=sys.stderr)
            return 1
        else:
            pos.append(a)
    if len(pos) != 1:
        print("sattach: error: too many parameters", file=sys.stderr)  # (22.05's words for none, too)
        print(USAGE)
        return 1
    jid, dot, sid = pos[0].partition(".")
    if not dot or not jid.isdigit() or not sid.isdigit():
        print("sattach: error: Failed to parse stepid from command line options", file=sys.stderr)
        print(USAGE)
        return 1
    import socket

    from slurmlet.cli.srun import _listener, _StepIO
    srv = _listener()
    host = os.environ.get("SLURMLET_NODE_ADDR") or os.environ.get("SLURMLET_SRUN_ADDR") or socket.gethostname()
    try:
        got = http.request("POST", f"/api/v1/jobs/{jid}/steps/{sid}/attach", {"io": f"{host}:{srv.getsockname()[1]}"})
    except http.ControllerError as e:
        print(f"sattach: error: Could not get job step info: {e.error}", file=sys.stderr)
        return 1
    if not got["running"]:
        for node in reversed(got["nodes"]):
            if not quiet:
                print(f"sattach: Node {node}: no tasks running", file=sys.stderr)
        return 0
    io = _StepIO(srv, set(range(got["num_tasks"])), label)

    def step_over() -> bool:
        return http.request("GET", f"/api/v1/jobs/{jid}/steps/{sid}")["state"] != "RUNNING"
    io.run(step_over)
    worst = 0
    for rank in sorted(io.exits):
        code, sig, _node = io.exits[rank]
        if sig:
            print(f"sattach: error: task {rank} killed by signal {sig}", file=sys.stderr)
            worst = max(worst, 128 + sig)
        elif code:
            print(f"sattach: error: task {rank} exited with exit code {code}", file=sys.stderr)
            worst = max(worst, code)
    return worst
