"""Slurm 22.05's value grammar, shared by the CLI and the daemons (pure, stdlib only, cheap to import).

Node counts, memory sizes, GRES and GPU requests, signals, array index lists and dependency lists,
parsed and refused exactly as the real sbatch/srun 22.05.8 does (time forms are in
common/slurmtime.py, output-file patterns in common/patterns.py). Every refusal raises
`OptError(lines, code)`: `lines` are exactly what Slurm writes to stderr, `code` its exit status
(255 where Slurm calls exit(-1), 1 otherwise). The C helpers (`strtol`, `atoi`, `int32`, `cdiv`)
reproduce the C library's parsing where Slurm's answers depend on it.

Import cost: nothing but `os`-free builtins; `time`, `pwd` and `grp` load inside the functions that
need them.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs start-up time
    from collections.abc import Iterable

NO_VAL = 4294967294          #: `%a` of a job that is not an array task (Slurm's NO_VAL)
BATCH_STEP_ID = 4294967291   #: Slurm 22.05's SLURM_BATCH_SCRIPT step id (`%s` of the batch step)
MAX_ARRAY_SIZE = 1001        #: MaxArraySize default: indexes 0..1000
MAX_JOB_ID = 0x03FFFFFF
NICE_MAX = 2147483645
INFINITE32 = -1             # INFINITE (0xffffffff) seen as a C int
NO_VAL32 = -2               # NO_VAL (0xfffffffe) seen as a C int
LONG_MAX = (1 << 63) - 1
LONG_MIN = -(1 << 63)
CSPACE = " \t\n\v\f\r"      # C isspace()


class OptError(Exception):
    """A refused command line: `lines` go to stderr verbatim, `code` is the exit status.

    `fixed` marks the exit-1 refusals that ignore SLURM_EXIT_ERROR (Slurm's fatal() and
    parse_int() call exit(1) themselves); other exit-1 refusals use SLURM_EXIT_ERROR when set.
    `stdout` marks a text that goes to standard output instead (a `help` value's list)."""

    def __init__(self, lines: list[str] | str, code: int = 255, fixed: bool = False, stdout: bool = False):
        if isinstance(lines, str):
            lines = [lines]
        super().__init__("\n".join(lines))
        self.lines = list(lines)
        self.code = code
        self.fixed = fixed
        self.stdout = stdout


def opt_error(prog: str, msg: str, code: int) -> OptError:
    return OptError([f"{prog}: error: {msg}"], code)


def refused(prog: str, msg: str) -> OptError:
    """A refusal that Slurm makes in slurmctld, worded as the client reports it (exit 1)."""
    lead = "Batch job submission failed" if prog == "sbatch" else "Unable to allocate resources"
    return opt_error(prog, f"{lead}: {msg}", 1)


# ====================================================================== C helpers
def strtol(s: str, i: int = 0) -> tuple[int, int]:
    """C `strtol(s + i, &end, 10)` on a 64-bit long: (value, end index); end == i without digits."""
    n = len(s)
    j = i
    while j < n and s[j] in CSPACE:
        j += 1
    neg = False
    if j < n and s[j] in "+-":
        neg = s[j] == "-"
        j += 1
    k = j
    while k < n and "0" <= s[k] <= "9":
        k += 1
    if k == j:
        return 0, i
    v = int(s[j:k])
    v = -v if neg else v
    return max(LONG_MIN, min(LONG_MAX, v)), k


def atoi(s: str) -> int:
    return strtol(s)[0]


def int32(v: int) -> int:
    """A C cast to (int): keep the low 32 bits, signed."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= (1 << 31) else v


def cdiv(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def is_ws(s: str) -> bool:
    return all(c in CSPACE for c in s)


def digits(s: str) -> bool:
    return bool(s) and all("0" <= c <= "9" for c in s)



def char_at(s: str, i: int) -> str:
    return s[i] if 0 <= i < len(s) else "\0"


def isdig(c: str) -> bool:
    return "0" <= c <= "9"




# ====================================================================== sizes and counts
def _str_to_mbytes(value: str) -> int | None:
    """Slurm's str_to_mbytes: MB, or None when invalid (K rounds up; M default; G, T; an optional B)."""
    v, end = strtol(value)
    if end == 0 or v in (LONG_MAX, LONG_MIN):
        return None
    suffix = value[end:].lower()
    if suffix in ("", "m", "mb"):
        pass
    elif suffix in ("k", "kb"):
        v = cdiv(v + 1023, 1024)
    elif suffix in ("g", "gb"):
        v *= 1024
    elif suffix in ("t", "tb"):
        v *= 1024 * 1024
    else:
        return None
    return None if v < 0 else v


def parse_mem(value: str, prog: str = "sbatch", *, option: str = "--mem") -> int:
    """`--mem`, `--mem-per-cpu`, `--mem-per-gpu`, `--tmp` sizes -> MB (`500`, `500M`, `2G`, `2GB`,
    `1T`, `1024K`; `0` allowed).  Invalid: `<prog>: error: Invalid --mem specification` (255)."""
    mb = _str_to_mbytes(value)
    if mb is None:
        raise opt_error(prog, f"Invalid {option} specification", 255)
    return mb


def parse_int(prog: str, option: str, value: str, positive: bool) -> int:
    """Slurm's parse_int(): a whole decimal number (leading blanks and sign allowed, cast to int);
    `<prog>: error: Invalid numeric value "V" for --opt.` (exit 1)."""
    v, end = strtol(value)
    if end != len(value) or v < 0 or (positive and v <= 0):
        raise OptError([f'{prog}: error: Invalid numeric value "{value}" for {option}.'], 1, fixed=True)
    return int32(v)


def _str_to_nodes(s: str) -> tuple[int, str]:
    v, end = strtol(s)
    if end == 0:
        return -1, s
    rest = s[end:]
    if rest[:1] in ("k", "K"):
        v *= 1024
        rest = rest[1:]
    if rest[:1] in ("m", "M"):
        v *= 1024 * 1024
        rest = rest[1:]
    return int32(v), rest


def parse_nodes(value: str, prog: str = "sbatch") -> tuple[int, int]:
    """`-N min[-max]` (k/m suffixes allowed) as Slurm's verify_node_count -> (min, max).

    max is 0 when no maximum was given (`-N 5-0`); a missing min in a range counts as 1.
    Errors (exit 255): `"X" is not a valid node count`, `Maximum node count M is less than
    minimum node count N`.
    """
    dash = value.find("-")
    if dash >= 0:
        lo_s, hi_s = value[:dash], value[dash + 1:]
        lo, left = _str_to_nodes(lo_s)
        if not is_ws(left):
            raise opt_error(prog, f'"{lo_s}" is not a valid node count', 255)
        if lo < 0:
            lo = 1
        hi, left = _str_to_nodes(hi_s)
        if not is_ws(left):
            raise opt_error(prog, f'"{hi_s}" is not a valid node count', 255)
    else:
        lo, left = _str_to_nodes(value)
        hi = lo
        if not is_ws(left) or lo < 0:
            raise opt_error(prog, f'"{value}" is not a valid node count', 255)
    if hi != 0 and hi < lo:
        raise opt_error(prog, f"Maximum node count {hi} is less than minimum node count {lo}", 255)
    return lo, hi


def _gres_count(s: str) -> int | None:
    v, end = strtol(s)
    if end == 0 or s[0] in CSPACE or s[0] in "+-":
        return None
    rest = s[end:].lower()
    mult = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}.get(rest)
    return None if mult is None or v < 0 else v * mult


