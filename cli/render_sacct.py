"""sacct's output, Slurm 22.05 byte for byte: default, `-o/--format`, `-p`, `-P`, `-n`, `-X`, `-l`;
jobs and their steps. Pure: the API's jobs in, lines out."""


from __future__ import annotations

from slurmlet.common import fmt as F
from slurmlet.common.jobfacts import job_exit, job_id_str, job_mem_total, job_reason, job_tres_str, now_or_clock

TYPE_CHECKING = False  # keep typing (~7 ms) out of the CLI's import path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    JobDict = dict[str, Any]
    NodeDict = dict[str, Any]
    PartDict = dict[str, Any]

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

    @property
    def step(self) -> dict[str, Any]:
        """A step line's step (what only step lines read)."""
        assert self.s is not None
        return self.s


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


def _a_secs_long(secs: int) -> str:
    """A duration as ``[D-]HH:MM:SS`` (the time grammar is imported only by the columns that print one)."""
    from slurmlet.common.slurmtime import fmt_secs_long
    return fmt_secs_long(secs)


def _a_timelimit(raw: bool) -> Callable[[ARow], Any]:
    """``Timelimit`` (``00:01:00``) or ``TimelimitRaw`` (minutes), ``UNLIMITED`` if none."""
    def get(r: ARow) -> Any:
        mins = r.j.get("time_limit")
        if mins is None:
            return "UNLIMITED"
        if mins == 0:
            return None
        if raw:
            return str(mins)
        from slurmlet.common.slurmtime import fmt_mins_long
        return fmt_mins_long(mins)
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


def _a_kb(key: str) -> Callable[[ARow], str | None]:
    """A step's memory figure (``MaxRSS``, ``AveVMSize``...) in KB (``1688K``), when reported."""
    def get(r: ARow) -> str | None:
        v = None if r.s is None else r.s.get(key)
        return None if v is None else F.convert_num(int(v), "K")
    return get


def _A_TIME(key: str) -> Callable[[ARow], str]:
    """Getter for a time of the step (step lines) or of the job (job lines)."""
    return lambda r: F.fmt_time((r.s if r.s is not None else r.j).get(key))


def _A_BLANK(r: ARow) -> None:
    """A column slurmlet has no data for: always empty."""
    return None

