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

from ..common.grammar import (
    BATCH_STEP_ID,
    CSPACE,
    MAX_ARRAY_SIZE,
    NICE_MAX,
    NO_VAL,
    NO_VAL32,
    SIGNALS,
    OptError,
    atoi,
    compress_indexes,
    dependency_job_ids,
    digits,
    format_array,
    is_ws,
    opt_error,
    parse_array,
    parse_dependency,
    parse_gpus,
    parse_gres,
    parse_int,
    parse_mem,
    parse_nodes,
    parse_signal,
    refused,
    strtol,
)
from ..common.patterns import default_output, expand_pattern
from ..common.slurmtime import (
    format_elapsed,
    format_secs_hms,
    format_time,
    format_time_hms,
    parse_begin,
    parse_time,
    time_str2secs,
)

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


# ====================================================================== #SBATCH directives
def _directive_tokens(rest: str, label: str, lineno: int, prog: str, raw: list[str] | None = None) -> list[str]:
    """sbatch's _get_argument() loop over the text after `#SBATCH` on one line; `raw` receives
    each argument as written (quotes and backslashes included)."""
    out: list[str] = []
    i, n = 0, len(rest)
    while i < n and rest[i] in CSPACE:   # the text shown for an unmatched quote in the first
        i += 1                            # argument starts at the argument itself, later ones
    while True:                           # include the blanks before them (as sbatch prints)
        start = i
        while i < n and rest[i] in CSPACE:
            i += 1
        if i >= n:
            return out
        arg: list[str] = []
        quoted = esc = False
        q = ""
        while i < n and (quoted or rest[i] not in CSPACE) and rest[i] != "\n":
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
            raw.append(rest[start:i].lstrip(CSPACE))


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
            stripped = line.lstrip(CSPACE)
            if stripped and stripped[0] != "#":
                break
            continue
        written: list[str] = []
        args.extend(_directive_tokens(rest, label, lineno, prog, written))
        if any(w.lower() in ("hetjob", "packjob") for w in written):
            raise _het_error(prog)
    return args


def _het_error(prog: str) -> OptError:
    return opt_error(prog, "heterogeneous jobs (hetjob, ':') are not supported by slurmlet", 1)


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
    return lambda c, v: parse_int(c.prog, option, v or "", positive)


def _v_begin(option: str) -> _Validator:
    return lambda c, v: parse_begin(v or "", c.now, prog=c.prog, option=option)


def _v_exclusive(c: _Ctx, v: str | None) -> str:
    if not v:
        return "exclusive"
    mode = v.lower()
    if mode not in ("exclusive", "user", "mcs", "oversubscribe"):
        raise opt_error(c.prog, "Invalid --exclusive specification", 255)
    return mode


def _v_open_mode(c: _Ctx, v: str | None) -> str:
    first = (v or " ")[0]
    if first in "aA":
        return "append"
    if first in "tT":
        return "truncate"
    raise opt_error(c.prog, "Invalid --open-mode specification", 255)


def _v_nice(c: _Ctx, v: str | None) -> int:
    if not v:           # `--nice` and `--nice=` alike
        return 100
    n = strtol(v)[0]
    if abs(n) > NICE_MAX:
        raise opt_error(c.prog, f"Invalid --nice value, out of range (+/- {NICE_MAX})", 255)
    return n


def _v_signal(c: _Ctx, v: str | None) -> str:
    parse_signal(v or "", c.prog)
    return v or ""


def _v_kill_inv(c: _Ctx, v: str | None) -> bool:
    low = (v or "").lower()
    if low not in ("yes", "no"):
        raise opt_error(c.prog, "Invalid --kill-on-invalid-dep specification", 255)
    return low == "yes"


def _v_no_kill(c: _Ctx, v: str | None) -> bool:
    low = (v or "").lower()
    if low in ("", "set"):
        return True
    if low in ("off", "no"):
        return False
    raise opt_error(c.prog, "Invalid --no-kill specification", 255)


def _v_mail_type(c: _Ctx, v: str | None) -> str:
    for t in (v or "").split(","):
        if t.upper() not in _MAIL_TYPES:
            raise opt_error(c.prog, "Invalid --mail-type specification", 255)
    return v or ""


def _v_hint(c: _Ctx, v: str | None) -> str:
    for t in (v or "").split(","):
        if t.lower() not in _HINTS:
            raise opt_error(c.prog, f'unrecognized --hint argument "{t}", see --hint=help', 1)
    return v or ""


def _v_profile(c: _Ctx, v: str | None) -> str:
    for t in (v or "").split(","):
        if t.lower() not in _PROFILES:
            raise opt_error(c.prog, f"invalid --profile={v} option", 255)
    return v or ""


def _v_acctg(c: _Ctx, v: str | None) -> str:
    for t in (v or "").split(","):
        kind, eq, num = t.partition("=")
        if not (digits(t) or (eq and kind.lower() in _ACCTG and digits(num))):
            raise opt_error(c.prog, f"Invalid --acctg-freq specification: {v}", 255)
    return v or ""


def _v_distribution(c: _Ctx, v: str | None) -> str:
    spec, _, pack = (v or "").partition(",")
    levels = spec.split(":")
    first = levels[0].lower()
    ok = (first in ("block", "cyclic", "arbitrary", "*") or (first.startswith("plane=") and digits(first[6:]))
          ) and len(levels) <= 3 and all(x.lower() in ("block", "cyclic", "fcyclic", "*") for x in levels[1:])
    if not ok or (pack and pack.lower() not in ("pack", "nopack")):
        raise opt_error(c.prog, "Invalid --distribution specification", 255)
    return v or ""


