"""An agent killed with SIGKILL and started again on the same spool: it finds what its predecessor
left running (nodeagent/records.py), kills it before it registers, and the controller ends those
jobs NODE_FAIL, requeued when allowed: nothing runs twice at once, nothing runs unaccounted."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.conftest import BIN, Cluster, wait_until

pytestmark = pytest.mark.e2e

#: each run appends `start RESTARTS PID` (SLURM_RESTART_COUNT, set from the first requeue on; and
#: `overlap` first if the previous run's shell still runs),
#: the first run saves a checkpoint (step 3) and sleeps until it is killed, a later one resumes from
#: the checkpoint (`resumed at step 3`) and appends `end RESTARTS`
SCRIPT = """#!/bin/sh
out={out}
if [ -f {pidfile} ]; then
  state=$(cut -d' ' -f3 /proc/$(cat {pidfile})/stat 2>/dev/null)
  if [ -n "$state" ] && [ "$state" != Z ]; then echo overlap >> $out; fi
fi
n=${{SLURM_RESTART_COUNT:-0}}
echo "start $n $$" >> $out
if [ $n = 0 ]; then echo 3 > {pidfile}.ckpt; echo $$ > {pidfile}; exec sleep 300; fi
echo "resumed at step $(cat {pidfile}.ckpt)" >> $out
echo "end $n" >> $out
"""


def running(pid: int) -> bool:
    """Alive and not a zombie (a killed agent's orphans are reaped by whoever adopts them)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def runs(c: Cluster, job_id: int) -> list[str]:
    """sacct -D: JobID|State of every run of the job (allocation lines only)."""
    r = c.run(["sacct", "-j", str(job_id), "-D", "-X", "-n", "-P", "-o", "JobID,State"])
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def start_job(c: Cluster, tmp_path: Path, name: str, *args: str) -> tuple[int, int, Path]:
    out, pidfile = tmp_path / f"{name}.out", tmp_path / f"{name}.pid"
    jid = c.sbatch(*args, "-o", str(tmp_path / f"{name}.slurm"), script=SCRIPT.format(out=out, pidfile=pidfile))
    c.wait_state(jid, "RUNNING")
    pid = int(wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), 10, what=f"{name}'s pid"))
    return jid, pid, out


def test_restarted_agent_kills_what_it_left_behind_and_the_job_runs_again_once(fresh_cluster, tmp_path: Path):
    c = fresh_cluster(nodes=1).start()
    keep, keep_pid, keep_out = start_job(c, tmp_path, "keep", "--requeue")
    lose, lose_pid, lose_out = start_job(c, tmp_path, "lose", "--no-requeue")
    spool = c.root / "spool" / "node1" / "state"
    # (a record being rewritten at this moment has a .tmp beside it: not a record)
    assert sorted(p.name for p in spool.iterdir() if p.suffix == ".json") == [f"job{keep}.json", f"job{lose}.json"]

    agent_pid = c.procs["agent-node1"].pid
    c.stop_proc("agent-node1", signal.SIGKILL)  # a crash: the jobs' sessions run on
    assert running(keep_pid) and running(lose_pid)
    c.start_agent("node1")
    assert c.procs["agent-node1"].pid != agent_pid

    wait_until(lambda: not running(keep_pid) and not running(lose_pid), 10, what="the old runs to be killed")
    c.wait_state(lose, "NODE_FAIL", timeout=10)
    done = c.wait_state(keep, "COMPLETED", timeout=15)
    assert done["restarts"] == 1, done
    assert runs(c, keep) == [f"{keep}|NODE_FAIL", f"{keep}|COMPLETED"]
    assert runs(c, lose) == [f"{lose}|NODE_FAIL"]
    # two starts of the requeued job, the second after the first was gone; the other ran once
    lines = keep_out.read_text().splitlines()
    assert [line.split()[:2] for line in lines] == [["start", "0"], ["start", "1"], ["resumed", "at"],
                                                     ["end", "1"]], lines
    assert lines[2] == "resumed at step 3"  # the second run resumed from the first one's checkpoint
    assert int(lines[0].split()[2]) == keep_pid
    assert lose_out.read_text().splitlines() == [f"start 0 {lose_pid}"]
    wait_until(lambda: c.idle_nodes() == {"node1"}, 10, what="node1 idle")
    wait_until(lambda: not list(spool.iterdir()), 10, what="the agent's records to be removed")
    log = (c.root / "agent-node1.log").read_text()
    assert "left behind by the previous agent" in log and "Traceback" not in log


