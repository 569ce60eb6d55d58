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
imported inside the functions that need them, and the time and output-file helpers on first
use; no `re`, `argparse`, `datetime`, `shlex`, `typing` or `dataclasses`.
"""

from __future__ import annotations

import os

from ..common.grammar import (
    CSPACE,
    MAX_ARRAY_SIZE,
    OptError,
    atoi,
    is_ws,
    opt_error,
    parse_array,
    parse_dependency,
    parse_gpus,
    parse_gres,
    parse_signal,
    refused,
)
from .getopt import Getopt, Table, table
from .optvalues import (
    SALLOC_ENV,
    SALLOC_USED,
    SBATCH_ENV,
    SBATCH_USED,
    SRUN_ENV,
    SRUN_USED,
    Ctx,
    State,
    apply_env,
    check_counts,
    resolved_gpus,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing/collections.abc would cost start-up time
    from collections.abc import Callable

    _Validator = Callable[["Ctx", "str | None"], object]

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
    """The arguments of a script's `#SBATCH` lines (see `directive_groups`); a heterogeneous
    job's separator is refused here (salloc and srun take no script)."""
    groups = directive_groups(script, label=label, prog=prog, warnings=warnings)
    if len(groups) > 1:
        raise _het_error(prog)
    return groups[0]


def directive_groups(script: str, *, label: str = "script", prog: str = "sbatch",
                     warnings: list[str] | None = None) -> list[list[str]]:
    """The arguments of a script's `#SBATCH` lines, as sbatch collects them.

    Lines are read from the top until the first one that is neither blank nor a comment (its
    first non-blank character `#`); the shebang is such a comment.  A directive is a line that
    starts exactly with `#SBATCH` (case-sensitive, column 0: `# SBATCH`, `##SBATCH`, `#sbatch`
    and indented lines are plain comments; `#SBATCH--x` is read).  `#SLURM` lines are read too,
    with Slurm's warning appended to `warnings`.  Arguments follow shell-like quoting (`"..."`,
    `'...'`, backslash escapes a quote or `#`); an unquoted `#` ends the line; an empty argument
    (`""`) ends the line too, as in Slurm.  An unterminated quote is `<prog>: fatal: LABEL: line N:
    Unmatched `"` in [...]` (exit 1).  A `hetjob`/`packjob` separator word (any case, unquoted,
    even as an option's value: `-J hetjob`) starts the next component of a heterogeneous job: the
    arguments come as one list per component.  The word inside another argument
    (`--comment=hetjob`), quoted (`"hetjob"`) or in a comment is no separator, as in Slurm.
    """
    groups: list[list[str]] = [[]]
    args = groups[0]
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
        tokens = _directive_tokens(rest, label, lineno, prog, written)
        if not any(w.lower() in ("hetjob", "packjob") for w in written):
            args.extend(tokens)
            continue
        for token, word in zip(tokens, written):
            if word.lower() in ("hetjob", "packjob"):
                args = []
                groups.append(args)
            else:
                args.append(token)
    return groups


def _het_error(prog: str) -> OptError:
    return opt_error(prog, "heterogeneous jobs (hetjob, ':') are not supported by slurmlet", 1)



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


def export_environment(spec: str | None, env: dict[str, str], *, srun: bool = False) -> dict[str, str]:
    """The environment a job starts with under `--export=SPEC`, as sbatch 22.05 builds it.

    `ALL` (the default, also for None): everything.  `NONE`: only the `SLURM_*` variables.
    Otherwise a comma list read left to right: `ALL` copies the whole environment, `VAR=value`
    sets a value, `VAR` copies VAR when set (later items win: `ALL,EDITOR=x` gives EDITOR=x,
    `EDITOR=x,ALL` the caller's EDITOR); afterwards every `SLURM_*` variable of the caller is
    copied over whatever the list said.  Quotes group a value holding commas (`'A=1,2'`).
    `srun`: as 22.05's srun builds a step's: with `ALL` in the list a `VAR=value` sets only a
    variable the environment does not have (`ALL,EDITOR=x` keeps the caller's EDITOR), and `NONE`
    among other items is `NONE` (tests/data/slurm-2205-tools.md).
    """
    if spec is None or spec.upper() == "ALL":
        return dict(env)
    out: dict[str, str] = {}
    toks = _quote_tokens(spec)
    if srun and any(t.upper() == "NONE" for t in toks):
        toks = []
    keep = srun and any(t.upper() == "ALL" for t in toks)
    if spec.upper() != "NONE":
        for tok in toks:
            if tok.upper() == "ALL":
                out.update(env)
                continue
            k, eq, v = tok.partition("=")
            if eq:
                if k and not (keep and k in env):
                    out[k] = v
            elif tok in env:
                out[tok] = env[tok]
    for k, v in env.items():
        if k.startswith("SLURM_"):
            out[k] = v
    return out


