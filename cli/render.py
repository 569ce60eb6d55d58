"""Pure text renderers for the Slurm-compatible commands (Slurm 22.05 output, byte for byte).

Every function takes plain dicts as served by the controller's REST API
(``JobPublic``, ``NodePublic``, partitions; see ``docs/api.md``) and returns text;
nothing here talks to the network or reads the clock unless ``now`` is left out.

Public entry points:

* :func:`squeue_lines` - ``squeue`` (default, ``-l``, ``-o``, ``-O``, ``-r``, ``--start``)
* :func:`sinfo_lines` - ``sinfo`` (default, ``-N``, ``-l``, ``-s``, ``-R``, ``-o``, ``-O``)
* :func:`sacct_lines` - ``sacct`` (default, ``-o/--format``, ``-p``, ``-P``, ``-n``, ``-X``, ``-l``)
* :func:`scontrol_show_job`, :func:`scontrol_show_node`, :func:`scontrol_show_partition`

The ``*_lines`` functions return lines without their newline; the ``scontrol_*``
functions return the complete text, trailing newlines included, as scontrol prints it.
"""

from __future__ import annotations

import time

from slurmlet.cli import fmt as F
from slurmlet.cli.fmt import Field, Spec

TYPE_CHECKING = False  # keep typing (~7 ms) out of the CLI's import path
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable

    JobDict = dict[str, Any]
    NodeDict = dict[str, Any]
    PartDict = dict[str, Any]


def _now(now: float | None) -> float:
    """The reference time for durations: ``now`` or the wall clock."""
    return time.time() if now is None else now


def _null(value: Any, default: str = "(null)") -> Any:
    """``default`` when ``value`` is None (C's ``printf("%s", NULL)`` prints ``(null)``)."""
    return default if value is None else value


# ===========================================================================
# Job facts shared by squeue, scontrol and sacct
# ===========================================================================


def job_is_array(job: JobDict) -> bool:
    """True for an element of a job array."""
    return job.get("array_task_id") is not None and job.get("array_job_id") is not None


def job_time_used(job: JobDict, now: float) -> int:
    """``job_time_used``: 0 while pending, now-start while running, end-start once done."""
    start = job.get("start_time")
    state = job.get("state")
    if not start or state == "PENDING":
        return 0
    if state == "SUSPENDED" and job.get("pre_sus_time") is not None:
        return int(job["pre_sus_time"])
    end = job.get("end_time")
    if state in ("RUNNING", "SUSPENDED") or not end:
        end = now
    return max(int(end) - int(start) - int(job.get("suspended_secs") or 0), 0)


def job_end_time(job: JobDict) -> float | None:
    """The end time Slurm shows: the real one, else start+limit for a started job."""
    end = job.get("end_time")
    if end:
        return end
    start = job.get("start_time")
    limit = job.get("time_limit")
    if start and limit is not None and job.get("state") not in ("PENDING",):
        return start + limit * 60 + (job.get("suspended_secs") or 0)
    return None


def job_mem_total(job: JobDict) -> int:
    """The job's memory in MB across all its nodes (the ``mem=`` of its TRES)."""
    if job.get("alloc_memory"):
        return int(job["alloc_memory"])
    if job.get("mem_per_cpu"):
        return int(job["mem_per_cpu"]) * int(job.get("num_cpus") or 0)
    if job.get("mem_per_node"):
        return int(job["mem_per_node"]) * int(job.get("num_nodes") or 0)
    return 0


def job_gpus_total(job: JobDict) -> int:
    """GPUs of the whole job (``gres/gpu=`` in its TRES)."""
    ids = job.get("gpu_ids") or {}
    if ids:
        return sum(len(v) for v in ids.values())
    return int(job.get("gpus_per_node") or 0) * int(job.get("num_nodes") or 0)


def job_tres_pairs(job: JobDict) -> list[tuple[str, Any]]:
    """The job TRES in slurmctld order: cpu, mem, node, billing, gres/gpu."""
    cpus = int(job.get("num_cpus") or 0)
    mem = job_mem_total(job)
    gpus = job_gpus_total(job)
    return [("cpu", cpus), ("mem", F.convert_num(mem) if mem else None),
            ("node", int(job.get("num_nodes") or 0)), ("billing", int(job.get("billing", cpus))),
            ("gres/gpu", gpus or None)]


def job_tres_str(job: JobDict, *, sort: bool = False) -> str:
    """``cpu=1,mem=1000M,node=1,billing=1,gres/gpu=8`` (sorted by name for sacct)."""
    pairs = job_tres_pairs(job)
    if sort:
        pairs = sorted(pairs)
    return F.tres_string(pairs)


def job_min_cpus_node(job: JobDict) -> int:
    """``pn_min_cpus``: CPUs a node must offer (cpus-per-task x tasks-per-node)."""
    if job.get("min_cpus_node") is not None:
        return int(job["min_cpus_node"])
    return int(job.get("cpus_per_task") or 1) * int(job.get("ntasks_per_node") or 1)


def job_min_memory(job: JobDict) -> tuple[str, str]:
    """``("CPU", "1000M")`` or ``("Node", "2000M")``: the per-cpu/per-node memory request."""
    if job.get("mem_per_cpu"):
        return "CPU", F.convert_num(job["mem_per_cpu"])
    return "Node", F.convert_num(job.get("mem_per_node") or 0)


def job_exit(job: JobDict, derived: bool = False) -> str:
    """``ExitCode`` as ``exit:signal``."""
    if derived:
        return f"{job.get('derived_exit_code') or 0}:{job.get('derived_exit_signal') or 0}"
    return f"{job.get('exit_code') or 0}:{job.get('exit_signal') or 0}"


def job_reason(job: JobDict) -> str:
    """The job's state reason, ``None`` when it has none."""
    return job.get("reason") or "None"


def job_id_str(job: JobDict, tasks: str | None = None) -> str:
    """``7885_[0-3]`` (collapsed array), ``7885_2`` (array task) or ``7889``."""
    if tasks is not None:
        return f"{job['array_job_id']}_[{tasks}]"
    if job_is_array(job):
        return f"{job['array_job_id']}_{job['array_task_id']}"
    return str(job["job_id"])


# ===========================================================================
# squeue
# ===========================================================================

SQUEUE_DEFAULT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
SQUEUE_LONG = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
SQUEUE_START = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
SQUEUE_DEFAULT_SORT = "P,t,-p"


class QRow:
    """One squeue line: a job, or pending tasks of one array collapsed into one line."""

    __slots__ = ("j", "now", "tasks", "reason")

    def __init__(self, job: JobDict, now: float, tasks: str | None = None,
                 reason: str | None = None) -> None:
        self.j = job
        self.now = now
        self.tasks = tasks
        self.reason = reason if reason is not None else job_reason(job)


def _qg(key: str, default: Any = "(null)") -> Callable[[QRow], Any]:
    """Getter for a plain job field, ``default`` when it is None."""
    return lambda r: _null(r.j.get(key), default)


def _q_reason_list(r: QRow) -> str:
    """``%R``: ``(Reason)`` for pending/failed/timed-out jobs, else the node list."""
    state = r.j.get("state")
    if state in ("PENDING", "TIMEOUT", "FAILED"):
        return f"({r.reason})"
    return r.j.get("nodes") or ""


def _q_time_left(r: QRow) -> str:
    """``%L``: time limit minus time used."""
    limit = r.j.get("time_limit")
    if limit is None:
        return "UNLIMITED"
    return F.fmt_secs_short(limit * 60 - job_time_used(r.j, r.now))


def _q_end(r: QRow) -> str:
    """``%e``: ``NONE`` for a running unlimited job, else the (expected) end time."""
    end = job_end_time(r.j)
    if (r.j.get("time_limit") is None and r.j.get("state") in ("RUNNING", "SUSPENDED")
            and not r.j.get("end_time")):
        return "NONE"
    return F.fmt_time(end, "N/A")


def _q_task_id(r: QRow) -> str:
    """``%K``: the collapsed task string, the task id or ``N/A``."""
    if r.tasks is not None:
        return r.tasks
    tid = r.j.get("array_task_id")
    return "N/A" if tid is None else str(tid)


def _q_array_job_id(r: QRow) -> str:
    """``%F``: the array's job id (the job id itself for a plain job)."""
    aj = r.j.get("array_job_id")
    return str(aj if aj is not None and (r.tasks is not None or job_is_array(r.j)) else r.j["job_id"])


def _q_prio_float(r: QRow) -> str:
    """``%p``: priority normalised to [0, 1] as ``%16.14f``."""
    return f"{(r.j.get('priority') or 0) / 0xFFFFFFFF:16.14f}"


