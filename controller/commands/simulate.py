"""`slurmlet simulate TRACE.swf[.gz]`: replay a Standard Workload Format trace through the core.

    slurmlet simulate TRACE --policy fcfs|easy|slurm [--jobs N] [--json] [--schedule FILE]
                            [--config slurm.conf]
    slurmlet simulate --sacct DUMP --config A.conf [--vs B.conf] [--policy ...] [--json] [--html FILE]

Prints jobs simulated (and skipped), makespan, utilization, mean wait, mean bounded slowdown
(tau = 10 s), max wait, and the simulator's own wall time and throughput. With --sacct, a site's
own `sacct -P -X` history is replayed on the machine of each slurm.conf, and the figures per
partition, account and user follow, one column per configuration; --html also writes them, with
plots, as one self-contained HTML page. See docs/simulate.md.
"""

from __future__ import annotations

import argparse
import json
import sys

from slurmlet.common.oneline import Parser

PROG = "slurmlet simulate"


def _jobs(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of jobs, got {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {n}")
    return n


def parser() -> argparse.ArgumentParser:
    from slurmlet.controller.sim.engine import POLICIES
    p = Parser(prog=PROG, description="Replay a Standard Workload Format (SWF) trace, or a site's sacct "
                                       "history, through slurmlet's scheduling core on a virtual clock.")
    p.add_argument("trace", metavar="TRACE.swf[.gz]", nargs="?",
                   help="the trace (gzip is detected by .gz or magic bytes)")
    p.add_argument("--sacct", metavar="FILE",
                   help="replay a `sacct -P -X` dump (header line first) instead of an SWF trace; "
                        "needs --config")
    p.add_argument("--policy", choices=POLICIES,
                   help="fcfs: no overtaking; easy: EASY backfilling; slurm: multifactor priority "
                        "and Slurm's backfill defaults (the default with --sacct)")
    p.add_argument("--jobs", type=_jobs, metavar="N", help="simulate the first N jobs that survive cleaning")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--schedule", metavar="FILE",
                   help="write 'job_id submit start end procs' per job, sorted by job id")
    p.add_argument("--config", metavar="slurm.conf",
                   help="priority weights and SchedulerParameters for --policy slurm; with --sacct also "
                        "the machine (the CPUs of its nodes)")
    p.add_argument("--vs", metavar="B.conf",
                   help="with --sacct: replay the same history under this slurm.conf too, side by side")
    p.add_argument("--html", metavar="FILE",
                   help="with --sacct: also write the replays side by side as one self-contained HTML page "
                        "(the group tables; queue length, waits by job size and utilization plots)")
    p.add_argument("--core", choices=("auto", "compiled", "python"), default=None,
                   help="the scheduling core: compiled (mypyc, where the package was built with it), python, "
                        "or auto (default, or $SLURMLET_SIM_CORE): compiled where it is built")
    return p


def _fail(msg: str) -> int:
    print(f"{PROG}: error: {msg}", file=sys.stderr)
    return 2


def _duration(s: float) -> str:
    d, rest = divmod(int(s), 86400)
    h, rest = divmod(rest, 3600)
    m, sec = divmod(rest, 60)
    return f"{d}-{h:02d}:{m:02d}:{sec:02d}" if d else f"{h:02d}:{m:02d}:{sec:02d}"


def render(summary: dict) -> str:
    from slurmlet.controller.sim.engine import core_label
    s = summary
    skipped = s["skipped"]
    why = ", ".join(f"{k}: {v}" for k, v in sorted(s["skipped_by_reason"].items()))
    lines = [
        ("trace", s["trace"]),
        ("policy", s["policy"]),
        ("machine", f"{s['machine_procs']} processors ({s['machine_source']})"),
        ("jobs simulated", s["jobs"]),
        ("jobs skipped", f"{skipped} ({why})" if skipped else "0"),
        ("makespan", f"{s['makespan_s']} s ({_duration(s['makespan_s'])})"),
        ("utilization", f"{s['utilization'] * 100:.2f} %"),
        ("mean wait", f"{s['mean_wait_s']:.1f} s"),
        ("mean bounded slowdown (tau 10 s)", f"{s['mean_bounded_slowdown']:.2f}"),
        ("max wait", f"{s['max_wait_s']} s ({_duration(s['max_wait_s'])})"),
        ("preemptions", s["preemptions"]),
        ("scheduling passes", f"{s['passes']} ({s['idle_passes']} started nothing)"),
        ("scheduling core", core_label(s["core"], s.get("core_note", ""))),
        ("trace load time", f"{s['load_s']:.3f} s"),
        ("simulation wall time", f"{s['wall_s']:.3f} s (scheduling core {s['core_s']:.3f} s)"),
        ("throughput", f"{s['jobs_per_s']:.0f} jobs/s"),
    ]
    return "".join(f"{k}: {v}\n" for k, v in lines)


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.sacct is not None:
        if args.trace is not None:
            p.error("give either TRACE or --sacct, not both")
        return main_sacct(args)
    if args.trace is None:
        p.error("the following arguments are required: TRACE.swf[.gz]")
    if args.policy is None:
        p.error("the following arguments are required: --policy")
    if args.vs is not None:
        p.error("--vs needs --sacct")
    if args.html is not None:
        p.error("--html needs --sacct")
    import time

    from slurmlet.controller.sim import engine, swf
    conf = None
    if args.config is not None:
        if args.policy != "slurm":
            print(f"{PROG}: warning: --config is only used by --policy slurm", file=sys.stderr)
        else:
            from slurmlet.controller.config import ConfigError, load_config
            try:
                conf = load_config(args.config)
            except ConfigError as e:
                return _fail(f"--config: {e}")
    t0 = time.perf_counter()
    try:
        trace = swf.load(args.trace, args.jobs)
    except swf.SwfError as e:
        return _fail(str(e))
    load_s = time.perf_counter() - t0
    try:
        pol = engine.policy(args.policy, trace.jobs, conf)
    except Exception as e:  # noqa: BLE001 - a config helper that rejects its values
        return _fail(f"--config: {e}")
    on, err = _core(args.core)
    if on is None:
        return _fail(err)
    try:
        res = engine.simulate(trace, pol, on=on)
    except engine.SimulationError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    summary = {"trace": args.trace, "machine_source": trace.machine_source, **res.summary(),
               "core_note": on.why, "load_s": round(load_s, 4)}
    if args.schedule is not None and not _write_schedule(args.schedule, res):
        return 2
    if args.json:
        sys.stdout.write(json.dumps(summary) + "\n")
    else:
        sys.stdout.write(render(summary))
    return 0


def _core(which: str | None):  # noqa: ANN202 - (engine.Core | None, str)
    """(the scheduling core `--core` or $SLURMLET_SIM_CORE picks, "") or (None, why not)."""
    from slurmlet.controller.sim import engine
    try:
        return engine.core(which), ""
    except (ImportError, ValueError) as e:
        if isinstance(e, ImportError):  # compiled, asked for by the option or the environment
            return None, f"{'--core' if which else 'SLURMLET_SIM_CORE'}: the compiled core is {e}"
        return None, f"--core: {e}" if which else str(e)  # (the message names the variable)


def _write_schedule(path: str, res) -> bool:  # noqa: ANN001 - engine.SimResult
    """Writes `res`'s schedule to `path`; False (after the error line) when it cannot."""
    try:
        with open(path, "w") as f:
            f.write("".join(line + "\n" for line in res.schedule_lines()))
    except OSError as e:
        _fail(f"cannot write {path}: {e.strerror or e}")
        return False
    return True


def _write_html(path: str, results: dict, confs: dict[str, str], trace: str) -> bool:
    """Writes the replays' HTML page to `path`; False (after the error line) when it cannot."""
    from slurmlet.controller.sim import html
    text = html.page(results, sources=confs, trace=trace)
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        _fail(f"cannot write {path}: {e.strerror or e}")
        return False
    return True


def _machine(conf) -> int:  # noqa: ANN001 - ClusterConfig
    """The CPUs of a slurm.conf's nodes (its NodeName lines' CPUs=, 1 where not given)."""
    return sum(n.cpus or 1 for n in conf.nodes)


def _replay(args: argparse.Namespace, label: str, path: str):  # noqa: ANN202
    """One replay of `--sacct` on the slurm.conf `path`: (label, SimResult, summary), or (exit code,
    error message)."""
    import time

    from slurmlet.controller.config import ConfigError, load_config
    from slurmlet.controller.sim import engine, sacct, swf
    opt = "--config" if label == "A" else "--vs"
    name = args.policy or "slurm"
    on, err = _core(args.core)
    if on is None:
        return 2, err
    try:
        conf = load_config(path)
    except ConfigError as e:
        return 2, f"{opt}: {e}"
    procs = _machine(conf)
    if procs <= 0:
        return 2, f"{opt}: {path} names no nodes"
    t0 = time.perf_counter()
    try:
        trace = sacct.load(args.sacct, procs)
    except swf.SwfError as e:  # (a SacctError too)
        return 2, str(e)
    load_s = time.perf_counter() - t0
    if args.jobs is not None:
        trace.jobs = trace.jobs[:args.jobs]
    try:
        pol = engine.policy(name, trace.jobs, conf if name == "slurm" else None)
    except Exception as e:  # noqa: BLE001 - a config helper that rejects its values
        return 2, f"{opt}: {e}"
    try:
        res = engine.simulate(trace, pol, on=on)
    except engine.SimulationError as e:
        return 1, str(e)
    return label, res, {"trace": args.sacct, "config": path, "machine_source": path, **res.summary(),
                        "records": trace.records, "core_note": on.why, "load_s": round(load_s, 4)}


def main_sacct(args: argparse.Namespace) -> int:
    """`--sacct DUMP --config A.conf [--vs B.conf]`: a site's history under one or two configurations."""
    from slurmlet.controller.sim import engine, report
    if args.config is None:
        return _fail("--sacct needs --config (the slurm.conf whose nodes replay the history)")
    if args.schedule is not None and args.vs is not None:
        return _fail("--schedule takes one configuration: leave out --vs")
    on, err = _core(args.core)
    if on is None:
        return _fail(err)
    confs = {"A": args.config} if args.vs is None else {"A": args.config, "B": args.vs}
    results: dict[str, engine.SimResult] = {}
    summaries: dict[str, dict] = {}
    if len(confs) == 1:
        done = [_replay(args, "A", args.config)]
    else:  # the replays side by side, one process each (each its own CPU where there are two)
        import concurrent.futures
        import multiprocessing
        with concurrent.futures.ProcessPoolExecutor(len(confs), mp_context=multiprocessing.get_context("fork")) as pool:
            done = list(pool.map(_replay, [args] * len(confs), list(confs), list(confs.values())))
    for got in done:
        if isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], int):
            code, message = got
            print(f"{PROG}: error: {message}", file=sys.stderr)
            return code
        label, res, summary = got
        results[label], summaries[label] = res, summary
    if args.schedule is not None and not _write_schedule(args.schedule, results["A"]):
        return 2
    if args.html is not None and not _write_html(args.html, results, confs, args.sacct):
        return 2
    if args.json:
        sys.stdout.write(json.dumps({"replays": summaries, "groups": report.table(results)}) + "\n")
        return 0
    out = []
    for label, s in summaries.items():
        out.append(f"== {label}: {s['config']} ==\n" + render(s))
    out.append(report.render(results))
    sys.stdout.write("\n".join(out))
    return 0
