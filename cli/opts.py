"""sbatch/srun option parsing, exactly as Slurm 22.05 reads them (pure, stdlib only).

`parse_sbatch()` turns argv, the script's `#SBATCH` directives and `SBATCH_*` variables into the
`JobSubmit` body of docs/api.md (directives < environment < command line). Errors raise
`OptError` carrying the exact lines Slurm prints and its exit status.
"""

from __future__ import annotations

import os

from cli.argv import Opt, UsageError, parse

NO_VAL = 4294967294  # %a of a job that is not an array task
MAX_ARRAY_SIZE = 1001


class OptError(Exception):
    """A refused command line: `lines` go to stderr, `code` is the exit status."""

    def __init__(self, lines: list[str], code: int = 255):
        super().__init__("\n".join(lines))
        self.lines = lines
        self.code = code


# (short, long, arity 0/1/2, key)
SBATCH: list[Opt] = [
    ("J", "job-name", 1, "name"), ("N", "nodes", 1, "nodes"), ("n", "ntasks", 1, "ntasks"),
    ("", "ntasks-per-node", 1, "ntasks_per_node"), ("c", "cpus-per-task", 1, "cpus_per_task"),
    ("", "mem", 1, "mem"), ("", "mem-per-cpu", 1, "mem_per_cpu"), ("t", "time", 1, "time"),
    ("p", "partition", 1, "partition"), ("A", "account", 1, "account"), ("q", "qos", 1, "qos"),
    ("o", "output", 1, "output"), ("e", "error", 1, "error"), ("i", "input", 1, "input"),
    ("", "gres", 1, "gres"), ("G", "gpus", 1, "gpus"), ("", "gpus-per-node", 1, "gpus_per_node"),
    ("", "gpus-per-task", 1, "gpus_per_task"), ("", "exclusive", 2, "exclusive"), ("", "requeue", 0, "requeue"),
    ("", "no-requeue", 0, "no_requeue"), ("", "export", 1, "export"), ("D", "chdir", 1, "chdir"),
    ("", "wrap", 1, "wrap"), ("", "parsable", 0, "parsable"), ("", "test-only", 0, "test_only"),
    ("H", "hold", 0, "hold"), ("", "begin", 1, "begin"), ("b", "", 1, "begin"), ("W", "wait", 0, "wait"),
    ("", "signal", 1, "signal"), ("", "open-mode", 1, "open_mode"), ("", "comment", 1, "comment"),
    ("d", "dependency", 1, "dependency"), ("a", "array", 1, "array"), ("w", "nodelist", 1, "nodelist"),
    ("x", "exclude", 1, "exclude"), ("", "nice", 2, "nice"), ("Q", "quiet", 0, "quiet"),
    ("v", "verbose", 0, "verbose"), ("M", "clusters", 1, "clusters"), ("", "cluster", 1, "clusters"),
    ("", "uid", 1, "uid"), ("", "gid", 1, "gid"), ("h", "help", 0, "help"), ("V", "version", 0, "version"),
    ("", "usage", 0, "usage"), ("", "kill-on-invalid-dep", 1, "kill_on_invalid_dep"),
    # accepted so scripts keep working; no effect in slurmlet
    ("", "mail-type", 1, "-"), ("", "mail-user", 1, "-"), ("C", "constraint", 1, "-"), ("", "time-min", 1, "-"),
    ("", "get-user-env", 2, "-"), ("", "propagate", 2, "-"), ("", "mincpus", 1, "-"), ("", "tmp", 1, "-"),
    ("", "reservation", 1, "-"), ("m", "distribution", 1, "-"), ("", "ntasks-per-gpu", 1, "-"),
    ("", "cpus-per-gpu", 1, "-"), ("", "mem-per-gpu", 1, "-"), ("", "gpu-bind", 1, "-"), ("", "cpu-bind", 1, "-"),
    ("", "hint", 1, "-"), ("", "threads-per-core", 1, "-"), ("", "sockets-per-node", 1, "-"),
    ("", "cores-per-socket", 1, "-"), ("", "spread-job", 0, "-"), ("O", "overcommit", 0, "-"),
    ("k", "no-kill", 2, "-"), ("L", "licenses", 1, "-"), ("", "switches", 1, "-"), ("", "profile", 1, "-"),
    ("", "acctg-freq", 1, "-"), ("", "deadline", 1, "-"), ("", "delay-boot", 1, "-"), ("", "priority", 1, "-"),
    ("", "container", 1, "-"), ("", "batch", 1, "-"), ("", "network", 1, "-"), ("", "power", 1, "-"),
    ("", "wckey", 1, "-"), ("", "bb", 1, "-"), ("", "bbf", 1, "-"), ("", "mcs-label", 1, "-"),
    ("", "cluster-constraint", 1, "-"), ("", "export-file", 1, "-"), ("", "ignore-pbs", 0, "-"),
    ("s", "oversubscribe", 0, "-"), ("", "contiguous", 0, "-"), ("F", "nodefile", 1, "-"),
    ("", "mem-bind", 1, "-"), ("", "core-spec", 1, "-"), ("S", "", 1, "-"), ("", "thread-spec", 1, "-"),
    ("", "gpu-freq", 1, "-"), ("", "cpu-freq", 1, "-"), ("", "use-min-nodes", 0, "-"), ("", "reboot", 0, "-"),
    ("", "ntasks-per-core", 1, "-"), ("", "ntasks-per-socket", 1, "-"), ("B", "extra-node-info", 1, "-"),
    ("", "sockets-per-node", 1, "-"),
]

