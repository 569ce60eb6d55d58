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
_HINTS = {"compute_bound", "memory_bound", "multithread", "nomultithread"}
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
    if "B" in parse_signal(v or "", c.prog)[2] and c.prog == "srun":  # a step has no batch shell to signal
        raise opt_error(c.prog, "Invalid --signal specification", 255)
    return v or ""


def _v_yes_no(option: str, default: str = "") -> _Validator:
    """`yes` or `no` (case aside); no value at all is `default`."""
    def check(c: Ctx, v: str | None) -> bool:
        low = (v or default).lower()
        if low not in ("yes", "no"):
            raise opt_error(c.prog, f"Invalid {option} specification", 255)
        return low == "yes"
    return check


def _v_no_kill(c: Ctx, v: str | None) -> bool:
    low = (v or "").lower()
    if low in ("", "set"):
        return True
    if low in ("off", "no"):
        return False
    raise opt_error(c.prog, "Invalid --no-kill specification", 255)


def _v_mail_type(c: Ctx, v: str | None) -> str:
    # 22.05 sets the events it knows among the comma-separated words and passes over the others:
    # a value is refused only where no word is one (NONE among them)
    if not any(t.upper() in _MAIL_TYPES for t in (v or "").split(",")):
        raise opt_error(c.prog, "Invalid --mail-type specification", 255)
    return v or ""


#: the limits --propagate names, as 22.05 spells them (case and all; `RLIMIT_` before one is taken too)
RLIMITS = ("AS", "CORE", "CPU", "DATA", "FSIZE", "MEMLOCK", "NOFILE", "NPROC", "RSS", "STACK")


def _v_propagate(c: Ctx, v: str | None) -> str:
    """`--propagate[=ALL|NONE|NAME[,NAME...]]`; no value or an empty one is ALL."""
    if not v or v in ("ALL", "NONE"):
        return v or "ALL"
    for t in v.split(","):
        name = t[7:] if t.startswith("RLIMIT_") else t
        if t and name not in RLIMITS:
            raise OptError([f"{c.prog}: error: Bad rlimit name: {name}",
                            f"{c.prog}: error: --propagate={v} is not valid."], 1)
    return v


#: --mem-bind's words (case aside) besides the map_mem/mask_mem lists
_MEM_BIND_WORDS = {"p", "prefer", "nosort", "sort", "q", "quiet", "v", "verbose", "no", "none", "rank", "local"}
MEM_BIND_HELP = """Memory bind options:
    --mem-bind=         Bind memory to locality domains (ldom)
        nosort          avoid sorting pages at startup
        sort            sort pages at startup
        q[uiet]         quietly bind before task runs (default)
        v[erbose]       verbosely report binding before task runs
        no[ne]          don't bind tasks to memory (default)
        rank            bind by task rank
        local           bind to memory local to processor
        map_mem:<list>  specify a memory binding for each task
                        where <list> is <cpuid1>,<cpuid2>,...<cpuidN>
        mask_mem:<list> specify a memory binding mask for each tasks
                        where <list> is <mask1>,<mask2>,...<maskN>
        help            show this help message"""


def _bad_digit(item: str, mask: bool) -> str:
    """The first character that is no digit of a map list's decimal number or a mask list's hex one
    (`0x` or not); empty where there is none."""
    body = item[2:] if mask and item[:2].lower() == "0x" else item
    ok = "0123456789abcdefABCDEF" if mask else "0123456789"
    return next((ch for ch in body if ch not in ok), "")


def _is_value(s: str) -> bool:
    """Slurm's _isvalue(): does a list value (decimal, or hex with or without 0x) start here?"""
    if s[:1].isdigit():
        return True
    rest = s.lstrip("0123456789abcdefABCDEF")
    return rest[:1] in ("", ",")