# ====================================================================== sbatch
def _ignored(state: State, used: set[str]) -> list[list]:
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
    ctx = Ctx(prog, cwd, now, gres_types)
    tbl = table("sbatch")
    flags = {"help": False, "usage": False, "version": False}
    # pass 1: the command line, checked in order (syntax and values)
    first = State()
    cli_items: list[tuple[str, str | None]] = []
    g = Getopt(prog, argv, tbl)
    for key, val, _ in g:
        if key in flags:
            flags[key] = True
            return _early(flags)
        first.apply(ctx, key, val)
        cli_items.append((key, val))
    rest = argv[g.optind:]
    cli_groups = [cli_items]  # a heterogeneous job's components: `OPTS : OPTS ... script`
    while rest and rest[0] == ":":
        more: list[tuple[str, str | None]] = []
        g = Getopt(prog, rest[1:], tbl)
        for key, val, _ in g:
            if key in flags:
                flags[key] = True
                return _early(flags)
            first.apply(ctx, key, val)  # (checked; --wrap and -D are read from any component)
            more.append((key, val))
        cli_groups.append(more)
        rest = rest[1:][g.optind:]
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
    # pass 2: directives < SBATCH_* < command line, for each component of a heterogeneous job
    warnings: list[str] = []
    info: list[str] = []
    dgroups = directive_groups(script, label=label, prog=prog, warnings=warnings) if label is not None else [[]]
    states: list[State] = []
    for n in range(max(len(dgroups), len(cli_groups))):
        state = State()
        if states:  # a later component starts from the first one's options, less its shape (INHERITED)
            _inherit(state, states[0])
        try:
            result = _sbatch_pass2(ctx, tbl, state, flags, dgroups[n] if n < len(dgroups) else [], env,
                                   cli_groups[n] if n < len(cli_groups) else [], info, max_array_size)
        except OptError as e:
            e.lines[:0] = warnings
            raise
        if result is not None:
            return result
        states.append(state)
    if len(states) > 1:  # 22.05 keeps a heterogeneous job's script without its empty lines
        script = "\n".join(line for line in script.split("\n") if line) + ("\n" if script.endswith("\n") else "")
    submits = []
    for state in states:
        v = state.values
        array, dep, gpus = v.pop("_array", None), v.pop("_dependency", None), v.pop("_gpus", {})
        submits.append(build_submit(v, script=script, default_name=default_name, script_args=script_args,
                                    env=env, cwd=cwd, user=user, uid=uid, gid=gid, group=group, host=host,
                                    now=now, prog=prog, gpus=gpus, array=array, dependency=dep,
                                    prio_process=prio_process))
        if gpus.get("gpu_type"):
            submits[-1]["gpu_type"] = gpus["gpu_type"]
    submit = submits[0]
    if len(submits) > 1:
        submit["het"] = submits[1:]
    state = states[0]
    v = state.values
    gpus = {"gpu_type": submit.get("gpu_type")}
    return {
        "submit": submit, **flags,
        "parsable": bool(v.get("parsable")), "wait": bool(v.get("wait")), "test_only": bool(v.get("test-only")),
        "quiet": state.quiet, "verbose": state.verbose, "clusters": v.get("clusters"),
        "ignored": _ignored(state, SBATCH_USED), "warnings": warnings, "info": info,
        "script_path": script_path, "gpu_type": gpus.get("gpu_type"),
    }


#: what a heterogeneous job's later component takes from its first unless it names it itself
#: (22.05: `sbatch -p high -t 5 --mem=500 -c2 -n1 : -n2` gives the second component TimeLimit=5 and
#: 500M but the default partition and 1 CPU per task): all but the options that shape its allocation
_NOT_INHERITED = frozenset(("nodes", "ntasks", "ntasks-per-node", "cpus-per-task", "partition", "gres", "gpus",
                            "gpus-per-node", "gpus-per-task", "gpus-per-socket", "cpus-per-gpu", "mem-per-gpu",
                            "nodelist", "exclude", "exclusive", "constraint", "array", "_array", "_gpus",
                            "_dependency", "dependency"))