def parse_gres(value: str, prog: str = "sbatch", *, gres_types: tuple[str, ...] = ("gpu",)
               ) -> tuple[int | None, str | None]:
    """`--gres=name[[:type]:count][,...]` (optionally `gres:`-prefixed; `none` clears it)
    -> (GPUs per node or None, GPU type or None).

    A name that is not a configured GRES (only `gpu` here) is Slurm's
    `<prog>: error: Invalid generic resource (gres) specification` (exit 1); so is a bad count.
    """
    bad = opt_error(prog, "Invalid generic resource (gres) specification", 1)
    if value.lower() == "none":
        return None, None
    count: int | None = None
    gtype: str | None = None
    for item in value.split(","):
        if item.startswith(("gres:", "gres/")):
            item = item[5:]
        parts = item.split(":")
        name = parts[0]
        if name not in gres_types:
            raise bad
        n: int | None
        if len(parts) == 1:
            n, t = 1, None
        elif len(parts) == 2:
            n = _gres_count(parts[1]) if isdig(parts[1][:1]) else 1
            t = None if isdig(parts[1][:1]) else parts[1]
        elif len(parts) == 3:
            n, t = _gres_count(parts[2]), parts[1]
        else:
            raise bad
        if n is None:
            raise bad
        if name == "gpu":
            count, gtype = n, t
    return count, gtype


