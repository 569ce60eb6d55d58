"""squeue's output, Slurm 22.05 byte for byte: default, `-l`, `-o`, `-O`, `-r`, `--start`; pending array
tasks collapsed into one line. Pure: plain dicts in, lines out (see docs/api.md)."""


from __future__ import annotations

from slurmlet.common import fmt as F
from slurmlet.common.fmt import Field
from slurmlet.common.jobfacts import (
    alloc_node,
    job_end_time,
    job_exit,
    job_id_str,
    job_is_array,
    job_min_cpus_node,
    job_min_memory,
    job_reason,
    job_time_used,
    job_tres_str,
    now_or_clock,
    null_or,
)
from slurmlet.common.wire import VIEW_CHARS, VIEW_COLUMNS, VIEW_DEFAULT_WIDTH, VIEW_LINE, VIEW_SORTS

TYPE_CHECKING = False  # keep typing (~7 ms) out of the CLI's import path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from slurmlet.common.fmt import Spec

    #: a pending array's rows: (array_job_id, name, partition)
    ArrayKey = tuple[int, str | None, str | None]
    #: a view's options: fmt, long_fmt, noheader, long, array_collapse, start, sort
    ViewKey = tuple[str | None, str | None, bool, bool, bool, bool, str | None]

    JobDict = dict[str, Any]

SQUEUE_DEFAULT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
SQUEUE_LONG = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
SQUEUE_START = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
SQUEUE_DEFAULT_SORT = "P,t,-p"


class QRow:
    """One squeue line: a job, or pending tasks of one array collapsed into one line. `timed`: whether
    anything read `now` of it (its line, or its place in the order, may change with the clock)."""

    __slots__ = ("j", "_now", "tasks", "reason", "timed")

    def __init__(self, job: JobDict, now: float, tasks: str | None = None,
                 reason: str | None = None) -> None:
        self.j = job
        self._now = now
        self.tasks = tasks
        self.reason = reason if reason is not None else job_reason(job)
        self.timed = False

    def clock(self) -> float:
        """The row's time (marking the row as read at it); a function, for what reads it only when
        it needs it."""
        self.timed = True
        return self._now

    now = property(clock)


def _qg(key: str, default: Any = "(null)") -> Callable[[QRow], Any]:
    """Getter for a plain job field, ``default`` when it is None."""
    return lambda r: null_or(r.j.get(key), default)


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
    from slurmlet.common.slurmtime import fmt_secs_short
    return fmt_secs_short(limit * 60 - job_time_used(r.j, r.clock))


def _q_time_limit(r: QRow) -> str:
    """``%l``: the time limit."""
    from slurmlet.common.slurmtime import fmt_limit_short
    return fmt_limit_short(r.j.get("time_limit"))


def _q_time(r: QRow) -> str:
    """``%M``: the time used."""
    from slurmlet.common.slurmtime import fmt_secs_short
    return fmt_secs_short(job_time_used(r.j, r.clock))


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
    "l": Field("TIME_LIMIT", _q_time_limit),
    "L": Field("TIME_LEFT", _q_time_left),
    "m": Field("MIN_MEMORY", lambda r: job_min_memory(r.j)[1]),
    "M": Field("TIME", _q_time, cut=False),
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
    "ntpernode": Field("NTASKS_PER_NODE", lambda r: null_or(r.j.get("ntasks_per_node"), "N/A")),
    "maxnodes": Field("MAX_NODES", lambda r: r.j.get("nodes_max") or r.j.get("num_nodes") or 0),
    "maxcpus": Field("MAX_CPUS", _qg("num_cpus", 0)),
    "tres-per-job": Field("TRES_PER_JOB", lambda r: r.j.get("tres_per_job") or "N/A"),
    "mcslabel": Field("MCSLABEL", lambda r: "N/A"),
    "deadline": Field("DEADLINE", lambda r: "N/A"),
    "network": Field("NETWORK", lambda r: "(null)"),
    "allocnodes": Field("ALLOC_NODES", lambda r: alloc_node(r.j)[0]),
    "allocsid": Field("ALLOC_SID", lambda r: alloc_node(r.j)[1]),
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
        "i": lambda r: (r.j.get("het_job_id") or r.j.get("array_job_id") or r.j["job_id"],
                        r.j.get("het_job_offset") or r.j.get("array_task_id") or -1),
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
        "M": lambda r: job_time_used(r.j, r.clock),
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
    groups: dict[ArrayKey, list[JobDict]] = {}
    for j in jobs:
        if j.get("state") == "PENDING" and job_is_array(j):
            groups.setdefault((j["array_job_id"], j.get("name"), j.get("partition")), []).append(j)
    lead: dict[int, ArrayKey] = {}
    for key, members in groups.items():
        rep = next((m for m in members if m["job_id"] == key[0]), members[0])
        lead[id(rep)] = key
    rows: list[QRow] = []
    for j in jobs:
        if j.get("state") == "PENDING" and job_is_array(j):
            lead_key = lead.get(id(j))
            if lead_key is None:
                continue
            members = groups[lead_key]
            from slurmlet.common.grammar import fmt_ranges
            tasks = fmt_ranges(int(m["array_task_id"]) for m in members)
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