def _v_get_user_env(c: _Ctx, v: str | None) -> str | None:
    if v:
        body = v[:-1] if v[-1] in "SLsl" else v
        if body and not digits(body):
            raise opt_error(c.prog, "Invalid --get-user-env specification", 255)
    return v


def _v_delay_boot(c: _Ctx, v: str | None) -> int:
    secs = time_str2secs(v or "")
    if secs == NO_VAL32:
        raise opt_error(c.prog, "Invalid --delay-boot specification", 255)
    return secs


def _v_switches(c: _Ctx, v: str | None) -> str:
    count, _, _ = (v or "").partition("@")
    parse_int(c.prog, "--switches", count, False)
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
            return pwd.getpwuid(int(v)).pw_uid if digits(v) else pwd.getpwnam(v).pw_uid
        import grp
        return grp.getgrgid(int(v)).gr_gid if digits(v) else grp.getgrnam(v).gr_gid
    except (KeyError, ImportError, OverflowError):
        raise opt_error(prog, f"Invalid --{which} specification", 255) from None


def _v_gres(c: _Ctx, v: str | None) -> str:
    return v or ""    # checked at the end, as sbatch does (names against the configured GRES)


def _v_gpus(c: _Ctx, v: str | None) -> str:
    return v or ""    # counts are slurmctld's check: at the end


def _v_chdir(c: _Ctx, v: str | None) -> str:
    v = v or ""
    return v if v.startswith("/") else c.cwd.rstrip("/") + "/" + v


def _v_jobid(c: _Ctx, v: str | None) -> int:
    return parse_int(c.prog, "--jobid", (v or "").split(".")[0], True)


def _v_kill_bad_exit(c: _Ctx, v: str | None) -> bool:
    return True if v is None else parse_int(c.prog, "--kill-on-bad-exit", v, False) != 0


def _resource_range(prog: str, arg: str, what: str) -> tuple[int, int]:
    """Slurm's get_resource_arg_range(): `*`/empty (any), `N` or `MIN-MAX`, k/m suffixes;
    `<prog>: error: Invalid numeric value "ARG" for WHAT.` (exit 1)."""
    if not arg or arg[0] == "*":
        return 1, 0x7FFFFFFF

    def num(i: int) -> tuple[int, int]:
        v, end = strtol(arg, i)
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
    n = parse_int(c.prog, "--wait-all-nodes", v or "", False)
    if n > 1:
        raise opt_error(c.prog, "Invalid --wait-all-nodes specification", 255)
    return n


def _v_gres_flags(c: _Ctx, v: str | None) -> str:
    if (v or "").lower() not in ("enforce-binding", "disable-binding"):
        raise opt_error(c.prog, "Invalid --gres-flags specification", 255)
    return v or ""


def _v_wait(c: _Ctx, v: str | None) -> object:
    # sbatch's -W is a flag; srun's -W/--wait=<seconds> takes a number
    return True if v is None else parse_int(c.prog, "--wait", v, False)


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
    return v == "" or v.lower() == "yes" or atoi(v) != 0


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
                state.verbose = max(0, atoi(val))
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
        raise opt_error(prog, "don't specify both --verbose (-v) and --quiet (-Q)", 1)
    _check_memory(prog, st)
    if isinstance(v.get("ntasks"), int) and v["ntasks"] < 0:
        raise opt_error(prog, f"invalid number of tasks (-n {v['ntasks']})", 1)
    if isinstance(v.get("cpus-per-task"), int) and v["cpus-per-task"] < 0:
        raise opt_error(prog, f"invalid number of cpus per task (-c {v['cpus-per-task']})", 1)
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
        raise opt_error(prog, "Batch script is empty!", 1)
    if is_ws(text):
        raise opt_error(prog, "Batch script contains only whitespace!", 1)
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
        error_exit = atoi(env["SLURM_EXIT_ERROR"])
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
        raise opt_error(prog, "Script arguments not permitted with --wrap option", 1)
    # the script
    read_file = read_file or _default_read
    script_path = None
    if wrap is not None:
        script, default_name, script_args, label = _WRAP.format(wrap), "wrap", [], None
    elif rest:
        chdir = first.values.get("chdir")
        found = _find_script(rest[0], cwd, chdir if isinstance(chdir, str) else None, env, read_file)
        if found is None:
            raise opt_error(prog, f"Unable to open file {rest[0]}", 1)
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
            raise opt_error(prog, f"Invalid directive found in batch script: {dargs[dg.optind]}", 255)
    _apply_env(state, ctx, env, _SBATCH_ENV, tbl, "SBATCH_DEBUG")
    for key, val in cli_items:
        state.apply(ctx, key, val)
    _check_counts(prog, state, info)
    gpus = _resolved_gpus(ctx, state)
    v = state.values
    if str(v.get("distribution") or "").lower().startswith("arbitrary") and not v.get("nodelist"):
        raise opt_error(prog, "With Arbitrary distribution you need to specify a nodelist or hostfile with the -w "
                   "option", 1)
    if "nodes" in v and v["nodes"] == (0, 0):
        raise refused(prog, "Node count specification invalid")
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