def parse_gpus(value: str, prog: str = "sbatch") -> tuple[int, str | None]:
    """`-G/--gpus`, `--gpus-per-node`, `--gpus-per-task`: `[type:]N` -> (N, type).
    Refused by slurmctld otherwise: `Batch job submission failed: Invalid generic resource
    (gres) specification` (exit 1; srun: `Unable to allocate resources: ...`)."""
    parts = value.split(":")
    n = _gres_count(parts[-1]) if parts[-1] else None
    if n is None or len(parts) > 2 or (len(parts) == 2 and not parts[0]):
        raise refused(prog, "Invalid generic resource (gres) specification")
    return n, (parts[0] if len(parts) == 2 else None)


# ====================================================================== --signal
#: Signal names Slurm 22.05 accepts (sig_name2num), with their Linux numbers.
SIGNALS = {"HUP": 1, "INT": 2, "QUIT": 3, "ABRT": 6, "KILL": 9, "ALRM": 14, "TERM": 15, "USR1": 10,
           "USR2": 12, "URG": 23, "CONT": 18, "STOP": 19, "TSTP": 20, "TTIN": 21, "TTOU": 22, "XCPU": 24}
_SIGNAME = {v: k for k, v in SIGNALS.items()}


def _sig_name2num(s: str) -> int:
    v, end = strtol(s)
    if end != 0:
        return v if is_ws(s[end:]) else 0
    p = s.lstrip(CSPACE)
    if p[:3].upper() == "SIG":
        p = p[3:]
    for name, num in SIGNALS.items():
        if p[:len(name)].upper() == name and is_ws(p[len(name):]):
            return num
    return 0


def parse_signal(value: str, prog: str = "sbatch") -> tuple[int, int, str]:
    """`--signal=[{R|B}:]<sig_num|name>[@sig_time]` -> (signal number, seconds before the end,
    flags) where flags is `""`, `"B"` (batch shell only), `"R"` (reservation) or `"RB"`.
    sig_time defaults to 60 and must be 0..65535.  Refusal: `Invalid --signal specification` (255)."""
    bad = opt_error(prog, "Invalid --signal specification", 255)
    s = value
    flags = ""
    colon = s.find(":")
    if colon >= 0:
        for c in s[:colon]:
            if c in "Rr":
                flags += "R" if "R" not in flags else ""
            elif c in "Bb":
                flags += "B" if "B" not in flags else ""
            else:
                raise bad
        s = s[colon + 1:]
    flags = ("R" if "R" in flags else "") + ("B" if "B" in flags else "")
    sig, at, when = s.partition("@")
    num = _sig_name2num(sig) & 0xFFFF
    if num < 1:
        raise bad
    secs = 60
    if at:
        secs, end = strtol(when)
        if secs < 0 or secs > 0xFFFF or end != len(when):
            raise bad
    return num, secs, flags


# ====================================================================== --array
def parse_array(spec: str, max_size: int = MAX_ARRAY_SIZE, prog: str = "sbatch") -> tuple[list[int], int | None]:
    """`--array` as slurmctld validates it -> (sorted indexes, throttle or None).

    Forms: `0-15`, `1,3,5`, `1-7:2`, `0-15%4`, combinations (`1,3-5,9`), brackets (`[0-3]`).
    Indexes must be < max_size (MaxArraySize, default 1001).  An empty spec (`--array=` or
    `--array=%4`) is no array at all: ([], throttle).  Refusal: `Batch job submission failed:
    Invalid job array specification` (exit 1).
    """
    bad = refused(prog, "Invalid job array specification")
    body, pct, thr = spec.partition("%")
    throttle = atoi(thr) if pct else 0
    out: set[int] = set()
    for tok in body.split(","):
        if not tok:
            continue
        if tok[0] == "[":
            tok = tok[1:]
        first, end = strtol(tok)
        if char_at(tok, end) == "]":
            end += 1
        if first < 0:
            raise bad
        step = 1
        if char_at(tok, end) == "-":
            last, end = strtol(tok, end + 1)
            if char_at(tok, end) == "]":
                end += 1
            if char_at(tok, end) == ":":
                step, end = strtol(tok, end + 1)
                if char_at(tok, end) == "]":
                    end += 1
                if end != len(tok) or step <= 0:
                    raise bad
            elif end != len(tok):
                raise bad
            if last < first:
                raise bad
        elif end != len(tok):
            raise bad
        else:
            last = first
        if last >= max_size:
            raise bad
        out.update(range(first, last + 1, step))
    return sorted(out), (throttle if throttle > 0 else None)


def fmt_ranges(ids: Iterable[int]) -> str:
    """Slurm ``bit_fmt``: ``[0, 2, 3]`` -> ``0,2-3``; ``[1, 3, 5]`` -> ``1,3,5``."""
    out: list[str] = []
    vals = sorted(set(ids))
    i = 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        out.append(str(vals[i]) if i == j else f"{vals[i]}-{vals[j]}")
        i = j + 1
    return ",".join(out)