#: the job keys every squeue line reads (array collapsing, the default sort, squeue's own filters)
ROW_KEYS = ("job_id", "array_job_id", "array_task_id", "array_max_tasks", "het_job_id", "het_job_offset", "name",
            "partition", "state", "reason", "nodes", "priority")
_TIMES = ("start_time", "end_time", "suspended_secs", "pre_sus_time", "time_limit", "submit_time", "eligible_time",
          "expected_start")
_SIZES = ("num_cpus", "num_nodes", "num_tasks", "min_cpus_node", "cpus_per_task", "ntasks_per_node", "mem_per_cpu",
          "mem_per_node", "alloc_memory", "billing", "gpu_ids", "gpus_per_node", "tres_per_node")
#: what else each -o letter, -O name and -S letter reads (tests/unit/cli/test_render.py checks that a job
#: cut down to these renders as the whole job does, for every column and sort)
_KEYS: dict[str, tuple[str, ...]] = {
    "a": ("account",), "b": ("tres_per_node",), "B": ("batch_host",), "c": _SIZES, "C": ("num_cpus",),
    "D": ("num_nodes",), "e": _TIMES, "E": ("dependency",), "f": ("features",), "g": ("group",), "G": ("gid",),
    "h": ("exclusive",), "k": ("comment",), "l": ("time_limit",), "L": _TIMES, "m": _SIZES, "M": _TIMES,
    "n": ("req_nodes",), "o": ("command",), "q": ("qos",), "S": _TIMES, "u": ("user",), "U": ("uid",),
    "v": ("reservation",), "V": ("submit_time",), "w": ("wckey",), "W": ("licenses",), "x": ("exc_nodes",),
    "y": ("nice",), "Y": ("sched_nodes",), "Z": ("workdir",),
    "cluster": ("cluster",), "numtasks": ("num_tasks",), "stdout": ("stdout",), "stderr": ("stderr",),
    "stdin": ("stdin",), "tres": _SIZES, "tres-alloc": _SIZES, "cpus-per-task": ("cpus_per_task",),
    "cpuspertask": ("cpus_per_task",), "requeue": ("requeue",), "restartcnt": ("restarts",),
    "exit_code": ("exit_code", "exit_signal"), "derivedec": ("derived_exit_code", "derived_exit_signal"),
    "eligibletime": _TIMES, "accruetime": ("accrue_time", *_TIMES), "lastschedeval": ("last_sched_eval", *_TIMES),
    "pendingtime": _TIMES, "batchflag": ("batch",), "ntpernode": ("ntasks_per_node",),
    "maxnodes": ("nodes_max", *_SIZES),
    "maxcpus": _SIZES, "tres-per-job": ("tres_per_job",), "allocnodes": ("alloc_node", "alloc_sid", "submit_host"),
    "allocsid": ("alloc_node", "alloc_sid", "submit_host"),
}


def job_keys(*, fmt: str | None = None, long_fmt: str | None = None, long: bool = False, start: bool = False,
             sort: str | None = None) -> list[str] | None:
    """The job keys squeue_lines reads for these options (the controller sends only those: a fifth
    of a job or less), or None when a column is unknown (squeue_lines then says which)."""
    want = set(ROW_KEYS)
    try:
        specs, _ = _specs(fmt, long_fmt, long, start)
    except ValueError:
        return None
    cols = [_SQUEUE_LONG_ALIASES.get(sp.key, sp.key) for sp in specs if sp.key is not None]
    sorts = [k.strip().lstrip("+-")[:1] for k in (sort or "").split(",") if k.strip().lstrip("+-")]
    for c in cols + sorts:
        want.update(_KEYS.get(c, ()))
    if start:
        want.update(("expected_start", "start_time", "sched_nodes", "num_nodes", "user"))
    return sorted(want)


def view_bounded(fmt: str | None, long_fmt: str | None, sort: str | None = None) -> bool:
    """Whether a view is one the controller renders (common/wire.py: VIEW_CHARS); one whose format
    does not parse is not."""
    sort = sort or ""
    if len(sort) > VIEW_CHARS or len([k for k in sort.split(",") if k.strip()]) > VIEW_SORTS:
        return False
    if len(long_fmt or fmt or "") > VIEW_CHARS:
        return False
    try:
        cols = [sp for sp in _format(fmt, long_fmt, False, False) if sp.key is not None]
    except ValueError:
        return False
    return len(cols) <= VIEW_COLUMNS and sum(sp.width or VIEW_DEFAULT_WIDTH for sp in cols) <= VIEW_LINE


def named_tasks(jobs: list[JobDict], tasks: Iterable[str]) -> list[JobDict]:
    """squeue -j with array tasks named (`7_3`, or `7_` for all of 7's): the jobs that are no array
    task, the tasks named, and every task of an array named with `_` alone."""
    named = set(tasks)
    whole = {base for base, sep, rest in (t.partition("_") for t in named) if sep and not rest.split("_")[0]}
    return [j for j in jobs if j.get("array_task_id") is None or f"{j['array_job_id']}_{j['array_task_id']}" in named
            or str(j["array_job_id"]) in whole]


