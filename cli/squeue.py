"""squeue: the queue, in Slurm's formats."""

from __future__ import annotations

import sys
import time

from slurmlet.cli import common, http
from slurmlet.cli.argv import Opt
from slurmlet.common.wire import VIEW_CHARS, VIEW_COLUMNS, VIEW_DEFAULT_WIDTH, VIEW_LINE, VIEW_SORTS

TYPE_CHECKING = False  # keep typing out of squeue's import path
if TYPE_CHECKING:
    from typing import Any

TABLE: list[Opt] = [
    ("h", "noheader", 0, "noheader"), ("o", "format", 1, "format"), ("O", "Format", 1, "Format"),
    ("u", "user", 1, "user"), ("", "me", 0, "me"), ("j", "jobs", 2, "jobs"), ("p", "partition", 1, "partition"),
    ("t", "states", 1, "states"), ("n", "name", 1, "name"), ("", "start", 0, "start"), ("l", "long", 0, "long"),
    ("r", "array", 0, "array"), ("S", "sort", 1, "sort"), ("a", "all", 0, "all"), ("A", "account", 1, "account"),
    ("q", "qos", 1, "qos"), ("w", "nodelist", 1, "nodelist"), ("i", "iterate", 1, "iterate"),
    ("v", "verbose", 0, "verbose"), ("V", "version", 0, "version"), ("", "help", 0, "help"),
    ("", "usage", 0, "usage"), ("", "json", 0, "json"), ("M", "clusters", 1, "clusters"),
    ("s", "steps", 2, "steps"), ("", "local", 0, "local"), ("", "federation", 0, "federation"),
]


USAGE = ("Usage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid] [-n name] [-o format]\n"
         "              [-p partitions] [--qos qos] [--reservation reservation] [--sort fields] [--start]\n"
         "              [--step step_id] [-t states] [-u user_name] [--usage] [-w nodes] [-ahjlrsv]")


#: the columns that print a local time (`-o` letters, `-O` names): rendered here, in this process's
#: time zone, not by the controller (tests/unit/cli/test_render.py checks these against the renderer)
LOCAL_TIME_LETTERS = frozenset("eSV")
LOCAL_TIME_NAMES = frozenset({"endtime", "starttime", "submittime", "eligibletime", "accruetime", "lastschedeval"})


def local_times(fmt: str | None, long_fmt: str | None) -> bool:
    """Whether an `-o` or `-O` format has a column that prints a local time."""
    if long_fmt:  # (an empty -O is no -O: render_squeue._specs)
        return any(tok.partition(":")[0].lower() in LOCAL_TIME_NAMES for tok in long_fmt.split(","))
    return fmt is not None and any(part.lstrip(".-0123456789")[:1] in LOCAL_TIME_LETTERS
                                   for part in fmt.split("%")[1:])


def rendered_here(fmt: str | None, long_fmt: str | None, sort: str | None) -> bool:
    """Whether squeue renders a view itself: one that prints a local time, or one too large for the
    controller to render (common/wire.py's VIEW_CHARS; a cheap test, which may say so of some that
    are not: it counts every number in the format as a column's width)."""
    if len(sort or "") > VIEW_CHARS or (sort or "").count(",") >= VIEW_SORTS - 1:
        return True
    text = long_fmt or fmt
    if text:
        runs = _digit_runs(text)
        line = sum(int(r) for r in runs if len(r) < 5) + \
            (VIEW_DEFAULT_WIDTH * (text.count(",") + 1) if long_fmt else 0)
        if len(text) > VIEW_CHARS or text.count("," if long_fmt else "%") >= VIEW_COLUMNS or \
                any(len(r) >= 5 for r in runs) or line > VIEW_LINE:
            return True
    return local_times(fmt, long_fmt)


def _digit_runs(text: str) -> list[str]:
    """The runs of digits in `text` (a digit other than 0-9 counts as 99999: the renderer may read it
    as one, or fail on it)."""
    return "".join(ch if "0" <= ch <= "9" else " 99999 " if ch.isdigit() else " " for ch in text).split()


def quote(v: str) -> str:
    """A query value, what a URL may not carry as it is percent-encoded (urllib brings `re`)."""
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-._~,:") else
                   "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogateescape")) for ch in v)


