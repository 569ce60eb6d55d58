"""The trace replayer: hand-computed schedules, invariants on real traces, and the CLI."""

from __future__ import annotations

import importlib.machinery
import json
import os
import random
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from slurmlet.controller.commands import simulate as cli_simulate
from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.core.model import SchedConfig
from slurmlet.controller.sim import engine, native, swf

TRACES = Path("/work/shared/traces")
REAL = sorted(TRACES.glob("*.swf.gz"))
needs_traces = pytest.mark.skipif(not REAL, reason="needs the real traces in /work/shared/traces")
SLURMLET = Path(sys.executable).parent / "slurmlet"


def rec(job_id, submit, run, procs, req_time=-1) -> str:
    f = [job_id, submit, 0, run, procs, -1, -1, procs, req_time, -1, 1, 1, 1, -1, -1, -1, -1, -1]
    return " ".join(str(x) for x in f)


def run(text: str, pol: str = "fcfs", *, exact: bool = False, conf=None) -> dict[int, tuple]:
    """{job id: (start, end)} of a trace given as SWF text."""
    t = swf.parse(text)
    res = engine.simulate(t, engine.policy(pol, t.jobs, conf), exact=exact)
    return {j.job_id: (s, e) for j, s, e in zip(res.jobs, res.start, res.end)}


# A 4-processor machine: a narrow job runs 0-100, a full-width job waits for it, and a small
# short job arrives behind the wide one. FCFS must not let it overtake; EASY backfills it.
HOLE = ("; MaxProcs: 4\n" + rec(1, 0, 100, 1, 100) + "\n" + rec(2, 1, 50, 4, 50) + "\n"
        + rec(3, 2, 10, 1, 10) + "\n")


def test_fcfs_never_lets_a_later_job_overtake_the_blocked_head():
    assert run(HOLE, "fcfs") == {1: (0, 100), 2: (100, 150), 3: (150, 160)}


def test_easy_backfills_a_small_job_into_the_hole_before_the_heads_reservation():
    assert run(HOLE, "easy") == {1: (0, 100), 2: (100, 150), 3: (2, 12)}


def test_easy_does_not_backfill_a_job_that_would_delay_the_head():
    # job 3 asks for 200 s: it would still hold a processor at 100, when the head needs all four
    text = HOLE.replace(rec(3, 2, 10, 1, 10), rec(3, 2, 10, 1, 200))
    assert run(text, "easy") == {1: (0, 100), 2: (100, 150), 3: (150, 160)}


def test_easy_skips_a_pass_when_nothing_completed_and_no_arrival_fits():
    # at 2 job 3 fits in the free processors but not before the head's reservation at 100; at 3
    # a job as wide as the machine arrives: nothing can start, and the pass is skipped
    text = HOLE.replace(rec(3, 2, 10, 1, 10), rec(3, 2, 10, 1, 200)) + rec(4, 3, 10, 4) + "\n"
    t = swf.parse(text)
    pol = engine.policy("easy", t.jobs)
    fast, full = engine.simulate(t, pol), engine.simulate(t, pol, exact=True)
    assert fast.start == full.start == [0, 100, 150, 160]
    assert (fast.passes, full.passes) == (5, 6)  # full: at 0, 2, 3, 100, 150, 160


def test_jobs_are_killed_at_their_requested_time():
    text = "; MaxProcs: 2\n" + rec(1, 0, 100, 2, 60) + "\n" + rec(2, 0, 5, 2) + "\n"
    assert run(text) == {1: (0, 60), 2: (60, 65)}


def test_completions_and_arrivals_at_one_instant_share_one_pass():
    # job 1 ends at 10, when job 3 (the whole machine) arrives; job 2 has waited since 5. One pass
    # sees both: by job size job 3 goes first under slurm. (A pass between the completion and the
    # arrival would have started job 2 at 10.)
    text = "; MaxProcs: 3\n" + "\n".join([rec(1, 0, 10, 3), rec(2, 5, 5, 1), rec(3, 10, 5, 3)])
    assert run(text, "slurm") == {1: (0, 10), 3: (10, 15), 2: (15, 20)}
    assert run(text, "fcfs") == {1: (0, 10), 2: (10, 15), 3: (15, 20)}