def test_restarted_agent_kills_its_tasks_of_a_step(fresh_cluster, tmp_path: Path):
    """node2 runs only a step's task of a two-node job (the batch script is on node1): its new agent
    kills the task, reports it lost, and the job ends NODE_FAIL on both nodes."""
    c = fresh_cluster(nodes=2).start()
    script = (f"#!/bin/sh\nsrun -N2 sh -c 'echo $$ > {tmp_path}/task-$SLURM_NODEID.pid; exec sleep 300'\n")
    jid = c.sbatch("-N2", "--no-requeue", "-o", str(tmp_path / "step.out"), script=script)
    c.wait_state(jid, "RUNNING")
    pids = {i: int(wait_until(lambda i=i: (p := tmp_path / f"task-{i}.pid").exists() and p.read_text().strip(),
                              15, what=f"task on node {i}")) for i in (0, 1)}
    assert c.job(jid)["batch_host"] == "node1"
    c.stop_proc("agent-node2", signal.SIGKILL)
    assert running(pids[1])
    c.start_agent("node2")
    wait_until(lambda: not running(pids[1]), 10, what="node2's task to be killed")
    c.wait_state(jid, "NODE_FAIL", timeout=10)
    wait_until(lambda: not running(pids[0]), 10, what="node1's task to be killed")
    wait_until(lambda: c.idle_nodes() == {"node1", "node2"}, 10, what="both nodes idle")
    assert runs(c, jid) == [f"{jid}|NODE_FAIL"]
    assert not list((c.root / "spool" / "node2" / "state").iterdir())


def test_a_second_agent_under_the_same_name_is_reported(fresh_cluster, tmp_path: Path):
    """Two agents syncing as one node end each other's long-polls: each says so in its log and
    backs off instead of racing the other for the controller, and jobs still run."""
    c = fresh_cluster(nodes=1).start()
    c._spawn("agent-twin", [str(BIN / "slurmlet"), "agent", "--controller", c.url, "--name", "node1",
                            "--spool", str(tmp_path / "twin-spool")])
    said = "another agent syncs as node node1: give each agent its own --name"
    logs = (c.root / "agent-node1.log", c.root / "agent-twin.log")
    wait_until(lambda: any(said in p.read_text() for p in logs if p.exists()), 20, 0.1, "the twin noticed")
    c.stop_proc("agent-twin", signal.SIGKILL)
    jid = c.sbatch("--wrap", "true")
    c.wait_state(jid, "COMPLETED", timeout=30)


def test_an_agent_that_stays_dead_leaves_no_job_running_when_its_node_is_taken_for_dead(fresh_cluster, tmp_path):
    """The fence (nodeagent/fence.py): the jobs of an agent killed and not restarted end before the
    controller takes the node for dead (SlurmdTimeout) and requeues them; they never run twice at once."""
    c = fresh_cluster(nodes=2, extra_conf="SlurmdTimeout=8\n").start()
    jid, pid, out = start_job(c, tmp_path, "fenced", "--requeue", "-w", "node1")
    c.stop_proc("agent-node1", signal.SIGKILL)  # and nobody starts it again
    assert running(pid)
    # the controller takes node1 for dead: the job is requeued (and may already be running on node2)
    wait_until(lambda: c.job(jid)["restarts"] >= 1, 60, what="the job requeued")
    assert not running(pid), "the first run still runs while the job is requeued"
    assert "overlap" not in out.read_text()