SRUN: list[Opt] = [
    ("N", "nodes", 1, "nodes"), ("n", "ntasks", 1, "ntasks"), ("", "ntasks-per-node", 1, "ntasks_per_node"),
    ("c", "cpus-per-task", 1, "cpus_per_task"), ("", "gpus-per-task", 1, "gpus_per_task"), ("", "gres", 1, "gres"),
    ("G", "gpus", 1, "gpus"), ("", "gpus-per-node", 1, "gpus_per_node"), ("l", "label", 0, "label"),
    ("o", "output", 1, "output"), ("e", "error", 1, "error"), ("i", "input", 1, "input"),
    ("u", "unbuffered", 0, "unbuffered"), ("K", "kill-on-bad-exit", 2, "kill_on_bad_exit"),
    ("", "export", 1, "export"), ("w", "nodelist", 1, "nodelist"), ("x", "exclude", 1, "exclude"),
    ("", "jobid", 1, "jobid"), ("J", "job-name", 1, "name"), ("p", "partition", 1, "partition"),
    ("t", "time", 1, "time"), ("", "mem", 1, "mem"), ("", "mem-per-cpu", 1, "mem_per_cpu"),
    ("D", "chdir", 1, "chdir"), ("", "exclusive", 2, "exclusive"), ("", "overlap", 0, "-"), ("", "mpi", 1, "-"),
    ("", "cpu-bind", 1, "-"), ("Q", "quiet", 0, "quiet"), ("v", "verbose", 0, "verbose"), ("", "pty", 0, "-"),
    ("A", "account", 1, "account"), ("q", "qos", 1, "qos"), ("h", "help", 0, "help"), ("V", "version", 0, "version"),
    ("", "usage", 0, "usage"), ("m", "distribution", 1, "-"), ("", "gpu-bind", 1, "-"), ("W", "wait", 1, "-"),
    ("", "het-group", 1, "-"), ("X", "disable-status", 0, "-"), ("s", "oversubscribe", 0, "-"),
    ("", "hold", 0, "hold"), ("H", "", 0, "hold"), ("d", "dependency", 1, "dependency"),
]

# SBATCH_* input variables -> option keys (applied between directives and the command line)
SBATCH_ENV = {
    "SBATCH_JOB_NAME": "name", "SBATCH_PARTITION": "partition", "SBATCH_TIMELIMIT": "time",
    "SBATCH_ACCOUNT": "account", "SBATCH_QOS": "qos", "SBATCH_EXPORT": "export", "SBATCH_GRES": "gres",
    "SBATCH_GPUS": "gpus", "SBATCH_GPUS_PER_NODE": "gpus_per_node", "SBATCH_GPUS_PER_TASK": "gpus_per_task",
    "SBATCH_OPEN_MODE": "open_mode", "SBATCH_MEM_PER_CPU": "mem_per_cpu", "SBATCH_MEM_PER_NODE": "mem",
    "SBATCH_SIGNAL": "signal", "SBATCH_ARRAY_INX": "array", "SBATCH_CLUSTERS": "clusters",
}
SBATCH_ENV_FLAGS = {"SBATCH_EXCLUSIVE": "exclusive", "SBATCH_REQUEUE": "requeue", "SBATCH_NO_REQUEUE": "no_requeue",
                    "SBATCH_WAIT": "wait", "SBATCH_HOLD": "hold"}