def _v_mem_bind(c: Ctx, v: str | None) -> str:
    """`--mem-bind=[{quiet|verbose},]TYPE` as 22.05 reads it: a comma not followed by a value ends a
    word (so `map_mem:0,1` keeps its list); `help` prints the list of types (exit 255)."""
    v = v or ""
    buf = "".join(";" if ch == "," and not _is_value(v[i + 1:]) else ch for i, ch in enumerate(v))
    words = [w for w in buf.split(";") if w] or [""]
    for w in words:
        low = w.lower()
        if low == "help":
            raise OptError(MEM_BIND_HELP.split("\n"), 255, stdout=True)
        if low in _MEM_BIND_WORDS:
            continue
        kind = "map_mem" if low.startswith(("map_mem", "mapmem")) else \
            "mask_mem" if low.startswith(("mask_mem", "maskmem")) else None
        if kind is None:
            raise opt_error(c.prog, f'unrecognized --mem-bind argument "{w}"', 255)
        cut = min((i for i in (w.find(":"), w.find("=")) if i >= 0), default=len(w))
        listed = w[cut + 1:].split(":")[0].split("=")[0]
        if not listed:
            raise opt_error(c.prog, f'missing list for "--mem-bind={kind}:<list>"', 255)
        for item in listed.split(","):
            bad = _bad_digit(item, kind == "mask_mem")
            if bad:
                raise opt_error(c.prog, f"Failed to validate number: {item}, the offending character is {bad}", 255)
    return v


HINT_HELP = """Application hint options:
    --hint=             Bind tasks according to application hints
        compute_bound   use all cores in each socket
        memory_bound    use only one core in each socket
        [no]multithread [don't] use extra threads with in-core multi-threading
        help            show this help message"""


def _v_hint(c: Ctx, v: str | None) -> str:
    for t in (v or "").split(","):
        if t.lower() == "help":  # the list, on standard output, and the command ends there (exit 1)
            raise OptError(HINT_HELP.split("\n"), 1, stdout=True)
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
        if t and not (digits(t) or (eq and kind.lower() in _ACCTG and digits(num))):
            raise opt_error(c.prog, f"Invalid --acctg-freq specification: {t}", 255)
    return v or ""


#: --distribution's first level (case aside) and the levels after it; `hostfile` is `arbitrary`
_DIST_FIRST = {"block": "block", "cyclic": "cyclic", "arbitrary": "arbitrary", "hostfile": "arbitrary",
               "*": "*", "pack": "*", "nopack": "*"}
_DIST_LEVELS = ("block", "cyclic", "fcyclic", "*", "")


def _v_distribution(c: Ctx, v: str | None) -> str:
    """`-m plane=N` (the whole value), or `DIST[:DIST[:DIST]][,Pack|NoPack]` as 22.05 takes it:
    the canonical first level (`block`, `cyclic`, `arbitrary`, `*`) or `plane`."""
    v = v or ""
    if v[:5].lower() == "plane":
        size, end = strtol(v, 6)
        if v[5:6] != "=" or size <= 0 or end != len(v):
            raise OptError([f"{c.prog}: error: Invalid plane size or size not specified",
                            f"{c.prog}: error: Invalid --distribution specification"], 255)
        return "plane"
    spec, _, pack = v.partition(",")
    levels = spec.lower().split(":")
    if len(levels) == 1:
        first = _DIST_FIRST.get(levels[0])
    else:  # the levels of tasks over sockets and cores after the nodes' (`arbitrary:` has none)
        first = levels[0] if levels[0] in ("block", "cyclic", "*", "") else None
    if (first is None or len(levels) > 3 or not all(x in _DIST_LEVELS for x in levels[1:])
            or pack.lower() not in ("", "pack", "nopack")):
        raise opt_error(c.prog, "Invalid --distribution specification", 255)
    return first or "*"


#: --cpu-freq's words: frequencies as 22.05 encodes them (so `high-low` is refused as min above max), and
#: governors, each by the prefix 22.05 matches it by (case aside)
_CPU_FREQ = (("lo", 0x80000001), ("him1", 0x80000004), ("highm1", 0x80000004), ("hi", 0x80000003),
             ("med", 0x80000002))
_CPU_GOVERNORS = (("co", "Conservative"), ("perf", "Performance"), ("pow", "PowerSave"), ("user", "UserSpace"),
                  ("onde", "OnDemand"), ("sched", "SchedUtil"))
#: CpuFreqGovernors as slurm.conf leaves it by default
CPU_FREQ_GOVERNORS = ("OnDemand", "Performance", "UserSpace")


