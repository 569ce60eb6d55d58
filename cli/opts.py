"""sbatch/srun command-line parsing, as Slurm 22.05 does it (pure, stdlib only, cheap to import).

Every behaviour here was checked against the real `sbatch`/`srun` 22.05.8 binaries (option
tables, getopt messages, value checks and their exit codes) and the verbatim outputs in
`shared/reference/slurm-formats.md`.

Entry points:

* `parse_sbatch(argv, env=, cwd=, ...)` -> dict with the `JobSubmit` body (docs/api.md) under
  `"submit"` plus client-side flags.  Precedence is Slurm's: `#SBATCH` directives < `SBATCH_*`
  variables < command line.  The order of errors is Slurm's too: command-line syntax and values
  first, then reading the script, then the directives, the environment, and the final checks.
* `parse_srun(argv, env=, cwd=)` -> dict with the step options and the command.
* Value parsers: `parse_time`, `parse_begin`, `parse_array`, `parse_dependency`,
  `parse_signal`, `parse_nodes`, `parse_mem`, `parse_gres`; formatters `format_time`,
  `format_elapsed`, `format_time_hms`, `format_secs_hms`, `format_array`, `compress_indexes`;
  output files: `default_output`, `expand_pattern`.

Every refusal raises `OptError(lines, code)`: `lines` are exactly what Slurm writes to stderr,
`code` its exit status (255 where Slurm calls exit(-1), 1 otherwise; sbatch's exit-1 refusals
take SLURM_EXIT_ERROR instead when it is set, except fatal() and parse_int() ones).

Import cost: only `os` (already loaded by the interpreter).  `time`, `pwd` and `grp` are
imported inside the functions that need them; no `re`, `argparse`, `datetime`, `shlex`,
`typing` or `dataclasses`.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing/collections.abc would cost start-up time
    from collections.abc import Callable, Iterator

    _Validator = Callable[["_Ctx", "str | None"], object]

__all__ = [
    "OptError", "NO_VAL", "BATCH_STEP_ID", "MAX_ARRAY_SIZE",
    "parse_sbatch", "parse_srun", "build_submit", "export_environment", "directive_args",
    "parse_time", "parse_begin", "parse_array", "parse_dependency", "dependency_job_ids", "parse_signal",
    "parse_nodes", "parse_mem", "parse_gres", "parse_gpus",
    "format_time", "format_elapsed", "format_time_hms", "format_secs_hms", "format_array", "compress_indexes",
    "default_output", "expand_pattern", "help_text", "usage_text", "SIGNALS",
]

NO_VAL = 4294967294          #: `%a` of a job that is not an array task (Slurm's NO_VAL)
BATCH_STEP_ID = 4294967291   #: Slurm 22.05's SLURM_BATCH_SCRIPT step id (`%s` of the batch step)
MAX_ARRAY_SIZE = 1001        #: MaxArraySize default: indexes 0..1000
_MAX_JOB_ID = 0x03FFFFFF
_NICE_MAX = 2147483645
_INFINITE32 = -1             # INFINITE (0xffffffff) seen as a C int
_NO_VAL32 = -2               # NO_VAL (0xfffffffe) seen as a C int
_LONG_MAX = (1 << 63) - 1
_LONG_MIN = -(1 << 63)
_CSPACE = " \t\n\v\f\r"      # C isspace()


class OptError(Exception):
    """A refused command line: `lines` go to stderr verbatim, `code` is the exit status.

    `fixed` marks the exit-1 refusals that ignore SLURM_EXIT_ERROR (Slurm's fatal() and
    parse_int() call exit(1) themselves); other exit-1 refusals use SLURM_EXIT_ERROR when set."""

    def __init__(self, lines: list[str] | str, code: int = 255, fixed: bool = False):
        if isinstance(lines, str):
            lines = [lines]
        super().__init__("\n".join(lines))
        self.lines = list(lines)
        self.code = code
        self.fixed = fixed


def _err(prog: str, msg: str, code: int) -> OptError:
    return OptError([f"{prog}: error: {msg}"], code)


def _refused(prog: str, msg: str) -> OptError:
    """A refusal that Slurm makes in slurmctld, worded as the client reports it (exit 1)."""
    lead = "Batch job submission failed" if prog == "sbatch" else "Unable to allocate resources"
    return _err(prog, f"{lead}: {msg}", 1)


# ====================================================================== C helpers
def _strtol(s: str, i: int = 0) -> tuple[int, int]:
    """C `strtol(s + i, &end, 10)` on a 64-bit long: (value, end index); end == i without digits."""
    n = len(s)
    j = i
    while j < n and s[j] in _CSPACE:
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
    return max(_LONG_MIN, min(_LONG_MAX, v)), k


def _atoi(s: str) -> int:
    return _strtol(s)[0]


def _int32(v: int) -> int:
    """A C cast to (int): keep the low 32 bits, signed."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= (1 << 31) else v