# ------------------------------------------------------------------ values
def parse_time(value: str, prog: str = "sbatch") -> int | None:
    """Slurm's time_str2mins: minutes, or None for UNLIMITED. Seconds round up to a minute.

    Forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, UNLIMITED/INFINITE/-1. A negative number is
    accepted as Slurm does (the job shows an INVALID limit) and means no limit here.
    """
    v = value.strip()
    bad = OptError([f"{prog}: error: Invalid --time specification"], 255)
    if v.upper() in ("UNLIMITED", "INFINITE", "-1"):
        return None
    if v.startswith("-") and v[1:].isdigit():
        return None
    days = 0
    rest = v
    if "-" in v:
        d, rest = v.split("-", 1)
        if not d.isdigit() or not rest:
            raise bad
        days = int(d)
    parts = rest.split(":")
    if not all(p.isdigit() for p in parts) or len(parts) > 3:
        raise bad
    n = [int(p) for p in parts]
    if days:
        h, m, s = (n + [0, 0, 0])[:3]
    elif len(n) == 1:
        h, m, s = 0, n[0], 0
    elif len(n) == 2:
        h, m, s = 0, n[0], n[1]
    else:
        h, m, s = n
    secs = ((days * 24 + h) * 60 + m) * 60 + s
    return (secs + 59) // 60


def format_time(minutes: int | None) -> str:
    """A time limit as Slurm shows it: UNLIMITED, 10:00, 1:00:00, 1-00:00:00."""
    if minutes is None:
        return "UNLIMITED"
    return format_elapsed(minutes * 60)


def format_elapsed(seconds: float) -> str:
    """squeue's TIME column: 0:04, 1:02:03, 2-01:00:00."""
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}-{h:02d}:{m:02d}:{s:02d}"
    if h:
        return f"{h}:{m:02d}:{s:02d}"
    return f"{m}:{s:02d}"