def _v_cpu_freq(c: Ctx, v: str | None) -> str:
    """`--cpu-freq={p1[-p2[:p3]]|governor}` as 22.05's cpu_freq_verify_cmdline reads it."""
    v = v or ""
    errs: list[str] = []

    def gov(word: str) -> str | None:
        return next((g for pre, g in _CPU_GOVERNORS if word[:len(pre)].lower() == pre), None)

    def freq(word: str) -> int:
        for pre, code in _CPU_FREQ:
            if word[:len(pre)].lower() == pre:
                return code
        n = strtol(word)[0] if word[:1].isdigit() else 0
        if n <= 0:
            errs.append(f'unrecognized --cpu-freq argument "{word}"')
        return n

    head, colon, p3 = v.partition(":")
    p1, dash, p2 = head.partition("-")
    g = gov(p1)
    if g is not None:
        if dash or colon:
            errs.append(f"governor cannot be specified twice {p1}{{-}}:{p3} in --cpu-freq")
    elif (lo := freq(p1)) and (not dash or (hi := freq(p2))):
        if colon and not dash:
            errs.append(f"gov on cpu-frec ({p3}) illegal without max")
        elif colon and (g := gov(p3)) is None:
            errs.append(f"illegal governor: {p3} on --cpu-freq")
        elif dash and lo > hi:
            errs.append(f"min cpu-frec ({p1}) must be < max cpu-freq ({p2})")
    if g is not None and g not in CPU_FREQ_GOVERNORS:
        errs.append(f"governor of {v} is not allowed in slurm.conf")
    if errs:
        raise OptError([f"{c.prog}: error: {e}" for e in errs] + [f"{c.prog}: error: Invalid --cpu-freq argument"],
                       255)
    return v


#: --gpu-bind's types, by the prefix 22.05 matches them by (case aside); the lists' digits
_GPU_BIND = ("closest", "none", "single:", "map_gpu:", "mask_gpu:")


def _v_gpu_bind(c: Ctx, v: str | None) -> str:
    """`--gpu-bind=[verbose,]TYPE`: closest, none, single:N, map_gpu:LIST (decimal), mask_gpu:LIST (hex)."""
    v = v or ""
    rest = v[8:] if v[:8].lower() == "verbose," else v
    kind = next((k for k in _GPU_BIND if rest[:len(k)].lower() == k), None)
    lines = []
    if kind in ("map_gpu:", "mask_gpu:"):
        for item in rest[len(kind):].split(","):
            bad = _bad_digit(item, kind == "mask_gpu:")
            if bad:
                lines.append(f"{c.prog}: error: Failed to validate {item}, offending character is {bad}")
                break
    if kind is None or lines:
        raise OptError([*lines, f"{c.prog}: error: Invalid --gpu-bind argument: gpu:{v}"], 255)
    return v


def _v_accel_bind(c: Ctx, v: str | None) -> str:
    # 22.05 looks for the letters it knows (g: GPU, n: NIC, v: verbose) anywhere in the value
    if not any(ch in (v or "") for ch in "gnv"):
        raise opt_error(c.prog, "Invalid --accel-bind specification", 255)
    return v or ""


_GPU_FREQS = ("low", "medium", "high", "highm1")


def _v_gpu_freq(c: Ctx, v: str | None) -> str:
    """`--gpu-freq=[<type>=]<value>[,<type>=<value>][,verbose]`: a value is low, medium, high, highm1
    (spelled so) or a number of MHz; the one type is `memory`."""
    for t in (v or "").split(","):
        val = t[7:] if t.startswith("memory=") else t
        if t != "verbose" and val not in _GPU_FREQS and not digits(val):
            raise opt_error(c.prog, f"Invalid --gpu-freq argument: gpu:{v}", 255)
    return v or ""


#: the MPI plugins 22.05 has (srun --mpi=list), spelled as it needs them
MPI_TYPES = ("pmix", "none", "cray_shasta", "pmi2")


