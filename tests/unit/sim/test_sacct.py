"""`slurmlet simulate --sacct`: a real Slurm 22.05 sacct dump as history, replayed under two slurm.confs."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from slurmlet.controller.commands import simulate as cli_simulate
from slurmlet.controller.sim import engine, report, sacct, swf
from slurmlet.controller.sim.swf import SwfJob, Trace

DUMP = Path(__file__).resolve().parents[2] / "data" / "slurm-2205-sacct-dump.txt"
SLURMLET = Path(sys.executable).parent / "slurmlet"
LINES = DUMP.read_text().splitlines()
HEADER = LINES[0].split("|")


def record(job_id: str) -> tuple[int, dict[str, str]]:
    """(line number, fields) of the first record whose JobID is `job_id`."""
    for n, line in enumerate(LINES[1:], 2):
        row = dict(zip(HEADER, line.split("|")))
        if row["JobID"] == job_id:
            return n, row
    raise KeyError(job_id)


def conf(tmp_path: Path, name: str, nodes: int) -> str:
    p = tmp_path / name
    p.write_text(f"ClusterName=whatif\nSchedulerType=sched/backfill\n"
                 f"NodeName=node[1-{nodes}] CPUs=8 RealMemory=32000\n"
                 f"PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
                 f"PartitionName=high Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=10\n")
    return str(p)


def test_every_record_of_the_real_dump_is_read_and_accounted_for():
    t = sacct.load(str(DUMP), 32)
    assert t.records == len(LINES) - 1 == 413
    assert len(t.jobs) + t.skipped_total == t.records
    never = sum(1 for line in LINES[1:] if line.split("|")[HEADER.index("Start")] == "None")
    assert never > 0 and t.skipped == {sacct.SKIP_NEVER_STARTED: never}
    assert min(j.submit for j in t.jobs) == 0
    assert {j.partition for j in t.jobs} == {"debug", "high"}


def test_a_job_cancelled_before_it_started_is_not_replayed():
    line, row = record("22")
    assert row["State"] == "CANCELLED by 0" and row["Start"] == "None"
    t = sacct.load(str(DUMP), 32)
    assert line not in {j.line for j in t.jobs}


def test_array_tasks_are_jobs_of_their_own_arriving_when_eligible():
    t = sacct.load(str(DUMP), 32)
    by_line = {j.line: j for j in t.jobs}
    l0, r0 = record("19_0")
    l2, r2 = record("19_2")
    j0, j2 = by_line[l0], by_line[l2]
    assert (j0.name, j0.job_id, j2.name, j2.job_id) == ("19_0", 20, "19_2", 1331)
    assert j0.run == 600 and j2.run == 7 * 60 + 9  # Elapsed 00:10:00 and 00:07:09 (cancelled while running)
    # both tasks were submitted together; task 2 became eligible at 07:04:24, ten minutes later
    assert r0["Submit"] == r2["Submit"] and j2.submit - j0.submit == 601
    assert r0["Timelimit"] == "UNLIMITED" and j0.requested == math.inf  # no limit, as in Slurm


def test_het_components_are_replayed_as_separate_jobs_with_their_own_sizes():
    t = sacct.load(str(DUMP), 32)
    by_line = {j.line: j for j in t.jobs}
    a, b = by_line[record("27+0")[0]], by_line[record("27+1")[0]]
    assert (a.job_id, a.procs, a.run) == (27, 1, 100)
    assert (b.job_id, b.procs, b.run) == (28, 2, 3)
    assert a.submit == b.submit


def test_both_runs_of_a_requeued_job_are_replayed():
    t = sacct.load(str(DUMP), 32)
    runs = sorted((j.submit, j.run, j.requested) for j in t.jobs if j.job_id == 1802)
    assert len(runs) == 2
    (s1, run1, req1), (s2, run2, req2) = runs
    assert (run1, run2, req1, req2) == (4, 21, 300, 300)
    assert s2 - s1 == 125  # requeued at 08:07:14, eligible 121 s later (08:09:15)


def test_zero_elapsed_is_one_second_and_wider_jobs_than_the_machine_are_skipped():
    t8 = sacct.load(str(DUMP), 8)
    assert t8.skipped[swf.SKIP_TOO_WIDE] > 0
    assert all(j.procs <= 8 for j in t8.jobs)
    line, row = record("4")
    assert row["Elapsed"] == "00:00:00" and row["Start"] == row["End"]
    assert {j.line: j for j in t8.jobs}[line].run == 1


def test_header_without_the_needed_fields_is_an_error():
    with pytest.raises(sacct.SacctError, match="missing Start"):
        sacct.parse("JobID|Submit|End|State|NCPUS\n1|2026-12-07T06:53:55|None|COMPLETED|1\n")


def test_group_figures_add_up_to_the_machines_utilization():
    t = sacct.load(str(DUMP), 32)
    res = engine.simulate(t, engine.policy("easy", t.jobs))
    total = res.summary()["utilization"]
    parts = report.figures(res, "partition")
    assert set(parts) == {"debug", "high"}
    assert sum(f["utilization"] for f in parts.values()) == pytest.approx(total, abs=1e-5)
    assert sum(f["jobs"] for f in parts.values()) == len(t.jobs)
    assert report.percentile([5, 1, 3, 2, 4], 50) == 3 and report.percentile([5, 1, 3, 2, 4], 95) == 5


def _block(out: str, title: str) -> dict[str, list[str]]:
    """The rows of one group's block of the report: {row name: [A, B]}."""
    lines = out.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(title))
    rows = {}
    for line in lines[i + 1:]:
        if not line.strip():
            break
        m = re.match(r"\s+(.+?)\s{2,}(\S+(?: s|%)?)\s+(\S+(?: s|%)?)$", line)
        assert m, line
        rows[m.group(1)] = [m.group(2), m.group(3)]
    return rows