SQUEUE_FIELDS: dict[str, Field] = {
    "a": Field("ACCOUNT", _qg("account")),
    "A": Field("JOBID", lambda r: str(r.j["job_id"])),
    "b": Field("TRES_PER_NODE", lambda r: r.j.get("tres_per_node") or "N/A"),
    "B": Field("EXEC_HOST", lambda r: r.j.get("batch_host") or "n/a"),
    "c": Field("MIN_CPUS", lambda r: job_min_cpus_node(r.j)),
    "C": Field("CPUS", _qg("num_cpus", 0)),
    "d": Field("MIN_TMP_DISK", lambda r: "0"),
    "D": Field("NODES", _qg("num_nodes", 0)),
    "e": Field("END_TIME", _q_end),
    "E": Field("DEPENDENCY", lambda r: r.j.get("dependency") or "(null)"),
    "f": Field("FEATURES", lambda r: r.j.get("features") or "(null)"),
    "F": Field("ARRAY_JOB_ID", _q_array_job_id),
    "g": Field("GROUP", _qg("group")),
    "G": Field("GROUP", _qg("gid", 0)),
    "h": Field("OVER_SUBSCRIBE", lambda r: "NO" if r.j.get("exclusive") else "OK"),
    "H": Field("SOCKETS_PER_NODE", lambda r: "*"),
    "i": Field("JOBID", lambda r: job_id_str(r.j, r.tasks)),
    "I": Field("CORES_PER_SOCKET", lambda r: "*"),
    "j": Field("NAME", _qg("name")),
    "J": Field("THREADS_PER_CORE", lambda r: "*"),
    "k": Field("COMMENT", _qg("comment")),
    "K": Field("ARRAY_TASK_ID", _q_task_id),
    "l": Field("TIME_LIMIT", lambda r: F.fmt_limit_short(r.j.get("time_limit"))),
    "L": Field("TIME_LEFT", _q_time_left),
    "m": Field("MIN_MEMORY", lambda r: job_min_memory(r.j)[1]),
    "M": Field("TIME", lambda r: F.fmt_secs_short(job_time_used(r.j, r.now)), cut=False),
    "n": Field("REQ_NODES", lambda r: r.j.get("req_nodes") or ""),
    "N": Field("NODELIST", lambda r: r.j.get("nodes") or "", cut=False, hcut=False),
    "o": Field("COMMAND", _qg("command")),
    "O": Field("CONTIGUOUS", lambda r: "0"),
    "p": Field("PRIORITY", _q_prio_float),
    "P": Field("PARTITION", _qg("partition")),
    "q": Field("QOS", _qg("qos")),
    "Q": Field("PRIORITY", _qg("priority", 0)),
    "r": Field("REASON", lambda r: r.reason),
    "R": Field("NODELIST(REASON)", _q_reason_list, hcut=False),
    "S": Field("START_TIME", lambda r: F.fmt_time(r.j.get("start_time") or r.j.get("expected_start"), "N/A")),
    "t": Field("ST", lambda r: F.job_state_compact(r.j.get("state"))),
    "T": Field("STATE", _qg("state")),
    "u": Field("USER", _qg("user")),
    "U": Field("UID", _qg("uid", 0)),
    "v": Field("RESERVATION", _qg("reservation")),
    "V": Field("SUBMIT_TIME", lambda r: F.fmt_time(r.j.get("submit_time"), "N/A")),
    "w": Field("WCKEY", _qg("wckey")),
    "W": Field("LICENSES", _qg("licenses")),
    "x": Field("EXC_NODES", lambda r: r.j.get("exc_nodes") or ""),
    "X": Field("CORE_SPEC", lambda r: "N/A"),
    "y": Field("NICE", _qg("nice", 0)),
    "Y": Field("SCHEDNODES", lambda r: r.j.get("sched_nodes") or "(null)", hcut=False),
    "z": Field("S:C:T", lambda r: "*:*:*"),
    "Z": Field("WORK_DIR", _qg("workdir")),
}

#: ``squeue -O`` names that are plain aliases of a ``-o`` letter.
_SQUEUE_LONG_ALIASES: dict[str, str] = {
    "account": "a", "jobid": "A", "gres": "b", "tres-per-node": "b", "batchhost": "B",
    "mincpus": "c", "numcpus": "C", "mintmpdisk": "d", "numnodes": "D", "endtime": "e",
    "dependency": "E", "feature": "f", "arrayjobid": "F", "groupname": "g", "groupid": "G",
    "oversubscribe": "h", "shared": "h", "sockets": "H", "jobarrayid": "i", "cores": "I",
    "name": "j", "threads": "J", "comment": "k", "arraytaskid": "K", "timelimit": "l",
    "timeleft": "L", "minmemory": "m", "timeused": "M", "reqnodes": "n", "nodelist": "N",
    "command": "o", "contiguous": "O", "priority": "p", "partition": "P", "qos": "q",
    "prioritylong": "Q", "reason": "r", "reasonlist": "R", "starttime": "S",
    "statecompact": "t", "state": "T", "userid": "U", "username": "u", "reservation": "v",
    "submittime": "V", "wckey": "w", "licenses": "W", "corespec": "X", "nice": "y",
    "schednodes": "Y", "sct": "z", "workdir": "Z",
}


def _q_std(which: str) -> Callable[[QRow], str]:
    """Getter for stdout/stderr/stdin paths."""
    return lambda r: r.j.get(which) or ("/dev/null" if which == "stdin" else "")


_SQUEUE_LONG_ONLY: dict[str, Field] = {
    "cluster": Field("CLUSTER", lambda r: r.j.get("cluster") or ""),
    "numtasks": Field("TASKS", _qg("num_tasks", 0)),
    "stdout": Field("STDOUT", _q_std("stdout")),
    "stderr": Field("STDERR", _q_std("stderr")),
    "stdin": Field("STDIN", _q_std("stdin")),
    "tres": Field("TRES_ALLOC", lambda r: job_tres_str(r.j)),
    "tres-alloc": Field("TRES_ALLOC", lambda r: job_tres_str(r.j)),
    "cpus-per-task": Field("CPUS_PER_TASK", _qg("cpus_per_task", 1)),
    "cpuspertask": Field("CPUS_PER_TASK", _qg("cpus_per_task", 1)),
    "requeue": Field("REQUEUE", lambda r: 1 if r.j.get("requeue") else 0),
    "restartcnt": Field("RESTARTCNT", _qg("restarts", 0)),
    "exit_code": Field("EXIT_CODE", lambda r: job_exit(r.j)),
    "derivedec": Field("DERIVED_EC", lambda r: job_exit(r.j, derived=True)),
    "eligibletime": Field("ELIGIBLE_TIME", lambda r: F.fmt_time(r.j.get("eligible_time"), "N/A")),
    "accruetime": Field("ACCRUE_TIME", lambda r: F.fmt_time(
        r.j.get("accrue_time", r.j.get("eligible_time")), "N/A")),
    "lastschedeval": Field("LAST_SCHED_EVAL", lambda r: F.fmt_time(
        r.j.get("last_sched_eval") or r.j.get("start_time") or r.j.get("submit_time"), "N/A")),
    "pendingtime": Field("PENDING_TIME", lambda r: _pending_time(r)),
    "batchflag": Field("BATCH_FLAG", lambda r: 1 if r.j.get("batch", True) else 0),
    "ntpernode": Field("NTASKS_PER_NODE", lambda r: _null(r.j.get("ntasks_per_node"), "N/A")),
    "maxnodes": Field("MAX_NODES", lambda r: r.j.get("nodes_max") or r.j.get("num_nodes") or 0),
    "maxcpus": Field("MAX_CPUS", _qg("num_cpus", 0)),
    "tres-per-job": Field("TRES_PER_JOB", lambda r: r.j.get("tres_per_job") or "N/A"),
    "mcslabel": Field("MCSLABEL", lambda r: "N/A"),
    "deadline": Field("DEADLINE", lambda r: "N/A"),
    "network": Field("NETWORK", lambda r: "(null)"),
    "allocnodes": Field("ALLOC_NODES", lambda r: _alloc_node(r.j)[0]),
    "allocsid": Field("ALLOC_SID", lambda r: _alloc_node(r.j)[1]),
    "reboot": Field("REBOOT", lambda r: 0),
    "delayboot": Field("DELAY_BOOT", lambda r: "0:00"),
}


def _pending_time(r: QRow) -> int:
    """``pendingtime``: seconds between eligibility and start (or now)."""
    elig = r.j.get("eligible_time")
    if not elig:
        return 0
    end = r.j.get("start_time") or r.now
    return max(int(end - elig), 0)


def squeue_long_table() -> dict[str, Field]:
    """The ``squeue -O`` field table, keyed by lower-case name."""
    table = {name: SQUEUE_FIELDS[letter] for name, letter in _SQUEUE_LONG_ALIASES.items()}
    table.update(_SQUEUE_LONG_ONLY)
    return table


def _state_sort_key(letter: str) -> Callable[[QRow], Any]:
    """Sort key for one ``squeue -S`` letter."""
    keys: dict[str, Callable[[QRow], Any]] = {
        "i": lambda r: (r.j.get("array_job_id") or r.j["job_id"], r.j.get("array_task_id") or -1),
        "A": lambda r: r.j["job_id"],
        "j": lambda r: r.j.get("name") or "",
        "u": lambda r: r.j.get("user") or "",
        "U": lambda r: r.j.get("uid") or 0,
        "a": lambda r: r.j.get("account") or "",
        "q": lambda r: r.j.get("qos") or "",
        "P": lambda r: r.j.get("partition") or "",
        "t": lambda r: F.job_state_compact(r.j.get("state")),
        "T": lambda r: r.j.get("state") or "",
        "p": lambda r: r.j.get("priority") or 0,
        "Q": lambda r: r.j.get("priority") or 0,
        "M": lambda r: job_time_used(r.j, r.now),
        "l": lambda r: r.j["time_limit"] if r.j.get("time_limit") is not None else 1 << 62,
        "D": lambda r: r.j.get("num_nodes") or 0,
        "C": lambda r: r.j.get("num_cpus") or 0,
        "S": lambda r: r.j.get("start_time") or r.j.get("expected_start") or 0,
        "V": lambda r: r.j.get("submit_time") or 0,
        "e": lambda r: job_end_time(r.j) or 0,
        "N": lambda r: F.natural_key(r.j.get("nodes") or ""),
        "r": lambda r: r.reason,
        "y": lambda r: r.j.get("nice") or 0,
    }
    return keys.get(letter, lambda r: 0)


def sort_rows(rows: list[QRow], spec: str) -> list[QRow]:
    """Apply a squeue ``-S`` spec (``P,t,-p``) with stable sorts, last key first.

    Ties keep the order the jobs came in, as Slurm's merge sort does.
    """
    keys = [k.strip() for k in spec.split(",") if k.strip()]
    for key in reversed(keys):
        rev = key.startswith("-")
        letter = key.lstrip("+-")
        if not letter:
            continue
        rows.sort(key=_state_sort_key(letter[0]), reverse=rev)
    return rows