def _cdiv(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _is_ws(s: str) -> bool:
    return all(c in _CSPACE for c in s)


def _digits(s: str) -> bool:
    return bool(s) and all("0" <= c <= "9" for c in s)


# ====================================================================== option tables
_NO, _REQ, _OPTARG = 0, 1, 2
_ARITY = {"N": _NO, "R": _REQ, "O": _OPTARG}

# Long options in getopt's table order (the order of the "possibilities" in ambiguity messages),
# as listed by the real binaries.  `name:K` or `name:K=key` (an alias sharing key and arity).
_SBATCH_LONG = """
account:R acctg-freq:R array:R batch:R begin:R bb:R bbf:R cluster-constraint:R chdir:R cluster:R=clusters
clusters:R comment:R container:R context:R contiguous:N constraint:R core-spec:R cores-per-socket:R
cpu-freq:R cpus-per-gpu:R cpus-per-task:R deadline:R delay-boot:R dependency:R distribution:R error:R
exclude:R exclusive:O export:R export-file:R extra-node-info:R get-user-env:O gid:R gpu-bind:R gpu-freq:R
gpus:R gpus-per-node:R gpus-per-socket:R gpus-per-task:R gres:R gres-flags:R help:N hint:R hold:N
ignore-pbs:N input:R job-name:R kill-on-invalid-dep:R licenses:R mail-type:R mail-user:R mcs-label:R mem:R
mem-bind:R mem-per-cpu:R mem-per-gpu:R mincpus:R network:R nice:O no-kill:O no-requeue:N nodefile:R
nodelist:R nodes:R ntasks:R ntasks-per-core:R ntasks-per-gpu:R ntasks-per-node:R ntasks-per-socket:R
ntasks-per-tres:R open-mode:R output:R overcommit:N oversubscribe:N parsable:N partition:R power:R prefer:R
priority:R profile:R propagate:O qos:R quiet:N reboot:N requeue:N reservation:R signal:R sockets-per-node:R
spread-job:N switches:R tasks-per-node:R=ntasks-per-node test-only:N thread-spec:R threads-per-core:R time:R
time-min:R tmp:R uid:R use-min-nodes:N usage:N verbose:N version:N wait:N wait-all-nodes:R wckey:R wrap:R
"""
_SBATCH_SHORT = """
a=array A=account b=begin B=extra-node-info c=cpus-per-task C=constraint d=dependency D=chdir e=error
F=nodefile G=gpus h=help H=hold i=input J=job-name k=no-kill L=licenses m=distribution M=clusters n=ntasks
N=nodes o=output O=overcommit p=partition q=qos Q=quiet s=oversubscribe S=core-spec t=time v=verbose
V=version W=wait w=nodelist x=exclude
"""
_SRUN_LONG = """
accel-bind:R account:R acctg-freq:R bcast:O bcast-exclude:R begin:R bb:R bbf:R cluster-constraint:R chdir:R
cluster:R=clusters clusters:R comment:R compress:O container:R context:R contiguous:N constraint:R
core-spec:R cores-per-socket:R cpu-bind:R cpu_bind:R=cpu-bind cpu-freq:R cpus-per-gpu:R cpus-per-task:R
deadline:R debugger-test:N delay-boot:R dependency:R disable-status:N distribution:R epilog:R error:R exact:N
exclude:R exclusive:O export:R extra-node-info:R gid:R gpu-bind:R gpu-freq:R gpus:R gpus-per-node:R
gpus-per-socket:R gpus-per-task:R gres:R gres-flags:R help:N het-group:R hint:R hold:N immediate:O input:R
interactive:N jobid:R job-name:R kill-on-bad-exit:O label:N licenses:R mail-type:R mail-user:R mcs-label:R
mem:R mem-bind:R mem-per-cpu:R mem-per-gpu:R mincpus:R mpi:R msg-timeout:R multi-prog:N network:R nice:O
no-allocate:N no-kill:O nodefile:R nodelist:R nodes:R ntasks:R ntasks-per-core:R ntasks-per-gpu:R
ntasks-per-node:R ntasks-per-socket:R ntasks-per-tres:R open-mode:R output:R overcommit:N overlap:O
oversubscribe:N pack-group:R=het-group partition:R power:R prefer:R preserve-env:N priority:R profile:R
prolog:R propagate:O pty:N qos:R quiet:N quit-on-interrupt:N reboot:N relative:R reservation:R resv-ports:O
send-libs:O signal:R slurmd-debug:R sockets-per-node:R spread-job:N switches:R threads:R task-epilog:R
task-prolog:R tasks-per-node:R=ntasks-per-node test-only:N thread-spec:R threads-per-core:R time:R
time-min:R tmp:R uid:R unbuffered:N use-min-nodes:N usage:N verbose:N version:N wait:R wckey:R whole:N x11:O
"""
_SRUN_SHORT = """
b=begin c=cpus-per-task d=dependency e=error h=help i=input k=no-kill l=label m=distribution n=ntasks
o=output p=partition q=qos r=relative s=oversubscribe t=time u=unbuffered v=verbose w=nodelist x=exclude
A=account B=extra-node-info C=constraint D=chdir E=preserve-env F=nodefile G=gpus H=hold I=immediate
J=job-name K=kill-on-bad-exit L=licenses M=clusters N=nodes O=overcommit Q=quiet S=core-spec T=threads
V=version W=wait X=disable-status Z=no-allocate
"""


class _Table:
    """A getopt_long table: long options in order, exact-name index, short letters."""

    __slots__ = ("longs", "exact", "shorts")

    def __init__(self, longs: str, shorts: str):
        self.longs: list[tuple[str, int, str]] = []
        for item in longs.split():
            name, _, rest = item.partition(":")
            arity, _, key = rest.partition("=")
            self.longs.append((name, _ARITY[arity], key or name))
        self.exact = {name: (name, arity, key) for name, arity, key in self.longs}
        by_key = {key: arity for _, arity, key in self.longs}
        self.shorts: dict[str, tuple[int, str]] = {}
        for item in shorts.split():
            ch, _, key = item.partition("=")
            self.shorts[ch] = (by_key[key], key)


_TABLES: dict[str, _Table] = {}


def _table(kind: str) -> _Table:
    t = _TABLES.get(kind)
    if t is None:
        t = _TABLES[kind] = _Table(_SBATCH_LONG, _SBATCH_SHORT) if kind == "sbatch" else \
            _Table(_SRUN_LONG, _SRUN_SHORT)
    return t


def _getopt_error(prog: str, msg: str) -> OptError:
    return OptError([f"{prog}: {msg}", f'Try "{prog} --help" for more information'], 255)


class _Getopt:
    """GNU getopt_long with a leading '+' (stop at the first non-option), yielding
    (key, value, option-as-written) one option at a time so that value errors and syntax
    errors come out in command-line order; `optind` is the first non-option afterwards."""

    def __init__(self, prog: str, argv: list[str], table: _Table):
        self.prog, self.argv, self.table = prog, argv, table
        self.optind = 0

    def __iter__(self) -> Iterator[tuple[str, str | None, str]]:
        argv, n, prog = self.argv, len(self.argv), self.prog
        i = 0
        while i < n:
            a = argv[i]
            if a == "--":
                i += 1
                break
            if len(a) < 2 or a[0] != "-":
                break
            if a[1] == "-":
                i, item = self._long(a, i)
                yield item
                i += 1
                continue
            j = 1
            while j < len(a):
                ch = a[j]
                spec = self.table.shorts.get(ch)
                if spec is None:
                    raise _getopt_error(prog, f"invalid option -- '{ch}'")
                arity, key = spec
                if arity == _NO:
                    yield key, None, "-" + ch
                    j += 1
                    continue
                val: str | None = a[j + 1:]
                if not val:
                    if arity == _OPTARG:
                        val = None
                    elif i + 1 < n:
                        i += 1
                        val = argv[i]
                    else:
                        raise _getopt_error(prog, f"option requires an argument -- '{ch}'")
                yield key, val, "-" + ch
                break
            i += 1
        self.optind = i

    def _long(self, a: str, i: int) -> tuple[int, tuple[str, str | None, str]]:
        prog = self.prog
        body = a[2:]
        name, eq, val = body.partition("=")
        spec = self.table.exact.get(name)
        if spec is None:
            cands = [o for o in self.table.longs if o[0].startswith(name)]
            if not cands:
                raise _getopt_error(prog, f"unrecognized option '--{body}'")
            first = cands[0]
            ambiguous = [first] + [o for o in cands[1:] if (o[1], o[2]) != (first[1], first[2])]
            if len(ambiguous) > 1:
                raise _getopt_error(prog, f"option '--{body}' is ambiguous; possibilities:"
                                    + "".join(f" '--{o[0]}'" for o in ambiguous))
            spec = first
        full, arity, key = spec
        if arity == _NO:
            if eq:
                raise _getopt_error(prog, f"option '--{full}' doesn't allow an argument")
            return i, (key, None, "--" + full)
        if eq:
            return i, (key, val, "--" + full)
        if arity == _OPTARG:
            return i, (key, None, "--" + full)
        if i + 1 >= len(self.argv):
            raise _getopt_error(prog, f"option '--{full}' requires an argument")
        return i + 1, (key, self.argv[i + 1], "--" + full)


# ====================================================================== time limits
def _is_valid_timespec(s: str) -> bool:
    digit = dash = colon = 0
    in_digit = False
    for c in s:
        if "0" <= c <= "9":
            if not in_digit:
                digit += 1
                in_digit = True
        elif c == "-":
            in_digit = False
            dash += 1
            if colon:
                return False
        elif c == ":":
            in_digit = False
            colon += 1
        else:
            return False
    if not digit or dash > 1 or colon > 2:
        return False
    if dash:
        return not ((colon == 1 and digit < 3) or (colon == 2 and digit < 4))
    return not ((colon == 1 and digit < 2) or (colon == 2 and digit < 3))


def _sscanf_ints(s: str, seps: str) -> list[int]:
    """C `sscanf(s, "%d<sep0>%d<sep1>%d...")` on a string of digits, '-' and ':' only:
    the integers converted before the first mismatch (each cast to int)."""
    out: list[int] = []
    i = 0
    for k in range(len(seps) + 1):
        v, end = _strtol(s, i)
        if end == i:
            break
        out.append(_int32(v))
        i = end
        if k == len(seps) or i >= len(s) or s[i] != seps[k]:
            break
        i += 1
    return out


def _time_str2secs(s: str) -> int:
    """Slurm's time_str2secs in C int arithmetic: seconds, _INFINITE32 or _NO_VAL32."""
    if not s:
        return _NO_VAL32
    if s.lower() in ("-1", "infinite", "unlimited"):
        return _INFINITE32
    if not _is_valid_timespec(s):
        return _NO_VAL32
    d = h = m = sec = 0
    if "-" in s:
        vals = _sscanf_ints(s, "-::") + [0, 0, 0, 0]
        d, h, m, sec = vals[:4]
        d, h, m = _int32(d * 86400), _int32(h * 3600), _int32(m * 60)
    else:
        vals = _sscanf_ints(s, "::")
        if len(vals) == 3:
            h, m, sec = _int32(vals[0] * 3600), _int32(vals[1] * 60), vals[2]
        else:
            vals += [0, 0]
            m, sec = _int32(vals[0] * 60), vals[1]
    return _int32(d + h + m + sec)


def _time_str2mins(s: str) -> int:
    i = _time_str2secs(s)
    if i not in (_INFINITE32, _NO_VAL32):
        i = _cdiv(_int32(i + 59), 60)
    return i


def parse_time(value: str, prog: str = "sbatch", *, option: str = "--time") -> int | None:
    """`-t/--time` as sbatch reads it (time_str2mins): whole minutes, or None for no limit.

    Forms: `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`; seconds round up to a minute;
    `UNLIMITED`, `INFINITE`, `-1` and `0` mean no limit.  Anything else raises
    `"<prog>: error: Invalid --time specification"` (exit 255).

    Slurm also accepts a negative day count (`--time=-5`) and C int overflows; the job then
    shows an INVALID limit and is never killed for time.  slurmlet has no INVALID limit, so
    those results (negative minutes) come back as None (no limit) too.
    """
    mins = _time_str2mins(value)
    if mins == _NO_VAL32:
        raise _err(prog, f"Invalid {option} specification", 255)
    if mins == 0 or mins < 0:
        return None
    return mins


# The display formats live in cli.fmt (shared with the renderers); these names are kept for
# callers of this module.
def format_time(minutes: int | None) -> str:
    """A time limit as squeue shows it: `UNLIMITED`, `10:00`, `1:00:00`, `1-00:00:00`
    (`INVALID` when negative or longer than 365 days, as squeue prints)."""
    from cli.fmt import fmt_limit_short
    return fmt_limit_short(minutes)


def format_elapsed(seconds: float) -> str:
    """squeue's TIME column: `0:04`, `1:02:03`, `2-01:00:00` (`INVALID` past 365 days)."""
    from cli.fmt import fmt_secs_short
    return fmt_secs_short(seconds)


def format_secs_hms(seconds: float | None) -> str:
    """Slurm's secs2time_str (scontrol RunTime=): `00:00:05`, `1-02:03:04`, UNLIMITED for None."""
    if seconds is None:
        return "UNLIMITED"
    if int(seconds) < 0:
        return "INVALID"
    from cli.fmt import fmt_secs_long
    return fmt_secs_long(seconds)


def format_time_hms(minutes: int | None) -> str:
    """Slurm's mins2time_str (scontrol TimeLimit=, sbatch -v): `00:10:00`, `1-00:00:00`, UNLIMITED."""
    return "UNLIMITED" if minutes is None else format_secs_hms(int(minutes) * 60)


# ====================================================================== --begin / --deadline
class _TimeProb(Exception):
    def __init__(self, pos: int):
        super().__init__(pos)
        self.pos = pos


_UNITS = (("seconds", 1), ("second", 1), ("minutes", 60), ("minute", 60), ("hours", 3600), ("hour", 3600),
          ("days", 86400), ("day", 86400), ("weeks", 604800), ("week", 604800))


def _ch(s: str, i: int) -> str:
    return s[i] if 0 <= i < len(s) else "\0"


def _isdig(c: str) -> bool:
    return "0" <= c <= "9"


def _get_delta(s: str, pos: int) -> tuple[int, int]:
    """(new pos, delta seconds) for the text after '+'/'-' in `now+N[units]`."""
    cnt = digit = 0
    off = pos + 1
    while _ch(s, off) not in ("\0", "\n"):
        c = s[off]
        if c in _CSPACE:
            off += 1
            continue
        low = s[off:off + 7].lower()
        unit = next(((n, m) for n, m in _UNITS if low.startswith(n)), None)
        if unit:
            off += len(unit[0])
            cnt *= unit[1]
            break
        if _isdig(c):
            cnt = cnt * 10 + ord(c) - 48
            digit += 1
            off += 1
            continue
        raise _TimeProb(off - 1)
    if not digit:
        raise _TimeProb(pos)
    return off - 1, cnt


def _two_digits(s: str, off: int, top: int) -> tuple[int, int]:
    """Exactly two digits at `off`, at most `top` (minutes, seconds) -> (value, next offset)."""
    for k in (off, off + 1):
        if not _isdig(_ch(s, k)):
            raise _TimeProb(k)
    v = (ord(s[off]) - 48) * 10 + ord(s[off + 1]) - 48
    if v > top:
        raise _TimeProb(off)
    return v, off + 2


def _get_time(s: str, pos: int) -> tuple[int, int, int, int]:
    """`HH:MM[:SS] [AM|PM]` at pos -> (last pos, hour, minute, second)."""
    off = pos
    if not _isdig(_ch(s, off)):
        raise _TimeProb(off)
    hr = ord(s[off]) - 48
    off += 1
    if _ch(s, off) != ":":
        if not _isdig(_ch(s, off)):
            raise _TimeProb(off)
        hr = hr * 10 + ord(s[off]) - 48
        off += 1
    if hr > 23:
        raise _TimeProb(off - 2)
    if _ch(s, off) != ":":
        raise _TimeProb(off)
    mn, off = _two_digits(s, off + 1, 59)
    sec = 0
    if _ch(s, off) == ":":
        sec, off = _two_digits(s, off + 1, 59)
    while _ch(s, off) in _CSPACE and _ch(s, off) != "\0":
        off += 1
    ampm = s[off:off + 2].lower()
    if ampm == "pm":
        hr += 12
        if hr > 23:
            if hr != 24:
                raise _TimeProb(off)
            hr = 12
        off += 2
    elif ampm == "am":
        if hr > 11:
            if hr != 12:
                raise _TimeProb(off)
            hr = 0
        off += 2
    return off - 1, hr, mn, sec


def _get_date(s: str, pos: int) -> tuple[int, int, int, int]:
    """`YYYY-MM-DD`, `MMDD[YY]`, `MM/DD[/YY]`, `MM.DD[.YY]` -> (last pos, month0, mday, year-1900 or -1)."""
    off = pos
    if len(s) >= off + 7 and _ch(s, off + 4) == "-" and _ch(s, off + 7) == "-":
        yr = 0
        for _ in range(4):
            if not _isdig(_ch(s, off)):
                raise _TimeProb(off)
            yr = yr * 10 + ord(s[off]) - 48
            off += 1
        off += 1
        mon = ord(_ch(s, off)) - 48
        off += 1
        if _isdig(_ch(s, off)):
            mon = mon * 10 + ord(s[off]) - 48
            off += 1
        if mon < 1 or mon > 12:
            raise _TimeProb(off - 2)
        off += 1
        if not _isdig(_ch(s, off)):
            raise _TimeProb(off)
        day = ord(s[off]) - 48
        off += 1
        if _isdig(_ch(s, off)):
            day = day * 10 + ord(s[off]) - 48
            off += 1
        if day < 1 or day > 31:
            raise _TimeProb(off - 2)
        return off - 1, mon - 1, day, yr - 1900
    mon = ord(_ch(s, off)) - 48
    off += 1
    if _isdig(_ch(s, off)):
        mon = mon * 10 + ord(s[off]) - 48
        off += 1
    if mon < 1 or mon > 12:
        raise _TimeProb(off - 2)
    if _ch(s, off) in "./" and _ch(s, off) != "\0":
        off += 1
    if not _isdig(_ch(s, off)):
        raise _TimeProb(off)
    day = ord(s[off]) - 48
    off += 1
    if _isdig(_ch(s, off)):
        day = day * 10 + ord(s[off]) - 48
        off += 1
    if day < 1 or day > 31:
        raise _TimeProb(off - 2)
    if _ch(s, off) in "./" and _ch(s, off) != "\0":
        off += 1
    year = -1
    if _isdig(_ch(s, off)):
        yr = ord(s[off]) - 48
        off += 1
        if not _isdig(_ch(s, off)):
            raise _TimeProb(off)
        yr = yr * 10 + ord(s[off]) - 48
        off += 1
        if yr:
            year = yr + 100
    return off - 1, mon - 1, day, year


def _slurm_parse_time(s: str, now: float, past: bool = False) -> int:
    """Slurm's parse_time(): an epoch, 0 when nothing was specified; raises _TimeProb(pos)."""
    import time
    if s[:3].lower() == "uts":
        v, end = _strtol(s, 3)
        if v < 1000000 or v == _LONG_MAX or end != len(s):
            raise _TimeProb(0)
        return v
    tnow = int(now)
    lt = time.localtime(tnow)
    hour = minute = month = mday = year = -1
    second = 0
    pos = 0
    while _ch(s, pos) not in ("\0", "\n"):
        c = s[pos]
        low = s[pos:pos + 8].lower()
        if c in " \t-T":
            pass
        elif low.startswith("today"):
            month, mday, year = lt.tm_mon - 1, lt.tm_mday, lt.tm_year - 1900
            pos += 4
        elif low.startswith("tomorrow"):
            tm = time.localtime(tnow + 86400)
            month, mday, year = tm.tm_mon - 1, tm.tm_mday, tm.tm_year - 1900
            pos += 7
        elif low.startswith(("midnight", "noon", "fika", "teatime")):
            word = next(w for w in ("midnight", "noon", "fika", "teatime") if low.startswith(w))
            hour, minute, second = {"midnight": 0, "noon": 12, "fika": 15, "teatime": 16}[word], 0, 0
            pos += len(word) - 1
        elif low.startswith("now"):
            delta = 0
            i = pos + 3
            while True:
                c2 = _ch(s, i)
                if c2 in "+-" and c2 != "\0":
                    pos += i
                    pos, delta = _get_delta(s, pos)
                    if c2 == "-":
                        delta = -delta
                    break
                if c2 in " \t" and c2 != "\0":
                    i += 1
                    continue
                if c2 in ("\0", "\n"):
                    pos += i - 1
                    break
                raise _TimeProb(pos + i)
            tm = time.localtime(tnow + delta)
            month, mday, year = tm.tm_mon - 1, tm.tm_mday, tm.tm_year - 1900
            hour, minute, second = tm.tm_hour, tm.tm_min, tm.tm_sec
        elif not _isdig(c):
            raise _TimeProb(pos)
        elif _ch(s, pos + 1) == ":" or _ch(s, pos + 2) == ":":
            pos, hour, minute, second = _get_time(s, pos)
        else:
            pos, month, mday, y = _get_date(s, pos)
            if y != -1:
                year = y
        pos += 1
    if hour == -1 and month == -1:
        return 0
    if hour == -1:
        hour, minute = 0, 0
    elif month == -1:
        if past or hour > lt.tm_hour or (hour == lt.tm_hour and minute > lt.tm_min):
            month, mday, year = lt.tm_mon - 1, lt.tm_mday, lt.tm_year - 1900
        else:
            tm = time.localtime(tnow + 86400)
            month, mday, year = tm.tm_mon - 1, tm.tm_mday, tm.tm_year - 1900
    if year == -1:
        cur = (lt.tm_mon - 1, lt.tm_mday, lt.tm_hour, lt.tm_min)
        if past:
            year = lt.tm_year - 1900 - (1 if month > cur[0] else 0)
        elif (month, mday, hour, minute) > cur:
            year = lt.tm_year - 1900
        else:
            year = lt.tm_year - 1900 + 1
    try:
        return int(time.mktime((year + 1900, month + 1, mday, hour, minute, second, 0, 0, -1)))
    except (OverflowError, ValueError):
        raise _TimeProb(pos) from None


def parse_begin(value: str, now: float | None = None, *, prog: str = "sbatch", option: str = "--begin",
                past: bool = False) -> float:
    """`--begin`/`--deadline` as Slurm's parse_time(): an epoch (seconds) in local time.

    Forms (case-insensitive, combinable): `now[+-]N[seconds|minutes|hours|days|weeks]`,
    `HH:MM[:SS][AM|PM]` (today, or tomorrow once passed), `YYYY-MM-DD[THH:MM[:SS]]`,
    `MMDD[YY]`, `MM/DD[/YY]`, `MM.DD[.YY]`, `midnight`, `noon`, `fika` (15:00), `teatime`
    (16:00), `today`, `tomorrow`, `utsEPOCH`.  `now` is injectable (default: the clock).
    Refusals print Slurm's two lines, `Invalid time specification (pos=N): VALUE` and
    `<prog>: error: Invalid --begin specification` (exit 255).
    """
    import time
    if now is None:
        now = time.time()
    try:
        t = _slurm_parse_time(value, now, past)
    except _TimeProb as p:
        raise OptError([f"Invalid time specification (pos={p.pos}): {value}",
                        f"{prog}: error: Invalid {option} specification"], 255) from None
    if not t:
        raise _err(prog, f"Invalid {option} specification", 255)
    return float(t)


# ====================================================================== sizes and counts
def _str_to_mbytes(value: str) -> int | None:
    """Slurm's str_to_mbytes: MB, or None when invalid (K rounds up; M default; G, T; an optional B)."""
    v, end = _strtol(value)
    if end == 0 or v in (_LONG_MAX, _LONG_MIN):
        return None
    suffix = value[end:].lower()
    if suffix in ("", "m", "mb"):
        pass
    elif suffix in ("k", "kb"):
        v = _cdiv(v + 1023, 1024)
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
        raise _err(prog, f"Invalid {option} specification", 255)
    return mb


def _parse_int(prog: str, option: str, value: str, positive: bool) -> int:
    """Slurm's parse_int(): a whole decimal number (leading blanks and sign allowed, cast to int);
    `<prog>: error: Invalid numeric value "V" for --opt.` (exit 1)."""
    v, end = _strtol(value)
    if end != len(value) or v < 0 or (positive and v <= 0):
        raise OptError([f'{prog}: error: Invalid numeric value "{value}" for {option}.'], 1, fixed=True)
    return _int32(v)


def _str_to_nodes(s: str) -> tuple[int, str]:
    v, end = _strtol(s)
    if end == 0:
        return -1, s
    rest = s[end:]
    if rest[:1] in ("k", "K"):
        v *= 1024
        rest = rest[1:]
    if rest[:1] in ("m", "M"):
        v *= 1024 * 1024
        rest = rest[1:]
    return _int32(v), rest


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
        if not _is_ws(left):
            raise _err(prog, f'"{lo_s}" is not a valid node count', 255)
        if lo < 0:
            lo = 1
        hi, left = _str_to_nodes(hi_s)
        if not _is_ws(left):
            raise _err(prog, f'"{hi_s}" is not a valid node count', 255)
    else:
        lo, left = _str_to_nodes(value)
        hi = lo
        if not _is_ws(left) or lo < 0:
            raise _err(prog, f'"{value}" is not a valid node count', 255)
    if hi != 0 and hi < lo:
        raise _err(prog, f"Maximum node count {hi} is less than minimum node count {lo}", 255)
    return lo, hi


def _gres_count(s: str) -> int | None:
    v, end = _strtol(s)
    if end == 0 or s[0] in _CSPACE or s[0] in "+-":
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
    bad = _err(prog, "Invalid generic resource (gres) specification", 1)
    if value.lower() == "none":
        return None, None
    count: int | None = None
    gtype: str | None = None
    for item in value.split(","):
        if item.startswith("gres:") or item.startswith("gres/"):
            item = item[5:]
        parts = item.split(":")
        name = parts[0]
        if name not in gres_types:
            raise bad
        if len(parts) == 1:
            n, t = 1, None
        elif len(parts) == 2:
            n = _gres_count(parts[1]) if _isdig(parts[1][:1]) else 1
            t = None if _isdig(parts[1][:1]) else parts[1]
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
        raise _refused(prog, "Invalid generic resource (gres) specification")
    return n, (parts[0] if len(parts) == 2 else None)


# ====================================================================== --signal
#: Signal names Slurm 22.05 accepts (sig_name2num), with their Linux numbers.
SIGNALS = {"HUP": 1, "INT": 2, "QUIT": 3, "ABRT": 6, "KILL": 9, "ALRM": 14, "TERM": 15, "USR1": 10,
           "USR2": 12, "URG": 23, "CONT": 18, "STOP": 19, "TSTP": 20, "TTIN": 21, "TTOU": 22, "XCPU": 24}
_SIGNAME = {v: k for k, v in SIGNALS.items()}


def _sig_name2num(s: str) -> int:
    v, end = _strtol(s)
    if end != 0:
        return v if _is_ws(s[end:]) else 0
    p = s.lstrip(_CSPACE)
    if p[:3].upper() == "SIG":
        p = p[3:]
    for name, num in SIGNALS.items():
        if p[:len(name)].upper() == name and _is_ws(p[len(name):]):
            return num
    return 0


def parse_signal(value: str, prog: str = "sbatch") -> tuple[int, int, str]:
    """`--signal=[{R|B}:]<sig_num|name>[@sig_time]` -> (signal number, seconds before the end,
    flags) where flags is `""`, `"B"` (batch shell only), `"R"` (reservation) or `"RB"`.
    sig_time defaults to 60 and must be 0..65535.  Refusal: `Invalid --signal specification` (255)."""
    bad = _err(prog, "Invalid --signal specification", 255)
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
        secs, end = _strtol(when)
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
    bad = _refused(prog, "Invalid job array specification")
    body, pct, thr = spec.partition("%")
    throttle = _atoi(thr) if pct else 0
    out: set[int] = set()
    for tok in body.split(","):
        if not tok:
            continue
        if tok[0] == "[":
            tok = tok[1:]
        first, end = _strtol(tok)
        if _ch(tok, end) == "]":
            end += 1
        if first < 0:
            raise bad
        step = 1
        if _ch(tok, end) == "-":
            last, end = _strtol(tok, end + 1)
            if _ch(tok, end) == "]":
                end += 1
            if _ch(tok, end) == ":":
                step, end = _strtol(tok, end + 1)
                if _ch(tok, end) == "]":
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


def compress_indexes(ids: list[int], throttle: int | None = None) -> str:
    """Slurm's bit_fmt of array indexes: [1,3,5,7,9], 2 -> `1,3,5,7,9%2`; [0,1,2,3] -> `0-3`."""
    from cli.fmt import fmt_ranges
    return fmt_ranges(ids) + (f"%{throttle}" if throttle else "")


def format_array(ids: list[int], throttle: int | None = None) -> str:
    """What squeue shows after `JOBID_` for pending tasks: `[1,3,5,7,9%2]`, `[0-3]`, `[5-1024]`."""
    return f"[{compress_indexes(ids, throttle)}]"


# ====================================================================== --dependency
_DEP_TYPES = (("afternotok", "afternotok"), ("aftercorr", "aftercorr"), ("afterany", "afterany"),
              ("afterok", "afterok"), ("afterburstb", "afterburstbuffer"), ("after", "after"))


def _dep_target(s: str) -> str | None:
    """`JOBID[_TASK|_*][+MINUTES]` -> normalised text, or None if invalid."""
    jid, end = _strtol(s)
    if end == 0 or not _isdig(s[0]) or jid <= 0 or jid >= _MAX_JOB_ID:
        return None
    out = str(jid)
    rest = s[end:]
    if rest.startswith("_"):
        if rest[1:2] == "*":
            out += "_*"
            rest = rest[2:]
        else:
            task, e2 = _strtol(rest, 1)
            if e2 == 1 or not _isdig(rest[1]):
                return None
            out += f"_{task}"
            rest = rest[e2:]
    if rest.startswith("+"):
        mins = rest[1:]
        if not _digits(mins):
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
    bad = _refused(prog, "Job dependency problem")
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
            t = _dep_target(tok) if _isdig(tok[0]) else None
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


# ====================================================================== output files
def default_output(is_array: bool) -> str:
    """sbatch's default stdout pattern (stderr goes to the same file unless -e is given)."""
    return "slurm-%A_%a.out" if is_array else "slurm-%j.out"


def expand_pattern(pattern: str, *, job_id: int, array_job_id: int | None = None,
                   array_task_id: int | None = None, name: str = "", node: str = "", user: str = "",
                   step_id: int | None = None, task_id: int | None = None, node_index: int | None = None,
                   workdir: str | None = None) -> str:
    """slurmstepd's fname_create(): expand `%j %J %x %A %a %N %u %s %t %n %%`.

    A width between `%` and the letter zero-pads numbers (`%4j` -> `0042`, at most 10).
    `%A` is the array master id (the job id for a non-array job), `%a` the task index
    (4294967294 for a non-array job), `%s` the step id (4294967291 for the batch step, the
    default), `%J` `jobid.stepid`, `%t`/`%n` the task rank and node index (0 by default).
    An unknown letter stays as written (`%q`; `%4q` -> `4q`, as Slurm does).  A pattern
    with a backslash is not expanded; its backslashes are removed.  With `workdir`, a
    relative result is joined to it.
    """
    if "\\" in pattern:
        out = _remove_slashes(pattern)
    else:
        step = BATCH_STEP_ID if step_id is None else step_id
        nums = {
            "j": job_id, "a": NO_VAL if array_task_id is None else array_task_id,
            "A": job_id if array_task_id is None or array_job_id is None else array_job_id,
            "s": step, "t": task_id or 0, "n": node_index or 0,
        }
        strs = {"N": node, "u": user, "x": name}
        res: list[str] = []
        p, q, n = 0, 0, len(pattern)
        while p < n:
            if pattern[p] != "%":
                p += 1
                continue
            if p + 1 < n and pattern[p + 1] == "%":
                res.append(pattern[q:p + 1])
                p += 2
                q = p
                continue
            start = p
            p += 1
            wid = 0
            if p < n and _isdig(pattern[p]):
                res.append(pattern[q:start])
                e = p
                while e < n and _isdig(pattern[e]):
                    e += 1
                wid = min(int(pattern[p:e]), 10)
                p = e
                q = p - 1
                start = q
                if p >= n:
                    break
            c = pattern[p] if p < n else ""
            if c in nums or c in strs or c == "J":
                res.append(pattern[q:start])
                if c in nums:
                    res.append(str(nums[c]).zfill(wid))
                elif c in strs:
                    res.append(str(strs[c]))
                else:
                    res.append(str(job_id).zfill(wid) + f".{step}")
                p += 1
                q = p
        res.append(pattern[q:])
        out = "".join(res)
    if workdir and not out.startswith("/"):
        out = workdir.rstrip("/") + "/" + out
    return out


def _remove_slashes(p: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(p):
        if p[i] == "\\":
            if i + 1 < len(p) and p[i + 1] == "\\":
                out.append("\\")
                i += 2
                continue
            i += 1
            continue
        out.append(p[i])
        i += 1
    return "".join(out)


# ====================================================================== #SBATCH directives
def _directive_tokens(rest: str, label: str, lineno: int, prog: str, raw: list[str] | None = None) -> list[str]:
    """sbatch's _get_argument() loop over the text after `#SBATCH` on one line; `raw` receives
    each argument as written (quotes and backslashes included)."""
    out: list[str] = []
    i, n = 0, len(rest)
    while i < n and rest[i] in _CSPACE:   # the text shown for an unmatched quote in the first
        i += 1                            # argument starts at the argument itself, later ones
    while True:                           # include the blanks before them (as sbatch prints)
        start = i
        while i < n and rest[i] in _CSPACE:
            i += 1
        if i >= n:
            return out
        arg: list[str] = []
        quoted = esc = False
        q = ""
        while i < n and (quoted or rest[i] not in _CSPACE) and rest[i] != "\n":
            c = rest[i]
            if esc:
                esc = False
            elif c == "\\":
                esc = True
                i += 1
                continue
            elif quoted:
                if c == q:
                    quoted = False
                    i += 1
                    continue
            elif c in "\"'":
                quoted, q = True, c
                i += 1
                continue
            elif c == "#":
                break
            arg.append(c)
            i += 1
        if quoted:
            raise OptError([f"{prog}: fatal: {label}: line {lineno}: Unmatched `{q}` in [{rest[start:]}]"], 1,
                           fixed=True)
        if not arg:
            return out
        out.append("".join(arg))
        if raw is not None:
            raw.append(rest[start:i].lstrip(_CSPACE))


def directive_args(script: str, *, label: str = "script", prog: str = "sbatch",
                   warnings: list[str] | None = None) -> list[str]:
    """The arguments of a script's `#SBATCH` lines, as sbatch collects them.

    Lines are read from the top until the first one that is neither blank nor a comment (its
    first non-blank character `#`); the shebang is such a comment.  A directive is a line that
    starts exactly with `#SBATCH` (case-sensitive, column 0: `# SBATCH`, `##SBATCH`, `#sbatch`
    and indented lines are plain comments; `#SBATCH--x` is read).  `#SLURM` lines are read too,
    with Slurm's warning appended to `warnings`.  Arguments follow shell-like quoting (`"..."`,
    `'...'`, backslash escapes a quote or `#`); an unquoted `#` ends the line; an empty argument
    (`""`) ends the line too, as in Slurm.  An unterminated quote is `<prog>: fatal: LABEL: line N:
    Unmatched `"` in [...]` (exit 1).  A `hetjob`/`packjob` separator word (any case, unquoted,
    even as an option's value: `-J hetjob`; a heterogeneous job) is refused: slurmlet has no
    heterogeneous jobs.  The word inside another argument (`--comment=hetjob`), quoted
    (`"hetjob"`) or in a comment is no separator, as in Slurm.
    """
    args: list[str] = []
    warned = False
    lines = script.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for lineno, line in enumerate(lines, 1):
        if line.startswith("#SBATCH"):
            rest = line[7:]
        elif line.startswith("#SLURM"):
            rest = line[6:]
            if not warned and warnings is not None:
                warnings.append(f"{prog}: error: Change from #SLURM to #SBATCH in your script and verify "
                                "the options are valid in sbatch")
            warned = True
        else:
            stripped = line.lstrip(_CSPACE)
            if stripped and stripped[0] != "#":
                break
            continue
        written: list[str] = []
        args.extend(_directive_tokens(rest, label, lineno, prog, written))
        if any(w.lower() in ("hetjob", "packjob") for w in written):
            raise _het_error(prog)
    return args


def _het_error(prog: str) -> OptError:
    return _err(prog, "heterogeneous jobs (hetjob, ':') are not supported by slurmlet", 1)


# ====================================================================== option values
class _Ctx:
    """What option handlers need besides the value."""

    __slots__ = ("prog", "cwd", "now", "gres_types")

    def __init__(self, prog: str, cwd: str, now: float | None, gres_types: tuple[str, ...]):
        self.prog, self.cwd, self.now, self.gres_types = prog, cwd, now, gres_types


_MAIL_TYPES = {"NONE", "BEGIN", "END", "FAIL", "REQUEUE", "ALL", "INVALID_DEPEND", "STAGE_OUT", "TIME_LIMIT",
               "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50", "ARRAY_TASKS"}
_HINTS = {"compute_bound", "memory_bound", "multithread", "nomultithread", "help"}
_PROFILES = {"all", "none", "energy", "lustre", "network", "task"}
_ACCTG = {"task", "energy", "network", "filesystem"}


def _v_time(option: str) -> _Validator:
    return lambda c, v: parse_time(v or "", c.prog, option=option)


def _v_mem(option: str) -> _Validator:
    return lambda c, v: parse_mem(v or "", c.prog, option=option)


def _v_int(option: str, positive: bool = True) -> _Validator:
    return lambda c, v: _parse_int(c.prog, option, v or "", positive)


def _v_begin(option: str) -> _Validator:
    return lambda c, v: parse_begin(v or "", c.now, prog=c.prog, option=option)


def _v_exclusive(c: _Ctx, v: str | None) -> str:
    if not v:
        return "exclusive"
    mode = v.lower()
    if mode not in ("exclusive", "user", "mcs", "oversubscribe"):
        raise _err(c.prog, "Invalid --exclusive specification", 255)
    return mode


def _v_open_mode(c: _Ctx, v: str | None) -> str:
    first = (v or " ")[0]
    if first in "aA":
        return "append"
    if first in "tT":
        return "truncate"
    raise _err(c.prog, "Invalid --open-mode specification", 255)


def _v_nice(c: _Ctx, v: str | None) -> int:
    if not v:           # `--nice` and `--nice=` alike
        return 100
    n = _strtol(v)[0]
    if abs(n) > _NICE_MAX:
        raise _err(c.prog, f"Invalid --nice value, out of range (+/- {_NICE_MAX})", 255)
    return n


def _v_signal(c: _Ctx, v: str | None) -> str:
    parse_signal(v or "", c.prog)
    return v or ""


def _v_kill_inv(c: _Ctx, v: str | None) -> bool:
    low = (v or "").lower()
    if low not in ("yes", "no"):
        raise _err(c.prog, "Invalid --kill-on-invalid-dep specification", 255)
    return low == "yes"


def _v_no_kill(c: _Ctx, v: str | None) -> bool:
    low = (v or "").lower()
    if low in ("", "set"):
        return True
    if low in ("off", "no"):
        return False
    raise _err(c.prog, "Invalid --no-kill specification", 255)


def _v_mail_type(c: _Ctx, v: str | None) -> str:
    for t in (v or "").split(","):
        if t.upper() not in _MAIL_TYPES:
            raise _err(c.prog, "Invalid --mail-type specification", 255)
    return v or ""


def _v_hint(c: _Ctx, v: str | None) -> str:
    for t in (v or "").split(","):
        if t.lower() not in _HINTS:
            raise _err(c.prog, f'unrecognized --hint argument "{t}", see --hint=help', 1)
    return v or ""


def _v_profile(c: _Ctx, v: str | None) -> str:
    for t in (v or "").split(","):
        if t.lower() not in _PROFILES:
            raise _err(c.prog, f"invalid --profile={v} option", 255)
    return v or ""


def _v_acctg(c: _Ctx, v: str | None) -> str:
    for t in (v or "").split(","):
        kind, eq, num = t.partition("=")
        if not (_digits(t) or (eq and kind.lower() in _ACCTG and _digits(num))):
            raise _err(c.prog, f"Invalid --acctg-freq specification: {v}", 255)
    return v or ""


def _v_distribution(c: _Ctx, v: str | None) -> str:
    spec, _, pack = (v or "").partition(",")
    levels = spec.split(":")
    first = levels[0].lower()
    ok = (first in ("block", "cyclic", "arbitrary", "*") or (first.startswith("plane=") and _digits(first[6:]))
          ) and len(levels) <= 3 and all(x.lower() in ("block", "cyclic", "fcyclic", "*") for x in levels[1:])
    if not ok or (pack and pack.lower() not in ("pack", "nopack")):
        raise _err(c.prog, "Invalid --distribution specification", 255)
    return v or ""


def _v_get_user_env(c: _Ctx, v: str | None) -> str | None:
    if v:
        body = v[:-1] if v[-1] in "SLsl" else v
        if body and not _digits(body):
            raise _err(c.prog, "Invalid --get-user-env specification", 255)
    return v


def _v_delay_boot(c: _Ctx, v: str | None) -> int:
    secs = _time_str2secs(v or "")
    if secs == _NO_VAL32:
        raise _err(c.prog, "Invalid --delay-boot specification", 255)
    return secs


def _v_switches(c: _Ctx, v: str | None) -> str:
    count, _, _ = (v or "").partition("@")
    _parse_int(c.prog, "--switches", count, False)
    return v or ""


def _v_uid(c: _Ctx, v: str | None) -> int:
    return _lookup_id(c.prog, "uid", v or "")


def _v_gid(c: _Ctx, v: str | None) -> int:
    return _lookup_id(c.prog, "gid", v or "")


def _lookup_id(prog: str, which: str, v: str) -> int:
    """A user or group name or number that must exist on this host, as sbatch checks."""
    try:
        if which == "uid":
            import pwd
            return pwd.getpwuid(int(v)).pw_uid if _digits(v) else pwd.getpwnam(v).pw_uid
        import grp
        return grp.getgrgid(int(v)).gr_gid if _digits(v) else grp.getgrnam(v).gr_gid
    except (KeyError, ImportError, OverflowError):
        raise _err(prog, f"Invalid --{which} specification", 255) from None


def _v_gres(c: _Ctx, v: str | None) -> str:
    return v or ""    # checked at the end, as sbatch does (names against the configured GRES)


def _v_gpus(c: _Ctx, v: str | None) -> str:
    return v or ""    # counts are slurmctld's check: at the end


def _v_chdir(c: _Ctx, v: str | None) -> str:
    v = v or ""
    return v if v.startswith("/") else c.cwd.rstrip("/") + "/" + v


def _v_jobid(c: _Ctx, v: str | None) -> int:
    return _parse_int(c.prog, "--jobid", (v or "").split(".")[0], True)


def _v_kill_bad_exit(c: _Ctx, v: str | None) -> bool:
    return True if v is None else _parse_int(c.prog, "--kill-on-bad-exit", v, False) != 0


def _resource_range(prog: str, arg: str, what: str) -> tuple[int, int]:
    """Slurm's get_resource_arg_range(): `*`/empty (any), `N` or `MIN-MAX`, k/m suffixes;
    `<prog>: error: Invalid numeric value "ARG" for WHAT.` (exit 1)."""
    if not arg or arg[0] == "*":
        return 1, 0x7FFFFFFF

    def num(i: int) -> tuple[int, int]:
        v, end = _strtol(arg, i)
        if arg[end:end + 1] in ("k", "K"):
            v, end = v * 1024, end + 1
        elif arg[end:end + 1] in ("m", "M"):
            v, end = v * 1048576, end + 1
        return v, end

    lo, end = num(0)
    if (end < len(arg) and arg[end] != "-") or lo < 0:
        raise OptError([f'{prog}: error: Invalid numeric value "{arg}" for {what}.'], 1, fixed=True)
    if end == len(arg):
        return lo, lo
    hi, end = num(end + 1)
    if (end < len(arg) and arg[end] != "-") or hi <= 0:
        raise OptError([f'{prog}: error: Invalid numeric value "{arg}" for {what}.'], 1, fixed=True)
    return lo, hi


def _v_extra_node_info(c: _Ctx, v: str | None) -> str:
    """`-B sockets[:cores[:threads]]` (verify_socket_core_thread_count); a fourth field is ignored."""
    parts = (v or "").split(":")
    for part, nth in zip(parts, ("first", "second", "third")):
        _resource_range(c.prog, part, f"{nth} arg of -B")
    return v or ""


def _v_wait_all_nodes(c: _Ctx, v: str | None) -> int:
    n = _parse_int(c.prog, "--wait-all-nodes", v or "", False)
    if n > 1:
        raise _err(c.prog, "Invalid --wait-all-nodes specification", 255)
    return n


def _v_gres_flags(c: _Ctx, v: str | None) -> str:
    if (v or "").lower() not in ("enforce-binding", "disable-binding"):
        raise _err(c.prog, "Invalid --gres-flags specification", 255)
    return v or ""


def _v_wait(c: _Ctx, v: str | None) -> object:
    # sbatch's -W is a flag; srun's -W/--wait=<seconds> takes a number
    return True if v is None else _parse_int(c.prog, "--wait", v, False)


_VALIDATORS = {
    "acctg-freq": _v_acctg, "begin": _v_begin("--begin"), "chdir": _v_chdir,
    "cores-per-socket": _v_int("--cores-per-socket"), "core-spec": _v_int("--core-spec", False),
    "cpus-per-gpu": _v_int("--cpus-per-gpu"), "cpus-per-task": _v_int("--cpus-per-task"),
    "deadline": _v_begin("--deadline"), "delay-boot": _v_delay_boot, "distribution": _v_distribution,
    "exclusive": _v_exclusive, "get-user-env": _v_get_user_env, "gid": _v_gid, "gpus": _v_gpus,
    "gpus-per-node": _v_gpus, "gpus-per-task": _v_gpus, "gres": _v_gres, "hint": _v_hint,
    "jobid": _v_jobid, "kill-on-bad-exit": _v_kill_bad_exit, "kill-on-invalid-dep": _v_kill_inv,
    "mail-type": _v_mail_type, "mem": _v_mem("--mem"), "mem-per-cpu": _v_mem("--mem-per-cpu"),
    "mem-per-gpu": _v_mem("--mem-per-gpu"), "mincpus": _v_int("--mincpus"), "nice": _v_nice,
    "no-kill": _v_no_kill, "nodes": lambda c, v: parse_nodes(v or "", c.prog),
    "ntasks": _v_int("--ntasks"), "ntasks-per-core": _v_int("--ntasks-per-core"),
    "ntasks-per-gpu": _v_int("--ntasks-per-gpu"), "ntasks-per-node": _v_int("--ntasks-per-node"),
    "ntasks-per-socket": _v_int("--ntasks-per-socket"), "ntasks-per-tres": _v_int("--ntasks-per-tres"),
    "open-mode": _v_open_mode, "profile": _v_profile, "signal": _v_signal,
    "sockets-per-node": _v_int("--sockets-per-node"), "switches": _v_switches,
    "thread-spec": _v_int("--thread-spec", False), "threads-per-core": _v_int("--threads-per-core"),
    "time": _v_time("--time"), "time-min": _v_time("--time-min"), "tmp": _v_mem("--tmp"), "uid": _v_uid,
    "extra-node-info": _v_extra_node_info, "wait-all-nodes": _v_wait_all_nodes, "gres-flags": _v_gres_flags,
    "wait": _v_wait, "threads": _v_int("--threads"), "relative": _v_int("--relative", False),
}

# Flags: options without an argument.
_FLAG_KEYS = {"contiguous", "help", "hold", "ignore-pbs", "no-requeue", "overcommit", "oversubscribe",
              "parsable", "quiet", "reboot", "requeue", "spread-job", "test-only", "usage", "use-min-nodes",
              "verbose", "version", "wait", "debugger-test", "disable-status", "exact", "interactive", "label",
              "multi-prog", "no-allocate", "preserve-env", "pty", "quit-on-interrupt", "unbuffered", "whole"}

# Options that change what slurmlet does; every other accepted option goes to `ignored`.
_SBATCH_USED = {
    "account", "array", "begin", "chdir", "clusters", "comment", "cpus-per-task", "dependency", "error",
    "exclusive", "export", "gpus", "gpus-per-node", "gpus-per-task", "gres", "help", "hold", "input",
    "job-name", "kill-on-invalid-dep", "mem", "mem-per-cpu", "nice", "no-requeue", "nodelist", "nodes",
    "ntasks", "ntasks-per-node", "open-mode", "output", "oversubscribe", "parsable", "partition", "qos",
    "quiet", "requeue", "signal", "test-only", "time", "usage", "verbose", "version", "wait", "wrap",
    "exclude",
}
_SRUN_USED = {
    "account", "chdir", "cpu-bind", "cpus-per-task", "dependency", "error", "exclude", "exclusive", "export",
    "gpus", "gpus-per-node", "gpus-per-task", "gres", "help", "hold", "input", "job-name", "jobid",
    "kill-on-bad-exit", "label", "mem", "mem-per-cpu", "mpi", "nodelist", "nodes", "ntasks",
    "ntasks-per-node", "output", "overlap", "partition", "pty", "qos", "quiet", "time", "unbuffered", "usage",
    "verbose", "version", "open-mode", "begin", "comment", "signal", "nice",
}

# SBATCH_* input variables in sbatch's table order -> option key (None: handled specially).
_SBATCH_ENV = (
    ("SBATCH_ACCOUNT", "account"), ("SBATCH_ARRAY_INX", "array"), ("SBATCH_ACCTG_FREQ", "acctg-freq"),
    ("SBATCH_BATCH", "batch"), ("SBATCH_BURST_BUFFER", "bb"), ("SBATCH_CLUSTER_CONSTRAINT", "cluster-constraint"),
    ("SBATCH_CLUSTERS", "clusters"), ("SLURM_CLUSTERS", "clusters"), ("SBATCH_CONTAINER", "container"),
    ("SBATCH_CONSTRAINT", "constraint"), ("SBATCH_CORE_SPEC", "core-spec"), ("SBATCH_CPU_FREQ_REQ", "cpu-freq"),
    ("SBATCH_CPUS_PER_GPU", "cpus-per-gpu"), ("SBATCH_DEBUG", None), ("SBATCH_DELAY_BOOT", "delay-boot"),
    ("SBATCH_DISTRIBUTION", "distribution"), ("SBATCH_EXCLUSIVE", "exclusive"), ("SBATCH_EXPORT", "export"),
    ("SBATCH_GET_USER_ENV", "get-user-env"), ("SBATCH_GRES", "gres"), ("SBATCH_GRES_FLAGS", "gres-flags"),
    ("SBATCH_GPUS", "gpus"), ("SBATCH_GPU_BIND", "gpu-bind"), ("SBATCH_GPU_FREQ", "gpu-freq"),
    ("SBATCH_GPUS_PER_NODE", "gpus-per-node"), ("SBATCH_GPUS_PER_SOCKET", "gpus-per-socket"),
    ("SBATCH_GPUS_PER_TASK", "gpus-per-task"), ("SLURM_HINT", "hint"), ("SBATCH_HINT", "hint"),
    ("SBATCH_JOB_NAME", "job-name"), ("SBATCH_MEM_BIND", "mem-bind"), ("SBATCH_MEM_PER_CPU", "mem-per-cpu"),
    ("SBATCH_MEM_PER_GPU", "mem-per-gpu"), ("SBATCH_MEM_PER_NODE", "mem"), ("SBATCH_NETWORK", "network"),
    ("SBATCH_NO_KILL", "no-kill"), ("SBATCH_NO_REQUEUE", "no-requeue"), ("SBATCH_OPEN_MODE", "open-mode"),
    ("SBATCH_OVERCOMMIT", "overcommit"), ("SBATCH_PARTITION", "partition"), ("SBATCH_POWER", "power"),
    ("SBATCH_PROFILE", "profile"), ("SBATCH_QOS", "qos"), ("SBATCH_REQ_SWITCH", "switches"),
    ("SBATCH_REQUEUE", "requeue"), ("SBATCH_RESERVATION", "reservation"), ("SBATCH_SIGNAL", "signal"),
    ("SBATCH_SPREAD_JOB", "spread-job"), ("SBATCH_THREAD_SPEC", "thread-spec"),
    ("SBATCH_THREADS_PER_CORE", "threads-per-core"), ("SBATCH_TIMELIMIT", "time"),
    ("SBATCH_USE_MIN_NODES", "use-min-nodes"), ("SBATCH_WAIT", "wait"), ("SBATCH_WAIT_ALL_NODES", "wait-all-nodes"),
    ("SBATCH_WAIT4SWITCH", "wait4switch"), ("SBATCH_WCKEY", "wckey"), ("SBATCH_ERROR", "error"),
    ("SBATCH_INPUT", "input"), ("SBATCH_OUTPUT", "output"), ("SBATCH_IGNORE_PBS", "ignore-pbs"),
)

# srun's input variables (the subset slurmlet uses, plus a few it accepts and ignores).
_SRUN_ENV = (
    ("SLURM_ACCOUNT", "account"), ("SLURM_CPU_BIND", "cpu-bind"), ("SRUN_CPUS_PER_TASK", "cpus-per-task"),
    ("SLURM_DEPENDENCY", "dependency"), ("SLURM_DISTRIBUTION", "distribution"), ("SLURM_EXCLUSIVE", "exclusive"),
    ("SLURM_EXPORT_ENV", "export"), ("SRUN_EXPORT_ENV", "export"), ("SLURM_GPUS", "gpus"),
    ("SLURM_GPUS_PER_NODE", "gpus-per-node"), ("SLURM_GPUS_PER_TASK", "gpus-per-task"), ("SLURM_GRES", "gres"),
    ("SLURM_HINT", "hint"), ("SLURM_JOB_NAME", "job-name"), ("SLURM_JOB_ID", "jobid"), ("SLURM_JOBID", "jobid"),
    ("SLURM_KILL_BAD_EXIT", "kill-on-bad-exit"), ("SLURM_LABELIO", "label"), ("SLURM_MEM_PER_CPU", "mem-per-cpu"),
    ("SLURM_MEM_PER_GPU", "mem-per-gpu"), ("SLURM_MEM_PER_NODE", "mem"), ("SLURM_MPI_TYPE", "mpi"),
    ("SLURM_NO_KILL", "no-kill"), ("SLURM_NPROCS", "ntasks"), ("SLURM_NTASKS", "ntasks"),
    ("SLURM_NTASKS_PER_NODE", "ntasks-per-node"), ("SLURM_OPEN_MODE", "open-mode"), ("SLURM_OVERLAP", "overlap"),
    ("SLURM_PARTITION", "partition"), ("SLURM_QOS", "qos"), ("SLURM_SIGNAL", "signal"),
    ("SLURM_TIMELIMIT", "time"), ("SLURM_UNBUFFEREDIO", "unbuffered"), ("SLURM_WORKING_DIR", "chdir"),
    ("SLURM_DEBUG", None),
)


def _env_flag_true(v: str) -> bool:
    """How sbatch/srun read a flag variable (SBATCH_WAIT, SBATCH_REQUEUE...): empty, `yes` or a
    non-zero number sets it; anything else (`0`, `no`, `true`) leaves it unset."""
    return v == "" or v.lower() == "yes" or _atoi(v) != 0


class _State:
    """Options collected so far: canonical value, raw text and origin ("cli" covers directives
    too, as in Slurm's slurm_option_set_by_cli) per key; verbosity counts."""

    def __init__(self) -> None:
        self.values: dict[str, object] = {}
        self.raw: dict[str, str | None] = {}
        self.src: dict[str, str] = {}
        self.seq: dict[str, int] = {}
        self.n = 0
        self.verbose = 0
        self.quiet = 0

    def apply(self, ctx: _Ctx, key: str, val: str | None, src: str = "cli") -> None:
        if key == "verbose":
            self.verbose += 1
            return
        if key == "quiet":
            self.quiet += 1
            return
        fn = _VALIDATORS.get(key)
        if fn is not None:
            value = fn(ctx, val)
        elif key in _FLAG_KEYS:
            value = True
        else:
            value = val
        if key in ("requeue", "no-requeue"):
            key, value = "requeue", key == "requeue"
        elif key == "oversubscribe":
            key, value = "exclusive", "oversubscribe"
        elif key in ("gres", "gpus-per-node"):
            self.n += 1
            self.seq[key] = self.n
        self.values[key] = value
        self.raw[key] = val
        self.src[key] = src

    def unset(self, key: str) -> None:
        for d in (self.values, self.raw, self.src):
            d.pop(key, None)


def _apply_env(state: _State, ctx: _Ctx, env: dict[str, str], table: tuple, tbl: _Table,
               debug_var: str) -> None:
    arity = {key: a for _, a, key in tbl.longs}
    for var, key in table:
        if var not in env:
            continue
        val = env[var]
        if key is None:
            if var == debug_var:
                state.verbose = max(0, _atoi(val))
            continue
        if key not in arity:
            if key == "wait4switch":
                state.values.setdefault("wait4switch", val)
                state.raw.setdefault("wait4switch", val)
            continue
        if arity[key] == _NO:
            if _env_flag_true(val):
                state.apply(ctx, key, None, "env")
            continue
        state.apply(ctx, key, val, "env")


# ====================================================================== checks after all options
def _check_memory(prog: str, st: _State) -> None:
    keys = ("mem", "mem-per-cpu", "mem-per-gpu")
    by_cli = [k for k in keys if k in st.values and st.src.get(k) == "cli"]
    if len(by_cli) > 1:
        raise OptError([f"{prog}: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."], 1,
                       fixed=True)
    if by_cli:
        for k in keys:
            if k != by_cli[0]:
                st.unset(k)
    elif sum(1 for k in keys if k in st.values) > 1:
        raise OptError([f"{prog}: fatal: SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are "
                        "mutually exclusive."], 1, fixed=True)


def _check_counts(prog: str, st: _State, info: list[str]) -> None:
    v = st.values
    if st.quiet and st.verbose:
        raise _err(prog, "don't specify both --verbose (-v) and --quiet (-Q)", 1)
    _check_memory(prog, st)
    if isinstance(v.get("ntasks"), int) and v["ntasks"] < 0:
        raise _err(prog, f"invalid number of tasks (-n {v['ntasks']})", 1)
    if isinstance(v.get("cpus-per-task"), int) and v["cpus-per-task"] < 0:
        raise _err(prog, f"invalid number of cpus per task (-c {v['cpus-per-task']})", 1)
    nodes, n = v.get("nodes"), v.get("ntasks")
    if isinstance(nodes, tuple) and isinstance(n, int) and n > 0:
        lo, hi = nodes
        if lo > n:
            info.append(f"{prog}: Warning: can't run {n} processes on {lo} nodes, setting nnodes to {n}")
            lo = n
        if hi > n:
            hi = n
        v["nodes"] = (lo, hi)


def _check_gres(ctx: _Ctx, st: _State) -> tuple[int | None, str | None]:
    """The final GPUs per node (the later of --gres and --gpus-per-node wins) and a GPU type."""
    v = st.values
    gres_n = gres_t = None
    if "gres" in v:
        gres_n, gres_t = parse_gres(str(v["gres"]), ctx.prog, gres_types=ctx.gres_types)
    gpn = gpn_t = None
    if "gpus-per-node" in v:
        gpn, gpn_t = parse_gpus(str(v["gpus-per-node"]), ctx.prog)
    if "gres" in v and "gpus-per-node" in v:
        return (gpn, gpn_t) if st.seq["gpus-per-node"] > st.seq["gres"] else (gres_n, gres_t)
    return (gpn, gpn_t) if "gpus-per-node" in v else (gres_n, gres_t)


def _resolved_gpus(ctx: _Ctx, st: _State) -> dict[str, object]:
    """`gpus`, `gpus-per-node`, `gpus-per-task` as numbers (0 -> None) and the GPU type."""
    v = st.values
    out: dict[str, object] = {}
    gtype = None
    per_node, t = _check_gres(ctx, st)
    gtype = gtype or t
    for key in ("gpus", "gpus-per-task"):
        if key in v:
            n, t = parse_gpus(str(v[key]), ctx.prog)
            out[key] = n
            gtype = gtype or t
    out["gpus-per-node"] = per_node
    gres_bad = f"{ctx.prog}: error: Invalid generic resource (gres) specification"
    if "gpus-per-socket" in v and "sockets-per-node" not in v and "extra-node-info" not in v:
        raise OptError([f"{ctx.prog}: error: --gpus-per-socket option requires --sockets-per-node specification",
                        gres_bad], 1)
    if out.get("gpus-per-task") and not out.get("gpus") and not isinstance(v.get("ntasks"), int):
        raise OptError([f"{ctx.prog}: error: Failed to validate job spec. --gpus-per-task used without either "
                        "--gpus or -n/--ntasks is not allowed.", gres_bad], 1)
    any_gpu = any(out.get(k) for k in ("gpus", "gpus-per-node", "gpus-per-task")) or "gpus-per-socket" in v
    if v.get("mem-per-gpu") and not any_gpu:
        raise OptError([f"{ctx.prog}: error: Requested mem_per_tres=gres:gpu:{v['mem-per-gpu']} but did not "
                        "request any GPU.", gres_bad], 1)
    if "ntasks-per-gpu" in v and not any_gpu and "nodes" not in v and "ntasks" not in v:
        raise OptError([f"{ctx.prog}: error: gres_job_state_validate: --ntasks-per-tres needs either a GRES GPU "
                        "specification or a node/ntask specification", gres_bad], 1)
    out["gpu_type"] = gtype
    return out


# ====================================================================== scripts
_WRAP = "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{}\n"


def _default_read(path: str) -> str:
    # newline="": the script is copied as it is (no \r\n translation: DOS line breaks are refused)
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        return f.read()


def _find_script(name: str, cwd: str, chdir: str | None, env: dict[str, str],
                 read_file: Callable[[str], str]) -> tuple[str, str] | None:
    """(path, text) of the script, searched as sbatch 22.05 does: a name starting with `.` in the
    submit directory only; a bare or relative name in the -D directory (the submit directory
    without -D), then along PATH (bare names), then in the submit directory.  A directory reads
    as an empty script.  None when no candidate can be read."""
    if name.startswith("/"):
        cands = [name]
    elif name.startswith("."):
        cands = [cwd.rstrip("/") + "/" + name]
    else:
        cands = [(chdir or cwd).rstrip("/") + "/" + name]
        if "/" not in name:
            cands += [d.rstrip("/") + "/" + name for d in env.get("PATH", "").split(":") if d.startswith("/")]
        cands.append(cwd.rstrip("/") + "/" + name)
    seen: set[str] = set()
    for path in cands:
        if path in seen:
            continue
        seen.add(path)
        try:
            return path, read_file(path)
        except IsADirectoryError:
            return path, ""
        except (OSError, UnicodeError):
            continue
    return None


def _check_script(prog: str, text: str) -> None:
    if not text:
        raise _err(prog, "Batch script is empty!", 1)
    if _is_ws(text):
        raise _err(prog, "Batch script contains only whitespace!", 1)
    if not text.startswith("#!"):
        raise OptError([f"{prog}: error: This does not look like a batch script.  The first",
                        f"{prog}: error: line must start with #! followed by the path to an interpreter.",
                        f"{prog}: error: For instance: #!/bin/sh"], 1)
    if "\0" in text:
        raise OptError([f"{prog}: error: The Slurm controller does not allow scripts that",
                        f"{prog}: error: contain a NULL character '\\0'."], 1)
    if "\r\n" in text:
        raise OptError([f"{prog}: error: Batch script contains DOS line breaks (\\r\\n)",
                        f"{prog}: error: instead of expected UNIX line breaks (\\n)."], 1)


# ====================================================================== environment
def _quote_tokens(spec: str) -> list[str]:
    """sbatch's find_quote_token() over `--export`: split at commas outside quotes; a token
    wholly enclosed in one kind of quotes loses them (`'A=1,2'` -> `A=1,2`)."""
    out: list[str] = []
    i, n = 0, len(spec)
    while i < n:
        single = double = False
        j = i
        while j < n and (spec[j] != "," or single or double):
            if spec[j] == "'":
                single = not single
            elif spec[j] == '"':
                double = not double
            j += 1
        tok = spec[i:j]
        if len(tok) >= 2 and tok[0] in "'\"" and tok[-1] == tok[0]:
            tok = tok[1:-1]
        out.append(tok)
        i = j + 1
    return out


def export_environment(spec: str | None, env: dict[str, str]) -> dict[str, str]:
    """The environment a job starts with under `--export=SPEC`, as sbatch 22.05 builds it.

    `ALL` (the default, also for None): everything.  `NONE`: only the `SLURM_*` variables.
    Otherwise a comma list read left to right: `ALL` copies the whole environment, `VAR=value`
    sets a value, `VAR` copies VAR when set (later items win: `ALL,EDITOR=x` gives EDITOR=x,
    `EDITOR=x,ALL` the caller's EDITOR); afterwards every `SLURM_*` variable of the caller is
    copied over whatever the list said.  Quotes group a value holding commas (`'A=1,2'`).
    """
    if spec is None or spec.upper() == "ALL":
        return dict(env)
    out: dict[str, str] = {}
    if spec.upper() != "NONE":
        for tok in _quote_tokens(spec):
            if tok.upper() == "ALL":
                out.update(env)
                continue
            k, eq, v = tok.partition("=")
            if eq:
                if k:
                    out[k] = v
            elif tok in env:
                out[tok] = env[tok]
    for k, v in env.items():
        if k.startswith("SLURM_"):
            out[k] = v
    return out


# ====================================================================== sbatch
def _ignored(state: _State, used: set[str]) -> list[list]:
    return [["--" + k, state.raw.get(k)] for k in state.values if k not in used]


def parse_sbatch(argv: list[str], *, env: dict[str, str], cwd: str, stdin_text: str | None = None,
                 read_stdin: Callable[[], str] | None = None, read_file: Callable[[str], str] | None = None,
                 user: str | None = None,
                 uid: int | None = None, gid: int | None = None, group: str | None = None,
                 host: str | None = None, now: float | None = None, max_array_size: int = MAX_ARRAY_SIZE,
                 gres_types: tuple[str, ...] = ("gpu",), prio_process: int = 0, prog: str = "sbatch") -> dict:
    """The whole sbatch invocation -> a dict:

    * `submit`: the `JobSubmit` body (every field of controller/api/schemas.py), or None when
      help/usage/version was asked for;
    * `help`, `usage`, `version` (bool; the first one met wins, as sbatch stops there),
      `parsable`, `wait`, `test_only` (bool), `quiet`, `verbose` (counts), `clusters` (str or None);
    * `ignored`: `[["--option", "value"], ...]` accepted but without effect in slurmlet;
    * `warnings`: stderr lines to print always; `info`: stderr lines to print unless quiet;
    * `script_path`: the script file read (None for --wrap and stdin); `gpu_type`: a GPU type
      named in --gres/-G/--gpus-per-* (not part of JobSubmit).

    `argv` excludes the program name.  The script comes from the first non-option argument
    (searched in the -D directory, PATH, the submit directory), from `--wrap`, or else from
    stdin (`stdin_text`, or `read_stdin()` called only then).  `read_file(path) -> str` reads
    scripts (default: the file system).  Unset user/uid/gid/group/host come from this process.
    `SLURM_EXIT_ERROR` in env replaces the exit status 1 of most refusals, as in sbatch.
    """
    pre: list[str] = []
    error_exit = 1
    if "SLURM_EXIT_ERROR" in env:    # sbatch's _set_exit_code(), before anything else
        error_exit = _atoi(env["SLURM_EXIT_ERROR"])
        if error_exit == 0:
            pre.append(f"{prog}: error: SLURM_EXIT_ERROR has zero value")
            error_exit = 1
    try:
        res = _parse_sbatch(argv, env, cwd, stdin_text, read_stdin, read_file, user, uid, gid, group, host,
                            now, max_array_size, gres_types, prio_process, prog)
    except OptError as e:
        e.lines[:0] = pre
        if e.code == 1 and not e.fixed:
            e.code = error_exit
        raise
    res["warnings"][:0] = pre
    return res


def _parse_sbatch(argv: list[str], env: dict[str, str], cwd: str, stdin_text: str | None,
                  read_stdin: Callable[[], str] | None, read_file: Callable[[str], str] | None,
                  user: str | None, uid: int | None, gid: int | None, group: str | None, host: str | None,
                  now: float | None, max_array_size: int, gres_types: tuple[str, ...], prio_process: int,
                  prog: str) -> dict:
    ctx = _Ctx(prog, cwd, now, gres_types)
    tbl = _table("sbatch")
    flags = {"help": False, "usage": False, "version": False}
    # pass 1: the command line, checked in order (syntax and values)
    first = _State()
    cli_items: list[tuple[str, str | None]] = []
    g = _Getopt(prog, argv, tbl)
    for key, val, _ in g:
        if key in flags:
            flags[key] = True
            return _early(flags)
        first.apply(ctx, key, val)
        cli_items.append((key, val))
    rest = argv[g.optind:]
    if rest and rest[0] == ":":
        raise _het_error(prog)
    wrap = first.values.get("wrap")
    if wrap is not None and rest:
        raise _err(prog, "Script arguments not permitted with --wrap option", 1)
    # the script
    read_file = read_file or _default_read
    script_path = None
    if wrap is not None:
        script, default_name, script_args, label = _WRAP.format(wrap), "wrap", [], None
    elif rest:
        chdir = first.values.get("chdir")
        found = _find_script(rest[0], cwd, chdir if isinstance(chdir, str) else None, env, read_file)
        if found is None:
            raise _err(prog, f"Unable to open file {rest[0]}", 1)
        script_path, script = found
        default_name, script_args, label = os.path.basename(rest[0]), rest[1:], os.path.basename(rest[0])
        _check_script(prog, script)
    else:
        if stdin_text is None and read_stdin is not None:
            stdin_text = read_stdin()
        script, default_name, script_args, label = stdin_text or "", "sbatch", [], "stdin"
        _check_script(prog, script)
    # pass 2: directives < SBATCH_* < command line
    state = _State()
    warnings: list[str] = []
    info: list[str] = []
    try:
        result = _sbatch_pass2(ctx, tbl, state, flags, script, label, env, cli_items, warnings, info,
                               max_array_size)
    except OptError as e:
        e.lines[:0] = warnings
        raise
    if result is not None:
        return result
    v = state.values
    array, dep, gpus = v.pop("_array", None), v.pop("_dependency", None), v.pop("_gpus", {})
    submit = build_submit(v, script=script, default_name=default_name, script_args=script_args,
                          env=env, cwd=cwd, user=user, uid=uid, gid=gid, group=group, host=host, now=now,
                          prog=prog, gpus=gpus, array=array, dependency=dep, prio_process=prio_process)
    return {
        "submit": submit, **flags,
        "parsable": bool(v.get("parsable")), "wait": bool(v.get("wait")), "test_only": bool(v.get("test-only")),
        "quiet": state.quiet, "verbose": state.verbose, "clusters": v.get("clusters"),
        "ignored": _ignored(state, _SBATCH_USED), "warnings": warnings, "info": info,
        "script_path": script_path, "gpu_type": gpus.get("gpu_type"),
    }


def _sbatch_pass2(ctx: _Ctx, tbl: _Table, state: _State, flags: dict[str, bool], script: str,
                  label: str | None, env: dict[str, str], cli_items: list, warnings: list[str],
                  info: list[str], max_array_size: int) -> dict | None:
    """Directives, SBATCH_* variables, the command line again, then the final checks.  Returns
    the early answer for a help/usage/version request met in the directives, else None (the
    checked array, dependency and GPU counts are left in state.values under `_array`,
    `_dependency`, `_gpus`)."""
    prog = ctx.prog
    if label is not None:
        dargs = directive_args(script, label=label, prog=prog, warnings=warnings)
        dg = _Getopt(prog, dargs, tbl)
        for key, val, _ in dg:
            if key in flags:    # --help/--usage/--version are first-pass (command line) only
                continue
            state.apply(ctx, key, val)
        if dg.optind < len(dargs):
            raise _err(prog, f"Invalid directive found in batch script: {dargs[dg.optind]}", 255)
    _apply_env(state, ctx, env, _SBATCH_ENV, tbl, "SBATCH_DEBUG")
    for key, val in cli_items:
        state.apply(ctx, key, val)
    _check_counts(prog, state, info)
    gpus = _resolved_gpus(ctx, state)
    v = state.values
    if str(v.get("distribution") or "").lower().startswith("arbitrary") and not v.get("nodelist"):
        raise _err(prog, "With Arbitrary distribution you need to specify a nodelist or hostfile with the -w "
                   "option", 1)
    if "nodes" in v and v["nodes"] == (0, 0):
        raise _refused(prog, "Node count specification invalid")
    array = str(v["array"]) if v.get("array") else None
    if array is not None:
        idx, _ = parse_array(array, max_array_size, prog)
        array = array if idx else None
    dep = str(v["dependency"]) if v.get("dependency") else None
    if dep is not None:
        parse_dependency(dep, prog)
    v["_array"], v["_dependency"], v["_gpus"] = array, dep, gpus
    return None


def _early(flags: dict[str, bool]) -> dict:
    return {"submit": None, **flags, "parsable": False, "wait": False, "test_only": False, "quiet": 0,
            "verbose": 0, "clusters": None, "ignored": [], "warnings": [], "info": [], "script_path": None,
            "gpu_type": None}


def _whoami(user: str | None, uid: int | None, gid: int | None, group: str | None,
            host: str | None) -> tuple[str, int, int, str, str]:
    uid = os.getuid() if uid is None else uid
    gid = os.getgid() if gid is None else gid
    if user is None:
        try:
            import pwd
            user = pwd.getpwuid(uid).pw_name
        except (KeyError, ImportError):
            user = str(uid)
    if group is None:
        try:
            import grp
            group = grp.getgrgid(gid).gr_name
        except (KeyError, ImportError):
            group = str(gid)
    if host is None:
        host = os.uname().nodename.split(".")[0]
    return user, uid, gid, group, host


def _abs_in(workdir: str, path: str) -> str:
    return path if path.startswith("/") else workdir.rstrip("/") + "/" + path


def build_submit(o: dict, *, script: str, default_name: str, script_args: list[str], env: dict[str, str],
                 cwd: str, user: str | None = None, uid: int | None = None, gid: int | None = None,
                 group: str | None = None, host: str | None = None, now: float | None = None,
                 prog: str = "sbatch", gpus: dict | None = None, array: str | None = None,
                 dependency: str | None = None, prio_process: int = 0) -> dict:
    """A `JobSubmit` body from checked option values (`parse_sbatch`'s, or `parse_srun()["opts"]`,
    keyed by long option name).  Every JobSubmit field is present.

    Paths: -D is absolute (relative to the submit directory); -o/-e/-i are made absolute
    against the working directory, as sbatch does.  The environment is `--export`'s selection
    plus what sbatch itself adds: SLURM_SUBMIT_DIR, SLURM_SUBMIT_HOST, SLURM_PRIO_PROCESS.
    """
    user, uid, gid, group, host = _whoami(user, uid, gid, group, host)
    if gpus is None:
        gpus = _gpus_of(o, prog)
    workdir = str(o.get("chdir") or cwd)
    if not workdir.startswith("/"):
        workdir = _abs_in(cwd, workdir)
    nodes = o.get("nodes")
    lo, hi = nodes if isinstance(nodes, tuple) else (1, 0)
    exclusive = o.get("exclusive")
    export = o.get("export")
    environment = export_environment(export if isinstance(export, str) else None, env)
    environment["SLURM_PRIO_PROCESS"] = str(prio_process)
    environment["SLURM_SUBMIT_DIR"] = cwd
    environment["SLURM_SUBMIT_HOST"] = host
    if array is None and o.get("array"):
        array = str(o["array"])
    if dependency is None and o.get("dependency"):
        dependency = str(o["dependency"])
    body = {
        "script": script,
        "name": o["job-name"] if o.get("job-name") is not None else default_name,
        "partition": o.get("partition"), "account": o.get("account"), "qos": o.get("qos"),
        "nodes_min": max(1, lo), "nodes_max": (hi if hi >= max(1, lo) else max(1, lo)) if hi else None,
        "ntasks": o.get("ntasks"), "ntasks_per_node": o.get("ntasks-per-node"),
        "cpus_per_task": o.get("cpus-per-task") or 1,
        "mem_per_node": o.get("mem"), "mem_per_cpu": o.get("mem-per-cpu"),
        "time_limit": o.get("time"),
        "gpus": gpus.get("gpus") or None, "gpus_per_node": gpus.get("gpus-per-node") or None,
        "gpus_per_task": gpus.get("gpus-per-task") or None,
        "exclusive": bool(exclusive) and exclusive != "oversubscribe",
        "requeue": o.get("requeue"),
        "environment": environment,
        "workdir": workdir, "submit_dir": cwd,
        "stdout": _abs_in(workdir, str(o["output"])) if o.get("output") else None,
        "stderr": _abs_in(workdir, str(o["error"])) if o.get("error") else None,
        "stdin": _abs_in(workdir, str(o["input"])) if o.get("input") else None,
        "open_mode": o.get("open-mode") or "truncate",
        "hold": bool(o.get("hold")),
        "begin_time": o.get("begin"),
        "signal": o.get("signal"),
        "comment": o.get("comment"),
        "dependency": dependency,
        "array": array,
        "nice": o.get("nice") or 0,
        "nodelist": o.get("nodelist"), "exclude": o.get("exclude"),
        "user": user, "uid": uid, "gid": gid, "group": group, "submit_host": host,
        "argv": list(script_args),
        "test_only": bool(o.get("test-only")),
        "kill_on_invalid_dep": bool(o.get("kill-on-invalid-dep")),
    }
    return body


def _gpus_of(o: dict, prog: str) -> dict[str, object]:
    """GPU counts from option values that may be numbers already (parse_srun's) or texts."""
    out: dict[str, object] = {}
    for key in ("gpus", "gpus-per-node", "gpus-per-task"):
        val = o.get(key)
        out[key] = parse_gpus(val, prog)[0] if isinstance(val, str) else val
    if out["gpus-per-node"] is None and isinstance(o.get("gres"), str):
        out["gpus-per-node"] = parse_gres(o["gres"], prog)[0]
    return out


# ====================================================================== srun
def parse_srun(argv: list[str], *, env: dict[str, str], cwd: str, prog: str = "srun") -> dict:
    """srun's command line -> a dict:

    * `opts`: checked option values keyed by long option name (flags: True; `help`, `usage`,
      `version`, `label`, `jobid`, ... present only when given), suitable for `build_submit`;
    * `command`: the program and its arguments (everything from the first non-option on);
    * convenience fields: `nodes_min`, `nodes_max`, `ntasks`, `ntasks_per_node`,
      `cpus_per_task`, `time_limit`, `gpus`, `gpus_per_node`, `gpus_per_task`, `mem_per_node`,
      `mem_per_cpu`, `label`, `unbuffered`, `kill_on_bad_exit`, `pty`, `overlap`, `exclusive`,
      `jobid`, `name`, `partition`, `workdir`, `stdout`, `stderr`, `stdin`, `mpi`, `cpu_bind`,
      `environment` (after --export), `quiet`, `verbose`, `ignored`, `info`.

    Input variables (SLURM_NTASKS, SLURM_JOB_ID, SRUN_CPUS_PER_TASK, ...) come first, the
    command line overrides them.  No command: `srun: fatal: No command given to execute.` (1).
    """
    ctx = _Ctx(prog, cwd, None, ("gpu",))
    tbl = _table("srun")
    state = _State()
    _apply_env(state, ctx, env, _SRUN_ENV, tbl, "SLURM_DEBUG")
    g = _Getopt(prog, argv, tbl)
    for key, val, _ in g:
        state.apply(ctx, key, val)
        if key in ("help", "usage", "version"):
            return {"opts": {key: True}, "command": [], "ignored": [], "info": []}
    command = argv[g.optind:]
    info: list[str] = []
    _check_counts(prog, state, info)
    o = state.values
    if not command:
        raise OptError([f"{prog}: fatal: No command given to execute."], 1, fixed=True)
    gpus = _resolved_gpus(ctx, state)
    for key in ("gpus", "gpus-per-node", "gpus-per-task"):
        if gpus.get(key) is not None:
            o[key] = gpus[key]
        else:
            o.pop(key, None)
    o.pop("gres", None)
    nodes = o.get("nodes")
    lo, hi = nodes if isinstance(nodes, tuple) else (None, None)
    out = {
        "opts": o, "command": command, "ignored": _ignored(state, _SRUN_USED), "info": info,
        "nodes_min": lo, "nodes_max": hi or None, "ntasks": o.get("ntasks"),
        "ntasks_per_node": o.get("ntasks-per-node"), "cpus_per_task": o.get("cpus-per-task"),
        "time_limit": o.get("time"), "gpus": o.get("gpus") or None, "gpus_per_node": o.get("gpus-per-node") or None,
        "gpus_per_task": o.get("gpus-per-task") or None, "mem_per_node": o.get("mem"),
        "mem_per_cpu": o.get("mem-per-cpu"), "label": bool(o.get("label")), "unbuffered": bool(o.get("unbuffered")),
        "kill_on_bad_exit": bool(o.get("kill-on-bad-exit")), "pty": bool(o.get("pty")),
        "overlap": "overlap" in o, "exclusive": o.get("exclusive"), "jobid": o.get("jobid"),
        "name": o.get("job-name"), "partition": o.get("partition"), "workdir": o.get("chdir") or cwd,
        "stdout": o.get("output"), "stderr": o.get("error"), "stdin": o.get("input"), "mpi": o.get("mpi"),
        "cpu_bind": o.get("cpu-bind"),
        "environment": export_environment(o["export"] if isinstance(o.get("export"), str) else None, env),
        "quiet": state.quiet, "verbose": state.verbose,
    }
    return out


# ====================================================================== help texts
_SBATCH_USAGE = """Usage: sbatch [-N nnodes] [-n ntasks]
              [-c ncpus] [-r n] [-p partition] [--hold] [--parsable] [-t minutes]
              [-D path] [--no-kill] [--overcommit]
              [--input file] [--output file] [--error file]
              [--time-min=minutes] [--licenses=names] [--clusters=cluster_names]
              [--chdir=directory] [--oversubscribe] [-m dist] [-J jobname]
              [--verbose] [--gid=group] [--uid=user]
              [--contiguous] [--mincpus=n] [--mem=MB] [--tmp=MB] [-C list]
              [--account=name] [--dependency=type:jobid[+time]] [--comment=name]
              [--mail-type=type] [--mail-user=user] [--nice[=value]] [--wait]
              [--requeue] [--no-requeue] [--ntasks-per-node=n] [--propagate]
              [--nodefile=file] [--nodelist=hosts] [--exclude=hosts]
              [--network=type] [--mem-per-cpu=MB] [--qos=qos] [--gres=list]
              [--mem-bind=...] [--reservation=name] [--mcs-label=mcs]
              [--cpu-freq=min[-max[:gov]]] [--power=flags] [--gres-flags=opts]
              [--switches=max-switches{@max-time-to-wait}] [--reboot]
              [--core-spec=cores] [--thread-spec=threads]
              [--bb=burst_buffer_spec] [--bbf=burst_buffer_file]
              [--array=index_values] [--profile=...] [--ignore-pbs] [--spread-job]
              [--export[=names]] [--export-file=file|fd] [--delay-boot=mins]
              [--use-min-nodes]
              [--cpus-per-gpu=n] [--gpus=n] [--gpu-bind=...] [--gpu-freq=...]
              [--gpus-per-node=n] [--gpus-per-socket=n] [--gpus-per-task=n]
              [--mem-per-gpu=MB]
              executable [args...]
"""

_SBATCH_HELP = """Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]

Parallel run options:
  -a, --array=indexes         job array index values
  -A, --account=name          charge job to specified account
      --bb=<spec>             burst buffer specifications
      --bbf=<file_name>       burst buffer specification file
  -b, --begin=time            defer job until HH:MM MM/DD/YY
      --comment=name          arbitrary comment
      --cpu-freq=min[-max[:gov]] requested cpu frequency (and governor)
  -c, --cpus-per-task=ncpus   number of cpus required per task
  -d, --dependency=type:jobid[:time] defer job until condition on jobid is satisfied
      --deadline=time         remove the job if no ending possible before
                              this deadline (start > (deadline - time[-min]))
      --delay-boot=mins       delay boot for desired node features
  -D, --chdir=directory       set working directory for batch script
  -e, --error=err             file for batch script's standard error
      --export[=names]        specify environment variables to export
      --export-file=file|fd   specify environment variables file or file
                              descriptor to export
      --get-user-env          load environment from local cluster
      --gid=group_id          group ID to run job as (user root only)
      --gres=list             required generic resources
      --gres-flags=opts       flags related to GRES management
  -H, --hold                  submit job in held state
      --ignore-pbs            Ignore #PBS and #BSUB options in the batch script
  -i, --input=in              file for batch script's standard input
  -J, --job-name=jobname      name of job
  -k, --no-kill               do not kill job on node failure
  -L, --licenses=names        required license, comma separated
  -M, --clusters=names        Comma separated list of clusters to issue
                              commands to.  Default is current cluster.
                              Name of 'all' will submit to run on all clusters.
                              NOTE: SlurmDBD must up.
      --container             Path to OCI container bundle
  -m, --distribution=type     distribution method for processes to nodes
                              (type = block|cyclic|arbitrary)
      --mail-type=type        notify on state change: BEGIN, END, FAIL or ALL
      --mail-user=user        who to send email notification for job state
                              changes
      --mcs-label=mcs         mcs label if mcs plugin mcs/group is used
  -n, --ntasks=ntasks         number of tasks to run
      --nice[=value]          decrease scheduling priority by value
      --no-requeue            if set, do not permit the job to be requeued
      --ntasks-per-node=n     number of tasks to invoke on each node
  -N, --nodes=N               number of nodes on which to run (N = min[-max])
  -o, --output=out            file for batch script's standard output
  -O, --overcommit            overcommit resources
  -p, --partition=partition   partition requested
      --parsable              outputs only the jobid and cluster name (if present),
                              separated by semicolon, only on successful submission.
      --power=flags           power management options
      --priority=value        set the priority of the job to value
      --profile=value         enable acct_gather_profile for detailed data
                              value is all or none or any combination of
                              energy, lustre, network or task
      --propagate[=rlimits]   propagate all [or specific list of] rlimits
  -q, --qos=qos               quality of service
  -Q, --quiet                 quiet mode (suppress informational messages)
      --reboot                reboot compute nodes before starting job
      --requeue               if set, permit the job to be requeued
  -s, --oversubscribe         over subscribe resources with other jobs
  -S, --core-spec=cores       count of reserved cores
      --signal=[[R][B]:]num[@time] send signal when time limit within time seconds
      --spread-job            spread job across as many nodes as possible
      --switches=max-switches{@max-time-to-wait}
                              Optimum switches and max time to wait for optimum
      --thread-spec=threads   count of reserved threads
  -t, --time=minutes          time limit
      --time-min=minutes      minimum time limit (if distinct)
      --uid=user_id           user ID to run job as (user root only)
      --use-min-nodes         if a range of node counts is given, prefer the
                              smaller count
  -v, --verbose               verbose mode (multiple -v's increase verbosity)
  -W, --wait                  wait for completion of submitted job
      --wckey=wckey           wckey to run job under
      --wrap[=command string] wrap command string in a sh script and submit

Constraint options:
      --cluster-constraint=[!]list specify a list of cluster constraints
      --contiguous            demand a contiguous range of nodes
  -C, --constraint=list       specify a list of constraints
  -F, --nodefile=filename     request a specific list of hosts
      --mem=MB                minimum amount of real memory
      --mincpus=n             minimum number of logical processors (threads)
                              per node
      --reservation=name      allocate resources from named reservation
      --tmp=MB                minimum amount of temporary disk
  -w, --nodelist=hosts...     request a specific list of hosts
  -x, --exclude=hosts...      exclude a specific list of hosts

Consumable resources related options:
      --exclusive[=user]      allocate nodes in exclusive mode when
                              cpu consumable resource is enabled
      --exclusive[=mcs]       allocate nodes in exclusive mode when
                              cpu consumable resource is enabled
                              and mcs plugin is enabled
      --mem-per-cpu=MB        maximum amount of real memory per allocated
                              cpu required by the job.
                              --mem >= --mem-per-cpu if --mem is specified.

Affinity/Multi-core options: (when the task/affinity plugin is enabled)
                              For the following 4 options, you are
                              specifying the minimum resources available for
                              the node(s) allocated to the job.
      --sockets-per-node=S    number of sockets per node to allocate
      --cores-per-socket=C    number of cores per socket to allocate
      --threads-per-core=T    number of threads per core to allocate
  -B  --extra-node-info=S[:C[:T]]  combine request of sockets per node,
                              cores per socket and threads per core.
                              Specify an asterisk (*) as a placeholder,
                              a minimum value, or a min-max range.

      --ntasks-per-core=n     number of tasks to invoke on each core
      --ntasks-per-socket=n   number of tasks to invoke on each socket

GPU scheduling options:
      --cpus-per-gpu=n        number of CPUs required per allocated GPU
  -G, --gpus=n                count of GPUs required for the job
      --gpu-bind=...          task to gpu binding options
      --gpu-freq=...          frequency and voltage of GPUs
      --gpus-per-node=n       number of GPUs required per allocated node
      --gpus-per-socket=n     number of GPUs required per allocated socket
      --gpus-per-task=n       number of GPUs required per spawned task
      --mem-per-gpu=n         real memory required per allocated GPU

Help options:
  -h, --help                  show this help message
      --usage                 display brief usage message

Other options:
  -V, --version               output version information and exit

"""


def help_text(prog: str = "sbatch") -> str:
    """What `sbatch --help` prints (Slurm 22.05.8's text); a one-line usage for other programs."""
    if prog == "sbatch":
        return _SBATCH_HELP
    return f"Usage: {prog} [OPTIONS(0)... [executable(0) [args(0)...]]] [ : [OPTIONS(N)...]] executable(N) [args(N)...]\n"


def usage_text(prog: str = "sbatch") -> str:
    """What `sbatch --usage` prints."""
    return _SBATCH_USAGE if prog == "sbatch" else help_text(prog)