def parse_mem(value: str, prog: str = "sbatch") -> int:
    """`--mem` sizes in MB: 500, 500M, 2G, 1T, 1024K."""
    v = value.strip().upper()
    mult = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
    unit = 1.0
    if v and v[-1] in mult:
        unit = mult[v[-1]]
        v = v[:-1]
    if v.endswith("B") and v[:-1].isdigit():
        v = v[:-1]
    if not v.isdigit():
        raise OptError([f"{prog}: error: invalid memory constraint: {value}"], 255)
    return int(-(-int(v) * unit // 1))


def parse_gres(value: str, prog: str = "sbatch") -> int:
    """`--gres=gpu[:type]:N[,...]` -> GPUs per node. Other resources are refused."""
    total = 0
    for item in value.split(","):
        parts = item.split(":")
        if parts[0] != "gpu" or len(parts) > 3 or (len(parts) > 1 and not parts[-1].isdigit() and len(parts) == 3):
            raise OptError([f"{prog}: error: Invalid generic resource (gres) specification"], 1)
        if len(parts) == 1 or (len(parts) == 2 and not parts[1].isdigit()):
            total += 1
        else:
            total += int(parts[-1])
    return total


def _gpu_count(value: str, opt: str, prog: str) -> int:
    """`[type:]N` for -G, --gpus-per-node, --gpus-per-task."""
    n = value.rsplit(":", 1)[-1]
    if not n.isdigit():
        raise OptError([f"{prog}: error: Invalid --{opt} specification: {value}"], 255)
    return int(n)


def _positive(value: str, what: str, opt: str, prog: str) -> int:
    if not value.strip().isdigit() or int(value) <= 0:
        raise OptError([f"{prog}: error: invalid number of {what} ({opt} {value})"], 255)
    return int(value)


def parse_nodes(value: str, prog: str = "sbatch") -> tuple[int, int | None]:
    lo, sep, hi = value.partition("-")
    if not lo.isdigit() or (sep and not hi.isdigit()) or int(lo) <= 0 or (sep and int(hi) < int(lo)):
        raise OptError([f"{prog}: error: invalid number of nodes (-N {value})"], 255)
    return int(lo), int(hi) if sep else int(lo)


def parse_begin(value: str, now: float) -> float:
    """`--begin`: now+N[units], HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY], midnight, noon,
    teatime, today, tomorrow."""
    import time
    v = value.strip().lower()
    lt = time.localtime(now)

    def at(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0) -> float:
        return time.mktime((y, mo, d, h, mi, s, 0, 0, -1))

    today = (lt.tm_year, lt.tm_mon, lt.tm_mday)
    named = {"midnight": 0, "noon": 12, "teatime": 16, "elevenses": 11, "fika": 15}
    if v == "now":
        return now
    if v in ("today",):
        return at(*today)
    if v == "tomorrow":
        return at(*today) + 86400
    if v in named:
        t = at(*today, named[v])
        return t if t > now else t + 86400
    bad = OptError([f"sbatch: error: Invalid time specification {value}"], 255)
    if v.startswith("now+"):
        num = ""
        for ch in v[4:]:
            if not ch.isdigit():
                break
            num += ch
        unit = v[4 + len(num):] or "seconds"
        mult = next((m for u, m in (("second", 1), ("minute", 60), ("hour", 3600), ("day", 86400),
                                    ("week", 604800)) if u.startswith(unit) or unit.startswith(u)), None)
        if not num or mult is None:
            raise bad
        return now + int(num) * mult
    try:
        if "-" in v and len(v) >= 10:
            date, _, clock = v.partition("t")
            y, mo, d = (int(x) for x in date.split("-"))
            h, mi, s = (list(map(int, clock.split(":"))) + [0, 0, 0])[:3] if clock else (0, 0, 0)
            return at(y, mo, d, h, mi, s)
        if ":" in v:
            h, mi, s = (list(map(int, v.split(":"))) + [0, 0])[:3]
            t = at(*today, h, mi, s)
            return t if t > now else t + 86400
        if "/" in v:
            p = [int(x) for x in v.split("/")]
            y = lt.tm_year if len(p) < 3 else 2000 + p[2] % 100
            return at(y, p[0], p[1])
    except ValueError:
        raise bad from None
    raise bad


def parse_array(spec: str, max_size: int = MAX_ARRAY_SIZE, prog: str = "sbatch") -> tuple[list[int], int | None]:
    """`0-15`, `1,3,5`, `1-7:2`, `0-15%4` -> (sorted indexes, throttle)."""
    bad = OptError([f"{prog}: error: Batch job submission failed: Invalid job array specification"], 1)
    body, pct, throttle = spec.partition("%")
    if pct and not throttle.isdigit():
        raise bad
    out: set[int] = set()
    for item in body.split(","):
        rng, colon, step = item.partition(":")
        lo, dash, hi = rng.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()) or (colon and (not step.isdigit() or int(step) == 0)):
            raise bad
        a, b = int(lo), int(hi) if dash else int(lo)
        if b < a or b >= max_size:
            raise bad
        out.update(range(a, b + 1, int(step) if colon else 1))
    if not out:
        raise bad
    return sorted(out), int(throttle) if pct else None


def compress_indexes(ids: list[int], throttle: int | None = None) -> str:
    """[1,3,5,7,9], 2 -> `1,3,5,7,9%2`; [0,1,2,3] -> `0-3` (what squeue shows inside `_[...]`)."""
    ids = sorted(set(ids))
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts) + (f"%{throttle}" if throttle else "")


DEP_TYPES = ("after", "afterany", "afterok", "afternotok", "aftercorr", "afterburstbuffer", "singleton")