def collapse_arrays(jobs: list[JobDict], now: float) -> list[QRow]:
    """Build the squeue rows, collapsing the pending tasks of each job array.

    Pending tasks sharing ``array_job_id``, name and partition become one row shown as
    ``7885_[0-3]`` (``%2`` appended when ``array_max_tasks`` throttles the array); the
    row stands where the array's own record (``job_id == array_job_id``) or else its
    first pending task stands. Differing reasons are merged as ``Priority,Resources``.
    """
    groups: dict[tuple, list[JobDict]] = {}
    for j in jobs:
        if j.get("state") == "PENDING" and job_is_array(j):
            groups.setdefault((j["array_job_id"], j.get("name"), j.get("partition")), []).append(j)
    lead: dict[int, tuple] = {}
    for key, members in groups.items():
        rep = next((m for m in members if m["job_id"] == key[0]), members[0])
        lead[id(rep)] = key
    rows: list[QRow] = []
    for j in jobs:
        if j.get("state") == "PENDING" and job_is_array(j):
            key = lead.get(id(j))
            if key is None:
                continue
            members = groups[key]
            tasks = F.fmt_ranges(int(m["array_task_id"]) for m in members)
            throttle = j.get("array_max_tasks")
            if throttle:
                tasks += f"%{throttle}"
            reasons: list[str] = []
            for m in [j] + [m for m in members if m is not j]:
                if job_reason(m) not in reasons:
                    reasons.append(job_reason(m))
            rows.append(QRow(j, now, tasks, ",".join(reasons)))
        else:
            rows.append(QRow(j, now))
    return rows


def squeue_lines(jobs: Iterable[JobDict], *, fmt: str | None = None, long_fmt: str | None = None,
                 noheader: bool = False, long: bool = False, now: float | None = None,
                 array_collapse: bool = True, start: bool = False,
                 sort: str | None = None) -> list[str]:
    """Render ``squeue`` output lines (without newlines).

    ``fmt`` is a ``-o`` format, ``long_fmt`` a ``-O`` format; otherwise the default,
    ``-l`` (``long``) or ``--start`` format is used. ``array_collapse=False`` is ``-r``.
    ``sort`` is a ``-S`` spec (default ``P,t,-p``); jobs that tie keep the input order.
    ``start`` (``--start``) lists pending jobs only. Unknown ``-O`` names raise
    ``ValueError('Invalid job format specification: NAME')``.
    """
    t = _now(now)
    jobs = [j for j in jobs if not start or j.get("state") == "PENDING"]
    rows = collapse_arrays(jobs, t) if array_collapse else [QRow(j, t) for j in jobs]
    # --start lists jobs by expected start (those without an estimate last, by priority)
    sort_rows(rows, sort or (SQUEUE_DEFAULT_SORT if not start else "-p"))
    if start and not sort:
        rows.sort(key=lambda r: (r.j.get("expected_start") is None, r.j.get("expected_start") or 0))
    if long_fmt:
        table = squeue_long_table()
        specs = F.parse_long_format(long_fmt)
        for sp in specs:
            if sp.key is not None and sp.key not in table:
                raise ValueError(f"Invalid job format specification: {sp.key}")
    else:
        table = SQUEUE_FIELDS
        specs = F.parse_format(fmt or (SQUEUE_START if start else SQUEUE_LONG if long else SQUEUE_DEFAULT))
        for sp in specs:
            if sp.key is not None and sp.key not in table:
                raise ValueError(f"Invalid job format specification: {sp.key}")
    out: list[str] = []
    if long and not noheader:
        out.append(F.fmt_date_header(t))
    if not noheader:
        out.append(F.render_specs(specs, table, None))
    out.extend(F.render_specs(specs, table, r) for r in rows)
    return out


# ===========================================================================
# sinfo
# ===========================================================================

SINFO_DEFAULT = "%9P %.5a %.10l %.6D %.6t %N"
SINFO_LONG = "%9P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N"
SINFO_NODE = "%N %.6D %.9P %6t"
SINFO_NODE_LONG = "%N %.6D %.9P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E"
SINFO_SUMMARIZE = "%9P %.5a %.10l %.16F %N"
SINFO_REASONS = "%20E %9u %19H %N"
SINFO_REASONS_LONG = "%20E %12U %19H %6t %N"

_MIN_FIELD = 9  # MIN_NODE_FIELD_SIZE / MIN_PART_FIELD_SIZE


def node_code(node: NodeDict) -> int:
    """Slurm's numeric state bits of a NodePublic dict."""
    return F.node_state_code(node.get("state"), cpus_alloc=int(node.get("cpus_alloc") or 0),
                             jobs=int(node.get("jobs") or 0))


class SRec:
    """One sinfo line: a partition (or none) and the nodes merged into it."""

    __slots__ = ("part", "part_inx", "nodes", "names", "now")

    def __init__(self, part: PartDict | None, part_inx: int, now: float) -> None:
        self.part = part
        self.part_inx = part_inx
        self.nodes: list[NodeDict] = []
        self.names: set[str] = set()
        self.now = now

    def add(self, node: NodeDict) -> None:
        """Merge a node in (a node already present is not counted twice)."""
        if node["name"] not in self.names:
            self.names.add(node["name"])
            self.nodes.append(node)

    @property
    def first(self) -> NodeDict:
        """The node whose per-node attributes the line shows."""
        return self.nodes[0] if self.nodes else {}

    def code(self) -> int:
        """State bits of the line (those of its first node)."""
        return node_code(self.nodes[0]) if self.nodes else 0

    def pget(self, key: str, default: Any = None) -> Any:
        """A partition attribute, ``default`` when there is no partition or no value."""
        return default if self.part is None else _null(self.part.get(key), default)


def _min_max(values: list, fmt_one: Callable[[Any], str] = str, range_: bool = False) -> str:
    """``_build_min_max_*_string``: ``8``, ``8+`` or ``8-16`` (range form)."""
    if not values:
        return "0"
    lo, hi = min(values), max(values)
    if lo == hi:
        return fmt_one(hi)
    return f"{fmt_one(lo)}-{fmt_one(hi)}" if range_ else f"{fmt_one(lo)}+"