def test_cli_the_same_history_under_a_smaller_cluster_waits_longer(tmp_path):
    a, b = conf(tmp_path, "a.conf", 4), conf(tmp_path, "b.conf", 3)
    r = subprocess.run([str(SLURMLET), "simulate", "--sacct", str(DUMP), "--config", a, "--vs", b],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"== A: {a} ==" in out and f"== B: {b} ==" in out
    assert "machine: 32 processors" in out and "machine: 24 processors" in out
    everyone = _block(out, "all jobs")
    header = next(line for line in out.splitlines() if line.startswith("all jobs"))
    assert header.split()[-2:] == ["A", "B"]
    assert everyone["jobs"][0] == everyone["jobs"][1]  # every job that ran fits both machines
    debug = _block(out, "partition debug")
    for row in ("mean wait", "p50 wait", "p95 wait"):
        wa, wb = (float(v.split()[0]) for v in debug[row])
        assert wb >= wa, (row, debug[row])
    wa, wb = (float(v.split()[0]) for v in everyone["mean wait"])
    assert wb > wa
    for row in ("mean bounded slowdown", "utilization", "backfilled"):
        assert row in debug
    assert "partition high" in out and "account root" in out and "user root" in out


def test_cli_json_and_errors(tmp_path, capsys):
    a, b = conf(tmp_path, "a.conf", 4), conf(tmp_path, "b.conf", 1)
    assert cli_simulate.main(["--sacct", str(DUMP), "--config", a, "--vs", b, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["replays"]["A"]["machine_procs"] == 32 and doc["replays"]["B"]["machine_procs"] == 8
    assert doc["replays"]["B"]["skipped_by_reason"][swf.SKIP_TOO_WIDE] > 0
    debug = doc["groups"]["partition"]["debug"]
    assert debug["B"]["mean_wait_s"] >= debug["A"]["mean_wait_s"]
    assert cli_simulate.main(["--sacct", str(DUMP)]) == 2
    assert "--sacct needs --config" in capsys.readouterr().err


def test_an_unlimited_job_is_planned_as_never_ending():
    # 2 CPUs: job 1 (1 CPU) runs 100 s; job 2 wants both CPUs; job 3 (1 CPU, 1000 s limit) arrives
    # behind it. With job 1's limit 100 s the head reserves both CPUs at 100 and job 3 would delay
    # it; with job 1 UNLIMITED the head has no start time to protect and job 3 backfills.
    def starts(first_limit: float) -> list[float]:
        jobs = [SwfJob(1, 0, 100, 1, first_limit), SwfJob(2, 1, 50, 2, 50), SwfJob(3, 2, 10, 1, 1000)]
        t = Trace(path="-", max_procs=2, machine_source="-", jobs=jobs)
        return engine.simulate(t, engine.policy("easy", jobs)).start
    assert starts(100) == [0, 100, 150]
    assert starts(math.inf) == [0, 100, 2]  # job 3 ends at 12; job 2 starts when job 1 ends


def test_cli_one_configuration_jobs_and_schedule(tmp_path, capsys):
    a = conf(tmp_path, "a.conf", 4)
    sched = tmp_path / "sched.txt"
    assert cli_simulate.main(["--sacct", str(DUMP), "--config", a, "--jobs", "50", "--schedule", str(sched)]) == 0
    out = capsys.readouterr().out
    assert "jobs simulated: 50\n" in out and "== B" not in out
    header = next(line for line in out.splitlines() if line.startswith("all jobs"))
    assert header.split()[-1] == "A"
    rows = [line.split() for line in sched.read_text().splitlines()]
    assert len(rows) == 50 and all(int(s) <= int(st) < int(e) for _, s, st, e, _ in rows)
    assert cli_simulate.main(["--sacct", str(DUMP), "--config", a, "--vs", a, "--schedule", str(sched)]) == 2
    assert "--schedule takes one configuration" in capsys.readouterr().err


def test_cli_a_garbled_record_is_one_error_line_naming_it(tmp_path, capsys):
    bad = tmp_path / "dump.txt"
    bad.write_text("\n".join(LINES[:3] + [LINES[3].replace("|2026-12-07T", "|07/12/2026 ", 1)]) + "\n")
    a = conf(tmp_path, "a.conf", 4)
    assert cli_simulate.main(["--sacct", str(bad), "--config", a]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"slurmlet simulate: error: {bad}:4: "), err
    short = tmp_path / "short.txt"
    short.write_text(LINES[0] + "\n" + LINES[1].rsplit("|", 1)[0] + "\n")
    assert cli_simulate.main(["--sacct", str(short), "--config", a]) == 2
    assert f"{short}:2: expected 22 fields, found 21" in capsys.readouterr().err