def _inherit(state: State, first: State) -> None:
    for key, value in first.values.items():
        if key not in _NOT_INHERITED:
            state.values[key] = value
            state.raw[key] = first.raw.get(key)
            state.src[key] = first.src.get(key, "cli")


def _sbatch_pass2(ctx: Ctx, tbl: Table, state: State, flags: dict[str, bool], dargs: list[str],
                  env: dict[str, str], cli_items: list, info: list[str], max_array_size: int) -> dict | None:
    """A component's directives (`dargs`), SBATCH_* variables, the command line again, then the
    final checks.  Returns the early answer for a help/usage/version request met in the directives,
    else None (the checked array, dependency and GPU counts are left in state.values under
    `_array`, `_dependency`, `_gpus`)."""
    prog = ctx.prog
    if dargs:
        dg = Getopt(prog, dargs, tbl)
        for key, val, _ in dg:
            if key in flags:    # --help/--usage/--version are first-pass (command line) only
                continue
            state.apply(ctx, key, val)
        if dg.optind < len(dargs):
            raise opt_error(prog, f"Invalid directive found in batch script: {dargs[dg.optind]}", 255)
    apply_env(state, ctx, env, SBATCH_ENV, tbl, "SBATCH_DEBUG")
    for key, val in cli_items:
        state.apply(ctx, key, val)
    check_counts(prog, state, info)
    gpus = resolved_gpus(ctx, state)
    v = state.values
    if v.get("distribution") == "arbitrary" and not v.get("nodelist"):
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
    mine = uid is None
    uid = os.getuid() if uid is None else uid
    gid = os.getgid() if gid is None else gid
    if user is None:
        try:
            import pwd
            user = pwd.getpwuid(uid).pw_name
        except KeyError:
            if mine:  # no passwd entry: this process's user as every command names it ($USER)
                from .common import current_user
                user = current_user()
            else:
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


def umask_text() -> str:
    """This process's umask as sbatch and srun send it in SLURM_UMASK: four octal digits."""
    mask = os.umask(0o022)
    os.umask(mask)
    return f"{mask:04o}"


#: --cpu-freq's and --profile's names as Slurm spells them back in SLURM_CPU_FREQ_REQ and SLURM_PROFILE
_FREQ_NAMES = {"low": "Low", "medium": "Medium", "highm1": "HighM1", "high": "High", "conservative": "Conservative",
               "ondemand": "OnDemand", "performance": "Performance", "powersave": "PowerSave",
               "userspace": "UserSpace"}
_PROFILE_NAMES = {"none": "None", "all": "All", "energy": "Energy", "lustre": "Lustre", "network": "Network",
                  "task": "Task"}


def _bind(value: str, kind: str) -> dict[str, str]:
    """srun's SLURM_CPU_BIND* or SLURM_MEM_BIND* (`kind`) for a --cpu-bind or --mem-bind value."""
    words = value.split(",")
    verbose = "verbose" if any(w.lower() in ("v", "verbose") for w in words) else "quiet"
    rest = [w for w in words if w.lower() not in ("q", "quiet", "v", "verbose")]
    kind_, _, bind_list = ",".join(rest).partition(":")
    return {f"SLURM_{kind}_BIND": f"{verbose},{','.join(rest)}", f"SLURM_{kind}_BIND_LIST": bind_list,
            f"SLURM_{kind}_BIND_TYPE": kind_ + (":" if bind_list else ""), f"SLURM_{kind}_BIND_VERBOSE": verbose}


#: option -> the variable that holds its value as given, set by sbatch ("batch"), srun ("step") or both
_OPTION_VARIABLES = (
    ("acctg-freq", "SLURM_ACCTG_FREQ", "batch"), ("container", "SLURM_CONTAINER", "both"),
    ("dependency", "SLURM_JOB_DEPENDENCY", "both"), ("distribution", "SLURM_DISTRIBUTION", "both"),
    ("gpu-bind", "SLURM_GPU_BIND", "batch"), ("gpu-freq", "SLURM_GPU_FREQ", "batch"),
    ("gpus-per-socket", "SLURM_GPUS_PER_SOCKET", "batch"), ("hint", "SLURM_HINT", "batch"),
    ("ntasks-per-core", "SLURM_NTASKS_PER_CORE", "both"), ("ntasks-per-socket", "SLURM_NTASKS_PER_SOCKET", "both"),
    ("ntasks-per-gpu", "SLURM_NTASKS_PER_GPU", "batch"), ("ntasks-per-tres", "SLURM_NTASKS_PER_TRES", "batch"),
    ("ntasks-per-gpu", "SLURM_NTASKS_PER_TRES", "step"), ("ntasks-per-tres", "SLURM_NTASKS_PER_TRES", "step"),
    ("threads-per-core", "SLURM_THREADS_PER_CORE", "both"),
)


