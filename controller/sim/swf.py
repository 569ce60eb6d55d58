"""Standard Workload Format (SWF) traces: parsing and the cleaning rules of `slurmlet simulate`.

An SWF file (Parallel Workloads Archive) is a header of `;` comment lines (`; MaxProcs: 338`,
`; MaxNodes: 338 (batch partition; 512 total)`, ...) followed by one line per job of 18
whitespace-separated numbers, -1 meaning "missing":

     1 job id         2 submit time    3 wait time      4 run time       5 allocated procs
     6 avg cpu time   7 used memory    8 requested procs 9 requested time 10 requested memory
    11 status        12 user id       13 group id      14 application   15 queue
    16 partition     17 preceding job 18 think time

Cleaning (see docs/simulate.md):

* the machine is `MaxProcs` processors (else `MaxNodes`, else the largest job in the file);
* a job's size is max(allocated, requested processors);
* a missing (or non-positive) requested time means the logged run time;
* a job runs for its logged run time but is killed at its requested time;
* jobs with a run time <= 0, no processor count, or more processors than the machine are skipped.

Everything here is plain data; nothing depends on the scheduling core.
"""

from __future__ import annotations

import gzip
import io
import math
import re
import zlib
from dataclasses import dataclass, field

FIELDS = ("job id", "submit time", "wait time", "run time", "allocated procs", "average cpu time",
          "used memory", "requested procs", "requested time", "requested memory", "status", "user id",
          "group id", "application", "queue", "partition", "preceding job", "think time")

SKIP_RUN_TIME = "run time <= 0"
SKIP_NO_PROCS = "no processor count"
SKIP_TOO_WIDE = "wider than the machine"


class SwfError(ValueError):
    """The trace cannot be read, or one of its lines is not SWF."""


@dataclass(frozen=True, slots=True)
class SwfJob:
    """One cleaned job. Times are seconds, as in the trace (int where the trace has integers)."""

    job_id: int
    submit: int | float
    run: int | float  #: the logged run time
    procs: int  #: max(allocated, requested processors)
    requested: int | float  #: requested time (the run time when the trace has none; sacct: inf for UNLIMITED)
    user: int = -1
    line: int = 0  #: line number in the file (1-based)
    #: sacct records only (controller/sim/sacct.py): Slurm's JobID (`19_2`, `27+1`) and the groups
    #: the replay is reported by
    name: str = ""
    partition: str = ""
    account: str = ""
    user_name: str = ""

    @property
    def occupied(self) -> int | float:
        """How long the job holds its processors: its run time, killed at its requested time."""
        return self.run if self.run <= self.requested else self.requested


@dataclass(slots=True)
class Trace:
    path: str
    max_procs: int
    #: where max_procs came from: "MaxProcs", "MaxNodes" or "largest job"
    machine_source: str
    jobs: list[SwfJob]  #: the jobs kept, in file order
    records: int = 0  #: job lines read (kept or skipped)
    skipped: dict[str, int] = field(default_factory=dict)  #: reason -> count
    header: dict[str, str] = field(default_factory=dict)  #: `; Key: value` lines, first of each key

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


_HEADER = re.compile(r";\s*([A-Za-z][A-Za-z0-9_]*)\s*:\s*(.*?)\s*$")
_FIRST_INT = re.compile(r"-?\d+")


def _number(tok: str) -> int | float:
    try:
        return int(tok)
    except ValueError:
        v = float(tok)  # ValueError goes to the caller
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError(tok) from None
        return int(v) if v.is_integer() else v


def _header_int(header: dict[str, str], key: str) -> int | None:
    v = header.get(key)
    m = _FIRST_INT.match(v) if v else None
    if m is None:
        return None
    n = int(m.group())
    return n if n > 0 else None


def open_text(path: str) -> io.TextIOBase:
    """Open `path` as text; gzip when the name ends in .gz or the file starts with gzip's magic bytes."""
    try:
        raw = open(path, "rb")  # returned to the caller
    except OSError as e:
        raise SwfError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        magic = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
        if path.endswith(".gz") or magic == b"\x1f\x8b":
            return io.TextIOWrapper(gzip.GzipFile(fileobj=raw), encoding="latin-1", newline=None)
        return io.TextIOWrapper(raw, encoding="latin-1", newline=None)
    except Exception:
        raw.close()
        raise


