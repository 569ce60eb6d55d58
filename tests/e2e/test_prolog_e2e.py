"""slurm.conf Prolog and Epilog on a real agent: the job's environment, SLURM_JOB_EXIT_CODE2, and
failures that drain the node (a failed prolog requeues the job held)."""

from __future__ import annotations

import pytest

from tests.conftest import Cluster, wait_until

pytestmark = pytest.mark.e2e


def test_prolog_and_epilog_run_around_the_job_and_failures_drain_the_node(fresh_cluster, tmp_path):
    trace = tmp_path / "trace.txt"
    fail = tmp_path / "fail-prolog"
    prolog = tmp_path / "prolog.sh"
    prolog.write_text(f"#!/bin/sh\n[ -e {fail} ] && exit 5\necho prolog $SLURM_JOB_ID $SLURM_JOB_USER >> {trace}\n")
    epilog = tmp_path / "epilog.sh"
    epilog.write_text(f"#!/bin/sh\necho epilog $SLURM_JOB_ID $SLURM_JOB_EXIT_CODE2 >> {trace}\n")
    for p in (prolog, epilog):
        p.chmod(0o755)
    c: Cluster = fresh_cluster(nodes=1, extra_conf=f"Prolog={prolog}\nEpilog={epilog}\n").start()
    jid = c.sbatch("--wrap", f"echo job >> {trace}; exit 3")
    c.wait_state(jid, "FAILED")
    wait_until(lambda: trace.exists() and len(trace.read_text().splitlines()) == 3, what="the epilog")
    assert trace.read_text().splitlines() == [f"prolog {jid} root", "job", f"epilog {jid} 3:0"]
    # a failing prolog: the job goes back to the queue held, the node is drained
    fail.touch()
    jid2 = c.sbatch("--wrap", f"echo job2 >> {trace}")
    j = c.wait_state(jid2, "PENDING")
    wait_until(lambda: c.job(jid2)["reason"] == "JobHeldAdmin", what="the job held")
    node = wait_until(lambda: (n := c.api("GET", "/api/v1/nodes")["nodes"][0])["state"].startswith("DRAIN") and n,
                      what="the node drained")
    assert node["reason"] == "Prolog error" and c.job(jid2)["restarts"] == 1 and j["job_id"] == jid2
    fail.unlink()
    assert c.run("scontrol update nodename=node1 state=resume").returncode == 0
    assert c.run(f"scontrol release {jid2}").returncode == 0
    c.wait_state(jid2, "COMPLETED", timeout=180)
    assert "job2" in trace.read_text().splitlines()


def test_a_job_whose_epilog_is_running_is_not_started_again(fresh_cluster, tmp_path):
    """While the Epilog of a job whose batch script has ended runs, the agent has not reported the end;
    a sync then (here: its step's end wakes one) brings the launch order again. The job runs once."""
    epilog = tmp_path / "epilog.sh"
    epilog.write_text("#!/bin/sh\nsleep 2\n")
    epilog.chmod(0o755)
    c: Cluster = fresh_cluster(nodes=1, extra_conf=f"Epilog={epilog}\n").start()
    runs = tmp_path / "runs"
    for _ in range(3):
        jid = c.sbatch("-o", "/dev/null", "--wrap", f"srun true; echo ran >> {runs}")
        c.wait_state(jid, "COMPLETED", timeout=60)
    assert runs.read_text() == "ran\n" * 3


def test_a_node_waits_for_news_while_its_prolog_and_epilog_run(fresh_cluster, tmp_path):
    """A prolog's or epilog's order is repeated until its report arrives, and an order answers a
    sync at once: the agent says which scripts run (scripts_running) and is not ordered them again,
    or it would spin through their whole run."""
    slow = tmp_path / "slow.sh"
    slow.write_text("#!/bin/sh\nsleep 2\n")
    slow.chmod(0o755)
    c: Cluster = fresh_cluster(nodes=1, extra_conf=f"Prolog={slow}\nEpilog={slow}\n").start()
    before = c.syncs()
    jid = c.sbatch("-o", "/dev/null", "--wrap", "true")
    c.wait_state(jid, "COMPLETED", timeout=60)
    wait_until(lambda: c.api("GET", "/api/v1/nodes")["nodes"][0]["state"] == "IDLE", 30, what="the epilog's end")
    assert c.syncs() - before < 60  # (4 s of scripts: thousands of syncs when the orders were repeated)

