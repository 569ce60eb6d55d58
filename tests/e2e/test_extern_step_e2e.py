"""PrologFlags=Contain: every job has an extern step, which sacct lists as 22.05 does
(tests/data/slurm-2205-extern.md): COMPLETED 0:0 on the job's nodes, whatever became of the job."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import BIN, Cluster, serve, wait_until

pytestmark = pytest.mark.e2e

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm-2205-extern.md"
FIELDS = "JobID,JobName,State,ExitCode,NodeList,AllocCPUS,NTasks"


@pytest.fixture(scope="module")
def contained(tmp_path_factory: pytest.TempPathFactory):
    yield from serve(Cluster(tmp_path_factory.mktemp("contain"), extra_conf="PrologFlags=Contain\n"))


def captured(job: str) -> list[list[str]]:
    """The capture's sacct rows of `job` (its own id, the rest of each JobID as it is)."""
    lines = DATA.read_text().splitlines()
    return [line.split() for line in lines if line.split() and line.split()[0].split(".")[0] == job]


def sacct(c: Cluster, jid: int) -> list[list[str]]:
    r = c.run([str(BIN / "sacct"), "-j", str(jid), "-n", "-P", "-o", FIELDS])
    return [[f for f in line.split("|") if f] for line in r.stdout.splitlines()]


def as_ids(rows: list[list[str]], jid: int) -> list[list[str]]:
    return [[str(jid) + r[0][r[0].find("."):] if "." in r[0] else str(jid), *r[1:]] for r in rows]


def test_sacct_lists_the_extern_step_of_every_job(contained: Cluster):
    c = contained
    jid = c.sbatch("-J", "extcap", "-o", "/dev/null", "-N2", "-n2", script="#!/bin/bash\nsrun true\n")
    c.wait_state(jid, "COMPLETED", timeout=60)
    assert sacct(c, jid) == as_ids(captured("1754"), jid)


def test_the_extern_step_runs_with_its_job_and_completes_when_it_is_cancelled(contained: Cluster):
    c = contained
    jid = c.sbatch("-J", "extcan", "-o", "/dev/null", "-N1", "--wrap", "sleep 300")
    c.wait_state(jid, "RUNNING", timeout=60)
    want = as_ids(captured("1755"), jid)
    assert sacct(c, jid) == want[:3]  # running: the job, its batch step, its extern step
    c.run([str(BIN / "scancel"), str(jid)])
    c.wait_state(jid, "CANCELLED", timeout=60)
    # (the job is CANCELLED at once, as 22.05's; its steps end as its node reports them)
    wait_until(lambda: all(r[2] != "RUNNING" for r in sacct(c, jid)), 60, 0.1, "the job's steps to end")
    rows = [[f if not f.startswith("CANCELLED by") else "CANCELLED+" for f in r] for r in sacct(c, jid)]
    # (-P prints `CANCELLED by UID` whole, which the capture's column cut to `CANCELLED+`; the batch step of a cancelled job is 22.05's FAILED 15:0: not what this test is about)
    assert [rows[0], rows[2]] == [want[3], want[5]]