def option_environment(o: dict, prog: str) -> dict[str, str]:
    """The SLURM_* variables sbatch (`prog` sbatch or salloc: into the job's environment) or srun (`prog`
    srun: into its step's tasks') sets from its options, as 22.05's do (tests/data/envtable)."""
    step = prog == "srun"
    out = {var: str(o[key]) for key, var, where in _OPTION_VARIABLES
           if where in ("both", "step" if step else "batch") and o.get(key) not in (None, "")}
    if o.get("cpu-freq"):
        out["SLURM_CPU_FREQ_REQ"] = _FREQ_NAMES.get(str(o["cpu-freq"]).lower(), str(o["cpu-freq"]))
    if o.get("overcommit"):
        out["SLURM_OVERCOMMIT"] = "1"
    threads = str(o.get("extra-node-info") or "").split(":")[2:3]
    if threads and threads[0] not in ("", "*"):
        out["SLURM_THREADS_PER_CORE"] = threads[0]
    if "nomultithread" in str(o.get("hint") or "").lower().split(","):
        out["SLURM_THREADS_PER_CORE"] = "1"
    mem = _bind(str(o["mem-bind"]), "MEM") if o.get("mem-bind") else {}
    if not step:
        if o.get("profile"):
            out["SLURM_PROFILE"] = ",".join(_PROFILE_NAMES.get(p.lower(), p) for p in str(o["profile"]).split(","))
        if o.get("open-mode"):
            out["SLURM_OPEN_MODE"] = str(o["open-mode"])[0]
        export = str(o.get("export") or "ALL")  # (every --export but ALL: tests/data/slurm-2205-export-env.md)
        if export.upper() != "ALL":
            out["SLURM_EXPORT_ENV"] = export
        if "get-user-env" in o or export.upper() != "ALL":
            out["SLURM_GET_USER_ENV"] = "1"
        if mem:
            out.update({"SLURM_MEM_BIND": str(o["mem-bind"]), "SLURM_MEM_BIND_VERBOSE": mem["SLURM_MEM_BIND_VERBOSE"]})
        return out
    out.update(mem)
    if o.get("label"):
        out["SLURM_LABELIO"] = "1"
    # srun binds to what the layout options name (sockets, cores, threads) where --cpu-bind does not say
    implied = ("sockets" if o.get("ntasks-per-socket") else "cores" if o.get("ntasks-per-core")
               else "threads" if "SLURM_THREADS_PER_CORE" in out else None)
    bind = str(o.get("cpu-bind") or "") or (f"quiet,{implied}" if implied else "")
    if bind:
        out.update(_bind(bind, "CPU"))
    return out


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
    environment.setdefault("SLURM_UMASK", umask_text())  # files made for the job honour it (see identity.py)
    environment["SLURM_SUBMIT_DIR"] = cwd
    environment["SLURM_SUBMIT_HOST"] = host
    environment.update(option_environment(o, prog))
    if array is None and o.get("array"):
        array = str(o["array"])
    if dependency is None and o.get("dependency"):
        dependency = str(o["dependency"])
    body = {
        "script": script,
        "name": o["job-name"] if o.get("job-name") is not None else default_name,
        "partition": o.get("partition"), "account": o.get("account"), "qos": o.get("qos"),
        "nodes_min": max(1, lo), "nodes_max": (hi if hi >= max(1, lo) else max(1, lo)) if hi else None,
        "ntasks": o.get("ntasks") or _tasks_per_gpu(o, gpus), "ntasks_per_node": o.get("ntasks-per-node"),
        "cpus_per_task": o.get("cpus-per-task") or 1,
        "mem_per_node": o.get("mem"), "mem_per_cpu": o.get("mem-per-cpu"),
        "time_limit": o.get("time"),
        "gpus": gpus.get("gpus") or None, "gpus_per_node": gpus.get("gpus-per-node") or None,
        "gpus_per_task": gpus.get("gpus-per-task") or None,
        "cpus_per_gpu": o.get("cpus-per-gpu"), "mincpus": o.get("mincpus"), "mem_per_gpu": o.get("mem-per-gpu"),
        "overcommit": bool(o.get("overcommit")), "gres": bool(gpus.get("gres")),
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


def _tasks_per_gpu(o: dict, gpus: dict) -> int | None:
    """--ntasks-per-gpu (--ntasks-per-tres) without -n: that many tasks for each of -G's GPUs."""
    per_gpu = o.get("ntasks-per-gpu") or o.get("ntasks-per-tres")
    total = gpus.get("gpus")
    return int(per_gpu) * total if per_gpu and isinstance(total, int) else None


def _gpus_of(o: dict, prog: str) -> dict[str, object]:
    """GPU counts from option values that may be numbers already (parse_srun's) or texts."""
    out: dict[str, object] = {}
    for key in ("gpus", "gpus-per-node", "gpus-per-task"):
        val = o.get(key)
        out[key] = parse_gpus(val, prog)[0] if isinstance(val, str) else val
    if out["gpus-per-node"] is None and isinstance(o.get("gres"), str):
        out["gpus-per-node"] = parse_gres(o["gres"], prog)[0]
        out["gres"] = True  # (a count the job asks for as a generic resource: no SLURM_GPUS_PER_NODE)
    return out


# ====================================================================== salloc
#: what an allocation runs on its first node while salloc's command runs where salloc does: nothing
SALLOC_HOLDER = "#!/bin/sh\n# This script was created by salloc: it holds the allocation.\nexec sleep 2147483647\n"


def parse_salloc(argv: list[str], *, env: dict[str, str], cwd: str, user: str | None = None,
                 uid: int | None = None, gid: int | None = None, group: str | None = None,
                 host: str | None = None) -> dict:
    """salloc's command line -> a dict: `submit` (the JobSubmit body of the allocation, None for
    help/usage/version), `command` (what to run once granted; empty: the user's shell), the flags
    `help`, `usage`, `version`, `no_shell`, `kill_command` (a signal number or None), `quiet`,
    `clusters`, `ignored` and `info`. SALLOC_* variables come first, the command line overrides them."""
    prog = "salloc"
    ctx = Ctx(prog, cwd, None, ("gpu",))
    tbl = table("salloc")
    states: list[State] = []
    info: list[str] = []
    command = argv
    while not states or command and command[0] == ":":  # `OPTS : OPTS command`: a heterogeneous job
        state = State()
        if states:
            _inherit(state, states[0])
            command = command[1:]
        apply_env(state, ctx, env, SALLOC_ENV, tbl, "SALLOC_DEBUG")
        g = Getopt(prog, command, tbl)
        for key, val, _ in g:
            if key in ("help", "usage", "version"):
                return {"submit": None, "help": key == "help", "usage": key == "usage", "version": key == "version"}
            state.apply(ctx, key, val)
        command = command[g.optind:]
        check_counts(prog, state, info)
        states.append(state)
    submits = []
    for state in states:
        gpus = resolved_gpus(ctx, state)
        v = state.values
        if "nodes" in v and v["nodes"] == (0, 0):
            raise refused(prog, "Node count specification invalid")
        dep = str(v["dependency"]) if v.get("dependency") else None
        if dep is not None:
            parse_dependency(dep, prog)
        no_shell = "no-shell" in v
        name = "no-shell" if no_shell else "interactive"
        submit = build_submit(v, script=SALLOC_HOLDER, default_name=name, script_args=[], env=env, cwd=cwd,
                              user=user, uid=uid, gid=gid, group=group, host=host, prog=prog, gpus=gpus,
                              dependency=dep)
        submit["interactive"] = True
        submit["requeue"] = False  # an allocation is never requeued: its command runs on here
        submit["stdout"] = submit["stderr"] = "/dev/null"
        if gpus.get("gpu_type"):
            submit["gpu_type"] = gpus["gpu_type"]
        submits.append(submit)
    submit, state = submits[0], states[0]
    v = state.values
    gpus = {"gpu_type": submit.get("gpu_type")}
    no_shell = "no-shell" in v
    if len(submits) > 1:
        submit["het"] = submits[1:]
    kill = None
    if "kill-command" in v:
        kill = parse_signal(str(v["kill-command"]), prog)[0] if v["kill-command"] else 15
    return {"submit": submit, "help": False, "usage": False, "version": False, "command": command,
            "no_shell": no_shell, "kill_command": kill, "quiet": state.quiet, "verbose": state.verbose,
            "clusters": v.get("clusters"), "ignored": _ignored(state, SALLOC_USED), "info": info,
            "gpu_type": gpus.get("gpu_type"), "immediate": immediate_secs(v)}


def immediate_secs(v: dict) -> int | None:
    """-I[secs] (--immediate): how long salloc or srun waits for its allocation before giving it up
    (-I alone: 1 second, Slurm's default), None without it."""
    if "immediate" not in v:
        return None
    value = v["immediate"]
    return int(value) if isinstance(value, str) and value.isdigit() else 1


# ====================================================================== srun
def parse_srun(argv: list[str], *, env: dict[str, str], cwd: str, prog: str = "srun") -> dict:
    """srun's command line -> a dict:

    * `opts`: checked option values keyed by long option name (flags: True; `help`, `usage`,
      `version`, `label`, `jobid`, ... present only when given), suitable for `build_submit`;
    * `command`: the program and its arguments (everything from the first non-option on);
    * convenience fields: `nodes_min`, `nodes_max`, `ntasks`, `ntasks_per_node`,
      `cpus_per_task`, `time_limit`, `gpus`, `gpus_per_node`, `gpus_per_task`, `mem_per_node`,
      `mem_per_cpu`, `label`, `unbuffered`, `kill_on_bad_exit`, `wait`, `pty`, `overlap`, `exclusive`,
      `jobid`, `name`, `partition`, `workdir`, `stdout`, `stderr`, `stdin`, `mpi`, `cpu_bind`,
      `environment` (after --export), `quiet`, `verbose`, `ignored`, `info`.

    Input variables (SLURM_NTASKS, SLURM_JOB_ID, SRUN_CPUS_PER_TASK, ...) come first, the
    command line overrides them.  No command: `srun: fatal: No command given to execute.` (1).
    """
    ctx = Ctx(prog, cwd, None, ("gpu",))
    tbl = table("srun")
    state = State()
    apply_env(state, ctx, env, SRUN_ENV, tbl, "SLURM_DEBUG")
    g = Getopt(prog, argv, tbl)
    for key, val, _ in g:
        state.apply(ctx, key, val)
        if key in ("help", "usage", "version"):
            return {"opts": {key: True}, "command": [], "ignored": [], "info": []}
    command = argv[g.optind:]
    info: list[str] = []
    check_counts(prog, state, info)
    o = state.values
    if not command:
        raise OptError([f"{prog}: fatal: No command given to execute."], 1, fixed=True)
    gpus = resolved_gpus(ctx, state)
    for key in ("gpus", "gpus-per-node", "gpus-per-task"):
        if gpus.get(key) is not None:
            o[key] = gpus[key]
        else:
            o.pop(key, None)
    o.pop("gres", None)
    nodes = o.get("nodes")
    lo, hi = nodes if isinstance(nodes, tuple) else (None, None)
    out = {
        "opts": o, "command": command, "ignored": _ignored(state, SRUN_USED), "info": info,
        "nodes_min": lo, "nodes_max": hi or None, "ntasks": o.get("ntasks"),
        "ntasks_per_node": o.get("ntasks-per-node"), "cpus_per_task": o.get("cpus-per-task"),
        "time_limit": o.get("time"), "gpus": o.get("gpus") or None, "gpus_per_node": o.get("gpus-per-node") or None,
        "gpus_per_task": o.get("gpus-per-task") or None, "mem_per_node": o.get("mem"),
        "mem_per_cpu": o.get("mem-per-cpu"), "label": bool(o.get("label")), "unbuffered": bool(o.get("unbuffered")),
        "kill_on_bad_exit": bool(o.get("kill-on-bad-exit")), "pty": bool(o.get("pty")),
        "wait": o.get("wait") or None,  # -W: seconds after the first task's end that the others are killed
        "overlap": "overlap" in o, "exclusive": o.get("exclusive"), "jobid": o.get("jobid"),
        "name": o.get("job-name"), "partition": o.get("partition"), "workdir": o.get("chdir") or cwd,
        "stdout": o.get("output"), "stderr": o.get("error"), "stdin": o.get("input"), "mpi": o.get("mpi"),
        "cpu_bind": o.get("cpu-bind"), "immediate": immediate_secs(o),
        "environment": export_environment(o["export"] if isinstance(o.get("export"), str) else None, env, srun=True),
        "quiet": state.quiet, "verbose": state.verbose,
    }
    return out
