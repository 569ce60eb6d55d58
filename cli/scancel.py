"""scancel: cancel or signal jobs by id or by filter."""

from __future__ import annotations

import sys

from slurmlet.cli import common, http
from slurmlet.cli.argv import Opt

TABLE: list[Opt] = [
    ("u", "user", 1, "user"), ("", "me", 0, "me"), ("n", "name", 1, "name"), ("", "jobname", 1, "name"),
    ("p", "partition", 1, "partition"), ("t", "state", 1, "state"), ("s", "signal", 1, "signal"),
    ("v", "verbose", 0, "verbose"), ("Q", "quiet", 0, "quiet"), ("b", "batch", 0, "batch"),
    ("f", "full", 0, "full"), ("i", "interactive", 0, "interactive"), ("A", "account", 1, "account"),
    ("q", "qos", 1, "qos"), ("w", "nodelist", 1, "nodelist"), ("V", "version", 0, "version"),
    ("", "help", 0, "help"), ("", "usage", 0, "usage"), ("M", "clusters", 1, "clusters"),
    ("R", "reservation", 1, "reservation"), ("H", "hurry", 0, "hurry"), ("", "wckey", 1, "wckey"),
]


def signal_number(value: str) -> int | None:
    import signal
    v = value.upper()
    if v.isdigit():
        return int(v)
    if not v.startswith("SIG"):
        v = "SIG" + v
    s = getattr(signal, v, None)
    return int(s) if s is not None else None


USAGE = ("Usage: scancel [-A account] [--batch] [--full] [--interactive] [-n job_name]\n"
         "               [-p partition] [-Q] [-q qos] [-R reservation] [-s signal | integer]\n"
         "               [-t PENDING | RUNNING | SUSPENDED] [--usage] [-u user_name]\n"
         "               [--hurry] [-V] [-v] [-w hosts...] [--wckey=wckey] [job_id[_array_id][.step_id]]")


def main(argv: list[str]) -> int:
    res = common.command_options("scancel", argv, TABLE, USAGE)
    if isinstance(res, int):
        return res
    o, pos = res
    if "clusters" in o:
        from slurmlet.cli.clusters import check
        if check("scancel", o["clusters"][-1] or "") is None:
            return 1
    verbose = "verbose" in o
    quiet = "quiet" in o
    sig = None
    if "signal" in o:
        sig = signal_number(o["signal"][-1])
        if sig is None:
            print(f"scancel: error: Invalid job signal: {o['signal'][-1]}", file=sys.stderr)
            return 1
        if sig == 9 and not ("batch" in o or "full" in o):
            sig = None  # SIGKILL is a plain cancel
    ids: list[int] = []
    tasks: list[str] = []
    steps: list[tuple[int, int]] = []
    for tok in common.split_list(pos):
        head, plus, offset = tok.partition("+")
        if plus and head.isdigit() and offset.isdigit():  # 22.05 cancels a heterogeneous job only whole
            print(f"scancel: error: Kill job error on job id {tok}: "
                  "Operation not permitted on individual component of heterogeneous job", file=sys.stderr)
            return 1
        base, dot, step = tok.partition(".")
        head, _, task = base.partition("_")
        if not head.isdigit() or (task and not task.isdigit() and task != "*") or (dot and not step.isdigit()) \
                or (dot and task and sig is None):  # (a step of an array task: not yet)
            print(f"scancel: error: Invalid job id {tok}", file=sys.stderr)
            return 1
        if dot and sig is None:  # one step: its tasks are killed, the job goes on (with a signal: the
            steps.append((int(head), int(step)))  # job is signalled, as before steps could be cancelled)
        elif task and task != "*":
            tasks.append(f"{int(head)}_{int(task)}")
        else:
            ids.append(int(head))
    users = common.split_list(o.get("user", []))
    for u in users:
        if common.user_name(u) is None:
            print(f"scancel: error: Invalid user name: {u}", file=sys.stderr)
            return 1
    users = [common.user_name(u) or u for u in users]
    if "me" in o:
        users.append(common.current_user())
    names = common.split_list(o.get("name", []))
    parts = common.split_list(o.get("partition", []))
    states: list[str] = []
    if "state" in o:
        try:
            states = common.parse_states(",".join(o["state"])) or []
        except ValueError as e:
            print(f"scancel: error: Invalid job state specified: {e}", file=sys.stderr)
            return 1
    if not (ids or tasks or steps or users or names or parts or states or "account" in o or "nodelist" in o):
        print("scancel: error: No job identification provided", file=sys.stderr)
        return 1
    rc = 0
    for jid, sid in steps:  # (slurmctld kills a step's tasks at once: SIGKILL)
        try:
            http.request("POST", f"/api/v1/jobs/{jid}/steps/{sid}/cancel", {"scancel": True})
        except http.ControllerError as e:
            print(f"scancel: error: Kill job error on job step id {jid}.{sid}: {e.error}", file=sys.stderr)
            rc = max(rc, _EXIT.get(e.error, 1))
    if steps and not (ids or tasks):  # (filters with steps only name those steps' jobs: no other job)
        return rc
    import os
    body = {"ids": ids, "tasks": tasks, "users": users, "names": names, "partitions": parts, "states": states,
            "signal": sig, "uid": os.getuid()}
    if verbose:
        for jid in ids:
            print(f"scancel: Terminating job {jid}", file=sys.stderr)
    res = http.request("POST", "/api/v1/jobs/cancel", body)
    for r in res["results"]:
        if r["ok"]:
            if verbose and r["job_id"] not in ids:
                print(f"scancel: Terminating job {r['job_id']}", file=sys.stderr)
            continue
        gone = r["error"] in _GONE
        if (verbose or not gone or sig is not None) and not (gone and quiet):  # a plain cancel of a job
            # that is gone is no error (nor any gone job with -Q)
            print(f"scancel: error: Kill job error on job id {r['job_id']}: {r['error']}", file=sys.stderr)
        if not (gone and sig is None):
            # scancel exits with the largest Slurm error number (mod 256): 2002 (access denied) is 210
            rc = max(rc, _EXIT.get(r["error"], 1))
    return rc


#: the errors of a job that no longer runs (Slurm's ESLURM_INVALID_JOB_ID and ESLURM_ALREADY_DONE)
_GONE = ("Invalid job id specified", "Job/step already completing or completed")
#: scancel's exit status for an error: Slurm's error number, as exit() truncates it
_EXIT = {"Access/permission denied": 2002 % 256}