#: (name, default width, getter) in Slurm's table order (prefix lookup follows it).
SACCT_FIELDS: list[tuple[str, int, Callable[[ARow], Any]]] = [
    ("Account", 10, lambda r: r.j.get("account")),
    ("AdminComment", 15, _a_jf("admin_comment")),
    ("AllocCPUS", 10, _a_both(lambda r: int(r.j.get("num_cpus") or 0),
                              lambda r: int(r.step.get("num_cpus") or 0))),
    ("AllocNodes", 10, _a_both(lambda r: str(r.j.get("num_nodes") or 0) if r.j.get("start_time") else "0",
                               lambda r: str(r.step.get("num_nodes") or 0))),
    ("AllocTRES", 10, _a_both(_a_job_alloc_tres, _a_step_tres)),
    ("AssocID", 7, _A_BLANK),
    ("AveCPU", 10, _a_stat("ave_cpu")),
    ("AveCPUFreq", 10, lambda r: None if r.s is None else r.s.get("ave_cpu_freq", "0")),
    ("AveDiskRead", 14, _a_stat("ave_disk_read")),
    ("AveDiskWrite", 14, _a_stat("ave_disk_write")),
    ("AvePages", 10, _a_stat("ave_pages")),
    ("AveRSS", 10, _a_kb("ave_rss")),
    ("AveVMSize", 10, _a_kb("ave_vmsize")),
    ("Cluster", 10, lambda r: r.j.get("cluster")),
    ("Comment", 14, _a_jf("comment")),
    ("Constraints", 19, _A_BLANK),
    ("ConsumedEnergy", 14, lambda r: "0"),
    ("ConsumedEnergyRaw", 17, lambda r: 0),
    ("CPUTime", 10, lambda r: _a_secs_long(_a_elapsed(r) * int((r.s or r.j).get("num_cpus") or 0))),
    ("CPUTimeRAW", 10, lambda r: _a_elapsed(r) * int((r.s or r.j).get("num_cpus") or 0)),
    ("DerivedExitCode", 15, _a_job_only(lambda r: job_exit(r.j, derived=True))),
    ("Elapsed", 10, lambda r: _a_secs_long(_a_elapsed(r))),
    ("ElapsedRaw", 10, _a_elapsed),
    ("Eligible", 19, _a_both(lambda r: F.fmt_time(r.j.get("eligible_time")), _A_TIME("start_time"))),
    ("End", 19, _A_TIME("end_time")),
    ("ExitCode", 8, _a_exit),
    ("Flags", 19, _A_BLANK),
    ("GID", 6, _a_jf("gid")),
    ("Group", 9, _a_jf("group")),
    ("JobID", -12, _a_jobid),
    ("JobIDRaw", -12, lambda r: _a_jobid(r, raw=True)),
    ("JobName", 10, _a_both(lambda r: r.j.get("name"), lambda r: r.step.get("name"))),
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
    ("MaxRSS", 10, _a_kb("max_rss")),
    ("MaxRSSNode", 10, _a_stat("max_rss_node")),
    ("MaxRSSTask", 10, _a_stat("max_rss_task")),
    ("MaxVMSize", 10, _a_kb("max_vmsize")),
    ("MaxVMSizeNode", 14, _a_stat("max_vmsize_node")),
    ("MaxVMSizeTask", 14, _a_stat("max_vmsize_task")),
    ("McsLabel", 12, _A_BLANK),
    ("MinCPU", 10, _a_stat("min_cpu")),
    ("MinCPUNode", 10, _a_stat("min_cpu_node")),
    ("MinCPUTask", 10, _a_stat("min_cpu_task")),
    ("NCPUS", 10, _a_both(lambda r: int(r.j.get("num_cpus") or 0), lambda r: int(r.step.get("num_cpus") or 0))),
    ("NNodes", 8, _a_both(lambda r: int(r.j.get("num_nodes") or 0),
                          lambda r: int(r.step.get("num_nodes") or 0))),
    ("NodeList", 15, _a_nodelist),
    ("NTasks", 8, _a_both(lambda r: None, lambda r: r.step.get("num_tasks"))),
    ("Priority", 10, _a_jf("priority")),
    ("Partition", 10, _a_jf("partition")),
    ("QOS", 10, _a_jf("qos")),
    ("QOSRAW", 6, _A_BLANK),
    ("Reason", 22, _a_job_only(lambda r: job_reason(r.j))),
    ("ReqCPUFreq", 10, _a_cpu_freq_req),
    ("ReqCPUFreqMin", 13, _a_cpu_freq_req),
    ("ReqCPUFreqMax", 13, _a_cpu_freq_req),
    ("ReqCPUFreqGov", 13, _a_cpu_freq_req),
    ("ReqCPUS", 8, _a_both(lambda r: int(r.j.get("num_cpus") or 0), lambda r: int(r.step.get("num_cpus") or 0))),
    ("ReqGRES", 12, _A_BLANK),
    ("ReqMem", 10, _a_job_only(_a_req_mem)),
    ("ReqNodes", 8, _a_both(lambda r: str(r.j.get("num_nodes") or 0),
                            lambda r: str(r.step.get("num_nodes") or 0))),
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


def parse_sacct_fields(fields: str | Iterable[str] | None,
                       table: list | None = None) -> list[tuple[str, int, Callable[[ARow], Any]]]:
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
    table = SACCT_FIELDS if table is None else table
    for item in items:
        name, _, width_s = item.partition("%")
        low = name.lower()
        match = next((f for f in table if f[0].lower() == low), None)
        if match is None and low:
            match = next((f for f in table if f[0].lower().startswith(low)), None)
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
    t = now_or_clock(now)
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
    rows = sacct_rows(jobs, allocations_only=allocations_only, now=now)
    return field_lines(cols, rows, parsable=parsable, noheader=noheader, delimiter=delimiter)


def field_lines(cols: list, rows: list[ARow], *, parsable: str | bool | None = None, noheader: bool = False,
                delimiter: str = "|") -> list[str]:
    """sacct's (and sstat's) table of these columns and rows: padded, or `-p`/`-P` parsable."""
    mode = None
    if parsable:
        mode = "P" if parsable in ("P", "-P", "parsable2", 2) else "p"
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
