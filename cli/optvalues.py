"""Option values as sbatch and srun check them (each validator refuses with Slurm's words), the
state options build up (#SBATCH lines < SBATCH_* variables < the command line), and the checks
made once all options are in."""

from __future__ import annotations

from ..common.grammar import (
    NICE_MAX,
    NO_VAL32,
    OptError,
    atoi,
    digits,
    opt_error,
    parse_gpus,
    parse_gres,
    parse_int,
    parse_mem,
    parse_nodes,
    parse_signal,
    strtol,
)
from .getopt import NO_ARG, Table

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing/collections.abc would cost start-up time
    from collections.abc import Callable
    from typing import Any

    _Validator = Callable[["Ctx", "str | None"], object]


# ====================================================================== option values
class Ctx:
    """What option handlers need besides the value."""

    __slots__ = ("prog", "cwd", "now", "gres_types")

    def __init__(self, prog: str, cwd: str, now: float | None, gres_types: tuple[str, ...]):
        self.prog, self.cwd, self.now, self.gres_types = prog, cwd, now, gres_types


_MAIL_TYPES = {"NONE", "BEGIN", "END", "FAIL", "REQUEUE", "ALL", "INVALID_DEPEND", "STAGE_OUT", "TIME_LIMIT",
               "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50", "ARRAY_TASKS"}
_HINTS = {"compute_bound", "memory_bound", "multithread", "nomultithread", "help"}
_PROFILES = {"all", "none", "energy", "lustre", "network", "task"}
_ACCTG = {"task", "energy", "network", "filesystem"}


# the time parsers (common/slurmtime) are imported by the validators that call them: most submissions
# give no time option, and the module is a good part of sbatch's own import time
def _v_time(option: str) -> _Validator:
    def check(c: Ctx, v: str | None) -> object:
        from ..common.slurmtime import parse_time
        return parse_time(v or "", c.prog, option=option)
    return check


def _v_mem(option: str) -> _Validator:
    return lambda c, v: parse_mem(v or "", c.prog, option=option)


def _v_int(option: str, positive: bool = True) -> _Validator:
    return lambda c, v: parse_int(c.prog, option, v or "", positive)


def _v_begin(option: str) -> _Validator:
    def check(c: Ctx, v: str | None) -> object:
        from ..common.slurmtime import parse_begin
        return parse_begin(v or "", c.now, prog=c.prog, option=option)
    return check


def _v_exclusive(c: Ctx, v: str | None) -> str:
    if not v:
        return "exclusive"
    mode = v.lower()
    if mode not in ("exclusive", "user", "mcs", "oversubscribe"):
        raise opt_error(c.prog, "Invalid --exclusive specification", 255)
    return mode


def _v_open_mode(c: Ctx, v: str | None) -> str:
    first = (v or " ")[0]
    if first in "aA":
        return "append"
    if first in "tT":
        return "truncate"
    raise opt_error(c.prog, "Invalid --open-mode specification", 255)


def _v_nice(c: Ctx, v: str | None) -> int:
    if not v:           # `--nice` and `--nice=` alike
        return 100
    n = strtol(v)[0]
    if abs(n) > NICE_MAX:
        raise opt_error(c.prog, f"Invalid --nice value, out of range (+/- {NICE_MAX})", 255)
    return n


def _v_signal(c: Ctx, v: str | None) -> str:
    parse_signal(v or "", c.prog)
    return v or ""


def _v_kill_inv(c: Ctx, v: str | None) -> bool:
    low = (v or "").lower()
    if low not in ("yes", "no"):
        raise opt_error(c.prog, "Invalid --kill-on-invalid-dep specification", 255)
    return low == "yes"


def _v_no_kill(c: Ctx, v: str | None) -> bool:
    low = (v or "").lower()
    if low in ("", "set"):
        return True
    if low in ("off", "no"):
        return False
    raise opt_error(c.prog, "Invalid --no-kill specification", 255)


def _v_mail_type(c: Ctx, v: str | None) -> str:
    for t in (v or "").split(","):
        if t.upper() not in _MAIL_TYPES:
            raise opt_error(c.prog, "Invalid --mail-type specification", 255)
    return v or ""


def _v_hint(c: Ctx, v: str | None) -> str:
    for t in (v or "").split(","):
        if t.lower() not in _HINTS:
            raise opt_error(c.prog, f'unrecognized --hint argument "{t}", see --hint=help', 1)
    return v or ""


def _v_profile(c: Ctx, v: str | None) -> str:
    for t in (v or "").split(","):
        if t.lower() not in _PROFILES:
            raise opt_error(c.prog, f"invalid --profile={v} option", 255)
    return v or ""


def _v_acctg(c: Ctx, v: str | None) -> str:
    for t in (v or "").split(","):
        kind, eq, num = t.partition("=")
        if not (digits(t) or (eq and kind.lower() in _ACCTG and digits(num))):
            raise opt_error(c.prog, f"Invalid --acctg-freq specification: {v}", 255)
    return v or ""