def parse_dependency(spec: str, prog: str = "sbatch") -> tuple[list[tuple[str, list[str]]], bool]:
    """`afterok:1:2,afterany:3` or `afterok:1?afternotok:2` -> ([(type, [ids])], any_of)."""
    bad = OptError([f"{prog}: error: Batch job submission failed: Job dependency problem"], 1)
    any_of = "?" in spec
    if any_of and "," in spec:
        raise bad
    out = []
    for item in spec.split("?" if any_of else ","):
        kind, _, rest = item.partition(":")
        kind = kind.strip().lower()
        if kind not in DEP_TYPES:
            raise bad
        if kind == "singleton":
            if rest:
                raise bad
            out.append((kind, []))
            continue
        ids = [x for x in rest.split(":") if x]
        for x in ids:
            base = x.split("+")[0].split("_")[0]
            if not base.isdigit():
                raise bad
        if not ids:
            raise bad
        out.append((kind, ids))
    return out, any_of


def default_output(is_array: bool) -> str:
    return "slurm-%A_%a.out" if is_array else "slurm-%j.out"


def expand_pattern(pattern: str, *, job_id: int, array_job_id: int | None = None, array_task_id: int | None = None,
                   name: str = "", node: str = "", user: str = "", step_id: object = None,
                   task_id: int | None = None, node_index: int | None = None) -> str:
    """Slurm's filename patterns: %j %J %x %A %a %N %u %s %t %n %%, with a zero-pad width (`%4j`).
    A pattern containing a backslash is taken literally (backslashes removed), as Slurm does."""
    if "\\" in pattern:
        return pattern.replace("\\", "")
    vals = {
        "j": job_id, "x": name, "A": array_job_id if array_job_id is not None else job_id,
        "a": array_task_id if array_task_id is not None else NO_VAL, "N": node, "u": user,
        "s": step_id if step_id is not None else "batch", "t": task_id if task_id is not None else 0,
        "n": node_index if node_index is not None else 0,
        "J": f"{job_id}.{step_id}" if step_id is not None else job_id,
    }
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch != "%" or i + 1 >= len(pattern):
            out.append(ch)
            i += 1
            continue
        j = i + 1
        while j < len(pattern) and pattern[j].isdigit():
            j += 1
        width = int(pattern[i + 1:j]) if j > i + 1 else 0
        if j >= len(pattern):
            out.append(pattern[i:])
            break
        key = pattern[j]
        if key == "%":
            out.append("%")
        elif key in vals:
            v = vals[key]
            out.append(str(v).zfill(width) if width and isinstance(v, int) else str(v))
        else:
            out.append(pattern[i:j + 1])
        i = j + 1
    return "".join(out)


# ------------------------------------------------------------------ directives
def directive_args(script: str, prefix: str = "#SBATCH") -> list[str]:
    """Arguments of the `#SBATCH` lines before the first command (look-alikes are ignored)."""
    import shlex
    args: list[str] = []
    for i, line in enumerate(script.splitlines()):
        if i == 0 and line.startswith("#!"):
            continue
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break
        if line.startswith(prefix) and (len(line) == len(prefix) or line[len(prefix)] in " \t"):
            try:
                args.extend(shlex.split(line[len(prefix):], comments=True))
            except ValueError:
                raise OptError([f"sbatch: error: Unable to parse {prefix} line: {line}"], 1) from None
    return args


def _collect(prog: str, argv: list[str], table: list[Opt]) -> tuple[dict[str, str | None], list[str], list[str]]:
    """Options (last one wins), the positional rest, and the accepted-but-ignored options."""
    try:
        pairs, pos = parse(prog, argv, table, code=255, stop_at_positional=True)
    except UsageError as e:
        raise OptError(e.lines, 255) from None
    out: dict[str, str | None] = {}
    ignored: list[str] = []
    for k, v in pairs:
        if k == "-":
            ignored.append(v or "")
            continue
        out[k] = v
    return out, pos, ignored