def test_queue_order_is_submit_time_then_job_id():
    text = "; MaxProcs: 1\n" + "\n".join([rec(7, 0, 10, 1), rec(5, 0, 10, 1), rec(6, 5, 10, 1), rec(1, 6, 10, 1)])
    assert run(text) == {5: (0, 10), 7: (10, 20), 6: (20, 30), 1: (30, 40)}


def test_several_jobs_start_in_one_pass_and_the_machine_fills_exactly():
    text = "; MaxProcs: 4\n" + "\n".join([rec(1, 0, 10, 2), rec(2, 0, 10, 2), rec(3, 0, 10, 1)])
    assert run(text) == {1: (0, 10), 2: (0, 10), 3: (10, 20)}


def test_slurm_policy_orders_by_multifactor_priority():
    # job 3 is wider, so its job-size factor puts it ahead of the older job 2 when job 1 ends
    text = "; MaxProcs: 4\n" + "\n".join([rec(1, 0, 100, 4), rec(2, 1, 1000, 1), rec(3, 2, 10, 4)])
    assert run(text, "fcfs") == {1: (0, 100), 2: (100, 1100), 3: (1100, 1110)}
    assert run(text, "slurm") == {1: (0, 100), 2: (110, 1110), 3: (100, 110)}
    # a slurm.conf without multifactor priority: equal priorities, submit order again
    basic = parse_slurm_conf("PriorityType=priority/basic\n")
    assert run(text, "slurm", conf=basic)[2] == (100, 1100)


def test_policies_and_config():
    jobs = swf.parse(HOLE).jobs
    assert engine.policy("fcfs").config == SchedConfig(backfill=False)
    assert not engine.policy("fcfs").weights.active
    easy = engine.policy("easy", jobs).config
    assert easy.backfill and easy.bf_easy and easy.bf_resolution == 1 and easy.bf_max_job_test >= 10**9
    assert easy.bf_window * 60 >= 2 + 2 * 100
    slurm = engine.policy("slurm", jobs)
    assert slurm.config == SchedConfig() and slurm.weights == engine.DEFAULT_SLURM_WEIGHTS
    conf = parse_slurm_conf("PriorityType=priority/multifactor\nPriorityWeightAge=5\nPriorityWeightJobSize=7\n"
                            "SchedulerParameters=bf_window=60,bf_max_job_test=10\n")
    pol = engine.policy("slurm", jobs, conf)
    assert (pol.weights.age, pol.weights.jobsize) == (5, 7)
    if hasattr(conf, "sched_config"):
        assert (pol.config.bf_window, pol.config.bf_max_job_test) == (60, 10)
    with pytest.raises(ValueError, match="unknown policy"):
        engine.policy("sjf")


def test_minutes_never_round_up_past_the_second():
    for r in (1, 31, 62, 123, 3600, 86399, 123457):
        m = engine.minutes(r)
        assert r - 1e-6 < m * 60 <= r


def test_summary_figures_by_hand():
    res = engine.simulate(swf.parse(HOLE), engine.policy("fcfs"))
    s = res.summary()
    # waits 0, 99, 148; makespan 160; work 100 + 200 + 10 = 310 processor-seconds on 4 processors
    assert s["jobs"] == 3 and s["makespan_s"] == 160 and s["max_wait_s"] == 148
    assert s["mean_wait_s"] == pytest.approx((0 + 99 + 148) / 3, abs=1e-3)
    assert s["utilization"] == pytest.approx(310 / (4 * 160), abs=1e-6)
    bsld = (1 + (99 + 50) / 50 + (148 + 10) / 10) / 3
    assert s["mean_bounded_slowdown"] == pytest.approx(bsld, abs=1e-3)
    assert res.schedule_lines() == ["1 0 0 100 1", "2 1 100 150 4", "3 2 150 160 1"]


