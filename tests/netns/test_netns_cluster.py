"""Node failures on a cluster whose hosts have their own network stacks (see conftest.py).

Each test starts from c1 and c2 idle and leaves them so; every wait polls what a user would look at
(sinfo, scontrol, sacct) with a deadline.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.conftest import BIN, wait_until
from tests.netns.conftest import AGENTS, SLURMD_TIMEOUT

pytestmark = [pytest.mark.e2e, pytest.mark.netns]


def sacct(c, job_id: int) -> list[list[str]]:
    """Every run and step of the job: JobID, State, NodeList (sacct -D keeps the requeued runs)."""
    r = c.cli("sacct", "-j", str(job_id), "-D", "-n", "-P", "-o", "JobID,State,NodeList")
    assert r.returncode == 0, r.stderr
    return [line.split("|") for line in r.stdout.splitlines() if line]


def job_procs(c, host: str, job_id: int) -> list[int]:
    """Processes in the host's namespace that belong to the job (SLURM_JOB_ID in their environment)."""
    out = []
    for pid in c.topo.pids(host):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if f"SLURM_JOB_ID={job_id}".encode() in env:
            out.append(pid)
    return out


def test_hosts_have_their_own_addresses(netns_cluster) -> None:
    c = netns_cluster
    for name, octet in AGENTS.items():
        node = c.show("node", name)
        assert node["NodeAddr"] == f"10.77.0.{octet}" and node["State"] == "IDLE", node
    # separate network stacks: on login, the controller is not on the loopback, only at its address
    r = c.topo.run("login", [str(BIN / "sinfo")], env=dict(c.env, SLURMLET_CONTROLLER="http://127.0.0.1:6817"))
    assert r.returncode == 1 and "127.0.0.1:6817" in r.stderr, (r.returncode, r.stderr)


def test_state_is_in_postgres_on_its_own_host(netns_cluster) -> None:
    c = netns_cluster
    if c.no_pg:
        pytest.skip(f"SQLite on the controller host instead: {c.no_pg}")
    assert c.db_url.startswith("postgresql://slurm@10.77.0.2:")
    assert not (c.state / "slurmlet.db").exists() and not list(c.state.glob("*.db"))


def test_job_across_two_hosts(netns_cluster) -> None:
    """sbatch -N2 from login: one task on each agent host, each in its own network namespace."""
    c = netns_cluster
    script = "#!/bin/sh\nsrun sh -c 'echo $SLURMD_NODENAME $(ip -4 -o addr show dev eth0 | cut -d\" \" -f7)'\n"
    (c.data / "two.sh").write_text(script)
    jid = c.sbatch("-N2", "-o", "two-%j.out", "two.sh")
    wait_until(lambda: c.show("job", jid).get("JobState") == "COMPLETED", 30, 0.1, f"job {jid} to complete")
    rows = sacct(c, jid)
    assert [jid_state[:2] for jid_state in rows] == [[str(jid), "COMPLETED"], [f"{jid}.batch", "COMPLETED"],
                                                     [f"{jid}.0", "COMPLETED"]], rows
    assert rows[0][2] == "c[1-2]" and rows[2][2] == "c[1-2]"
    out = sorted((c.data / f"two-{jid}.out").read_text().split("\n"))
    assert [line for line in out if line] == ["c1 10.77.0.11/24", "c2 10.77.0.12/24"]