# ------------------------------------------------------------------ sbatch
def parse_sbatch(argv: list[str], *, env: dict[str, str], cwd: str, read_stdin=None,  # noqa: ANN001
                 user: str = "root", uid: int = 0, gid: int = 0, group: str = "root",
                 host: str = "localhost", now: float | None = None) -> dict:
    """The whole sbatch command line -> {"submit": JobSubmit body, and client flags}."""
    cli, pos, ignored = _collect("sbatch", argv, SBATCH)
    flags = {"help": "help" in cli, "usage": "usage" in cli, "version": "version" in cli}
    if any(flags.values()):
        return {"submit": None, **flags}
    if "wrap" in cli:
        if pos:
            raise OptError(["sbatch: error: Script arguments not permitted with --wrap option"], 1)
        script = f"#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{cli['wrap']}\n"
        default_name, script_args = "wrap", []
    elif pos:
        path = pos[0] if os.path.isabs(pos[0]) else os.path.join(cwd, pos[0])
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                script = f.read()
        except OSError:
            raise OptError([f"sbatch: error: Unable to open file {pos[0]}"], 1) from None
        default_name, script_args = os.path.basename(pos[0]), pos[1:]
    else:
        script = read_stdin() if read_stdin else ""
        default_name, script_args = "sbatch", []
    if not script:
        raise OptError(["sbatch: error: Batch script is empty!"], 1)
    if not script.startswith("#!"):
        raise OptError(["sbatch: error: This does not look like a batch script.  The first",
                        "sbatch: error: line must start with #! followed by the path to an interpreter.",
                        "sbatch: error: For instance: #!/bin/sh"], 1)
    if "\r\n" in script:
        raise OptError(["sbatch: error: Batch script contains DOS line breaks (\\r\\n)",
                        "sbatch: error: instead of expected UNIX line breaks (\\n)."], 1)
    merged: dict[str, str | None] = {}
    if "wrap" not in cli:
        d, _, ign = _collect("sbatch", directive_args(script), SBATCH)
        merged.update(d)
        ignored += ign
    for var, key in SBATCH_ENV.items():
        if env.get(var):
            merged[key] = env[var]
    for var, key in SBATCH_ENV_FLAGS.items():
        if var in env:
            merged[key] = None
    merged.update(cli)
    if "requeue" in cli and "no_requeue" in merged and "no_requeue" not in cli:
        del merged["no_requeue"]
    if "no_requeue" in cli and "requeue" in merged and "requeue" not in cli:
        del merged["requeue"]
    return {"submit": build_submit(merged, script=script, default_name=default_name, script_args=script_args,
                                   env=env, cwd=cwd, user=user, uid=uid, gid=gid, group=group, host=host,
                                   now=now),
            "parsable": "parsable" in merged, "wait": "wait" in merged, "test_only": "test_only" in merged,
            "quiet": "quiet" in merged, "verbose": "verbose" in merged, "clusters": merged.get("clusters"),
            "ignored": ignored, **flags}


