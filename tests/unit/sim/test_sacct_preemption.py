"""Partitions and preemption in `slurmlet simulate --sacct`: each job replays in its own partition
of the conf (its PriorityTier, PriorityJobFactor, MaxTime and PreemptMode), and a plan that
preempts is carried out as the controller carries it out: the victim gives its CPUs back at the
end of its GraceTime; a requeued victim is eligible again RequeueDelay (121 s) later and runs again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurmlet.controller.commands import simulate as cli_simulate
from slurmlet.controller.config import load_config
from slurmlet.controller.sim import engine, report, sacct

HEADER = "JobID|JobIDRaw|Partition|Account|User|State|Submit|Eligible|Start|End|Elapsed|Timelimit|NCPUS|ReqTRES"


def row(job: int, part: str, cpus: int, submit: int, run: int, limit: str = "00:10:00", user: str = "ann") -> str:
    def at(s: int) -> str:
        return f"2026-12-07T12:{s // 60:02d}:{s % 60:02d}"
    return (f"{job}|{job}|{part}|acct|{user}|COMPLETED|{at(submit)}|{at(submit)}|{at(submit)}|{at(submit + run)}|"
            f"00:{run // 60:02d}:{run % 60:02d}|{limit}|{cpus}|cpu={cpus}\n")


def conf(tmp_path: Path, mode: str = "REQUEUE", extra: str = "", name: str = "p.conf") -> str:
    p = tmp_path / name
    p.write_text("ClusterName=p\nSchedulerType=sched/backfill\nPriorityType=priority/multifactor\n"
                 "PreemptType=preempt/partition_prio\n"
                 "NodeName=node1 CPUs=4 RealMemory=4000\n"
                 f"PartitionName=low Nodes=ALL Default=YES PriorityTier=1 PreemptMode={mode} {extra}\n"
                 "PartitionName=high Nodes=ALL PriorityTier=10 PreemptMode=OFF\n")
    return str(p)


def dump(tmp_path: Path, *rows: str) -> str:
    p = tmp_path / "dump.txt"
    p.write_text(HEADER + "\n" + "".join(rows))
    return str(p)


def replay(dump_path: str, conf_path: str) -> engine.SimResult:
    c = load_config(conf_path)
    trace = sacct.load(dump_path, sum(n.cpus or 1 for n in c.nodes))
    return engine.simulate(trace, engine.policy("slurm", trace.jobs, c))


def test_a_higher_tier_job_requeues_the_job_on_its_cpus_which_runs_again_after_the_requeue_delay(tmp_path):
    # job 1 (low) holds all 4 CPUs for 100 s; job 2 (high) arrives at 10 s and needs them
    res = replay(dump(tmp_path, row(1, "low", 4, 0, 100), row(2, "high", 4, 10, 20)), conf(tmp_path))
    assert [j.job_id for j in res.jobs] == [1, 2]
    assert res.start == [131, 10] and res.end == [231, 30]
    assert res.preempted == [1, 0]
    assert res.summary()["preemptions"] == 1


def test_a_cancelled_victim_ends_at_the_preemption_and_a_grace_time_delays_its_preemptor(tmp_path):
    res = replay(dump(tmp_path, row(1, "low", 4, 0, 100), row(2, "high", 4, 10, 20)),
                 conf(tmp_path, "CANCEL", "GraceTime=5"))
    assert res.start == [0, 15] and res.end == [15, 35] and res.preempted == [1, 0]


def test_without_a_preempt_type_the_higher_tier_job_waits(tmp_path):
    p = Path(conf(tmp_path))
    p.write_text(p.read_text().replace("PreemptType=preempt/partition_prio\n", ""))
    res = replay(dump(tmp_path, row(1, "low", 4, 0, 100), row(2, "high", 4, 10, 20)), str(p))
    assert res.start == [0, 100] and res.preempted == [0, 0]


def test_a_job_of_a_partition_the_conf_lacks_runs_in_the_default_one(tmp_path):
    # "gone" is not in the conf: job 2 runs in low (the default), so it cannot preempt job 1
    res = replay(dump(tmp_path, row(1, "low", 4, 0, 100), row(2, "gone", 4, 10, 20)), conf(tmp_path))
    assert res.start == [0, 100] and res.preempted == [0, 0]


def test_the_report_counts_preemptions_per_group_a_beside_b(tmp_path, capsys):
    d = dump(tmp_path, row(1, "low", 4, 0, 100, user="ann"), row(2, "high", 4, 10, 20, user="bob"))
    a = conf(tmp_path, name="a.conf")
    b = Path(conf(tmp_path, name="b.conf"))
    b.write_text(b.read_text().replace("PreemptType=preempt/partition_prio\n", ""))
    assert cli_simulate.main(["--sacct", d, "--config", a, "--vs", str(b), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["replays"]["A"]["preemptions"] == 1 and out["replays"]["B"]["preemptions"] == 0
    groups = out["groups"]
    assert groups["all"]["all"]["A"]["preemptions"] == 1 and groups["all"]["all"]["B"]["preemptions"] == 0
    assert groups["user"]["ann"]["A"]["preemptions"] == 1 and groups["user"]["bob"]["A"]["preemptions"] == 0
    assert groups["partition"]["low"]["A"]["preemptions"] == 1
    assert cli_simulate.main(["--sacct", d, "--config", a, "--vs", str(b)]) == 0
    text = capsys.readouterr().out
    assert "preemptions: 1\n" in text and "preemptions: 0\n" in text
    assert any(line.split() == ["preemptions", "1", "0"] for line in text.splitlines())


def test_the_partition_priority_factor_orders_the_queue(tmp_path):
    # job 1 holds the CPUs; jobs 2 (low) and 3 (high's PriorityJobFactor, same tier) wait for
    # them: with PriorityWeightPartition, job 3 goes first though it came later
    p = tmp_path / "f.conf"
    p.write_text("ClusterName=p\nSchedulerType=sched/backfill\nPriorityType=priority/multifactor\n"
                 "PriorityWeightPartition=1000\nNodeName=node1 CPUs=4 RealMemory=4000\n"
                 "PartitionName=low Nodes=ALL Default=YES PriorityJobFactor=1\n"
                 "PartitionName=high Nodes=ALL PriorityJobFactor=10\n")
    res = replay(dump(tmp_path, row(1, "low", 4, 0, 50), row(2, "low", 4, 5, 10), row(3, "high", 4, 6, 10)), str(p))
    assert res.start == [0, 60, 50]


def test_suspend_preemption_is_refused_with_a_reason(tmp_path, capsys):
    d = dump(tmp_path, row(1, "low", 4, 0, 100), row(2, "high", 4, 10, 20))
    assert cli_simulate.main(["--sacct", d, "--config", conf(tmp_path, "SUSPEND")]) == 1
    assert "PreemptMode=SUSPEND" in capsys.readouterr().err


def test_a_job_over_its_partitions_max_time_is_skipped_and_counted(tmp_path, capsys):
    d = dump(tmp_path, row(1, "low", 4, 0, 30, limit="00:10:00"), row(2, "low", 1, 5, 30, limit="00:01:00"))
    assert cli_simulate.main(["--sacct", d, "--config", conf(tmp_path, extra="MaxTime=5"), "--json"]) == 0
    a = json.loads(capsys.readouterr().out)["replays"]["A"]
    assert a["jobs"] == 1 and a["skipped_by_reason"] == {engine.SKIP_OVER_MAX_TIME: 1}


@pytest.mark.parametrize("field", [f for _, f, _ in report.ROWS])
def test_every_report_row_is_a_figure_of_every_group(tmp_path, field):
    res = replay(dump(tmp_path, row(1, "low", 4, 0, 100), row(2, "high", 4, 10, 20)), conf(tmp_path))
    for group in report.figures(res, "partition").values():
        assert field in group


def both(dump_path: str, conf_path: str) -> tuple[engine.SimResult, engine.SimResult]:
    """The replay, fast and exact (shortcuts off), on the Python core."""
    c = load_config(conf_path)
    trace = sacct.load(dump_path, sum(n.cpus or 1 for n in c.nodes))
    pol = engine.policy("slurm", trace.jobs, c)
    py = engine.core("python")
    return engine.simulate(trace, pol, on=py), engine.simulate(trace, pol, exact=True, on=py)


def test_easy_backfill_on_the_controllers_cycle_runs_the_pass_that_comes_due_between_events(tmp_path):
    # bf_policy=easy and equal priorities: job 3 can backfill only in the pass due at 60 s
    p = tmp_path / "e.conf"
    p.write_text("ClusterName=p\nSchedulerType=sched/backfill\nSchedulerParameters=bf_policy=easy,bf_interval=60\n"
                 "NodeName=node1 CPUs=4 RealMemory=4000\nPartitionName=low Nodes=ALL Default=YES\n")
    d = dump(tmp_path, row(1, "low", 1, 0, 100, "00:05:00"), row(2, "low", 4, 1, 50, "00:05:00"),
             row(3, "low", 1, 2, 10, "00:00:10"))
    fast, exact = both(d, str(p))
    assert fast.start == exact.start == [0, 100, 60]


def test_first_come_first_served_across_tiers_starts_each_job_once(tmp_path):
    p = tmp_path / "f.conf"
    p.write_text("ClusterName=p\nSchedulerType=sched/builtin\nNodeName=node1 CPUs=4 RealMemory=4000\n"
                 "PartitionName=low Nodes=ALL Default=YES PriorityTier=1\nPartitionName=high Nodes=ALL PriorityTier=10\n")
    d = dump(tmp_path, row(1, "low", 4, 0, 100), row(2, "low", 2, 5, 50), row(3, "low", 4, 6, 50),
             row(4, "high", 2, 7, 50))
    fast, exact = both(d, str(p))
    assert fast.start == exact.start == [0, 100, 150, 100]  # the high tier's job first, beside job 2


@pytest.mark.parametrize("limit", ["UNLIMITED", "Partition_Limit"])
def test_a_job_without_a_limit_of_its_own_is_killed_at_its_partitions_max_time(tmp_path, limit):
    p = tmp_path / "m.conf"
    p.write_text("ClusterName=p\nSchedulerType=sched/backfill\nPriorityType=priority/multifactor\n"
                 "NodeName=node1 CPUs=4 RealMemory=4000\nPartitionName=low Nodes=ALL Default=YES MaxTime=5\n")
    fast, exact = both(dump(tmp_path, row(1, "low", 4, 0, 1000, limit), row(2, "low", 4, 10, 60, "00:01:00")), str(p))
    assert fast.start == exact.start == [0, 300] and fast.end == [300, 360]


def test_utilization_counts_the_cpu_seconds_jobs_held_a_preempted_run_until_it_ended(tmp_path):
    # job 1 (4 CPUs) is requeued at 10 s and runs its 100 s again from 131 s; job 2 holds the
    # 4 CPUs 20 s: 4 x (10 + 100 + 20) CPU-seconds over a makespan of 231 s on 4 CPUs
    res = replay(dump(tmp_path, row(1, "low", 4, 0, 100), row(2, "high", 4, 10, 20)), conf(tmp_path))
    assert res.work == [4 * 110, 4 * 20]
    assert res.summary()["utilization"] == round(130 / 231, 6)
    assert report.figures(res)["all"]["utilization"] == round(130 / 231, 6)
    cancel = replay(dump(tmp_path, row(1, "low", 4, 0, 1000), row(2, "high", 4, 10, 20)), conf(tmp_path, "CANCEL"))
    assert cancel.work == [40, 80] and cancel.summary()["utilization"] == 1.0


def test_an_swf_trace_with_a_conf_skips_jobs_over_its_default_partitions_max_time(tmp_path, capsys):
    def rec(jid: int, sub: int, run: int, procs: int, req: int) -> str:
        return " ".join(map(str, [jid, sub, 0, run, procs, -1, -1, procs, req, -1, 1, 1, 1, -1, -1, -1, -1, -1]))
    t = tmp_path / "t.swf"
    t.write_text("; MaxProcs: 4\n" + rec(1, 0, 100, 2, 600) + "\n" + rec(2, 5, 10, 2, 60) + "\n")
    c = tmp_path / "s.conf"
    c.write_text("ClusterName=p\nSchedulerType=sched/backfill\nPriorityType=priority/multifactor\n"
                 "NodeName=node1 CPUs=4 RealMemory=4000\nPartitionName=batch Nodes=ALL Default=YES MaxTime=5\n")
    assert cli_simulate.main([str(t), "--policy", "slurm", "--config", str(c), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["jobs"] == 1 and out["skipped_by_reason"] == {engine.SKIP_OVER_MAX_TIME: 1}
