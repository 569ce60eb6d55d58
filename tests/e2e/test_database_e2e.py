"""The controller's database on a real cluster (SQLite in the state directory):

- held by another connection's lock for longer than SlurmdTimeout while a job ends, it makes the
  controller stand still, and that is not the nodes' silence: the job completes, once, and the
  other node's job runs on;
- deleted under the running controller, it refuses submissions with an error naming it (not
  `Submitted batch job`), and the next start refuses too, until told `--init-db`.
"""

from __future__ import annotations

import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import BIN, Cluster, wait_until

pytestmark = pytest.mark.e2e

TIMEOUT = 5  #: SlurmdTimeout of these clusters


def waiting_job(c: Cluster, tmp_path: Path, name: str) -> tuple[int, Path, Path]:
    """A job that records each run of it and ends once its go-file exists; (id, go-file, runs-file)."""
    go, runs = tmp_path / f"{name}.go", tmp_path / f"{name}.runs"
    jid = c.sbatch("-J", name, "-N1", "--exclusive", "-o", str(tmp_path / f"{name}.out"),
                   script=f"#!/bin/sh\necho $SLURM_JOB_ID >> {runs}\nwhile [ ! -f {go} ]; do sleep 0.05; done\n")
    return jid, go, runs


def test_a_job_that_ends_while_the_database_is_locked_completes_once(fresh_cluster, tmp_path: Path):
    c = fresh_cluster(nodes=2, extra_conf=f"SlurmdTimeout={TIMEOUT}\n").start()
    ended, go_ended, runs_ended = waiting_job(c, tmp_path, "ended")
    going, go_going, runs_going = waiting_job(c, tmp_path, "going")
    for jid in (ended, going):
        c.wait_state(jid, "RUNNING")
    wait_until(lambda: runs_ended.exists() and runs_going.exists(), 20, what="both jobs' scripts running")

    lock = sqlite3.connect(c.root / "state" / "slurmlet.db", timeout=30)
    lock.execute("BEGIN EXCLUSIVE")  # the controller's next write waits for it (its busy timeout is 30 s)
    try:
        go_ended.touch()  # the job ends; its node's report cannot be recorded while the lock is held
        time.sleep(3 * TIMEOUT)  # the outage: three times SlurmdTimeout
    finally:
        lock.rollback()
        lock.close()

    j = c.wait_state(ended, ("COMPLETED", "FAILED", "NODE_FAIL", "CANCELLED"), 60)
    assert (j["state"], j["restarts"]) == ("COMPLETED", 0), j
    # the other node's job was not taken for lost: it runs on, and completes when told
    assert c.job(going)["state"] == "RUNNING" and c.job(going)["restarts"] == 0
    go_going.touch()
    j = c.wait_state(going, ("COMPLETED", "FAILED", "NODE_FAIL", "CANCELLED"), 60)
    assert (j["state"], j["restarts"]) == ("COMPLETED", 0), j
    assert runs_ended.read_text().split() == [str(ended)]  # each ran once
    assert runs_going.read_text().split() == [str(going)]
    wait_until(lambda: c.idle_nodes() == set(c.node_names), 30, what="both nodes idle")
    assert "silent nodes" not in (c.root / "controller.log").read_text()
    assert not c.crashed()


def controller_argv(c: Cluster, *extra: str) -> list[str]:
    return [str(BIN / "slurmlet"), "controller", "--config", str(c.conf_path), "--listen", f"127.0.0.1:{c.port}",
            "--state-dir", str(c.root / "state"), *extra]


def test_a_database_deleted_under_the_controller_is_not_silently_replaced(fresh_cluster):
    c = fresh_cluster(nodes=1).start()
    db = c.root / "state" / "slurmlet.db"
    first = c.sbatch("--wrap", "true")
    c.wait_state(first, "COMPLETED")

    db.unlink()
    r = c.run([str(BIN / "sbatch"), "--wrap", "true"])
    assert r.returncode != 0 and "Submitted batch job" not in r.stdout, (r.stdout, r.stderr)
    assert f"the database {db} was deleted or moved away" in r.stderr, r.stderr
    assert f"{db} was deleted or moved away" in (c.root / "controller.log").read_text()

    # the next start refuses, in one line that says how to go on, and makes no database
    c.stop_proc("controller")
    r = subprocess.run(controller_argv(c), capture_output=True, text=True, env=c.env, timeout=60)
    assert r.returncode == 1 and not db.exists(), (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith(f"slurmlet controller: error: the database {db} is missing"), r.stderr
    assert "--init-db" in lines[-1]
    # `slurmlet up` on that state directory says the same before it starts anything
    r = subprocess.run([str(BIN / "slurmlet"), "up", "--config", str(c.conf_path), "--state-dir",
                        str(c.root / "state"), "--port", "0", "--timeout", "5"],
                       capture_output=True, text=True, env=c.env, timeout=60)
    assert r.returncode == 1 and r.stderr.startswith("slurmlet up: error: the database"), (r.stdout, r.stderr)
    assert not db.exists()

    # told to, it makes a new, empty database. Job ids begin anew; the agent that kept running (it ran
    # job 1 of the old database) finds itself unknown, registers again and forgets the old database's
    # jobs, so the new job 1 runs
    c._spawn("controller", controller_argv(c, "--init-db"))
    wait_until(c.ping, 30, 0.05, "the controller to answer")
    wait_until(lambda: c.idle_nodes() == {"node1"}, 30, what="node1 idle again")
    again = c.sbatch("--wrap", "true")
    assert again == first  # numbering starts again: the old jobs went with the old database
    assert c.wait_state(again, "COMPLETED")["restarts"] == 0


def test_a_fresh_state_directory_starts_without_being_told(fresh_cluster):
    c = fresh_cluster(nodes=1)
    c.start_controller()
    assert (c.root / "state" / "database.json").exists()
    # and a restart on its database, which holds data, needs nothing either
    c.stop_proc("controller")
    c.start_controller()
    assert c.ping()