def _format(fmt: str | None, long_fmt: str | None, long: bool, start: bool) -> list[Spec]:
    """The parsed format of a view: -O when it is not empty, else -o, else -l's, --start's or the
    default one (the one rule every reader of a view follows)."""
    if long_fmt:
        return F.parse_long_format(long_fmt)
    return F.parse_format(fmt or (SQUEUE_START if start else SQUEUE_LONG if long else SQUEUE_DEFAULT))


def _specs(fmt: str | None, long_fmt: str | None, long: bool, start: bool) -> tuple[list[Spec], dict[str, Field]]:
    """The columns of a view and the table they come from (ValueError naming an unknown one)."""
    table = squeue_long_table() if long_fmt else SQUEUE_FIELDS
    specs = _format(fmt, long_fmt, long, start)
    for sp in specs:
        if sp.key is not None and sp.key not in table:
            raise ValueError(f"Invalid job format specification: {sp.key}")
    return specs, table


def _rows(jobs: Iterable[JobDict], t: float, array_collapse: bool, start: bool, sort: str | None) -> list[QRow]:
    """squeue's rows in its order."""
    jobs = [j for j in jobs if not start or j.get("state") == "PENDING"]
    rows = collapse_arrays(jobs, t) if array_collapse else [QRow(j, t) for j in jobs]
    # --start lists jobs by expected start (those without an estimate last, by priority)
    sort_rows(rows, sort or (SQUEUE_DEFAULT_SORT if not start else "-p"))
    if start and not sort:
        rows.sort(key=lambda r: (r.j.get("expected_start") is None, r.j.get("expected_start") or 0))
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
    t = now_or_clock(now)
    rows = _rows(jobs, t, array_collapse, start, sort)
    specs, table = _specs(fmt, long_fmt, long, start)
    out: list[str] = []
    if long and not noheader:
        out.append(F.fmt_date_header(t))
    if not noheader:
        out.append(F.render_specs(specs, table, None))
    out.extend(F.render_specs(specs, table, r) for r in rows)
    return out


class _View:
    """What Kept keeps of one view: its columns, its header, and for the last list rendered, the rows
    in their order (whether that order read the clock), each row's line by its job's dict, the text."""

    __slots__ = ("specs", "table", "head", "jobs", "rows", "ordered_by_clock", "lines", "text")

    def __init__(self, specs: list[Spec], table: dict[str, Field], head: str) -> None:
        self.specs, self.table, self.head = specs, table, head
        self.jobs: list[JobDict] | None = None
        self.rows: list[QRow] = []
        self.ordered_by_clock = False
        self.lines: dict[int, tuple[JobDict, str]] = {}
        self.text: str | None = None


class Kept:
    """squeue's text for a caller that renders the same job lists again and again (the controller,
    for squeue in a loop: `Queries.listed` gives the same list, and the same dict for a job, while
    nothing changed). Per view (the options), it keeps the rows in their order for the last list,
    each row's line while its job's dict is the same, and the whole text; a row whose line or place
    read the clock (a running job's TIME, a sort by it) is rendered again each time, so the text is
    the one `squeue_lines` gives at `now`."""

    #: views kept at once (a new one past that begins them anew)
    VIEWS = 8

    def __init__(self) -> None:
        self._views: dict[ViewKey, _View] = {}

    def text(self, jobs: list[JobDict], now: float, *, fmt: str | None = None, long_fmt: str | None = None,
             noheader: bool = False, long: bool = False, array_collapse: bool = True, start: bool = False,
             sort: str | None = None) -> str:
        """`squeue_lines(jobs, ...)` at `now`, as one text (a newline after each line)."""
        key: ViewKey = (fmt, long_fmt, noheader, long, array_collapse, start, sort)
        v = self._views.get(key)
        if v is None:
            if len(self._views) >= self.VIEWS:
                self._views.clear()
            specs, table = _specs(fmt, long_fmt, long, start)
            v = self._views[key] = _View(specs, table, "" if noheader else F.render_specs(specs, table, None) + "\n")
        if v.jobs is jobs and v.text is not None:
            return v.text
        if v.jobs is not jobs or v.ordered_by_clock:
            v.rows = _rows(jobs, now, array_collapse, start, sort)
            v.ordered_by_clock = any(r.timed for r in v.rows)
        else:
            for r in v.rows:
                r._now, r.timed = now, False
        fresh: dict[int, tuple[JobDict, str]] = {}
        out = [F.fmt_date_header(now) + "\n" if long and not noheader else "", v.head]
        timed = v.ordered_by_clock or long
        for r in v.rows:
            hit = v.lines.get(id(r.j)) if r.tasks is None else None
            if hit is None or hit[0] is not r.j:
                line = F.render_specs(v.specs, v.table, r) + "\n"
                if r.timed:
                    timed = True
                    r.timed = False
                elif r.tasks is None:
                    fresh[id(r.j)] = (r.j, line)
            else:
                line = hit[1]
                fresh[id(r.j)] = hit
            out.append(line)
        text = "".join(out)
        v.jobs, v.lines, v.text = jobs, fresh, None if timed else text
        return text