def _v_distribution(c: Ctx, v: str | None) -> str:
    spec, _, pack = (v or "").partition(",")
    levels = spec.split(":")
    first = levels[0].lower()
    ok = (first in ("block", "cyclic", "arbitrary", "*") or (first.startswith("plane=") and digits(first[6:]))
          ) and len(levels) <= 3 and all(x.lower() in ("block", "cyclic", "fcyclic", "*") for x in levels[1:])
    if not ok or (pack and pack.lower() not in ("pack", "nopack")):
        raise opt_error(c.prog, "Invalid --distribution specification", 255)
    return v or ""


def _v_get_user_env(c: Ctx, v: str | None) -> str | None:
    if v:
        body = v[:-1] if v[-1] in "SLsl" else v
        if body and not digits(body):
            raise opt_error(c.prog, "Invalid --get-user-env specification", 255)
    return v


def _v_delay_boot(c: Ctx, v: str | None) -> int:
    from ..common.slurmtime import time_str2secs
    secs = time_str2secs(v or "")
    if secs == NO_VAL32:
        raise opt_error(c.prog, "Invalid --delay-boot specification", 255)
    return secs


def _v_switches(c: Ctx, v: str | None) -> str:
    count, _, _ = (v or "").partition("@")
    parse_int(c.prog, "--switches", count, False)
    return v or ""


def _v_uid(c: Ctx, v: str | None) -> int:
    return _lookup_id(c.prog, "uid", v or "")


def _v_gid(c: Ctx, v: str | None) -> int:
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


def _v_gres(c: Ctx, v: str | None) -> str:
    return v or ""    # checked at the end, as sbatch does (names against the configured GRES)


def _v_gpus(c: Ctx, v: str | None) -> str:
    return v or ""    # counts are slurmctld's check: at the end


def _v_chdir(c: Ctx, v: str | None) -> str:
    v = v or ""
    return v if v.startswith("/") else c.cwd.rstrip("/") + "/" + v


def _v_jobid(c: Ctx, v: str | None) -> int:
    return parse_int(c.prog, "--jobid", (v or "").split(".")[0], True)


def _v_kill_bad_exit(c: Ctx, v: str | None) -> bool:
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


def _v_extra_node_info(c: Ctx, v: str | None) -> str:
    """`-B sockets[:cores[:threads]]` (verify_socket_core_thread_count); a fourth field is ignored."""
    parts = (v or "").split(":")
    for part, nth in zip(parts, ("first", "second", "third")):
        _resource_range(c.prog, part, f"{nth} arg of -B")
    return v or ""


def _v_wait_all_nodes(c: Ctx, v: str | None) -> int:
    n = parse_int(c.prog, "--wait-all-nodes", v or "", False)
    if n > 1:
        raise opt_error(c.prog, "Invalid --wait-all-nodes specification", 255)
    return n


def _v_gres_flags(c: Ctx, v: str | None) -> str:
    if (v or "").lower() not in ("enforce-binding", "disable-binding"):
        raise opt_error(c.prog, "Invalid --gres-flags specification", 255)
    return v or ""


def _v_wait(c: Ctx, v: str | None) -> object:
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
              "multi-prog", "no-allocate", "preserve-env", "pty", "quit-on-interrupt", "unbuffered", "whole",
              "bell", "no-bell", "no-shell"}

# Options that change what slurmlet does; every other accepted option goes to `ignored`.
SBATCH_USED = {
    "account", "array", "begin", "chdir", "clusters", "comment", "cpus-per-task", "dependency", "error",
    "exclusive", "export", "gpus", "gpus-per-node", "gpus-per-task", "gres", "help", "hold", "input",
    "job-name", "kill-on-invalid-dep", "mem", "mem-per-cpu", "nice", "no-requeue", "nodelist", "nodes",
    "ntasks", "ntasks-per-node", "open-mode", "output", "oversubscribe", "parsable", "partition", "qos",
    "quiet", "requeue", "signal", "test-only", "time", "usage", "verbose", "version", "wait", "wrap",
    "exclude",
}
SRUN_USED = {
    "account", "chdir", "cpu-bind", "cpus-per-task", "dependency", "error", "exclude", "exclusive", "export",
    "gpus", "gpus-per-node", "gpus-per-task", "gres", "help", "hold", "input", "job-name", "jobid",
    "kill-on-bad-exit", "label", "mem", "mem-per-cpu", "mpi", "nodelist", "nodes", "ntasks",
    "ntasks-per-node", "output", "overlap", "partition", "pty", "qos", "quiet", "time", "unbuffered", "usage",
    "verbose", "version", "open-mode", "begin", "comment", "signal", "nice", "clusters", "immediate",
}
SALLOC_USED = {
    "account", "begin", "chdir", "clusters", "comment", "cpus-per-task", "dependency", "exclude", "exclusive",
    "gpus", "gpus-per-node", "gpus-per-task", "gres", "help", "hold", "job-name", "kill-command", "mem",
    "mem-per-cpu", "nice", "no-shell", "nodelist", "nodes", "ntasks", "ntasks-per-node", "oversubscribe",
    "partition", "qos", "quiet", "signal", "time", "usage", "verbose", "version", "immediate",
}