def test_killed_node(netns_cluster) -> None:
    """kill -9 of c2's agent while jobs run there: after SlurmdTimeout c2 is DOWN (Not responding), the
    --no-requeue job ends NODE_FAIL, the --requeue job (-w c2) is pending again; the agent started
    again re-registers, c2 is back by itself and the job's second run goes there."""
    c = netns_cluster
    keep = c.sbatch("-w", "c2", "--requeue", "-o", "keep-%j.out", "--wrap", "echo run $SLURM_RESTART_COUNT on "
                    "$SLURMD_NODENAME; [ $SLURM_RESTART_COUNT -gt 0 ] || sleep 300")
    lose = c.sbatch("-w", "c2", "--no-requeue", "--wrap", "sleep 300")
    for jid in (keep, lose):
        wait_until(lambda jid=jid: c.show("job", jid).get("JobState") == "RUNNING", 20, 0.1, f"job {jid} running")
    c.topo.kill("c2", "agent")  # SIGKILL: the job's processes stay behind, as after a crash
    killed = time.monotonic()
    node = wait_until(lambda: (n := c.show("node", "c2")).get("State", "").startswith("DOWN") and n,
                      SLURMD_TIMEOUT + 10, 0.2, "c2 DOWN")
    assert time.monotonic() - killed >= SLURMD_TIMEOUT - 1  # not before SlurmdTimeout
    assert node["Reason"] == "Not responding", node
    states = c.node_states()
    assert states["c2"].startswith("down") and not states["c1"].startswith("down"), states
    wait_until(lambda: c.show("job", lose).get("JobState") == "NODE_FAIL", 10, 0.1, f"job {lose} NODE_FAIL")
    job = wait_until(lambda: (j := c.show("job", keep)).get("JobState") == "PENDING" and j, 10, 0.1,
                     f"job {keep} requeued")
    assert job["Restarts"] == "1", job

    # the agent comes back: c2 registers again and the requeued job runs there
    c.start_agent("c2")
    wait_until(lambda: c.show("job", keep).get("JobState") == "COMPLETED", 30, 0.1, f"job {keep} rerun on c2")
    assert (c.data / f"keep-{keep}.out").read_text().splitlines()[-1] == "run 1 on c2"
    assert [r[1] for r in sacct(c, keep) if "." not in r[0]] == ["NODE_FAIL", "COMPLETED"], sacct(c, keep)
    assert sacct(c, lose)[0][1] == "NODE_FAIL"
    c.wait_idle(*AGENTS)
    jobs_left = [p for jid in (keep, lose) for p in job_procs(c, "c2", jid)]
    for pid in jobs_left:  # see test_restarted_agent_stops_what_it_left_behind
        os.kill(pid, signal.SIGKILL)


def test_restarted_agent_stops_what_it_left_behind(netns_cluster) -> None:
    """kill -9 of c2's agent and a new one at once (before SlurmdTimeout): the new agent finds the
    job's processes its predecessor left running (recorded in its spool), kills them before it
    registers, and the --no-requeue job ends NODE_FAIL."""
    c = netns_cluster
    jid = c.sbatch("-w", "c2", "--no-requeue", "--wrap", "sleep 300")
    wait_until(lambda: c.show("job", jid).get("JobState") == "RUNNING", 20, 0.1, f"job {jid} running")
    c.topo.kill("c2", "agent")
    c.start_agent("c2")  # before SlurmdTimeout: registering again ends the job it no longer knows
    try:
        wait_until(lambda: c.show("job", jid).get("JobState") == "NODE_FAIL", 10, 0.1, f"job {jid} NODE_FAIL")
        c.wait_idle("c2")
        wait_until(lambda: not job_procs(c, "c2", jid), 3, 0.1, f"job {jid}'s processes on c2 to be killed")
    finally:
        for pid in job_procs(c, "c2", jid):
            os.kill(pid, signal.SIGKILL)