def main(argv: list[str]) -> int:
    res = common.command_options("squeue", argv, TABLE, USAGE)
    if isinstance(res, int):
        return res
    o, pos = res
    clusters = None
    if "clusters" in o:
        from slurmlet.cli.clusters import check
        clusters = check("squeue", o["clusters"][-1] or "")
        if clusters is None:
            return 1
    if pos and "jobs" in o and o["jobs"][-1] is None:
        o["jobs"][-1] = pos.pop(0)
    ids: list[int] | None = None
    task_filter: set[str] = set()
    if "jobs" in o:
        ids = []
        for tok in common.split_list([v or "" for v in o["jobs"]]):
            base = tok.split("_")[0].split(".")[0].split("+")[0]  # (J+N: a heterogeneous job, whole)
            if not base.isdigit():
                print(f"squeue: error: Invalid job id: {tok}", file=sys.stderr)
                return 1
            ids.append(int(base))
            if "_" in tok:
                task_filter.add(tok)
    states: list[str] | None = list(common.DEFAULT_QUEUE_STATES)
    if "states" in o:
        try:
            parsed = common.parse_states(",".join(o["states"]))
        except ValueError as e:
            print(f"squeue: error: Invalid job state specified: {e}\nsqueue: error: Valid job states include: "
                  f"{','.join(common.JOB_STATES)}\n", file=sys.stderr)
            return 1
        states = parsed  # None: all
    known = common.known_users(common.split_list(o.get("user", [])), "squeue", "Invalid user", end="\n\n")
    # (none known: 22.05 lists no job, its header alone; the names asked for are no job's)
    users = common.split_list(o.get("user", [])) if known is None else known
    if "me" in o:
        users.append(common.current_user())
    q = []
    if ids:
        q.append("ids=" + ",".join(map(str, ids)))
    if users:
        q.append("users=" + quote(",".join(users)))
    if "partition" in o:
        q.append("partitions=" + quote(",".join(common.split_list(o["partition"]))))
    if "name" in o:
        q.append("names=" + quote(",".join(common.split_list(o["name"]))))
    if states is not None and not ids:  # (the finished jobs stay on the controller: squeue prints none)
        q.append("states=" + ",".join(states))
    if "json" in o:
        # the jobs the filters name (22.05 prints every job slurmctld holds whatever they say; a tool that
        # asks `squeue --json -j ID` for one job, as TorchX's describe does, wants that job)
        # (without -t, every state the controller still holds, finished jobs too, as 22.05 lists them)
        from slurmlet.cli import slurm_json, squeue_json
        named = [x for x in q if not x.startswith("states=")]
        jobs = http.request("GET", "/api/v1/jobs" + ("?" + "&".join(named) if named else ""))["jobs"]
        if "states" in o and states is not None:
            jobs = [j for j in jobs if j["state"] in set(states)]
        slurm_json.write(squeue_json.document(jobs, time.time()))
        return 0
    #: render_squeue's keyword arguments for the view: fmt, long_fmt and sort (str | None), long and start
    view: dict[str, Any] = {"fmt": o["format"][-1] if "format" in o else None,
                            "long_fmt": o["Format"][-1] if "Format" in o else None,
                            "long": "long" in o, "start": "start" in o,
                            "sort": o["sort"][-1] if "sort" in o else None}
    if not view["long"] and not view["start"] and \
            not rendered_here(view["fmt"], view["long_fmt"], view["sort"]):
        # the controller renders the lines (and keeps them: squeue in a loop costs it little); a
        # controller without GET /api/v1/squeue (404) gets the jobs rendered here
        extra = [f"{k}={quote(v)}" for k, v in view.items() if isinstance(v, str)]
        extra += [f"{k}=true" for k in ("noheader", "array") if k in o]
        if ids and states is not None:  # (with -j the controller lists the jobs, then keeps these states)
            extra.append("shown=" + quote(",".join(states)))
        if task_filter:
            extra.append("tasks=" + quote(",".join(sorted(task_filter))))
        status, header, data = http.exchange("GET", "/api/v1/squeue?" + "&".join(q + extra))
        if status == 200:
            if clusters and "noheader" not in o:
                data = f"CLUSTER: {clusters[0]}\n".encode() + data
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            return 0
        if status == 404 and ids and b"Invalid job id specified" in data:
            print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
            return 1
        if status != 404:
            http.decoded(status, header, data)  # (raises the controller's error)
    from slurmlet.common import render_squeue as render
    keys = render.job_keys(**view)
    if keys:  # only what the columns show, and of that what is set: a fifth of each job or less
        q.append("fields=" + ",".join(keys) + "&nulls=false")
    jobs = http.request("GET", "/api/v1/jobs" + ("?" + "&".join(q) if q else ""))["jobs"]
    if ids and not jobs:
        print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
        return 1
    if states is not None:
        keep = set(states)
        jobs = [j for j in jobs if j["state"] in keep]
    if task_filter:
        jobs = render.named_tasks(jobs, task_filter)
    try:
        lines = render.squeue_lines(jobs, noheader="noheader" in o, now=time.time(), array_collapse="array" not in o,
                                    **view)
    except ValueError as e:
        print(f"squeue: error: {e}", file=sys.stderr)
        return 1
    if clusters and "noheader" not in o:  # as Slurm's squeue -M: which cluster the lines are of
        lines = [f"CLUSTER: {clusters[0]}", *lines]
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0
