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


def test_sacct_memory_figures_per_task(cluster: Cluster):
    """MaxRSS/MaxVMSize are the largest task's, with its node and rank (MaxRSSNode, MaxRSSTask);
    AveRSS/AveVMSize the mean of the tasks' (tests/data/slurm-2205-memstats.md: a 2-task step on 22.05)."""
    c = cluster
    hold = (f"{sys.executable} -c 'import os, time; x = bytearray((20 + 60 * int(os.environ[\"SLURM_PROCID\"])) "
            "* 2**20); x[::4096] = b\"1\" * len(x[::4096]); time.sleep(2)'")
    jid = c.sbatch("-N1", "-n2", "--wrap", f"srun -n2 {hold}")
    c.wait_state(jid, "COMPLETED", timeout=60)
    fields = "JobID,MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,MaxVMSize,MaxVMSizeNode,MaxVMSizeTask,AveVMSize"
    r = c.run(f"sacct -j {jid} -n -P -o {fields}")
    rows = {line.split("|")[0]: dict(zip(fields.split(",")[1:], line.split("|")[1:])) for line in r.stdout.splitlines()}
    step, batch, job = rows[f"{jid}.0"], rows[f"{jid}.batch"], rows[str(jid)]
    node = c.job(jid)["batch_host"]
    assert step["MaxRSSTask"] == "1" and step["MaxRSSNode"] == node, step  # rank 1 holds 80 MiB, rank 0 20
    assert kb(step["MaxRSS"]) >= 70 * 1024, step
    assert 40 * 1024 <= kb(step["AveRSS"]) < kb(step["MaxRSS"]), step  # (20 + 80) / 2 MiB and the interpreters
    assert kb(step["MaxVMSize"]) >= kb(step["MaxRSS"]) and kb(step["AveVMSize"]) >= kb(step["AveRSS"]), step
    assert step["MaxVMSizeNode"] == node and step["MaxVMSizeTask"] in ("0", "1"), step
    # the batch script is one task on its batch host
    assert batch["MaxRSSNode"] == node and batch["MaxRSSTask"] == "0" and batch["AveRSS"] == batch["MaxRSS"], batch
    assert kb(batch["MaxVMSize"]) >= kb(batch["MaxRSS"]) > 0, batch
    assert not any(job.values()), job  # the job's own line has none (as 22.05's)