# SBATCH_* input variables in sbatch's table order -> option key (None: handled specially).
SBATCH_ENV = (
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
SRUN_ENV = (
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

# SALLOC_* input variables (salloc(1), INPUT ENVIRONMENT VARIABLES) -> option key
SALLOC_ENV = (
    ("SALLOC_ACCOUNT", "account"), ("SALLOC_ACCTG_FREQ", "acctg-freq"), ("SALLOC_BELL", "bell"),
    ("SALLOC_BURST_BUFFER", "bb"), ("SALLOC_CLUSTER_CONSTRAINT", "cluster-constraint"),
    ("SALLOC_CLUSTERS", "clusters"), ("SLURM_CLUSTERS", "clusters"), ("SALLOC_CONSTRAINT", "constraint"),
    ("SALLOC_CONTAINER", "container"), ("SALLOC_CORE_SPEC", "core-spec"), ("SALLOC_CPUS_PER_GPU", "cpus-per-gpu"),
    ("SALLOC_DEBUG", None), ("SALLOC_DELAY_BOOT", "delay-boot"), ("SALLOC_EXCLUSIVE", "exclusive"),
    ("SALLOC_GPUS", "gpus"), ("SALLOC_GPU_BIND", "gpu-bind"), ("SALLOC_GPU_FREQ", "gpu-freq"),
    ("SALLOC_GPUS_PER_NODE", "gpus-per-node"), ("SALLOC_GPUS_PER_TASK", "gpus-per-task"), ("SALLOC_GRES", "gres"),
    ("SALLOC_GRES_FLAGS", "gres-flags"), ("SLURM_HINT", "hint"), ("SALLOC_HINT", "hint"),
    ("SALLOC_IMMEDIATE", "immediate"), ("SALLOC_KILL_CMD", "kill-command"), ("SALLOC_MEM_BIND", "mem-bind"),
    ("SALLOC_MEM_PER_CPU", "mem-per-cpu"), ("SALLOC_MEM_PER_GPU", "mem-per-gpu"), ("SALLOC_MEM_PER_NODE", "mem"),
    ("SALLOC_NETWORK", "network"), ("SALLOC_NO_BELL", "no-bell"), ("SALLOC_NO_KILL", "no-kill"),
    ("SALLOC_OVERCOMMIT", "overcommit"), ("SALLOC_PARTITION", "partition"), ("SALLOC_POWER", "power"),
    ("SALLOC_PROFILE", "profile"), ("SALLOC_QOS", "qos"), ("SALLOC_REQ_SWITCH", "switches"),
    ("SALLOC_RESERVATION", "reservation"), ("SALLOC_SIGNAL", "signal"), ("SALLOC_SPREAD_JOB", "spread-job"),
    ("SALLOC_THREAD_SPEC", "thread-spec"), ("SALLOC_THREADS_PER_CORE", "threads-per-core"),
    ("SALLOC_TIMELIMIT", "time"), ("SALLOC_USE_MIN_NODES", "use-min-nodes"),
    ("SALLOC_WAIT_ALL_NODES", "wait-all-nodes"), ("SALLOC_WAIT4SWITCH", "wait4switch"), ("SALLOC_WCKEY", "wckey"),
)


def _env_flag_true(v: str) -> bool:
    """How sbatch/srun read a flag variable (SBATCH_WAIT, SBATCH_REQUEUE...): empty, `yes` or a
    non-zero number sets it; anything else (`0`, `no`, `true`) leaves it unset."""
    return v == "" or v.lower() == "yes" or atoi(v) != 0


class State:
    """Options collected so far: canonical value, raw text and origin ("cli" covers directives
    too, as in Slurm's slurm_option_set_by_cli) per key; verbosity counts."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}  #: each key's value as its validator made it (str, int, dict...)
        self.raw: dict[str, str | None] = {}
        self.src: dict[str, str] = {}
        self.seq: dict[str, int] = {}
        self.n = 0
        self.verbose = 0
        self.quiet = 0

    def apply(self, ctx: Ctx, key: str, val: str | None, src: str = "cli") -> None:
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


def apply_env(state: State, ctx: Ctx, env: dict[str, str], table: tuple, tbl: Table,
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
        if arity[key] == NO_ARG:
            if _env_flag_true(val):
                state.apply(ctx, key, None, "env")
            continue
        state.apply(ctx, key, val, "env")


# ====================================================================== checks after all options
def _check_memory(prog: str, st: State) -> None:
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


def check_counts(prog: str, st: State, info: list[str]) -> None:
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
        per_node = v.get("ntasks-per-node")
        if prog == "srun" and isinstance(per_node, int) and lo > 0 and per_node != n // lo:
            # (sbatch and salloc keep it: the controller refuses -n above it times the nodes)
            if n > per_node:
                info.append(f"srun: Warning: can't honor --ntasks-per-node set to {per_node} which doesn't match "
                            f"the requested tasks {n} with the number of requested nodes {lo}. Ignoring "
                            f"--ntasks-per-node.")
            del v["ntasks-per-node"]


def _check_gres(ctx: Ctx, st: State) -> tuple[int | None, str | None]:
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


def resolved_gpus(ctx: Ctx, st: State) -> dict[str, object]:
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