def load(path: str, limit: int | None = None) -> Trace:
    """Read and clean an SWF trace. `limit` keeps the first `limit` jobs that survive cleaning
    (file order); lines after the last kept job are then not read at all (unless the header has
    no machine size: then the whole file is read to find the largest job)."""
    with open_text(path) as f:
        try:
            return parse_lines(f, path, limit)
        except (OSError, EOFError, zlib.error) as e:
            raise SwfError(f"cannot read {path}: {e}") from None


def parse(text: str, path: str = "<string>", limit: int | None = None) -> Trace:
    return parse_lines(io.StringIO(text), path, limit)


def parse_lines(lines, path: str, limit: int | None = None) -> Trace:  # noqa: ANN001 - any iterable of str
    if limit is not None and limit < 0:
        raise ValueError("limit must be >= 0")
    header: dict[str, str] = {}
    raw: list[tuple[int, list[int | float]]] = []  # (line number, 18 numbers) of the job lines
    max_procs: int | None = None
    source = ""
    kept: list[SwfJob] = []
    skipped: dict[str, int] = {}
    records = 0
    in_header = True
    for lineno, line in enumerate(lines, 1):
        s = line.strip()
        if not s:
            continue
        if s[0] == ";":
            if in_header:
                m = _HEADER.match(s)
                if m and m.group(1) not in header:
                    header[m.group(1)] = m.group(2)
            continue
        if in_header:
            in_header = False
            max_procs, source = _machine(header)
            if limit == 0 and max_procs is not None:
                break
        toks = s.split()
        if len(toks) != 18:
            raise SwfError(f"{path}:{lineno}: expected 18 fields, found {len(toks)}: {_clip(s)!r}")
        try:
            vals = [_number(t) for t in toks]
        except ValueError:
            bad = next(i for i, t in enumerate(toks) if not _is_number(t))
            raise SwfError(f"{path}:{lineno}: field {bad + 1} ({FIELDS[bad]}) is not a number: "
                           f"{_clip(toks[bad])!r}") from None
        records += 1
        if max_procs is None:  # no machine size in the header: clean once every line is read
            raw.append((lineno, vals))
            continue
        job = _clean(vals, lineno, max_procs, skipped)
        if job is not None:
            kept.append(job)
            if limit is not None and len(kept) >= limit:
                break
    if in_header:  # no job line at all
        max_procs, source = _machine(header)
    if max_procs is None:
        cands = [(n, v) for n, v in raw if v[3] > 0 and max(v[4], v[7]) > 0]
        max_procs = max((math.ceil(max(v[4], v[7])) for _, v in cands), default=1)
        source = "largest job"
        for n, v in raw:
            if limit is not None and len(kept) >= limit:
                break
            job = _clean(v, n, max_procs, skipped)
            if job is not None:
                kept.append(job)
    return Trace(path=path, max_procs=max_procs, machine_source=source, jobs=kept, records=records,
                 skipped=skipped, header=header)


def _machine(header: dict[str, str]) -> tuple[int | None, str]:
    n = _header_int(header, "MaxProcs")
    if n is not None:
        return n, "MaxProcs"
    return _header_int(header, "MaxNodes"), "MaxNodes"


def _clean(v: list[int | float], lineno: int, max_procs: int, skipped: dict[str, int]) -> SwfJob | None:
    run = v[3]
    if run <= 0:
        skipped[SKIP_RUN_TIME] = skipped.get(SKIP_RUN_TIME, 0) + 1
        return None
    procs = v[4] if v[4] >= v[7] else v[7]
    if procs <= 0:
        skipped[SKIP_NO_PROCS] = skipped.get(SKIP_NO_PROCS, 0) + 1
        return None
    procs = int(procs) if procs == int(procs) else int(procs) + 1  # fractional counts round up
    if procs > max_procs:
        skipped[SKIP_TOO_WIDE] = skipped.get(SKIP_TOO_WIDE, 0) + 1
        return None
    req = v[8]
    if req <= 0:
        req = run
    return SwfJob(job_id=int(v[0]), submit=v[1], run=run, procs=procs, requested=req, user=int(v[11]),
                  line=lineno)


def _is_number(tok: str) -> bool:
    try:
        _number(tok)
        return True
    except ValueError:
        return False


def _clip(s: str, n: int = 60) -> str:
    return s if len(s) <= n else s[:n] + "..."