def test_cut_off_node(netns_cluster) -> None:
    """c1 unplugged while a job runs there: DOWN after SlurmdTimeout and the job requeued to c2; once
    plugged in again, c1's agent finds the controller by itself, stops the job's stale run and c1
    is idle (no `scontrol update state=resume` needed)."""
    c = netns_cluster
    jid = c.sbatch("--requeue", "-o", "cut-%j.out", "--wrap",
                   "echo run $SLURM_RESTART_COUNT on $SLURMD_NODENAME; [ $SLURM_RESTART_COUNT -gt 0 ] || sleep 300")
    wait_until(lambda: c.show("job", jid).get("JobState") == "RUNNING", 20, 0.1, f"job {jid} running")
    assert c.show("job", jid)["NodeList"] == "c1"  # the first of two idle nodes
    assert job_procs(c, "c1", jid)
    c.topo.cut("c1")
    try:
        node = wait_until(lambda: (n := c.show("node", "c1")).get("State", "").startswith("DOWN") and n,
                          SLURMD_TIMEOUT + 10, 0.2, "c1 DOWN")
        assert node["Reason"] == "Not responding", node
        wait_until(lambda: c.show("job", jid).get("JobState") == "COMPLETED", 15, 0.1, f"job {jid} rerun on c2")
        assert c.show("job", jid)["NodeList"] == "c2"
        assert job_procs(c, "c1", jid), "c1 cannot hear of the requeue while cut off"
    finally:
        c.topo.reconnect("c1")
    c.wait_idle("c1", timeout=45)
    wait_until(lambda: not job_procs(c, "c1", jid), 20, 0.1, f"job {jid}'s stale run on c1 to be killed")
    assert (c.data / f"cut-{jid}.out").read_text().splitlines()[-1] == "run 1 on c2"
    assert [r[1] for r in sacct(c, jid) if "." not in r[0]] == ["NODE_FAIL", "COMPLETED"], sacct(c, jid)
    c.wait_idle(*AGENTS)


def test_cut_off_node_job_waits_for_it(netns_cluster) -> None:
    """A job that can only run on the cut-off node (-w c1) is pending again while c1 is away; when c1
    is back, its stale first run is stopped and the second run (SLURM_RESTART_COUNT=1) runs there."""
    c = netns_cluster
    jid = c.sbatch("-w", "c1", "--requeue", "-o", "pinned-%j.out", "--wrap",
                   "echo run $SLURM_RESTART_COUNT on $SLURMD_NODENAME; [ $SLURM_RESTART_COUNT -gt 0 ] || sleep 300")
    wait_until(lambda: c.show("job", jid).get("JobState") == "RUNNING", 20, 0.1, f"job {jid} running")
    c.topo.cut("c1")
    try:
        job = wait_until(lambda: (j := c.show("job", jid)).get("JobState") == "PENDING" and j,
                         SLURMD_TIMEOUT + 10, 0.2, f"job {jid} requeued")
        assert job["Restarts"] == "1", job
    finally:
        c.topo.reconnect("c1")
    wait_until(lambda: c.show("job", jid).get("JobState") in ("COMPLETED", "FAILED"), 45, 0.1, f"job {jid} ended")
    assert c.show("job", jid)["JobState"] == "COMPLETED", (c.show("job", jid), sacct(c, jid))
    assert (c.data / f"pinned-{jid}.out").read_text().splitlines()[-1] == "run 1 on c1"
    assert not job_procs(c, "c1", jid)
    c.wait_idle(*AGENTS)


def test_restarted_controller_gives_agents_time(netns_cluster) -> None:
    """The controller killed for longer than SlurmdTimeout and started again: the agents' silence
    counts from its start, so they sync in time and the running job keeps running."""
    c = netns_cluster
    jid = c.sbatch("--wrap", "sleep 300")
    wait_until(lambda: c.show("job", jid).get("JobState") == "RUNNING", 20, 0.1, f"job {jid} running")
    c.topo.kill("slurmctld", "controller")
    down = time.monotonic()
    wait_until(lambda: time.monotonic() - down > SLURMD_TIMEOUT + 1, SLURMD_TIMEOUT + 5, 0.2,
               "SlurmdTimeout to pass with the controller away")
    c.start_controller()
    up = time.monotonic()
    wait_until(lambda: time.monotonic() - up > SLURMD_TIMEOUT + 2, SLURMD_TIMEOUT + 5, 0.2,
               "SlurmdTimeout to pass with the controller back")
    job = c.show("job", jid)
    assert job["JobState"] == "RUNNING" and job["Restarts"] == "0", job
    assert not any(s.startswith("down") for s in c.node_states().values()), c.node_states()
    assert c.cli("scancel", str(jid)).returncode == 0
    wait_until(lambda: not job_procs(c, job["NodeList"], jid), 20, 0.1, f"job {jid} killed")
    c.wait_idle(*AGENTS)