def test_empty_trace():
    s = engine.simulate(swf.parse("; MaxProcs: 8\n"), engine.policy("easy")).summary()
    assert s["jobs"] == 0 and s["makespan_s"] == 0 and s["passes"] == 0


def check_schedule(lines: list[str], jobs: list[swf.SwfJob], procs: int) -> None:
    """One line per job, sorted by id, start >= submit, end - start = occupied, never more than
    `procs` processors busy (ends before starts at one instant)."""
    rows = [tuple(int(x) for x in line.split()) for line in lines]
    assert len(rows) == len(jobs)
    assert [r[0] for r in rows] == sorted(j.job_id for j in jobs)
    by_id = {j.job_id: j for j in jobs}
    events = []
    for jid, submit, start, end, n in rows:
        j = by_id[jid]
        assert submit == j.submit and n == j.procs and start >= submit and end - start == j.occupied
        events += [(start, 1, n), (end, 0, -n)]
    busy = 0
    for _, _, d in sorted(events):
        busy += d
        assert 0 <= busy <= procs


@needs_traces
@pytest.mark.parametrize("policy", engine.POLICIES)
def test_schedule_file_from_the_cli_is_consistent(tmp_path, capsys, policy):
    path = str(REAL[-1])  # the smallest machine: KTH, 100 processors
    out = tmp_path / "sched.txt"
    assert cli_simulate.main([path, "--policy", policy, "--jobs", "300", "--schedule", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    trace = swf.load(path, 300)
    assert summary["jobs"] == 300 and summary["machine_procs"] == trace.max_procs
    check_schedule(out.read_text().splitlines(), trace.jobs, trace.max_procs)


@needs_traces
@pytest.mark.parametrize("policy", engine.POLICIES)
def test_shortcuts_give_the_schedule_of_full_passes(policy):
    """Trimmed queues and skipped passes change nothing: compare with a full pass at every instant."""
    for path in REAL:
        t = swf.load(str(path), 150)
        pol = engine.policy(policy, t.jobs)
        fast, full = engine.simulate(t, pol), engine.simulate(t, pol, exact=True)
        assert fast.start == full.start, path.name
        assert fast.passes <= full.passes


def crowded(n: int = 400, procs: int = 16, seed: int = 7) -> str:
    """A deterministic synthetic trace with a long queue: wide and narrow jobs, overestimates."""
    rng = random.Random(seed)
    lines, t = [f"; MaxProcs: {procs}"], 0
    for i in range(1, n + 1):
        t += rng.choice((0, 0, 1, 5, 30))
        run = rng.choice((1, 10, 60, 300, 1000))
        req = rng.choice((-1, run, run * 2, run * 10, max(1, run // 2)))
        size = rng.choice((1, 1, 2, 3, 4, 8, procs // 2, procs))
        lines.append(rec(i, t, run, size, req))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("policy", ["fcfs", "easy"])
def test_shortcuts_on_a_crowded_synthetic_trace(policy):
    t = swf.parse(crowded())
    pol = engine.policy(policy, t.jobs)
    fast, full = engine.simulate(t, pol), engine.simulate(t, pol, exact=True)
    assert fast.start == full.start
    assert fast.passes <= full.passes and fast.queued < full.queued / 2  # the shortcuts did cut work
    check_schedule(fast.schedule_lines(), t.jobs, t.max_procs)


@pytest.mark.parametrize("seed", [1, 2])
def test_slurm_head_of_the_queue_on_crowded_traces(seed):
    """Multifactor: passes handed only the head of the queue schedule as full ones, also with a
    small bf_max_job_test, without backfill, and with age alone (many equal integer priorities)."""
    from dataclasses import replace
    t = swf.parse(crowded(n=600, procs=32, seed=seed))
    base = engine.policy("slurm", t.jobs)
    variants = [base, replace(base, config=replace(base.config, bf_max_job_test=3)),
                replace(base, config=replace(base.config, backfill=False)),
                replace(base, weights=replace(base.weights, jobsize=0, max_age=3600.0)),
                replace(base, weights=replace(base.weights, age=0))]
    for pol in variants:
        fast, full = engine.simulate(t, pol), engine.simulate(t, pol, exact=True)
        assert fast.start == full.start, pol
        assert fast.queued < full.queued
        if pol.config.backfill:  # backfill stopped once nothing it had left could start
            assert fast.bf_tested < full.bf_tested, pol


@needs_traces
def test_slurm_head_of_the_queue_on_a_real_trace():
    t = swf.load(str(REAL[0]), 1500)  # CTC: long queues
    pol = engine.policy("slurm", t.jobs)
    fast, full = engine.simulate(t, pol), engine.simulate(t, pol, exact=True)
    assert fast.start == full.start
    assert fast.queued < full.queued
    assert fast.bf_tested < full.bf_tested / 2  # `plan(only_starts=True)`: backfill's early stop


@pytest.mark.parametrize("seed", [3, 5])
def test_slurm_backfill_stop_on_narrow_crowded_traces(seed):
    """Many narrow jobs behind wide ones on a small machine: backfill starts jobs far down the
    queue after many reservations, and its early stop (fast mode) must not come before them."""
    from dataclasses import replace
    t = swf.parse(crowded(n=700, procs=8, seed=seed))
    base = engine.policy("slurm", t.jobs)
    for pol in (base, replace(base, config=replace(base.config, bf_resolution=1, bf_window=60)),
                replace(base, config=replace(base.config, bf_max_job_test=1000))):
        fast, full = engine.simulate(t, pol), engine.simulate(t, pol, exact=True)
        assert fast.start == full.start, pol
        assert fast.bf_tested < full.bf_tested, pol


def _exact_order(eng: engine.Engine, positions: list[int], now: float) -> list[int]:
    """Queue positions in the core's own order at `now` (its priorities, then submit time, id)."""
    from slurmlet.controller.core.model import Snapshot
    from slurmlet.controller.core.order import priority_totals
    jobs = [eng.pending_jobs[k] for k in positions]
    prio = priority_totals(Snapshot(now=now, nodes=tuple(eng.free_nodes), partitions=eng.partitions,
                                    pending=tuple(jobs), weights=eng.weights))
    return [j.job_id - 1 for j in sorted(jobs, key=lambda j: (-prio[j.job_id], j.submit_time, j.job_id))]


def test_slurm_head_is_exactly_the_first_jobs_of_the_core_order(monkeypatch):
    """Whatever `Ranking.head` returns is the first jobs of the core's order at that instant, and
    `Ranking.beyond` the next ones, in that order."""
    t = swf.parse(crowded(n=500, procs=32, seed=4))
    pol = engine.policy("slurm", t.jobs)
    # the Python core, whose Ranking can be patched (the compiled core's gives the same schedules:
    # test_compiled_core_schedules_as_the_python_core_*)
    eng = engine.Engine(t.jobs, t.max_procs, pol.config, pol.weights, name="slurm", on=engine.core("python"),
                           bf_interval=pol.bf_interval)
    real_head, seen, more = eng.core.ranking.Ranking.head, [], []
    submit = [j.submit for j in eng.jobs]

    def head(self, now, size, free, window, fitting):
        got = real_head(self, now, size, free, window, fitting)
        if got is not None:
            order = _exact_order(eng, [k for _, k in self.uns] + [k for _, k in self.sat], now)
            assert sorted(got) == sorted(order[:len(got)])
            seen.append(len(got))
            if self.more is not None and (after := self.beyond(submit)) is not None:
                assert after == order[len(got):len(got) + len(after)]
                more.append(len(after))
        return got

    monkeypatch.setattr(eng.core.ranking.Ranking, "head", head)
    eng.run()
    assert len(seen) > 20 and len(more) > 5


def test_slurm_pass_is_redone_whole_when_the_head_is_too_short(monkeypatch):
    """A head that stops before the jobs backfill tests (here: the first 2 jobs of the core's
    order) is caught after the pass, which is then redone with the whole queue."""
    t = swf.parse(crowded(n=400, procs=16, seed=9))
    pol = engine.policy("slurm", t.jobs)
    eng = engine.Engine(t.jobs, t.max_procs, pol.config, pol.weights, name="slurm", on=engine.core("python"),
                           bf_interval=pol.bf_interval)

    def head(self, now, size, free, window, fitting):
        return _exact_order(eng, [k for _, k in self.uns] + [k for _, k in self.sat], now)[:2]

    monkeypatch.setattr(eng.core.ranking.Ranking, "head", head)
    res = eng.run()
    assert res.redone > 0 and res.queued > 0
    assert res.start == engine.simulate(t, pol, exact=True).start


def _check_heads(t, pol, **kw) -> tuple[int, int]:
    """Run `slurm` on `t`, and for every pass handed a head of the queue and not redone, check
    that the whole queue's plan starts the same jobs on the same nodes. Returns (head passes,
    redone ones). On the simulator's default core (compiled where it is built)."""
    on = engine.core()
    real_plan = on.plan.plan
    started: set[int] = set()
    last: list = []  # the last pass: (snapshot, plan)
    heads = [0, 0]

    def check(prev) -> None:
        snap, p, backfill = prev
        whole = tuple(pj for pj in eng.pending_jobs
                      if pj.submit_time <= snap.now and pj.job_id not in started)
        if len(whole) > len(snap.pending):
            heads[0] += 1
            full = real_plan(replace(snap, pending=whole), backfill, only_starts=True)
            assert [(s.job_id, s.allocs) for s in full.starts] == [(s.job_id, s.allocs) for s in p.starts]

    def plan(snap, backfill=None, *, only_starts=False, memo=None):
        p = real_plan(snap, backfill, only_starts=only_starts, memo=memo)
        if last:
            prev_snap, _, prev_backfill = last[0]
            # the last pass, redone with the whole queue (a main pass followed at once by a
            # backfill pass is two passes)
            if prev_snap.now == snap.now and prev_backfill == backfill and len(prev_snap.pending) < len(snap.pending):
                heads[1] += 1
            else:
                check(last[0])
                started.update(s.job_id for s in last[0][1].starts)
        last[:] = [(snap, p, backfill)]
        return p

    watched = engine.Core(on.name, on.model, SimpleNamespace(plan=plan), on.order, on.memo, on.ranking)
    eng = engine.Engine(t.jobs, t.max_procs, pol.config, pol.weights, name="slurm", on=watched,
                        bf_interval=pol.bf_interval, **kw)
    res = eng.run()
    check(last[0])
    assert res.redone == heads[1]
    return heads[0], heads[1]


@pytest.mark.parametrize("seed,procs", [(3, 32), (7, 64), (11, 128)])
def test_slurm_heads_not_redone_start_what_the_whole_queue_starts(seed, procs):
    """The checks that let a pass keep a head's plan (`Engine.run`) never keep one whose starts
    differ from the whole queue's (each such pass is compared with the whole queue's plan)."""
    t = swf.parse(crowded(n=700, procs=procs, seed=seed))
    heads, redone = _check_heads(t, engine.policy("slurm", t.jobs))
    assert heads > 20


@needs_traces
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_slurm_heads_on_the_traces(path):
    t = swf.load(str(path), 6000 if path.name.startswith("KTH") else 3000)  # KTH's queues are short
    heads, _ = _check_heads(t, engine.policy("slurm", t.jobs))
    assert heads > 0


def test_easy_beats_fcfs_on_the_crowded_trace():
    t = swf.parse(crowded())
    f = engine.simulate(t, engine.policy("fcfs")).summary()
    e = engine.simulate(t, engine.policy("easy", t.jobs)).summary()
    assert e["mean_wait_s"] < f["mean_wait_s"]


@needs_traces
def test_deterministic():
    t = swf.load(str(REAL[0]), 200)
    a = engine.simulate(t, engine.policy("slurm", t.jobs))
    b = engine.simulate(t, engine.policy("slurm", t.jobs))
    assert a.schedule_lines() == b.schedule_lines()


# ---------------------------------------------------------------------------------------- CLI

def one_line_error(capsys, argv: list[str], *words: str) -> None:
    assert cli_simulate.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("slurmlet simulate: error: "), err
    for w in words:
        assert w in err, err


def test_cli_errors(tmp_path, capsys):
    good = tmp_path / "t.swf"
    good.write_text(HOLE)
    with pytest.raises(SystemExit) as e:
        cli_simulate.main([str(good), "--policy", "sjf"])
    assert e.value.code == 2
    assert "invalid choice: 'sjf'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli_simulate.main([str(good), "--policy", "fcfs", "--jobs", "-1"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--jobs: must not be negative" in err
    one_line_error(capsys, [str(tmp_path / "missing.swf"), "--policy", "fcfs"], "missing.swf",
                   "No such file")
    bad = tmp_path / "bad.swf"
    bad.write_text(HOLE + "4 5 6\n")
    one_line_error(capsys, [str(bad), "--policy", "easy"], "bad.swf:5:", "expected 18 fields")
    one_line_error(capsys, [str(good), "--policy", "slurm", "--config", str(tmp_path / "nope.conf")],
                   "--config", "nope.conf")


def test_cli_text_output(tmp_path, capsys):
    p = tmp_path / "t.swf"
    p.write_text(HOLE + rec(9, 3, 0, 1) + "\n" + rec(10, 3, 10, 5) + "\n")
    assert cli_simulate.main([str(p), "--policy", "fcfs"]) == 0
    out = capsys.readouterr().out
    kv = dict(line.split(": ", 1) for line in out.splitlines())
    assert kv["jobs simulated"] == "3"
    assert kv["jobs skipped"] == "2 (run time <= 0: 1, wider than the machine: 1)"
    assert kv["makespan"].startswith("160 s") and kv["max wait"].startswith("148 s")
    assert kv["utilization"] == "48.44 %"
    assert kv["mean wait"] == "82.3 s"
    for key in ("mean bounded slowdown (tau 10 s)", "simulation wall time", "throughput"):
        assert key in kv


@needs_traces
@pytest.mark.parametrize("policy", engine.POLICIES)
def test_real_cli_entry_point(policy):
    r = subprocess.run([str(SLURMLET), "simulate", str(REAL[0]), "--policy", policy, "--jobs", "200"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^jobs simulated: 200$", r.stdout, re.M), r.stdout


def test_slurmlet_usage_mentions_simulate():
    r = subprocess.run([str(SLURMLET), "--help"], capture_output=True, text=True)
    assert "simulate" in r.stdout


# ------------------------------------------------------------------------ the compiled core

def compiled_core() -> engine.Core:
    """The compiled core (controller/sim/native); skipped where the package was built without it,
    a failure where SLURMLET_REQUIRE_COMPILED=1 (.ci/run sets it)."""
    try:
        return engine.core("compiled")
    except ImportError as e:
        if os.environ.get("SLURMLET_REQUIRE_COMPILED") == "1":
            pytest.fail(f"the compiled core is {e}")
        pytest.skip(f"the compiled core is {e}")


def test_core_choice(monkeypatch):
    py = engine.core("python")
    assert py.name == "python" and py.why == "" and py.plan.__name__ == "slurmlet.controller.core.plan"
    monkeypatch.setenv("SLURMLET_SIM_CORE", "python")
    assert engine.core() is py
    assert engine.simulate(swf.parse(HOLE), engine.policy("easy")).summary()["core"] == "python"
    monkeypatch.setenv("SLURMLET_SIM_CORE", "fast")
    with pytest.raises(ValueError, match="unknown core 'fast'"):
        engine.core()


def test_compiled_core_is_compiled_and_the_default(monkeypatch):
    c = compiled_core()
    monkeypatch.delenv("SLURMLET_SIM_CORE", raising=False)
    assert engine.core() is c and c.name == "compiled"
    for mod in (c.model, c.plan, c.ranking):
        assert mod.__name__.startswith("slurmlet.controller.sim.native.")
        assert any(mod.__file__.endswith(suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES), mod.__file__
    res = engine.simulate(swf.parse(HOLE), engine.policy("easy"))
    assert res.summary()["core"] == "compiled"
    assert [res.start, res.end] == [[0, 100, 2], [100, 150, 12]]  # job 3 backfilled, as on the Python core


def _same_runs(a: engine.SimResult, b: engine.SimResult) -> None:
    assert a.start == b.start and a.end == b.end
    assert (a.passes, a.idle_passes, a.queued, a.redone, a.bf_tested) == \
        (b.passes, b.idle_passes, b.queued, b.redone, b.bf_tested)


@needs_traces
@pytest.mark.parametrize("policy", engine.POLICIES)
def test_compiled_core_schedules_as_the_python_core_on_the_traces(policy):
    """Pass for pass: the same jobs handed over, started, backfill-tested and redone."""
    c, py = compiled_core(), engine.core("python")
    for path in REAL:
        t = swf.load(str(path), 2000)
        pol = engine.policy(policy, t.jobs)
        _same_runs(engine.simulate(t, pol, on=c), engine.simulate(t, pol, on=py))


CONF = ("PriorityType=priority/multifactor\nPriorityWeightAge=300\nPriorityWeightJobSize=70\n"
        "PriorityFavorSmall=YES\nPriorityMaxAge=00:30:00\nPriorityWeightTRES=CPU=40,Mem=5\n"
        "SchedulerParameters=bf_window=90,bf_max_job_test=12,bf_resolution=30\n")


@pytest.mark.parametrize("seed", [1, 2])
def test_compiled_core_schedules_as_the_python_core_on_crowded_traces(seed):
    """Also exact (every pass whole), with a slurm.conf's weights and backfill parameters, with a
    small bf_max_job_test, without backfill, and with age alone."""
    c, py = compiled_core(), engine.core("python")
    t = swf.parse(crowded(n=500, procs=32, seed=seed))
    base = engine.policy("slurm", t.jobs)
    pols = [engine.policy("fcfs"), engine.policy("easy", t.jobs), base,
            engine.policy("slurm", t.jobs, parse_slurm_conf(CONF)),
            replace(base, config=replace(base.config, bf_max_job_test=3)),
            replace(base, config=replace(base.config, backfill=False)),
            replace(base, weights=replace(base.weights, jobsize=0, max_age=3600.0))]
    for pol in pols:
        for exact in (False, True):
            _same_runs(engine.simulate(t, pol, exact=exact, on=c), engine.simulate(t, pol, exact=exact, on=py))


def test_a_compiled_core_built_from_other_sources_is_not_used(monkeypatch, capsys, tmp_path):
    compiled_core()
    monkeypatch.setattr(engine, "_CORES", {})
    monkeypatch.setattr(native, "digest", lambda controller_dir: "0" * 64)  # the sources changed since the build
    with pytest.raises(ImportError, match="built from other sources than the installed core"):
        engine.core("compiled")
    auto = engine.core()
    assert auto.name == "python" and "other sources" in auto.why
    p = tmp_path / "t.swf"
    p.write_text(HOLE)
    assert cli_simulate.main([str(p), "--policy", "easy"]) == 0
    kv = dict(line.split(": ", 1) for line in capsys.readouterr().out.splitlines())
    assert kv["scheduling core"].startswith("python (the compiled core is built from other sources")
    one_line_error(capsys, [str(p), "--policy", "easy", "--core", "compiled"],
                   "--core: the compiled core is built from other sources")


def test_cli_core_option(tmp_path, capsys):
    p = tmp_path / "t.swf"
    p.write_text(HOLE)
    assert cli_simulate.main([str(p), "--policy", "easy", "--core", "python"]) == 0
    kv = dict(line.split(": ", 1) for line in capsys.readouterr().out.splitlines())
    assert kv["scheduling core"] == "python"
    assert cli_simulate.main([str(p), "--policy", "easy", "--core", "python", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["core"] == "python"
    compiled_core()
    assert cli_simulate.main([str(p), "--policy", "easy", "--core", "compiled"]) == 0
    kv = dict(line.split(": ", 1) for line in capsys.readouterr().out.splitlines())
    assert kv["scheduling core"] == "compiled (mypyc)" and kv["mean wait"] == "33.0 s"


def _pure_wheel(tmp_path: Path, **env: str) -> str:
    """`pip wheel -v` of the package's sources with `env` added: asserts that the wheel is pure
    Python, without the compiled core; returns pip's output."""
    root = Path(__file__).resolve().parents[3]
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(root / name, src / name)
    for room in ("cli", "common", "controller", "nodeagent"):  # the package's sources only
        shutil.copytree(root / room, src / room, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    full = {**os.environ, **env}
    if "SLURMLET_COMPILE" not in env:
        full.pop("SLURMLET_COMPILE", None)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(tmp_path / "w"), str(src)],
                       capture_output=True, text=True, env=full, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (wheel,) = (tmp_path / "w").glob("slurmlet-*.whl")
    assert wheel.name == "slurmlet-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert "slurmlet/controller/sim/native/__init__.py" in names and "slurmlet/controller/core/plan.py" in names
    assert not [n for n in names if n.endswith(".so")]
    return r.stdout + r.stderr


def test_without_a_working_c_compiler_the_wheel_is_pure_python(tmp_path):
    """setup.py asked for the compiled core with a C compiler that fails (CC=false): a pure wheel."""
    out = _pure_wheel(tmp_path, CC="false", SLURMLET_COMPILE="1")
    assert "slurmlet setup: the C compiler cannot build against Python.h (false: " in out


def test_a_plain_install_compiles_nothing_and_needs_no_mypy(tmp_path):
    """Without SLURMLET_COMPILE the build neither installs mypy nor compiles: a pure wheel."""
    out = _pure_wheel(tmp_path)
    assert "slurmlet setup: SLURMLET_COMPILE is not set" in out
    assert "mypy" not in out


def test_an_install_without_sources_runs_the_python_core(tmp_path, monkeypatch):
    """Where the installed core cannot be read back (byte-compiled files only), the compiled core is
    not used: the digest cannot be checked."""
    compiled_core()
    monkeypatch.setattr(engine, "_CORES", {})
    digest_module = sys.modules["slurmlet.controller.sim.native.digest"]  # a source the digest reads is gone
    monkeypatch.setattr(digest_module, "MODULES", {**digest_module.MODULES, "gone": "core/gone.py"})
    auto = engine.core()
    assert auto.name == "python"
    assert auto.why.startswith("the compiled core is not checked against the installed sources (No such file")


def test_the_environment_names_the_core(monkeypatch, tmp_path, capsys):
    p = tmp_path / "t.swf"
    p.write_text(HOLE)
    monkeypatch.setenv("SLURMLET_SIM_CORE", "fast")
    one_line_error(capsys, [str(p), "--policy", "easy"], "unknown core 'fast' (from $SLURMLET_SIM_CORE")
    monkeypatch.setenv("SLURMLET_SIM_CORE", "python")
    assert cli_simulate.main([str(p), "--policy", "easy", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["core"], out["core_note"]) == ("python", "")