def test_a_node_that_stops_answering_is_named_and_its_job_and_steps_end(fresh_cluster, tmp_path: Path):
    """An agent gone for good under a 2-node job with a step running on both nodes: after
    SlurmdTimeout the controller logs the node by name with the job and its fate, the job ends
    NODE_FAIL (--no-requeue), its step ends with an End time in sacct, and `sbatch --wait` returns
    instead of hanging."""
    import subprocess
    c = fresh_cluster(nodes=2, extra_conf="SlurmdTimeout=8\n").start()
    started = tmp_path / "started"
    script = f"#!/bin/sh\ntouch {started}\nsrun -N2 sleep 300\n"
    (tmp_path / "job.sh").write_text(script)
    waiter = subprocess.Popen([str(BIN / "sbatch"), "--wait", "--parsable", "--no-requeue", "-N2",
                               "-o", str(tmp_path / "job.out"), str(tmp_path / "job.sh")], env=c.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: started.exists(), 60, what="the job started")
        jid = int(wait_until(lambda: c.run(["squeue", "-h", "-o", "%i"]).stdout.strip(), 30, what="its id"))
        wait_until(lambda: any(s["step"] == 0 for s in c.job(jid)["steps"]), 30, what="its step running")
        c.stop_proc("agent-node2", signal.SIGKILL)
        out, err = waiter.communicate(timeout=120)
    finally:
        if waiter.poll() is None:
            waiter.kill()
    assert waiter.returncode != 0, (out, err)
    assert c.job(jid)["state"] == "NODE_FAIL"
    log = (c.root / "controller.log").read_text()
    assert f"node2 not responding: jobs {jid} NODE_FAIL" in log
    r = c.run(["sacct", "-j", str(jid), "-n", "-P", "-o", "JobID,State,End"])
    rows = {line.split("|")[0]: line.split("|")[1:] for line in r.stdout.splitlines()}
    assert rows[str(jid)][0] == "NODE_FAIL" and rows[f"{jid}.0"][0] == "CANCELLED", r.stdout
    assert all(end != "Unknown" for _, end in rows.values()), r.stdout


def test_srun_outside_an_allocation_reports_a_node_failure(fresh_cluster):
    """srun -N2 whose second node's agent dies: the job ends NODE_FAIL (never requeued: not a batch
    job, as in Slurm) and srun says `srun: error: Node failure on node2` and exits, instead of waiting."""
    import subprocess
    c = fresh_cluster(nodes=2, extra_conf="SlurmdTimeout=8\n").start()
    p = subprocess.Popen([str(BIN / "srun"), "-N2", "sleep", "300"], env=c.env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: any(s["step"] == 0 for j in c.api("GET", "/api/v1/jobs")["jobs"] for s in j["steps"]),
                   60, what="the step running")
        c.stop_proc("agent-node2", signal.SIGKILL)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode != 0
    assert "srun: error: Node failure on node2" in err.splitlines(), err


def test_an_agent_keeps_a_few_connections_however_many_jobs_end_while_it_waits(fresh_cluster):
    """Each job or step that ends while the agent's sync waits for orders sends a new sync (the
    controller ends the old one's wait). The old request is left to end, not cancelled: cancelled
    in flight, it kept its connection taken in httpx's pool, and after about 200 srun allocations the
    pool was full, every sync failed (PoolTimeout) and the node was taken for dead (NODE_FAIL)."""
    import psutil
    c: Cluster = fresh_cluster(nodes=1)
    c.start()
    agent = psutil.Process(c.procs["agent-node1"].pid)
    port = int(c.url.rsplit(":", 1)[1])
    for _ in range(40):  # an srun's allocation ends while the agent waits: its holder is killed
        r = c.run([str(BIN / "srun"), "-N1", "true"])
        assert r.returncode == 0, r.stderr
    to_controller = [x for x in agent.net_connections(kind="tcp") if x.raddr and x.raddr.port == port]
    assert len(to_controller) <= 4, to_controller
    assert "controller unreachable" not in (c.root / "agent-node1.log").read_text()
