"""MaxRSS and TotalCPU in sacct, sampled by the agents for the batch script and for srun steps."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import Cluster

pytestmark = pytest.mark.e2e

BURN = (f"{sys.executable} -c 'import time; x = bytearray(80 * 2**20); x[::4096] = b\"1\" * len(x[::4096]); "
        "t = time.process_time()\nwhile time.process_time() - t < 2: pass'")


def kb(text: str) -> int:
    return int(float(text.rstrip("K")) * (1024 if text.endswith("M") else 1)) if text else 0


def secs(text: str) -> float:
    parts = [float(p) for p in text.split(":")]
    return sum(p * 60 ** i for i, p in enumerate(reversed(parts)))


def test_sacct_reports_what_the_batch_script_and_steps_used(cluster: Cluster):
    c = cluster
    jid = c.sbatch("-N1", "--wrap", f"{BURN}; srun -n1 {BURN}")
    c.wait_state(jid, "COMPLETED", timeout=60)
    r = c.run(f"sacct -j {jid} -n -P -o JobID,MaxRSS,TotalCPU")
    rows = {line.split("|")[0]: line.split("|")[1:] for line in r.stdout.splitlines()}
    batch_rss, batch_cpu = rows[f"{jid}.batch"]
    step_rss, step_cpu = rows[f"{jid}.0"]
    assert kb(batch_rss) >= 60 * 1024 and kb(step_rss) >= 60 * 1024  # the 80 MiB buffers, touched
    assert secs(batch_cpu) >= 1.5 and secs(step_cpu) >= 1.5
    assert secs(rows[str(jid)][1]) >= secs(batch_cpu)  # the job's CPU time is its steps'