def compress_indexes(ids: list[int], throttle: int | None = None) -> str:
    """Slurm's bit_fmt of array indexes: [1,3,5,7,9], 2 -> `1,3,5,7,9%2`; [0,1,2,3] -> `0-3`."""
    return fmt_ranges(ids) + (f"%{throttle}" if throttle else "")


def format_array(ids: list[int], throttle: int | None = None) -> str:
    """What squeue shows after `JOBID_` for pending tasks: `[1,3,5,7,9%2]`, `[0-3]`, `[5-1024]`."""
    return f"[{compress_indexes(ids, throttle)}]"


# ====================================================================== --dependency
_DEP_TYPES = (("afternotok", "afternotok"), ("aftercorr", "aftercorr"), ("afterany", "afterany"),
              ("afterok", "afterok"), ("afterburstb", "afterburstbuffer"), ("after", "after"))


def _dep_target(s: str) -> str | None:
    """`JOBID[_TASK|_*][+MINUTES]` -> normalised text, or None if invalid."""
    jid, end = strtol(s)
    if end == 0 or not isdig(s[0]) or jid <= 0 or jid >= MAX_JOB_ID:
        return None
    out = str(jid)
    rest = s[end:]
    if rest.startswith("_"):
        if rest[1:2] == "*":
            out += "_*"
            rest = rest[2:]
        else:
            task, e2 = strtol(rest, 1)
            if e2 == 1 or not isdig(rest[1]):
                return None
            out += f"_{task}"
            rest = rest[e2:]
    if rest.startswith("+"):
        mins = rest[1:]
        if not digits(mins):
            return None
        out += f"+{int(mins)}"
        rest = ""
    return out if not rest else None


def parse_dependency(spec: str, prog: str = "sbatch") -> tuple[list[tuple[str, list[str]]], bool]:
    """`-d/--dependency` as slurmctld reads it -> ([(type, [target, ...]), ...], any_of).

    Types: after, afterany, afterok, afternotok, aftercorr, afterburstbuffer (each followed
    by `:jobid[_task][+minutes]...`), singleton, or a bare `jobid` (= afterany).  Items are
    joined by `,` (all must hold) or `?` (any may hold), not both.  Like Slurm, a type is
    recognised by its prefix (`afterokay:1` reads as afterok).  Targets come back normalised
    (`"12"`, `"12_3"`, `"12+5"`).  Refusal: `Batch job submission failed: Job dependency
    problem` (exit 1).  Whether the jobs exist is the controller's business.
    """
    bad = refused(prog, "Job dependency problem")
    any_of = "?" in spec
    if any_of and "," in spec:
        raise bad
    items: list[tuple[str, list[str]]] = []
    for tok in spec.split("?" if any_of else ","):
        if not tok:
            raise bad
        low = tok.lower()
        if low.startswith("singleton"):
            if len(tok) != 9:
                raise bad
            items.append(("singleton", []))
            continue
        colon = tok.find(":")
        if colon < 0:
            t = _dep_target(tok) if isdig(tok[0]) else None
            if t is None:
                raise bad
            items.append(("afterany", [t]))
            continue
        kind = next((canon for prefix, canon in _DEP_TYPES if low.startswith(prefix)), None)
        if kind is None or colon < len(kind if kind != "afterburstbuffer" else "afterburstb"):
            raise bad
        targets = []
        for part in tok[colon + 1:].split(":"):
            t = _dep_target(part)
            if t is None:
                raise bad
            targets.append(t)
        items.append((kind, targets))
    return items, any_of


def dependency_job_ids(items: list[tuple[str, list[str]]]) -> list[int]:
    """The job ids named in parse_dependency()'s items, in order."""
    out: list[int] = []
    for _, targets in items:
        for t in targets:
            out.append(int(t.split("+")[0].split("_")[0]))
    return out


def compress_counts(counts: list[int]) -> str:
    """[2, 2, 1] -> '2(x2),1': Slurm's SLURM_TASKS_PER_NODE / SLURM_JOB_CPUS_PER_NODE format."""
    out: list[str] = []
    i = 0
    while i < len(counts):
        j = i
        while j + 1 < len(counts) and counts[j + 1] == counts[i]:
            j += 1
        n = j - i + 1
        out.append(f"{counts[i]}(x{n})" if n > 1 else str(counts[i]))
        i = j + 1
    return ",".join(out)
