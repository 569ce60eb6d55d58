"""sacct: accounting records of jobs and their steps."""

from __future__ import annotations

import sys
import time

from slurmlet.cli import common, http
from slurmlet.cli.argv import Opt

TABLE: list[Opt] = [
    ("j", "jobs", 1, "jobs"), ("o", "format", 1, "format"), ("P", "parsable2", 0, "parsable2"),
    ("p", "parsable", 0, "parsable"), ("n", "noheader", 0, "noheader"), ("X", "allocations", 0, "allocations"),
    ("S", "starttime", 1, "starttime"), ("E", "endtime", 1, "endtime"), ("", "name", 1, "name"),
    ("s", "state", 1, "state"), ("u", "user", 1, "user"), ("A", "account", 1, "account"),
    ("r", "partition", 1, "partition"), ("a", "allusers", 0, "allusers"), ("l", "long", 0, "long"),
    ("b", "brief", 0, "brief"), ("D", "duplicates", 0, "duplicates"), ("", "json", 0, "json"),
    ("L", "allclusters", 0, "allclusters"), ("M", "clusters", 1, "clusters"), ("", "delimiter", 1, "delimiter"),
    ("T", "truncate", 0, "truncate"), ("h", "help", 0, "help"), ("V", "version", 0, "version"),
    ("", "usage", 0, "usage"), ("e", "helpformat", 0, "helpformat"), ("", "units", 1, "units"),
    ("N", "nodelist", 1, "nodelist"), ("q", "qos", 1, "qos"), ("x", "associations", 1, "associations"),
]


def parse_when(value: str, now: float) -> float | None:
    """sacct -S/-E: Slurm's parse_time() forms (common/slurmtime.py; a time without a date is one
    past), e.g. `now-1hour`, `midnight`, `YYYY-MM-DD[THH:MM[:SS]]`, `YYYY-MM-DD-HH:MM:SS`, `HH:MM`,
    `MM/DD[/YY]`; 0 for a value that names no time (as if the option were not given); raises
    OptError with parse_time's line for anything else."""
    from slurmlet.common.slurmtime import parse_date
    return float(parse_date(value, now, past=True))


def _midnight(now: float) -> float:
    lt = time.localtime(now)
    return time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday, 0, 0, 0, 0, 0, -1))


USAGE = ("Usage: sacct [-j jobid[.step]] [-o fields] [-P|-p] [-n] [-X] [-S time] [-E time] [-s states]\n"
         "             [-u users] [-A accounts] [-r partitions] [--name names] [-a] [-l] [--json]")


def main(argv: list[str]) -> int:
    res = common.command_options("sacct", argv, TABLE, USAGE, help_hint=False)
    if isinstance(res, int):
        return res
    o, pos = res
    now = time.time()
    ids: list[int] = []
    step_filter: dict[int, set[str]] = {}
    for tok in common.split_list(o.get("jobs", [])):
        base = tok.split(".")[0].split("_")[0]
        if not base.isdigit():
            print(f"sacct: fatal: Bad job/step specified: {tok}", file=sys.stderr)
            return 1
        ids.append(int(base))
        if "." in tok:
            step_filter.setdefault(int(base), set()).add(tok.split(".", 1)[1])
    q = ["history=1"]
    if "duplicates" in o:
        q.append("duplicates=1")
    if ids:
        q.append("ids=" + ",".join(map(str, ids)))
    since = until = None
    if "state" in o:  # checked first: a bad state is fatal whatever else was asked
        try:
            common.parse_states(",".join(o["state"]))
        except ValueError as e:
            print(f"sacct: fatal: unrecognized job state value '{e}'", file=sys.stderr)
            return 1
    from slurmlet.common.grammar import OptError
    try:
        since = parse_when(o["starttime"][-1], now) if "starttime" in o else 0
        until = parse_when(o["endtime"][-1], now) if "endtime" in o else None
    except OptError as e:  # parse_time's own line, and nothing after it
        print(*e.lines, sep="\n", file=sys.stderr)
        return 1
    if since:
        pass
    elif ids:  # no -S (or one that names no time): with -j, any time
        since = None
    elif "state" in o:
        since = now  # with -s and no -S, sacct looks at jobs in those states now
    else:
        since = _midnight(now)  # sacct's default window: since 00:00 today
    until = until or None
    if since is not None and until is not None and since > until:
        def iso(t: float) -> str:
            return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))
        print(f"sacct: error: Start time ({iso(since)}) requested is after end time ({iso(until)}).",
              file=sys.stderr)
        return 1
    if since is not None:
        q.append(f"since={since}")
    if until is not None:
        q.append(f"until={until}")
    import os
    users = common.split_list(o.get("user", []))
    import pwd
    for u in users:
        try:
            pwd.getpwnam(u)
        except KeyError:
            if not u.isdigit():
                print(f"sacct: error: Invalid user id: {u}", file=sys.stderr)
                return 1
    if not users and "allusers" not in o and os.getuid() != 0 and not ids:
        users = [common.current_user()]
    if users:
        q.append("users=" + ",".join(users))
    if "name" in o:
        q.append("names=" + ",".join(common.split_list(o["name"])))
    if "partition" in o:
        q.append("partitions=" + ",".join(common.split_list(o["partition"])))
    if "account" in o:
        q.append("accounts=" + ",".join(common.split_list(o["account"])))
    if "qos" in o:
        q.append("qos=" + ",".join(common.split_list(o["qos"])))
    jobs = http.request("GET", "/api/v1/jobs?" + "&".join(q))["jobs"]
    if "state" in o:
        try:
            states = set(common.parse_states(",".join(o["state"])) or common.JOB_STATES)
        except ValueError as e:
            print(f"sacct: fatal: unrecognized job state value '{e}'", file=sys.stderr)
            return 1
        jobs = [j for j in jobs if j["state"] in states]
    if step_filter:
        for j in jobs:
            want = step_filter.get(j["job_id"])
            if want:
                j["steps"] = [s for s in j["steps"] if str(s["step"]) in want]
    if "json" in o:
        from slurmlet.cli import sacct_json, slurm_json
        slurm_json.write(sacct_json.document(jobs))
        return 0
    from slurmlet.cli import render_sacct as render
    parsable = "P" if "parsable2" in o else ("p" if "parsable" in o else None)
    fields = ",".join(common.split_list(o["format"])) if "format" in o else None
    if "brief" in o and not fields:
        fields = "JobID,State,ExitCode"
    try:
        lines = render.sacct_lines(jobs, fields=fields, parsable=parsable, noheader="noheader" in o,
                                   allocations_only="allocations" in o, now=now, long="long" in o,
                                   delimiter=o["delimiter"][-1] if "delimiter" in o else "|")
    except ValueError as e:
        print(f"sacct: error: {e}", file=sys.stderr)
        return 1
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0
