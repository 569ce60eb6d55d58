"""Backfill and partition preemption on a real local cluster: REQUEUE, SUSPEND (SIGSTOP/SIGCONT),
squeue --start estimates and sdiag."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import Cluster, serve, wait_until

pytestmark = pytest.mark.e2e

CONF = """ClusterName=anchor
NodeName=node1 CPUs=2 RealMemory=4000
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE PriorityTier=1 PreemptMode=REQUEUE
PartitionName=susp Nodes=ALL MaxTime=INFINITE PriorityTier=1 PreemptMode=SUSPEND,GANG
PartitionName=graced Nodes=ALL MaxTime=INFINITE PriorityTier=1 PreemptMode=CANCEL GraceTime=4
PartitionName=high Nodes=ALL MaxTime=INFINITE PriorityTier=10 PreemptMode=OFF
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,bf_resolution=1
KillWait=2
SlurmletRequeueDelay=0
"""


def proc_state(pid: int) -> str:
    """The kernel's one-letter state of a process: T while SIGSTOPped."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0]


def stopped(pid: int) -> bool:
    """A job's process is held: in a frozen cgroup (the freezer, as Slurm's proctrack/cgroup suspends
    a job) or, where the agent has no cgroups, SIGSTOPped (T)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, ctrl, path = line.split(":", 2)
        if ctrl == "freezer" and path != "/":
            return Path(f"/sys/fs/cgroup/freezer{path}/freezer.state").read_text().strip() == "FROZEN"
        if ctrl == "" and path != "/":
            for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                if (Path(base + path) / "cgroup.events").exists():
                    return "frozen 1" in (Path(base + path) / "cgroup.events").read_text().splitlines()
    return proc_state(pid) == "T"


@pytest.fixture(scope="module")
def sched_cluster(tmp_path_factory: pytest.TempPathFactory):
    yield from serve(Cluster(tmp_path_factory.mktemp("sched"), nodes=1, conf=CONF))


def test_higher_tier_job_requeues_the_lower_one(sched_cluster: Cluster):
    c = sched_cluster
    low = c.sbatch("-n", "2", "-J", "low1", "-o", "low-%j.out",
                   script="#!/bin/sh\necho start restart=$SLURM_RESTART_COUNT\nsleep 300\n")
    c.wait_state(low, "RUNNING")
    hi = c.sbatch("-p", "high", "-n", "2", "-J", "hi", "--wrap", "echo hi from high")
    c.wait_state(hi, ("RUNNING", "COMPLETED"))
    j = c.job(low)
    assert j["restarts"] == 1 and j["state"] in ("PENDING", "RUNNING")
    # the requeued job runs again once the preemptor is done, appending to its output
    assert c.wait_state(hi, "COMPLETED")["exit_code"] == 0
    c.wait_state(low, "RUNNING")
    out = c.workdir / f"low-{low}.out"
    wait_until(lambda: "restart=1" in out.read_text(), what="second run's output")
    lines = out.read_text().splitlines()
    assert lines[0] == "start restart=" and lines[2] == "start restart=1"  # unset on the first run
    assert lines[1].startswith(f"slurmstepd-node1: error: *** JOB {low} ON node1 CANCELLED AT ")
    assert lines[1].endswith(" DUE TO PREEMPTION ***")
    # sacct -D lists the preempted run before the current one; plain sacct only the latest
    r = c.run(f"sacct -D -j {low} -o JobID,State,ExitCode --parsable2 -n")
    assert r.stdout.splitlines()[:3] == [f"{low}|PREEMPTED|0:0", f"{low}.batch|CANCELLED|0:15", f"{low}|RUNNING|0:0"]
    assert c.run(f"sacct -X -j {low} -o JobID,State --parsable2 -n").stdout.splitlines() == [f"{low}|RUNNING"]
    r = c.run(f"scancel {low}")
    assert r.returncode == 0
    c.wait_state(low, "CANCELLED")


def test_higher_tier_job_suspends_the_lower_one_which_resumes_after(sched_cluster: Cluster):
    c = sched_cluster
    pidfile = c.workdir / "susp.pid"
    low = c.sbatch("-p", "susp", "-n", "2", "-J", "low2",
                   script=f"#!/bin/sh\necho $$ > {pidfile}\nwhile true; do sleep 0.2; done\n")
    c.wait_state(low, "RUNNING")
    pid = int(wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), what="pid file"))
    gate = c.workdir / "release-hi"
    hi = c.sbatch("-p", "high", "-n", "2", "-J", "hi2",
                  script=f"#!/bin/sh\nwhile [ ! -e {gate} ]; do sleep 0.1; done\necho done\n")
    c.wait_state(hi, "RUNNING")
    c.wait_state(low, "SUSPENDED")
    wait_until(lambda: stopped(pid), what="the suspended job's shell to be stopped")
    r = c.run(f"squeue -h -o '%i %t %P' -j {low},{hi}")
    assert sorted(r.stdout.split("\n")[:-1]) == sorted([f"{low} S susp", f"{hi} R high"])
    gate.touch()
    c.wait_state(hi, "COMPLETED")
    c.wait_state(low, "RUNNING")
    wait_until(lambda: not stopped(pid), what="the resumed job's shell to run again")
    assert c.job(low)["restarts"] == 0  # the same run, continued
    c.run(f"scancel {low}")
    c.wait_state(low, "CANCELLED")


def test_backfill_starts_a_short_job_and_squeue_start_shows_the_head_estimate(sched_cluster: Cluster):
    c = sched_cluster
    blocker = c.sbatch("-p", "high", "-n", "1", "-t", "10", "-J", "blocker", "--wrap", "sleep 300")
    c.wait_state(blocker, "RUNNING")
    t0 = c.job(blocker)["start_time"]
    head = c.sbatch("-p", "high", "-n", "2", "-t", "60", "-J", "head", "--wrap", "true")
    long = c.sbatch("-p", "high", "-n", "1", "-t", "30", "-J", "long", "--wrap", "true")
    short = c.sbatch("-p", "high", "-n", "1", "-t", "5", "-J", "short", "--wrap", "sleep 300")
    # the short job fits before the head's reservation: backfill starts it; the long one would delay the head
    c.wait_state(short, "RUNNING")
    assert c.job(long)["state"] == "PENDING" and c.job(head)["state"] == "PENDING"
    est = wait_until(lambda: c.job(head).get("expected_start"), what="an expected start for the head")
    assert abs(est - (t0 + 600)) <= 2
    r = c.run("squeue --start -h -o '%i %j %S'")
    assert r.returncode == 0, r.stderr
    rows = r.stdout.split("\n")[:-1]
    assert rows[0] == f"{head} head {time.strftime('%Y-%m-%dT%H:%M:%S', time.localtime(est))}"
    assert rows[1].startswith(f"{long} long 20")  # after the head: an hour later
    r = c.run("sdiag")
    assert r.returncode == 0, r.stderr
    assert "Main schedule statistics (microseconds):" in r.stdout and "Backfilling stats" in r.stdout
    backfilled = int(next(x for x in r.stdout.splitlines() if "Total backfilled jobs (since last slurm start)" in x)
                     .rsplit(":", 1)[1])
    assert backfilled >= 1
    for jid in (blocker, head, long, short):
        c.run(f"scancel {jid}")


def test_cancel_preemption_with_grace_time_warns_first_then_kills(sched_cluster: Cluster):
    c = sched_cluster
    low = c.sbatch("-p", "graced", "-n", "2", "-J", "low3", "-o", "graced-%j.out",
                   script="#!/bin/sh\ntrap 'echo got TERM' TERM\necho started\nwhile true; do sleep 0.1; done\n")
    c.wait_state(low, "RUNNING")
    out = c.workdir / f"graced-{low}.out"
    wait_until(lambda: out.exists() and "started" in out.read_text(), what="the job's first line")
    syncs = c.syncs()
    submitted = time.time()
    hi = c.sbatch("-p", "high", "-n", "2", "-J", "hi3", "--wrap", "true")
    # the notice: SIGTERM at once, the job keeps running through its GraceTime (4 s)
    wait_until(lambda: "got TERM" in out.read_text(), what="the preemption notice")
    assert c.job(low)["state"] == "RUNNING"
    j = c.wait_state(low, "PREEMPTED", timeout=30)
    text = out.read_text()
    cancelled = f"*** JOB {low} ON node1 CANCELLED AT "
    assert text.index("got TERM") < text.index(cancelled)
    assert "DUE TO PREEMPTION ***" in text and j["restarts"] == 0
    # the kill sequence began when the GraceTime was over (its line has whole seconds), not at the
    # controller's next sync with the order repeated
    at = datetime.strptime(text.split(cancelled, 1)[1][:19], "%Y-%m-%dT%H:%M:%S").timestamp()
    assert at >= int(submitted + 4), (text, submitted)
    # and the node waited for news meanwhile (its order repeated at every sync made it spin)
    assert c.syncs() - syncs < 40
    c.wait_state(hi, "COMPLETED")
    r = c.run(f"sacct -X -n -P -o JobID,State -j {low}")
    assert r.stdout.split() == [f"{low}|PREEMPTED"]


def test_a_job_that_outlives_its_sigterm_is_killed_after_killwait_without_a_spin(sched_cluster: Cluster):
    """scancel of a job that traps SIGTERM: SIGKILL after KillWait (2 s), and meanwhile the agent's
    syncs wait for news (the kill order repeated at every sync answered each at once: a spin)."""
    c = sched_cluster
    jid = c.sbatch("-n", "2", "-J", "stubborn", "-o", "stubborn-%j.out",
                   script="#!/bin/sh\ntrap 'echo got TERM' TERM\necho started\nwhile true; do sleep 0.1; done\n")
    out = c.workdir / f"stubborn-{jid}.out"
    wait_until(lambda: out.exists() and "started" in out.read_text(), what="the job's first line")
    syncs = c.syncs()
    assert c.run(f"scancel {jid}").returncode == 0
    c.wait_state(jid, "CANCELLED", timeout=30)

    def batch() -> dict:
        return next(s for s in c.job(jid)["steps"] if s["step"] == "batch")
    wait_until(lambda: batch()["state"] != "RUNNING", 30, what="the batch step's end")
    assert "got TERM" in out.read_text() and batch()["exit_signal"] == 9, (out.read_text(), batch())
    assert c.syncs() - syncs < 40


def test_scontrol_suspend_and_resume_as_slurm_does(fresh_cluster, tmp_path):
    """As a real 22.05 answers (tests/data/slurm-2205-suspend.md): an operator's suspension stops the
    job and lends its CPUs (another job starts on the node), the scheduler does not resume it, and
    `scontrol resume` does; Slurm's refusals for pending, ended and unknown jobs."""
    c = fresh_cluster(nodes=1, cpus=2)
    c.start()
    tick, pidfile = tmp_path / "tick", tmp_path / "pid"
    jid = c.sbatch("-n2", "--mem=100", "-o", "/dev/null", "--wrap",
                   f"echo $$ > {pidfile}; while true; do date +%s.%N > {tick}; sleep 0.1; done")
    c.wait_state(jid, "RUNNING")
    wait_until(tick.exists, 30, what="the job ticking")
    pid = int(pidfile.read_text())

    r = c.run(["scontrol", "suspend", str(jid)])
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert c.run(["squeue", "-h", "-j", str(jid), "-o", "%T %r"]).stdout.split() == ["SUSPENDED", "None"]
    assert c.run(["scontrol", "suspend", str(jid)]).returncode == 0  # again: nothing to do
    other = c.sbatch("-n2", "--mem=100", "-o", "/dev/null", "--wrap", "sleep 2")  # its CPUs are lent (memory is kept)
    c.wait_state(other, "COMPLETED", timeout=60)
    wait_until(lambda: stopped(pid), 30, what="the job stopped (frozen)")
    held = tick.read_text()
    assert c.job(jid)["state"] == "SUSPENDED"  # the scheduler left it suspended with its CPUs free
    r = c.run(["scontrol", "resume", str(jid)])
    assert (r.returncode, r.stderr) == (0, "")
    wait_until(lambda: tick.read_text() != held and not stopped(pid), 30, what="the job going on")
    r = c.run(["scontrol", "resume", str(jid)])
    assert (r.returncode, r.stderr) == (1, f"Job is not suspended for job {jid}\n")
    held = c.sbatch("-H", "--wrap", "true")
    r = c.run(["scontrol", "suspend", str(held)])
    assert (r.returncode, r.stderr) == (1, f"Job is pending execution for job {held}\n")
    r = c.run(["scontrol", "suspend", "99999"])
    assert (r.returncode, r.stderr) == (1, "Unexpected message received for job 99999\n")
    c.run(["scancel", str(jid), str(held)])
    c.wait_state(jid, "CANCELLED")
    r = c.run(["scontrol", "suspend", str(jid)])
    assert (r.returncode, r.stderr) == (1, f"Job/step already completing or completed for job {jid}\n")
    assert c.job(jid)["suspended_secs"] > 0