def _v_mpi(c: Ctx, v: str | None) -> str:
    if v == "list":  # the list, on standard output, and srun ends there (exit 0)
        raise OptError(["MPI plugin types are...", *(f"\t{t}" for t in MPI_TYPES),
                        "specific pmix plugin versions available: pmix_v4"], 0, stdout=True)
    if v not in MPI_TYPES:
        raise OptError([f"{c.prog}: error: Couldn't find the specified plugin name for mpi/{v} looking at all files",
                        f"{c.prog}: error: cannot find mpi plugin for mpi/{v}",
                        f"{c.prog}: error: MPI: Cannot create context for mpi/{v}",
                        f"{c.prog}: error: MPI: Unable to load any plugin",
                        f"{c.prog}: error: Invalid MPI type '{v}', --mpi=list for acceptable types"], 1)
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
    "jobid": _v_jobid, "kill-on-bad-exit": _v_kill_bad_exit, "kill-on-invalid-dep": _v_yes_no("--kill-on-invalid-dep"),
    "mail-type": _v_mail_type, "mem": _v_mem("--mem"), "mem-per-cpu": _v_mem("--mem-per-cpu"),
    "mem-per-gpu": _v_mem("--mem-per-gpu"), "mincpus": _v_int("--mincpus"), "nice": _v_nice,
    "no-kill": _v_no_kill, "nodes": lambda c, v: parse_nodes(v or "", c.prog),
    "ntasks": _v_int("--ntasks"), "ntasks-per-core": _v_int("--ntasks-per-core"),
    "ntasks-per-gpu": _v_int("--ntasks-per-gpu"), "ntasks-per-node": _v_int("--ntasks-per-node"),
    "ntasks-per-socket": _v_int("--ntasks-per-socket"), "ntasks-per-tres": _v_int("--ntasks-per-tres"),
    "open-mode": _v_open_mode, "profile": _v_profile, "signal": _v_signal, "propagate": _v_propagate,
    "mem-bind": _v_mem_bind, "cpu-freq": _v_cpu_freq, "gpu-bind": _v_gpu_bind, "mpi": _v_mpi,
    "accel-bind": _v_accel_bind, "gpu-freq": _v_gpu_freq, "send-libs": _v_yes_no("--send-libs", "yes"),
    "resv-ports": lambda c, v: parse_int(c.prog, "--resv-port", v or "", False),
    "immediate": lambda c, v: parse_int(c.prog, "immediate", v or "", False),
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
    "account", "array", "begin", "chdir", "clusters", "comment", "cpus-per-gpu", "cpus-per-task", "mem-per-gpu",
    "mincpus", "overcommit", "dependency", "error",
    "exclusive", "export", "gpus", "gpus-per-node", "gpus-per-task", "gres", "help", "hold", "input",
    "job-name", "kill-on-invalid-dep", "mem", "mem-per-cpu", "nice", "no-requeue", "nodelist", "nodes",
    "ntasks", "ntasks-per-node", "open-mode", "output", "oversubscribe", "parsable", "partition", "qos",
    "quiet", "requeue", "signal", "test-only", "time", "usage", "verbose", "version", "wait", "wrap",
    "exclude",
}
SRUN_USED = {
    "account", "chdir", "cpu-bind", "cpus-per-task", "dependency", "error", "exact", "exclude", "exclusive", "export",
    "gpus", "gpus-per-node", "gpus-per-task", "gres", "help", "hold", "input", "job-name", "jobid",
    "kill-on-bad-exit", "label", "mem", "mem-per-cpu", "mpi", "nodelist", "nodes", "ntasks",
    "ntasks-per-node", "output", "overlap", "partition", "pty", "qos", "quiet", "time", "unbuffered", "usage",
    "verbose", "version", "open-mode", "begin", "comment", "signal", "nice", "clusters", "het-group", "immediate",
    "wait",
}
SALLOC_USED = {
    "account", "begin", "chdir", "clusters", "comment", "cpus-per-gpu", "cpus-per-task", "mem-per-gpu", "overcommit",
    "dependency", "exclude", "exclusive",
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
    #: the count per node is --gres's (the later of --gres and --gpus-per-node): sbatch then sets no
    #: SLURM_GPUS_PER_NODE, as 22.05's does not
    out["gres"] = bool(per_node) and "gres" in v and (
        "gpus-per-node" not in v or st.seq["gres"] > st.seq["gpus-per-node"])
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