def build_submit(o: dict[str, str | None], *, script: str, default_name: str, script_args: list[str],
                 env: dict[str, str], cwd: str, user: str, uid: int, gid: int, group: str, host: str,
                 now: float | None, prog: str = "sbatch") -> dict:
    import time
    now = time.time() if now is None else now
    body: dict = {"script": script, "name": o.get("name") or default_name, "argv": script_args}
    for key in ("partition", "account", "qos", "comment", "nodelist", "exclude"):
        if o.get(key):
            body[key] = o[key]
    if "nodes" in o:
        body["nodes_min"], body["nodes_max"] = parse_nodes(o["nodes"] or "", prog)
    if "ntasks" in o:
        body["ntasks"] = _positive(o["ntasks"] or "", "tasks", "-n", prog)
    if "ntasks_per_node" in o:
        body["ntasks_per_node"] = _positive(o["ntasks_per_node"] or "", "tasks per node", "--ntasks-per-node", prog)
    if "cpus_per_task" in o:
        body["cpus_per_task"] = _positive(o["cpus_per_task"] or "", "cpus per task", "-c", prog)
    if "mem" in o:
        body["mem_per_node"] = parse_mem(o["mem"] or "", prog)
    if "mem_per_cpu" in o:
        body["mem_per_cpu"] = parse_mem(o["mem_per_cpu"] or "", prog)
    if "time" in o:
        t = parse_time(o["time"] or "", prog)
        body["time_limit"] = t or None  # 0: no limit
    if "gres" in o:
        body["gpus_per_node"] = parse_gres(o["gres"] or "", prog)
    if "gpus_per_node" in o:
        body["gpus_per_node"] = _gpu_count(o["gpus_per_node"] or "", "gpus-per-node", prog)
    if "gpus" in o:
        body["gpus"] = _gpu_count(o["gpus"] or "", "gpus", prog)
    if "gpus_per_task" in o:
        body["gpus_per_task"] = _gpu_count(o["gpus_per_task"] or "", "gpus-per-task", prog)
    if "exclusive" in o:
        body["exclusive"] = True
    if "requeue" in o:
        body["requeue"] = True
    if "no_requeue" in o:
        body["requeue"] = False
    if "hold" in o:
        body["hold"] = True
    if o.get("begin"):
        body["begin_time"] = parse_begin(o["begin"], now)
    if "signal" in o:
        body["signal"] = o["signal"]
    if "open_mode" in o:
        mode = (o["open_mode"] or "").lower()
        if mode not in ("append", "truncate", "a", "t"):
            raise OptError([f"{prog}: error: Invalid --open-mode argument: {o['open_mode']}"], 255)
        body["open_mode"] = "append" if mode.startswith("a") else "truncate"
    if o.get("dependency"):
        parse_dependency(o["dependency"], prog)
        body["dependency"] = o["dependency"]
    if o.get("array"):
        parse_array(o["array"], prog=prog)
        body["array"] = o["array"]
    if "nice" in o:
        v = o["nice"] or "100"
        try:
            body["nice"] = int(v)
        except ValueError:
            raise OptError([f"{prog}: error: Invalid nice value: {v}"], 255) from None
    if o.get("kill_on_invalid_dep"):
        body["kill_on_invalid_dep"] = o["kill_on_invalid_dep"].lower() in ("yes", "y", "1")
    workdir = o.get("chdir") or cwd
    if not os.path.isabs(workdir):
        workdir = os.path.normpath(os.path.join(cwd, workdir))
    body.update(workdir=workdir, submit_dir=cwd, user=user, uid=uid, gid=gid, group=group, submit_host=host)
    for key, field in (("output", "stdout"), ("error", "stderr"), ("input", "stdin")):
        if o.get(key):
            body[field] = o[key]
    if "test_only" in o:
        body["test_only"] = True
    body["environment"] = export_environment(o.get("export") or env.get("SBATCH_EXPORT") or "ALL", env)
    return body


def export_environment(spec: str, env: dict[str, str]) -> dict[str, str]:
    """`--export`: ALL, NONE, or [ALL,]VAR[=value],... (SLURM_* variables always go along)."""
    items = [x for x in spec.split(",") if x]
    base: dict[str, str]
    if items and items[0].upper() == "ALL":
        base, items = dict(env), items[1:]
    elif items and items[0].upper() == "NONE":
        base, items = {}, items[1:]
    else:
        base = {}
    for item in items:
        k, eq, v = item.partition("=")
        if eq:
            base[k] = v
        elif k in env:
            base[k] = env[k]
    for k, v in env.items():
        if k.startswith("SLURM_"):
            base.setdefault(k, v)
    return base


# ------------------------------------------------------------------ srun
def parse_srun(argv: list[str], *, env: dict[str, str], cwd: str) -> dict:
    """srun's options and the command to run."""
    o, pos, ignored = _collect("srun", argv, SRUN)
    if pos and pos[0] == "--":
        pos = pos[1:]
    out: dict = {"opts": o, "command": pos, "ignored": ignored}
    if "nodes" in o:
        out["nodes_min"], out["nodes_max"] = parse_nodes(o["nodes"] or "", "srun")
    if "ntasks" in o:
        out["ntasks"] = _positive(o["ntasks"] or "", "tasks", "-n", "srun")
    if "ntasks_per_node" in o:
        out["ntasks_per_node"] = _positive(o["ntasks_per_node"] or "", "tasks per node", "--ntasks-per-node", "srun")
    if "cpus_per_task" in o:
        out["cpus_per_task"] = _positive(o["cpus_per_task"] or "", "cpus per task", "-c", "srun")
    if "time" in o:
        out["time_limit"] = parse_time(o["time"] or "", "srun")
    return out