def _node_sct(node: NodeDict) -> tuple[int, int, int]:
    """Sockets, cores per socket and threads per core of a node."""
    sockets = int(node.get("sockets") or 1)
    threads = int(node.get("threads") or 1)
    cores = int(node.get("cores") or max(int(node.get("cpus") or 1) // (sockets * threads), 1))
    return sockets, cores, threads


def _cpus_aiot(r: SRec) -> tuple[int, int, int, int]:
    """Allocated, idle, other and total CPUs of the line's nodes."""
    a = i = o = t = 0
    for n in r.nodes:
        total = int(n.get("cpus") or 0)
        used = min(int(n.get("cpus_alloc") or 0), total)
        t += total
        a += used
        if F.node_is_other(node_code(n)):
            o += total - used
        else:
            i += total - used
    return a, i, o, t


def _nodes_aiot(r: SRec) -> tuple[int, int, int, int]:
    """Allocated, idle, other and total nodes of the line."""
    a = i = o = 0
    for n in r.nodes:
        c = node_code(n)
        if F.node_is_other(c):
            o += 1
        elif F.node_is_alloc(c):
            a += 1
        else:
            i += 1
    return a, i, o, len(r.nodes)


def _s_state(long_: bool) -> Callable[[SRec], str]:
    """``%t``/``%T``: lower-cased compact or long node state; ``n/a`` without nodes."""
    def get(r: SRec) -> str:
        if not r.nodes:
            return "n/a"
        c = r.code()
        return (F.node_state_long(c) if long_ else F.node_state_compact(c)).lower()
    return get


def _s_avail(r: SRec) -> str:
    """``%a``: the partition's state."""
    if r.part is None:
        return "n/a"
    return {"UP": "up", "DOWN": "down", "DRAIN": "drain", "INACTIVE": "inactive"}.get(
        str(r.part.get("state") or "UP").upper(), "unknown")


def _s_minutes(key: str, none: str) -> Callable[[SRec], str]:
    """``%l``/``%L``: a partition time in minutes, ``none`` when unset."""
    def get(r: SRec) -> str:
        if r.part is None:
            return "n/a"
        mins = r.part.get(key)
        return none if mins is None else F.fmt_secs_short(int(mins) * 60)
    return get


def _s_job_size(r: SRec) -> str:
    """``%s``: ``1-infinite`` style node count limits of the partition."""
    if r.part is None:
        return "n/a"
    lo = int(r.part.get("min_nodes") or 0)
    hi = r.part.get("max_nodes")
    if lo < 1 and (hi is None or hi > 0):
        lo = 1
    if hi is None:
        return f"{lo}-infinite"
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _s_load(r: SRec) -> str:
    """``%O``: CPU load (``5.18``), a range when nodes differ."""
    loads = [n.get("cpu_load") for n in r.nodes]
    known = [float(v) for v in loads if v is not None]
    if not known:
        return "N/A"
    return _min_max(known, lambda v: f"{v:.2f}", range_=True)


def _s_free_mem(r: SRec) -> str:
    """``%e``: free memory in MB, a range when nodes differ."""
    vals = [_free_mem(n) for n in r.nodes]
    known = [int(v) for v in vals if v is not None]
    if not known:
        return "N/A"
    return _min_max(known, range_=True)


def _free_mem(node: NodeDict) -> Any:
    """Free memory of a node (the API has used both ``free_memory`` and ``free_mem``)."""
    v = node.get("free_memory")
    return node.get("free_mem") if v is None else v


def _s_reason_user(long_: bool) -> Callable[[SRec], str]:
    """``%u``/``%U``: who set the node reason."""
    def get(r: SRec) -> str:
        n = r.first
        if not n.get("reason"):
            return "Unknown"
        user = n.get("reason_user") or "root"
        return f"{user}({n.get('reason_uid') or 0})" if long_ else user
    return get


def _s_hostlist(key: str) -> Callable[[SRec], str]:
    """``%N``/``%n``/``%o``: a compressed host list of one node attribute."""
    def get(r: SRec) -> str:
        return F.compress_hostlist([n.get(key) or n["name"] for n in r.nodes])
    return get


def _s_sct(r: SRec) -> str:
    """``%z``: sockets:cores:threads."""
    vals = [_node_sct(n) for n in r.nodes] or [(1, 1, 1)]
    return ":".join(_min_max([v[i] for v in vals]) for i in range(3))


SINFO_FIELDS: dict[str, Field] = {
    "a": Field("AVAIL", _s_avail),
    "A": Field("NODES(A/I)", lambda r: "{}/{}".format(*_nodes_aiot(r)[:2])),
    "b": Field("ACTIVE_FEATURES",
               lambda r: r.first.get("features_act") or r.first.get("features") or "(null)"),
    "B": Field("MAX_CPUS_PER_NODE", lambda r: r.pget("max_cpus_per_node", "UNLIMITED")),
    "c": Field("CPUS", lambda r: _min_max([int(n.get("cpus") or 0) for n in r.nodes])),
    "C": Field("CPUS(A/I/O/T)", lambda r: "{}/{}/{}/{}".format(*_cpus_aiot(r))),
    "d": Field("TMP_DISK", lambda r: _min_max([int(n.get("tmp_disk") or 0) for n in r.nodes])),
    "D": Field("NODES", lambda r: len(r.nodes)),
    "e": Field("FREE_MEM", _s_free_mem),
    "E": Field("REASON", lambda r: r.first.get("reason") or "none"),
    "f": Field("AVAIL_FEATURES", lambda r: r.first.get("features") or "(null)"),
    "F": Field("NODES(A/I/O/T)", lambda r: "{}/{}/{}/{}".format(*_nodes_aiot(r))),
    "g": Field("GROUPS", lambda r: r.pget("allow_groups", "all") if r.part is not None else "n/a"),
    "G": Field("GRES", lambda r: r.first.get("gres") or "(null)"),
    "h": Field("OVERSUBSCRIBE", lambda r: r.pget("oversubscribe", "NO")),
    "H": Field("TIMESTAMP",
               lambda r: F.fmt_time(r.first.get("reason_time")) if r.first.get("reason") else "Unknown"),
    "I": Field("PRIO_JOB_FACTOR", lambda r: r.pget("priority_job_factor", 1)),
    "l": Field("TIMELIMIT", _s_minutes("max_time", "infinite")),
    "L": Field("DEFAULTTIME", _s_minutes("default_time", "n/a")),
    "m": Field("MEMORY", lambda r: _min_max([int(n.get("real_memory") or 0) for n in r.nodes])),
    "M": Field("PREEMPT_MODE", lambda r: r.pget("preempt_mode", "OFF")),
    "n": Field("HOSTNAMES", _s_hostlist("hostname"), hcut=False),
    "N": Field("NODELIST", _s_hostlist("name"), hcut=False),
    "o": Field("NODE_ADDR", _s_hostlist("addr"), hcut=False),
    "O": Field("CPU_LOAD", _s_load),
    "p": Field("PRIO_TIER", lambda r: r.pget("priority_tier", 1)),
    "P": Field("PARTITION", lambda r: "n/a" if r.part is None
               else r.part["name"] + ("*" if r.part.get("default") else "")),
    "r": Field("ROOT", lambda r: "n/a" if r.part is None else ("yes" if r.part.get("root_only") else "no")),
    "R": Field("PARTITION", lambda r: r.pget("name", "n/a")),
    "s": Field("JOB_SIZE", _s_job_size),
    "S": Field("ALLOCNODES", lambda r: r.pget("alloc_nodes", "all") if r.part is not None else "n/a"),
    "t": Field("STATE", _s_state(False)),
    "T": Field("STATE", _s_state(True)),
    "u": Field("USER", _s_reason_user(False)),
    "U": Field("USER", _s_reason_user(True)),
    "v": Field("VERSION", lambda r: r.first.get("version") or "N/A"),
    "V": Field("CLUSTER", lambda r: r.pget("cluster", "N/A")),
    "w": Field("WEIGHT", lambda r: _min_max([int(n.get("weight") or 1) for n in r.nodes])),
    "X": Field("SOCKETS", lambda r: _min_max([_node_sct(n)[0] for n in r.nodes])),
    "Y": Field("CORES", lambda r: _min_max([_node_sct(n)[1] for n in r.nodes])),
    "Z": Field("THREADS", lambda r: _min_max([_node_sct(n)[2] for n in r.nodes])),
    "z": Field("S:C:T", _s_sct),
}

#: Letters whose per-node value must match for nodes to share a sinfo line.
_SINFO_NODE_MATCH: dict[str, Callable[[NodeDict], Any]] = {
    "t": node_code, "T": node_code,
    "c": lambda n: n.get("cpus"), "m": lambda n: n.get("real_memory"),
    "G": lambda n: n.get("gres"), "E": lambda n: n.get("reason"),
    "H": lambda n: n.get("reason_time"), "u": lambda n: n.get("reason_user"),
    "U": lambda n: n.get("reason_user"), "O": lambda n: n.get("cpu_load"),
    "e": _free_mem, "z": _node_sct, "X": _node_sct, "Y": _node_sct, "Z": _node_sct,
    "d": lambda n: n.get("tmp_disk"), "w": lambda n: n.get("weight"),
    "f": lambda n: n.get("features"), "b": lambda n: n.get("features_act"),
    "v": lambda n: n.get("version"),
}
#: Letters that show partition attributes (records then split by partition value).
_SINFO_PART_LETTERS = frozenset("aBghIlLMpPrRsSV")

_SINFO_LONG_NAMES: dict[str, str] = {
    "available": "a", "nodeai": "A", "features_act": "b", "maxcpuspernode": "B",
    "cpus": "c", "cpusstate": "C", "disk": "d", "nodes": "D", "freemem": "e",
    "reason": "E", "features": "f", "nodeaiot": "F", "groups": "g", "gres": "G",
    "oversubscribe": "h", "timestamp": "H", "priorityjobfactor": "I", "time": "l",
    "defaulttime": "L", "memory": "m", "preemptmode": "M", "nodehost": "n",
    "nodelist": "N", "nodeaddr": "o", "cpusload": "O", "prioritytier": "p",
    "partition": "P", "root": "r", "partitionname": "R", "size": "s", "allocnodes": "S",
    "statecompact": "t", "statelong": "T", "user": "u", "userlong": "U", "version": "v",
    "cluster": "V", "weight": "w", "sockets": "X", "cores": "Y", "threads": "Z", "sct": "z",
    "socketcorethread": "z",
}


def _partition_members(parts: list[PartDict], nodes: list[NodeDict]) -> list[list[NodeDict]]:
    """For each partition, its nodes in node order."""
    by_name = {n["name"]: n for n in nodes}
    order = {n["name"]: i for i, n in enumerate(nodes)}
    out = []
    for p in parts:
        names = p.get("node_names")
        if names is None:
            names = F.expand_hostlist(p.get("nodes") or "") if p.get("nodes") else [
                n["name"] for n in nodes if p["name"] in (n.get("partitions") or [])]
        members = [by_name[x] for x in names if x in by_name]
        members.sort(key=lambda n: order[n["name"]])
        out.append(members)
    return out


def _sinfo_sort(recs: list[SRec], spec: str) -> None:
    """Apply a sinfo ``-S`` spec (``#P,-t`` or ``N`` by default), last key first."""
    keys: dict[str, Callable[[SRec], Any]] = {
        "P": lambda r: r.pget("name", ""),
        "t": lambda r: r.code(), "T": lambda r: r.code(),
        "N": lambda r: F.natural_key(r.nodes[0]["name"]) if r.nodes else (),
        "D": lambda r: len(r.nodes),
        "c": lambda r: min((int(n.get("cpus") or 0) for n in r.nodes), default=0),
        "m": lambda r: min((int(n.get("real_memory") or 0) for n in r.nodes), default=0),
        "E": lambda r: r.first.get("reason") or "", "R": lambda r: r.first.get("reason") or "",
        "l": lambda r: r.pget("max_time", 1 << 62),
        "p": lambda r: r.pget("priority_tier", 0),
        "w": lambda r: min((int(n.get("weight") or 1) for n in r.nodes), default=0),
        "O": lambda r: min((float(n.get("cpu_load") or 0) for n in r.nodes), default=0),
    }
    tokens = [k.strip() for k in spec.split(",") if k.strip()]
    for tok in reversed(tokens):
        rev = "-" in tok
        letter = tok.lstrip("+-#")
        if not letter:
            continue
        if letter == "P" and tok.lstrip("+-").startswith("#"):
            key: Callable[[SRec], Any] = lambda r: r.part_inx
        else:
            key = keys.get(letter[0], lambda r: 0)
        recs.sort(key=key, reverse=rev)


def _sinfo_records(nodes: list[NodeDict], parts: list[PartDict], specs: list[Spec],
                   table: dict[str, Field], node_oriented: bool, reasons: bool,
                   now: float) -> list[SRec]:
    """Group (partition, node) pairs into sinfo lines the way sinfo's ``_build_sinfo_data`` does."""
    letters = [sp.key for sp in specs if sp.key is not None]
    part_letters = [k for k in letters if k in _SINFO_PART_LETTERS]
    node_keys = [_SINFO_NODE_MATCH[k] for k in dict.fromkeys(letters) if k in _SINFO_NODE_MATCH]
    recs: dict[tuple, SRec] = {}
    order: list[SRec] = []
    members = _partition_members(parts, nodes)
    if part_letters and not node_oriented and not reasons:
        for inx, (p, ms) in enumerate(zip(parts, members)):
            if not ms:
                rec = SRec(p, inx, now)
                recs[("empty", inx)] = rec
                order.append(rec)
    for inx, (p, ms) in enumerate(zip(parts, members)):
        probe = SRec(p, inx, now)
        pkey = tuple(table[k].getter(probe) for k in part_letters)
        for n in ms:
            if reasons and not F.node_is_other(node_code(n)):
                continue
            key = (pkey, tuple(f(n) for f in node_keys))
            if node_oriented:
                key += (n["name"],)
            rec = recs.get(key)
            if rec is None:
                rec = recs[key] = SRec(p, inx, now)
                order.append(rec)
            rec.add(n)
    return order


def sinfo_lines(nodes: Iterable[NodeDict], partitions: Iterable[PartDict], *,
                node_oriented: bool = False, long: bool = False, summarize: bool = False,
                fmt: str | None = None, long_fmt: str | None = None, noheader: bool = False,
                reasons: bool = False, now: float | None = None,
                sort: str | None = None) -> list[str]:
    """Render ``sinfo`` output lines (without newlines).

    ``node_oriented`` is ``-N``, ``long`` is ``-l``, ``summarize`` is ``-s``,
    ``reasons`` is ``-R``; ``fmt``/``long_fmt`` are ``-o``/``-O``. Partitions are shown
    in the given (configuration) order, nodes in the given order (natural sort).
    With the built-in formats the PARTITION and (``-N``) NODELIST columns widen to
    their longest value, at least 9.
    """
    t = _now(now)
    nodes = list(nodes)
    parts = list(partitions)
    table = SINFO_FIELDS
    builtin = fmt is None and long_fmt is None
    if long_fmt:
        specs = []
        for sp in F.parse_long_format(long_fmt):
            letter = _SINFO_LONG_NAMES.get(sp.key or "")
            if letter is None:
                raise ValueError(f"Invalid node format specification: {sp.key}")
            specs.append(Spec(letter, sp.width, sp.right, sp.suffix))
    else:
        if fmt is None:
            if summarize:
                fmt = SINFO_SUMMARIZE
            elif node_oriented:
                fmt = SINFO_NODE_LONG if long else SINFO_NODE
            elif reasons:
                fmt = SINFO_REASONS_LONG if long else SINFO_REASONS
            else:
                fmt = SINFO_LONG if long else SINFO_DEFAULT
        specs = F.parse_format(fmt)
        for sp in specs:
            if sp.key is not None and sp.key not in table:
                raise ValueError(f"Invalid node format specification: {sp.key}")
    recs = _sinfo_records(nodes, parts, specs, table, node_oriented and not summarize,
                          reasons, t)
    _sinfo_sort(recs, sort or ("N" if node_oriented and not summarize else "#P,-t"))
    if builtin:
        specs = _sinfo_widen(specs, recs, part=not reasons, node=node_oriented and not summarize)
    out: list[str] = []
    if long and not noheader:
        out.append(F.fmt_date_header(t))
    if not noheader:
        out.append(F.render_specs(specs, table, None))
    out.extend(_sinfo_render(specs, table, r) for r in recs)
    return out


def _sinfo_widen(specs: list[Spec], recs: list[SRec], *, part: bool, node: bool) -> list[Spec]:
    """sinfo's ``part_field_flag``/``node_field_flag``: size %P and %N to their data."""
    pw = max([_MIN_FIELD] + [len(r.part["name"]) + (1 if r.part.get("default") else 0)
                             for r in recs if r.part is not None])
    nw = max([_MIN_FIELD] + [len(SINFO_FIELDS["N"].getter(r)) for r in recs])
    out = []
    for sp in specs:
        if part and sp.key in ("P", "R"):
            sp = sp.replace(width=pw)
        elif node and sp.key == "N":
            sp = sp.replace(width=nw)
        out.append(sp)
    return out


def _sinfo_render(specs: list[Spec], table: dict[str, Field], r: SRec) -> str:
    """One sinfo data line; ``%P`` keeps its ``*`` when the name fills the width."""
    out: list[str] = []
    for sp in specs:
        if sp.key is not None:
            value = table[sp.key].getter(r)
            if sp.key == "P" and r.part is not None and r.part.get("default") and sp.width \
                    and len(r.part["name"]) >= sp.width:
                value = r.part["name"][:sp.width - 1] + "*"
            out.append(F.pad(value, sp.width, sp.right, table[sp.key].cut))
        out.append(sp.suffix)
    return "".join(out)


# ===========================================================================
# sacct
# ===========================================================================

SACCT_DEFAULT_FIELDS = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"
SACCT_LONG_FIELDS = (
    "JobID,JobIDRaw,JobName,Partition,MaxVMSize,MaxVMSizeNode,MaxVMSizeTask,AveVMSize,"
    "MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,MaxPages,MaxPagesNode,MaxPagesTask,AvePages,"
    "MinCPU,MinCPUNode,MinCPUTask,AveCPU,NTasks,AllocCPUS,Elapsed,State,ExitCode,"
    "AveCPUFreq,ReqCPUFreqMin,ReqCPUFreqMax,ReqCPUFreqGov,ReqMem,ConsumedEnergy,"
    "MaxDiskRead,MaxDiskReadNode,MaxDiskReadTask,AveDiskRead,MaxDiskWrite,"
    "MaxDiskWriteNode,MaxDiskWriteTask,AveDiskWrite,ReqTRES,AllocTRES,TRESUsageInAve,"
    "TRESUsageInMax,TRESUsageInMaxNode,TRESUsageInMaxTask,TRESUsageInMin,"
    "TRESUsageInMinNode,TRESUsageInMinTask,TRESUsageInTot,TRESUsageOutMax,"
    "TRESUsageOutMaxNode,TRESUsageOutMaxTask,TRESUsageOutAve,TRESUsageOutTot"
)


class ARow:
    """One sacct line: a job (``step`` None) or one of its steps."""

    __slots__ = ("j", "s", "now")

    def __init__(self, job: JobDict, step: dict | None, now: float) -> None:
        self.j = job
        self.s = step
        self.now = now

    @property
    def is_step(self) -> bool:
        """True for a step line."""
        return self.s is not None


def _a_job_only(get: Callable[[ARow], Any]) -> Callable[[ARow], Any]:
    """Wrap a getter so that step lines print an empty field."""
    return lambda r: None if r.s is not None else get(r)


def _a_both(job_get: Callable[[ARow], Any], step_get: Callable[[ARow], Any]) -> Callable[[ARow], Any]:
    """A getter with one behaviour for job lines and another for step lines."""
    return lambda r: step_get(r) if r.s is not None else job_get(r)


def _a_jf(key: str) -> Callable[[ARow], Any]:
    """Job-only getter for a plain job field."""
    return _a_job_only(lambda r: r.j.get(key))


def _a_start(r: ARow) -> float | None:
    """Start time of the job or step."""
    return (r.s or r.j).get("start_time")


def _a_elapsed(r: ARow) -> int:
    """Elapsed seconds of the job or step (until now while it runs)."""
    obj = r.s if r.s is not None else r.j
    start = obj.get("start_time")
    if not start:
        return 0
    end = obj.get("end_time")
    if not end or obj.get("state") == "RUNNING":
        end = r.now
    return max(int(end) - int(start), 0)


def _a_state(r: ARow) -> str:
    """``State``: ``CANCELLED by UID`` when a user cancelled it."""
    obj = r.s if r.s is not None else r.j
    state = obj.get("state") or ""
    by = obj.get("cancelled_by")
    if state == "CANCELLED" and by is not None:
        return f"CANCELLED by {by}"
    return state


def _a_exit(r: ARow) -> str:
    """``ExitCode`` of the job or step; codes >= 128 lose 128 as sacct does."""
    obj = r.s if r.s is not None else r.j
    code = int(obj.get("exit_code") or 0)
    if code >= 128:
        code -= 128
    return f"{code}:{int(obj.get('exit_signal') or 0)}"


def _a_jobid(r: ARow, raw: bool = False) -> str:
    """``JobID`` (``7885_0.batch``) or ``JobIDRaw`` (``7891.batch``)."""
    j = r.j
    base = str(j["job_id"]) if raw else (
        f"{j['array_job_id']}_[{j['array_task_str']}]" if j.get("array_task_str") and j.get("array_job_id")
        else job_id_str(j))
    return base if r.s is None else f"{base}.{r.s.get('step')}"


def _a_step_tres(r: ARow) -> str:
    """AllocTRES of a step: the extern step carries the whole allocation."""
    s, j = r.s, r.j
    assert s is not None
    if s.get("tres_alloc"):
        return s["tres_alloc"]
    if s.get("step") == "extern":
        return _a_job_alloc_tres(r) or ""
    cpus = int(s.get("num_cpus") or 0)
    nn = int(s.get("num_nodes") or 1)
    if j.get("mem_per_cpu"):
        mem = int(j["mem_per_cpu"]) * cpus
    else:
        mem = int(j.get("mem_per_node") or 0) * nn
    gpus = int(j.get("gpus_per_node") or 0) * nn
    return F.tres_string(sorted([("cpu", cpus), ("mem", F.convert_num(mem) if mem else None),
                                 ("node", nn), ("gres/gpu", gpus or None)]))


def _a_job_alloc_tres(r: ARow) -> str | None:
    """AllocTRES of the job: empty until it got resources."""
    if r.j.get("tres_alloc"):
        return r.j["tres_alloc"]
    if not r.j.get("start_time"):
        return None
    return job_tres_str(r.j, sort=True)


def _a_timelimit(raw: bool) -> Callable[[ARow], Any]:
    """``Timelimit`` (``00:01:00``) or ``TimelimitRaw`` (minutes), ``UNLIMITED`` if none."""
    def get(r: ARow) -> Any:
        mins = r.j.get("time_limit")
        if mins is None:
            return "UNLIMITED"
        if mins == 0:
            return None
        return str(mins) if raw else F.fmt_mins_long(mins)
    return _a_job_only(get)


def _a_nodelist(r: ARow) -> str:
    """``NodeList``: ``None assigned`` before the job got nodes."""
    obj = r.s if r.s is not None else r.j
    return obj.get("nodes") or "None assigned"


def _a_req_mem(r: ARow) -> str | None:
    """``ReqMem``: the job's total memory request (``2000M``)."""
    mem = job_mem_total(r.j)
    return F.convert_num(mem) if mem else "0"


def _a_cpu_freq_req(r: ARow) -> str:
    """``ReqCPUFreq*``: ``Unknown`` on the job and srun steps, ``0`` on batch/extern."""
    if r.s is not None and r.s.get("step") in ("batch", "extern"):
        return "0"
    return "Unknown"


def _a_stat(key: str, job_value: Any = None) -> Callable[[ARow], Any]:
    """A per-step usage statistic (only present when the agent reported it)."""
    return lambda r: job_value if r.s is None else r.s.get(key)


def _a_energy_tres(r: ARow) -> str | None:
    """``TRESUsage*Ave/Tot`` of a step without statistics: ``energy=0``."""
    return None if r.s is None else "energy=0"


def _a_total_cpu(key: str) -> Callable[[ARow], Any]:
    """``TotalCPU``/``UserCPU``/``SystemCPU`` in sacct's ``_elapsed_time`` format."""
    def get(r: ARow) -> Any:
        obj = r.s if r.s is not None else r.j
        return F.fmt_cpu_time(float(obj.get(key) or 0))
    return get


def _a_max_rss(r: ARow) -> str | None:
    """``MaxRSS`` of a step in KB (``1688K``), when reported."""
    if r.s is None or r.s.get("max_rss") is None:
        return None
    return F.convert_num(int(r.s["max_rss"]), "K")


def _A_TIME(key: str) -> Callable[[ARow], str]:  # noqa: N802
    """Getter for a time of the step (step lines) or of the job (job lines)."""
    return lambda r: F.fmt_time((r.s if r.s is not None else r.j).get(key))


def _A_BLANK(r: ARow) -> None:  # noqa: N802
    """A column slurmlet has no data for: always empty."""
    return None

#: (name, default width, getter) in Slurm's table order (prefix lookup follows it).
SACCT_FIELDS: list[tuple[str, int, Callable[[ARow], Any]]] = [
    ("Account", 10, lambda r: r.j.get("account")),
    ("AdminComment", 15, _a_jf("admin_comment")),
    ("AllocCPUS", 10, _a_both(lambda r: int(r.j.get("num_cpus") or 0),
                              lambda r: int(r.s.get("num_cpus") or 0))),
    ("AllocNodes", 10, _a_both(lambda r: str(r.j.get("num_nodes") or 0) if r.j.get("start_time") else "0",
                               lambda r: str(r.s.get("num_nodes") or 0))),
    ("AllocTRES", 10, _a_both(_a_job_alloc_tres, _a_step_tres)),
    ("AssocID", 7, _A_BLANK),
    ("AveCPU", 10, _a_stat("ave_cpu")),
    ("AveCPUFreq", 10, lambda r: None if r.s is None else r.s.get("ave_cpu_freq", "0")),
    ("AveDiskRead", 14, _a_stat("ave_disk_read")),
    ("AveDiskWrite", 14, _a_stat("ave_disk_write")),
    ("AvePages", 10, _a_stat("ave_pages")),
    ("AveRSS", 10, _a_stat("ave_rss")),
    ("AveVMSize", 10, _a_stat("ave_vmsize")),
    ("Cluster", 10, lambda r: r.j.get("cluster")),
    ("Comment", 14, _a_jf("comment")),
    ("Constraints", 19, _A_BLANK),
    ("ConsumedEnergy", 14, lambda r: "0"),
    ("ConsumedEnergyRaw", 17, lambda r: 0),
    ("CPUTime", 10, lambda r: F.fmt_secs_long(_a_elapsed(r) * int((r.s or r.j).get("num_cpus") or 0))),
    ("CPUTimeRAW", 10, lambda r: _a_elapsed(r) * int((r.s or r.j).get("num_cpus") or 0)),
    ("DerivedExitCode", 15, _a_job_only(lambda r: job_exit(r.j, derived=True))),
    ("Elapsed", 10, lambda r: F.fmt_secs_long(_a_elapsed(r))),
    ("ElapsedRaw", 10, _a_elapsed),
    ("Eligible", 19, _a_both(lambda r: F.fmt_time(r.j.get("eligible_time")), _A_TIME("start_time"))),
    ("End", 19, _A_TIME("end_time")),
    ("ExitCode", 8, _a_exit),
    ("Flags", 19, _A_BLANK),
    ("GID", 6, _a_jf("gid")),
    ("Group", 9, _a_jf("group")),
    ("JobID", -12, _a_jobid),
    ("JobIDRaw", -12, lambda r: _a_jobid(r, raw=True)),
    ("JobName", 10, _a_both(lambda r: r.j.get("name"), lambda r: r.s.get("name"))),
    ("Layout", 9, _A_BLANK),
    ("MaxDiskRead", 12, _a_stat("max_disk_read")),
    ("MaxDiskReadNode", 15, _a_stat("max_disk_read_node")),
    ("MaxDiskReadTask", 15, _a_stat("max_disk_read_task")),
    ("MaxDiskWrite", 12, _a_stat("max_disk_write")),
    ("MaxDiskWriteNode", 16, _a_stat("max_disk_write_node")),
    ("MaxDiskWriteTask", 16, _a_stat("max_disk_write_task")),
    ("MaxPages", 8, _a_stat("max_pages")),
    ("MaxPagesNode", 12, _a_stat("max_pages_node")),
    ("MaxPagesTask", 14, _a_stat("max_pages_task")),
    ("MaxRSS", 10, _a_max_rss),
    ("MaxRSSNode", 10, _a_stat("max_rss_node")),
    ("MaxRSSTask", 10, _a_stat("max_rss_task")),
    ("MaxVMSize", 10, _a_stat("max_vmsize")),
    ("MaxVMSizeNode", 14, _a_stat("max_vmsize_node")),
    ("MaxVMSizeTask", 14, _a_stat("max_vmsize_task")),
    ("McsLabel", 12, _A_BLANK),
    ("MinCPU", 10, _a_stat("min_cpu")),
    ("MinCPUNode", 10, _a_stat("min_cpu_node")),
    ("MinCPUTask", 10, _a_stat("min_cpu_task")),
    ("NCPUS", 10, _a_both(lambda r: int(r.j.get("num_cpus") or 0), lambda r: int(r.s.get("num_cpus") or 0))),
    ("NNodes", 8, _a_both(lambda r: int(r.j.get("num_nodes") or 0),
                          lambda r: int(r.s.get("num_nodes") or 0))),
    ("NodeList", 15, _a_nodelist),
    ("NTasks", 8, _a_both(lambda r: None, lambda r: r.s.get("num_tasks"))),
    ("Priority", 10, _a_jf("priority")),
    ("Partition", 10, _a_jf("partition")),
    ("QOS", 10, _a_jf("qos")),
    ("QOSRAW", 6, _A_BLANK),
    ("Reason", 22, _a_job_only(lambda r: job_reason(r.j))),
    ("ReqCPUFreq", 10, _a_cpu_freq_req),
    ("ReqCPUFreqMin", 13, _a_cpu_freq_req),
    ("ReqCPUFreqMax", 13, _a_cpu_freq_req),
    ("ReqCPUFreqGov", 13, _a_cpu_freq_req),
    ("ReqCPUS", 8, _a_both(lambda r: int(r.j.get("num_cpus") or 0), lambda r: int(r.s.get("num_cpus") or 0))),
    ("ReqGRES", 12, _A_BLANK),
    ("ReqMem", 10, _a_job_only(_a_req_mem)),
    ("ReqNodes", 8, _a_both(lambda r: str(r.j.get("num_nodes") or 0),
                            lambda r: str(r.s.get("num_nodes") or 0))),
    ("ReqTRES", 10, _a_job_only(lambda r: r.j.get("tres_req") or job_tres_str(r.j, sort=True))),
    ("Reservation", 20, _A_BLANK),
    ("ReservationId", 8, _A_BLANK),
    ("Reserved", 10, _A_BLANK),
    ("ResvCPU", 10, _A_BLANK),
    ("ResvCPURAW", 10, _A_BLANK),
    ("Restarts", 8, _a_job_only(lambda r: int(r.j.get("restarts") or 0))),
    ("Start", 19, _A_TIME("start_time")),
    ("State", 10, _a_state),
    ("Submit", 19, _a_both(lambda r: F.fmt_time(r.j.get("submit_time")), _A_TIME("start_time"))),
    ("Suspended", 10, lambda r: "00:00:00"),
    ("SystemCPU", 10, _a_total_cpu("system_cpu")),
    ("SystemComment", 15, _A_BLANK),
    ("Timelimit", 10, _a_timelimit(False)),
    ("TimelimitRaw", 10, _a_timelimit(True)),
    ("TotalCPU", 10, _a_total_cpu("total_cpu")),
    ("TRESUsageInAve", 14, _a_energy_tres),
    ("TRESUsageInMax", 14, _A_BLANK),
    ("TRESUsageInMaxNode", 18, _A_BLANK),
    ("TRESUsageInMaxTask", 18, _A_BLANK),
    ("TRESUsageInMin", 14, _A_BLANK),
    ("TRESUsageInMinNode", 18, _A_BLANK),
    ("TRESUsageInMinTask", 18, _A_BLANK),
    ("TRESUsageInTot", 14, _a_energy_tres),
    ("TRESUsageOutAve", 15, _a_energy_tres),
    ("TRESUsageOutMax", 15, _A_BLANK),
    ("TRESUsageOutMaxNode", 19, _A_BLANK),
    ("TRESUsageOutMaxTask", 19, _A_BLANK),
    ("TRESUsageOutMin", 15, _A_BLANK),
    ("TRESUsageOutMinNode", 19, _A_BLANK),
    ("TRESUsageOutMinTask", 19, _A_BLANK),
    ("TRESUsageOutTot", 15, _a_energy_tres),
    ("UID", 6, _a_jf("uid")),
    ("User", 9, _a_jf("user")),
    ("UserCPU", 10, _a_total_cpu("user_cpu")),
    ("WCKey", 10, _A_BLANK),
    ("WCKeyID", 10, _A_BLANK),
    ("WorkDir", 20, _a_jf("workdir")),
]


def parse_sacct_fields(fields: str | Iterable[str] | None) -> list[tuple[str, int, Callable[[ARow], Any]]]:
    """Parse ``--format``: ``JobID,JobName%-20,AllocTRES%40`` (case-insensitive, prefixes allowed).

    A ``%N`` width right-justifies, ``%-N`` left-justifies. An unknown name raises
    ``ValueError('Invalid field requested: "Name"')`` like sacct.
    """
    if fields is None:
        fields = SACCT_DEFAULT_FIELDS
    if isinstance(fields, str):
        items = [x for x in fields.replace(" ", ",").split(",") if x]
    else:
        items = [x for f in fields for x in f.replace(" ", ",").split(",") if x]
    out = []
    for item in items:
        name, _, width_s = item.partition("%")
        low = name.lower()
        match = next((f for f in SACCT_FIELDS if f[0].lower() == low), None)
        if match is None and low:
            match = next((f for f in SACCT_FIELDS if f[0].lower().startswith(low)), None)
        if match is None:
            raise ValueError(f'Invalid field requested: "{name}"')
        width = match[1]
        if width_s:
            try:
                new = int(width_s)
            except ValueError:
                new = 0
            if new:
                width = new
        out.append((match[0], width, match[2]))
    return out


def _sacct_cell(value: Any, width: int) -> str:
    """A fixed-width sacct cell: strings cut with ``+``, numbers never cut."""
    w = abs(width)
    if value is None:
        s = " "
    elif isinstance(value, int) and not isinstance(value, bool):
        s = str(value)
        return (s.rjust(w) if width > 0 else s.ljust(w)) + " "
    else:
        s = str(value)
        if len(s) > w:
            s = s[:w - 1] + "+"
    return (s.rjust(w) if width > 0 else s.ljust(w)) + " "


def _step_order(step: dict) -> tuple[int, int]:
    """batch first, extern second, then numbered steps in order."""
    sid = step.get("step")
    special = {"batch": -3, "extern": -2, "interactive": -1}
    if isinstance(sid, str) and sid in special:
        return special[sid], 0
    try:
        return 0, int(sid)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 1, 0


def sacct_rows(jobs: Iterable[JobDict], *, allocations_only: bool = False,
               now: float | None = None) -> list[ARow]:
    """The job and (unless ``allocations_only``, i.e. ``-X``) step lines, in order."""
    t = _now(now)
    rows: list[ARow] = []
    for j in jobs:
        rows.append(ARow(j, None, t))
        if not allocations_only:
            for s in sorted(j.get("steps") or [], key=_step_order):
                rows.append(ARow(j, s, t))
    return rows


def sacct_lines(jobs: Iterable[JobDict], *, fields: str | Iterable[str] | None = None,
                parsable: str | bool | None = None, noheader: bool = False,
                allocations_only: bool = False, now: float | None = None,
                delimiter: str = "|", long: bool = False) -> list[str]:
    """Render ``sacct`` output lines (without newlines).

    ``fields`` is ``--format`` (default ``JobID,JobName,Partition,Account,AllocCPUS,State,
    ExitCode``, or the ``-l`` list when ``long``). ``parsable`` is None for the padded
    table, ``"p"`` (or True) for ``-p`` (every field followed by the delimiter) and
    ``"P"`` for ``-P``/``--parsable2`` (no trailing delimiter). ``allocations_only`` is
    ``-X``. Raises ``ValueError('Invalid field requested: "Bogus"')``.
    """
    cols = parse_sacct_fields(SACCT_LONG_FIELDS if (fields is None and long) else fields)
    mode = None
    if parsable:
        mode = "P" if parsable in ("P", "-P", "parsable2", 2) else "p"
    rows = sacct_rows(jobs, allocations_only=allocations_only, now=now)
    out: list[str] = []

    def emit(values: list[Any]) -> str:
        if mode == "P":
            return delimiter.join("" if v is None else str(v) for v in values)
        if mode == "p":
            return "".join(("" if v is None else str(v)) + delimiter for v in values)
        return "".join(_sacct_cell(v, w) for v, (_, w, _g) in zip(values, cols))

    if not noheader:
        if mode:
            out.append(emit([c[0] for c in cols]))
        else:
            out.append("".join(
                (c[0][:abs(c[1])].rjust(abs(c[1])) if c[1] > 0 else c[0][:abs(c[1])].ljust(abs(c[1]))) + " "
                for c in cols))
            out.append("".join("-" * abs(c[1]) + " " for c in cols))
    for r in rows:
        out.append(emit([g(r) for (_, _, g) in cols]))
    return out


# ===========================================================================
# scontrol show job / node / partition
# ===========================================================================


def _alloc_node(job: JobDict) -> tuple[str, int]:
    """``AllocNode:Sid``: the submitting host and session id."""
    return (job.get("alloc_node") or job.get("submit_host") or "localhost",
            int(job.get("alloc_sid") or 0))


def _finish(lines: list[str], one_liner: bool, trailing: bool) -> str:
    """Join scontrol lines with Slurm's ``line_end`` and end the record.

    ``trailing`` appends one more ``line_end`` before the end (job records do).
    """
    sep = " " if one_liner else "\n   "
    text = sep.join(lines)
    if trailing:
        text += sep
    return text + ("\n" if one_liner else "\n\n")


def _job_detail_lines(job: JobDict) -> list[str]:
    """``-d`` lines of a job with an allocation: ``JOB_GRES=`` and per-node CPU/Mem/GRES."""
    names = job.get("node_list") or F.expand_hostlist(job.get("nodes") or "")
    if not names:
        return []
    gpus = job_gpus_total(job)
    lines = [f"JOB_GRES={'gpu:%d' % gpus if gpus else '(null)'}"]
    per_cpus = job.get("cpus_per_node") or {}
    cpu_ids = job.get("cpu_ids") or {}
    gpu_ids = job.get("gpu_ids") or {}
    n = len(names)
    groups: list[tuple[list[str], tuple]] = []
    for name in names:
        cpus = int(per_cpus.get(name) or max(int(job.get("num_cpus") or 1) // n, 1))
        ids = cpu_ids.get(name)
        if isinstance(ids, (list, tuple)):
            ids = F.fmt_ranges(ids)
        ids = ids or ("0" if cpus == 1 else f"0-{cpus - 1}")
        if job.get("mem_per_cpu"):
            mem = int(job["mem_per_cpu"]) * cpus
        else:
            mem = int(job.get("mem_per_node") or 0)
        g = gpu_ids.get(name) or []
        gres = f"gpu:{len(g)}(IDX:{F.fmt_ranges(g)})" if g else ""
        desc = (ids, mem, gres)
        if groups and groups[-1][1] == desc:
            groups[-1][0].append(name)
        else:
            groups.append(([name], desc))
    for members, (ids, mem, gres) in groups:
        lines.append(f"  Nodes={F.compress_hostlist(members)} CPU_IDs={ids} Mem={mem} GRES={gres}")
    return lines


def scontrol_show_job(job: JobDict, *, one_liner: bool = False, details: bool = False,
                      now: float | None = None) -> str:
    """Render one job as ``scontrol show job`` (``-o``: ``one_liner``, ``-d``: ``details``).

    Returns the full record text including its trailing newline(s).
    """
    t = _now(now)
    j = job
    state = j.get("state") or "PENDING"
    head = f"JobId={j['job_id']} "
    if j.get("array_job_id") is not None and (j.get("array_task_id") is not None or j.get("array_task_str")):
        head += f"ArrayJobId={j['array_job_id']} ArrayTaskId={j.get('array_task_str') or j['array_task_id']} "
        if j.get("array_max_tasks"):
            head += f"ArrayTaskThrottle={j['array_max_tasks']} "
    head += f"JobName={j.get('name')}"
    lines = [
        head,
        f"UserId={j.get('user')}({j.get('uid', 0)}) GroupId={j.get('group')}({j.get('gid', 0)}) "
        "MCS_label=N/A",
        f"Priority={j.get('priority', 0)} Nice={j.get('nice') or 0} Account={j.get('account')} "
        f"QOS={j.get('qos')}",
        f"JobState={state} Reason={job_reason(j).replace(' ', '_')} "
        f"Dependency={j.get('dependency') or '(null)'}",
        f"Requeue={1 if j.get('requeue', True) else 0} Restarts={j.get('restarts') or 0} "
        f"BatchFlag={1 if j.get('batch', True) else 0} Reboot=0 ExitCode={job_exit(j)}",
    ]
    if details:
        lines.append(f"DerivedExitCode={job_exit(j, derived=True)}")
    limit = j.get("time_limit")
    lines.append(f"RunTime={F.fmt_secs_long(job_time_used(j, t))} "
                 f"TimeLimit={F.fmt_mins_long(limit)} TimeMin=N/A")
    lines.append(f"SubmitTime={F.fmt_time(j.get('submit_time'))} "
                 f"EligibleTime={F.fmt_time(j.get('eligible_time'))}")
    lines.append(f"AccrueTime={F.fmt_time(j.get('accrue_time', j.get('eligible_time')))}")
    end = job_end_time(j)
    end_s = "Unknown" if (limit is None and (end is None or end > t)) else F.fmt_time(end)
    start = j.get("start_time") or j.get("expected_start")
    if start and state == "PENDING" and limit is not None:
        end_s = F.fmt_time(start + limit * 60)
    lines.append(f"StartTime={F.fmt_time(start)} EndTime={end_s} Deadline=N/A")
    preempt = j.get("preemptable_time", j.get("start_time") if state != "PENDING" else None)
    if preempt:
        lines.append(f"PreemptEligibleTime={F.fmt_time(preempt)} "
                     f"PreemptTime={F.fmt_time(j.get('preempt_time'), 'None')}")
    sched = j.get("last_sched_eval") or j.get("start_time") or j.get("submit_time")
    lines.append(f"SuspendTime={F.fmt_time(j.get('suspend_time'), 'None')} "
                 f"SecsPreSuspend={int(j.get('pre_sus_time') or 0)} LastSchedEval={F.fmt_time(sched)} "
                 f"Scheduler={j.get('scheduler') or 'Main'}")
    alloc_node, sid = _alloc_node(j)
    lines.append(f"Partition={j.get('partition')} AllocNode:Sid={alloc_node}:{sid}")
    lines.append(f"ReqNodeList={j.get('req_nodes') or '(null)'} ExcNodeList={j.get('exc_nodes') or '(null)'}")
    lines.append(f"NodeList={j.get('nodes') or ''}")
    if j.get("batch_host"):
        lines.append(f"BatchHost={j['batch_host']}")
    nn = str(j.get("num_nodes") or 0)
    if state == "PENDING" and j.get("nodes_max") and int(j["nodes_max"]) > int(nn):
        nn = f"{nn}-{j['nodes_max']}"
    lines.append(f"NumNodes={nn} NumCPUs={j.get('num_cpus') or 0} NumTasks={j.get('num_tasks') or 0} "
                 f"CPUs/Task={j.get('cpus_per_task') or 1} ReqB:S:C:T=0:0:*:*")
    lines.append(f"TRES={job_tres_str(j)}")
    lines.append(f"Socks/Node=* NtasksPerN:B:S:C={j.get('ntasks_per_node') or 0}:0:*:* CoreSpec=*")
    if details and j.get("nodes") and state not in ("PENDING",):
        lines.extend(_job_detail_lines(j))
    kind, mem = job_min_memory(j)
    lines.append(f"MinCPUsNode={job_min_cpus_node(j)} MinMemory{kind}={mem} MinTmpDiskNode=0")
    lines.append("Features=(null) DelayBoot=00:00:00")
    lines.append(f"OverSubscribe={'NO' if j.get('exclusive') else 'OK'} Contiguous=0 "
                 f"Licenses=(null) Network=(null)")
    lines.append(f"Command={j.get('command') or '(null)'}")
    lines.append(f"WorkDir={j.get('workdir')}")
    if j.get("comment"):
        lines.append(f"Comment={j['comment']} ")
    if j.get("batch", True):
        lines.append(f"StdErr={j.get('stderr') or ''}")
        lines.append(f"StdIn={j.get('stdin') or '/dev/null'}")
        lines.append(f"StdOut={j.get('stdout') or ''}")
    lines.append("Power=")
    if j.get("tres_per_node"):
        lines.append(f"TresPerNode={j['tres_per_node']}")
    return _finish(lines, one_liner, trailing=True)


def _node_cfg_tres(node: NodeDict) -> str:
    """``CfgTRES=cpu=8,mem=32000M,billing=8,gres/gpu=8``."""
    cpus = int(node.get("cpus") or 0)
    return F.tres_string([("cpu", cpus), ("mem", F.convert_num(node.get("real_memory") or 0)),
                          ("billing", cpus), ("gres/gpu", node.get("gpus") or None)])


def _node_alloc_tres(node: NodeDict) -> str:
    """``AllocTRES=cpu=1,mem=1000M[,gres/gpu=8]`` (empty when idle)."""
    return F.tres_string([("cpu", node.get("cpus_alloc") or None),
                          ("mem", F.convert_num(node["alloc_memory"]) if node.get("alloc_memory") else None),
                          ("gres/gpu", node.get("gpus_alloc") or None)])


def scontrol_show_node(node: NodeDict, *, one_liner: bool = False, now: float | None = None) -> str:
    """Render one node as ``scontrol show node``. Returns the record text with its newlines."""
    n = node
    sockets, cores, threads = _node_sct(n)
    cpus = int(n.get("cpus") or 0)
    head = f"NodeName={n['name']} "
    if n.get("arch"):
        head += f"Arch={n['arch']} "
    head += f"CoresPerSocket={cores} "
    load = n.get("cpu_load")
    lines = [
        head,
        f"CPUAlloc={n.get('cpus_alloc') or 0} CPUEfctv={cpus} CPUTot={cpus} "
        f"CPULoad={'N/A' if load is None else f'{float(load):.2f}'}",
        f"AvailableFeatures={n.get('features') or '(null)'}",
        f"ActiveFeatures={n.get('features_act') or n.get('features') or '(null)'}",
        f"Gres={n.get('gres') or '(null)'}",
        f"NodeAddr={n.get('addr') or n['name']} NodeHostName={n.get('hostname') or n['name']} "
        f"Version={n.get('version') or '(null)'}",
    ]
    if n.get("os"):
        lines.append(f"OS={n['os']} ")
    free = _free_mem(n)
    lines.append(f"RealMemory={n.get('real_memory') or 0} AllocMem={n.get('alloc_memory') or 0} "
                 f"FreeMem={'N/A' if free is None else free} Sockets={sockets} Boards=1")
    lines.append(f"State={F.node_state_complete(node_code(n))} ThreadsPerCore={threads} "
                 f"TmpDisk={n.get('tmp_disk') or 0} Weight={n.get('weight') or 1} Owner=N/A MCS_label=N/A")
    if n.get("partitions"):
        lines.append(f"Partitions={','.join(n['partitions'])} ")
    lines.append(f"BootTime={F.fmt_time(n.get('boot_time'), 'None')} "
                 f"SlurmdStartTime={F.fmt_time(n.get('slurmd_start_time'), 'None')}")
    lines.append(f"LastBusyTime={F.fmt_time(n.get('last_busy'))}")
    lines.append(f"CfgTRES={_node_cfg_tres(n)}")
    lines.append(f"AllocTRES={_node_alloc_tres(n)}")
    lines.append("CapWatts=n/a")
    lines.append("CurrentWatts=0 AveWatts=0")
    lines.append("ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s")
    if n.get("reason"):
        reason = f"Reason={n['reason']}"
        if n.get("reason_time"):
            reason += f" [{n.get('reason_user') or 'root'}@{F.fmt_time(n['reason_time'])}]"
        lines.append(reason)
    return _finish(lines, one_liner, trailing=False)


def _part_tres(p: PartDict) -> str:
    """``TRES=cpu=32,mem=125G,node=4,billing=32,gres/gpu=32``."""
    if p.get("tres"):
        return p["tres"]
    cpus = int(p.get("total_cpus") or 0)
    mem = p.get("total_memory")
    return F.tres_string([("cpu", cpus), ("mem", F.convert_num(mem) if mem else None),
                          ("node", int(p.get("total_nodes") or 0)), ("billing", cpus),
                          ("gres/gpu", p.get("total_gpus") or None)])


def scontrol_show_partition(part: PartDict, *, one_liner: bool = False) -> str:
    """Render one partition as ``scontrol show partition``, trailing newlines included."""
    p = part
    max_time = p.get("max_time")
    default_time = p.get("default_time")
    max_nodes = p.get("max_nodes")
    lines = [
        f"PartitionName={p['name']}",
        "AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL",
        f"AllocNodes=ALL Default={'YES' if p.get('default') else 'NO'} QoS=N/A",
        f"DefaultTime={'NONE' if default_time is None else F.fmt_mins_long(default_time)} "
        f"DisableRootJobs=NO ExclusiveUser=NO GraceTime={p.get('grace_time') or 0} Hidden=NO",
        f"MaxNodes={'UNLIMITED' if max_nodes is None else max_nodes} "
        f"MaxTime={F.fmt_mins_long(max_time)} MinNodes={p.get('min_nodes') or 0} LLN=NO "
        f"MaxCPUsPerNode=UNLIMITED",
    ]
    if p.get("nodes"):
        lines.append(f"Nodes={p['nodes']}")
    lines.append(f"PriorityJobFactor={p.get('priority_job_factor', 1)} "
                 f"PriorityTier={p.get('priority_tier', 1)} "
                 f"RootOnly=NO ReqResv=NO OverSubscribe=NO")
    lines.append(f"OverTimeLimit=NONE PreemptMode={p.get('preempt_mode') or 'OFF'}")
    lines.append(f"State={str(p.get('state') or 'UP').upper()} TotalCPUs={p.get('total_cpus') or 0} "
                 f"TotalNodes={p.get('total_nodes') or 0} SelectTypeParameters=NONE")
    lines.append("JobDefaults=(null)")
    lines.append("DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED")
    lines.append(f"TRES={_part_tres(p)}")
    return _finish(lines, one_liner, trailing=False)
