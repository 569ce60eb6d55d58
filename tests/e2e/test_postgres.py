"""The same cluster with its state in PostgreSQL: jobs run, and a restarted controller resumes."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.conftest import PG_URL, Cluster, pg_available, reset_pg

pytestmark = [pytest.mark.e2e, pytest.mark.pg]


@pytest.fixture
def pg_cluster(fresh_cluster):
    if not pg_available():
        pytest.skip("PostgreSQL is not running at 127.0.0.1:5432")
    reset_pg()
    c: Cluster = fresh_cluster(nodes=2, db_url=PG_URL)
    return c.start()


def test_jobs_run_and_survive_a_controller_restart_on_postgres(pg_cluster: Cluster, tmp_path: Path):
    c = pg_cluster
    done = c.sbatch("-N2", "-o", str(tmp_path / "a.out"), "--wrap", "echo $SLURM_JOB_NODELIST")
    c.wait_state(done, "COMPLETED")
    assert (tmp_path / "a.out").read_text() == "node[1-2]\n"
    held = c.sbatch("-H", "--wrap", "true")
    c.stop_proc("controller", signal.SIGKILL)
    c.start_controller()
    assert c.job(held)["state"] == "PENDING" and c.job(done)["state"] == "COMPLETED"
    r = c.run(f"scontrol release {held}")
    assert r.returncode == 0
    c.wait_state(held, "COMPLETED")
    r = c.run(f"sacct -n -X -P -o JobID,State -j {done},{held}")
    assert r.stdout.splitlines() == [f"{done}|COMPLETED", f"{held}|COMPLETED"]
