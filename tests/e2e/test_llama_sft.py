"""The migration guide's 2-node torchrun script on a local cluster, for real: 2 agents x 2 gloo
processes form one process group, the loss falls, checkpoints land in the shared directory, and
a requeued run resumes from the latest one."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import BIN, ROOT, wait_until

pytestmark = pytest.mark.e2e
torch = pytest.importorskip("torch")  # ./test.sh installs it (the test extra)

CONF = """ClusterName=local
NodeName=node[1-2] CPUs=4 RealMemory=16000 Gres=gpu:H100:8
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
KillWait=2
SlurmletRequeueDelay=0
"""


@pytest.fixture
def local(tmp_path: Path):
    # what a user's shell has after `eval "$(slurmlet up)"`: nothing of another cluster's
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURMLET_")}
    env.update(HOME=str(tmp_path), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    state = tmp_path / "state"
    conf = tmp_path / "slurm.conf"
    conf.write_text(CONF)
    up = subprocess.run([str(BIN / "slurmlet"), "up", "--config", str(conf), "--state-dir", str(state), "--port", "0"],
                        capture_output=True, text=True, env=env, timeout=120)
    assert up.returncode == 0, up.stderr
    for line in up.stdout.splitlines():
        k, _, v = line.removeprefix("export ").partition("=")
        if k.startswith("SLURMLET_"):
            env[k] = v
    work = tmp_path / "work"
    shutil.copytree(ROOT / "examples" / "llama-sft", work)
    yield env, work
    subprocess.run([str(BIN / "slurmlet"), "down", "--state-dir", str(state)], capture_output=True, env=env, timeout=60)


def run(env: dict, work: Path, *cmd: str) -> str:
    r = subprocess.run(list(cmd), capture_output=True, text=True, env=env, cwd=work, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def losses(text: str) -> list[float]:
    return [float(line.split()[-1]) for line in text.splitlines() if line.startswith("step ")]


def test_two_nodes_one_process_group_loss_falls_and_checkpoints(local):
    env, work = local
    out = run(env, work, "sbatch", "--parsable", "--wait", "--export=ALL,NPROC_PER_NODE=2,STEPS=40",
              "-o", "sft-%j.out", "llama-sft.sbatch")
    jid = out.strip()
    text = (work / f"sft-{jid}.out").read_text()
    assert "process group: backend gloo, world size 4, all_reduce(sum of ranks) = 6 (expected 6)" in text
    ls = losses(text)
    assert len(ls) >= 4 and ls[-1] < ls[0] / 10
    assert sorted(p.name for p in (work / "checkpoints" / jid).iterdir()) == ["ckpt-20.pt", "ckpt-40.pt"]
    # the next submission trains from the start: its own checkpoint directory
    out = run(env, work, "sbatch", "--parsable", "--wait", "--export=ALL,NPROC_PER_NODE=2,STEPS=20",
              "-o", "sft-%j.out", "llama-sft.sbatch")
    text = (work / f"sft-{out.strip()}.out").read_text()
    assert "resumed from" not in text and "step 0 loss" in text
    sacct = run(env, work, "sacct", "-j", jid, "-n", "-P", "-o", "JobID,State,NodeList")
    assert sacct.splitlines() == [f"{jid}|COMPLETED|node[1-2]", f"{jid}.batch|COMPLETED|node1",
                                  f"{jid}.0|COMPLETED|node[1-2]"]


def test_a_requeued_run_resumes_from_its_checkpoint(local):
    env, work = local
    jid = run(env, work, "sbatch", "--parsable", "--export=ALL,NPROC_PER_NODE=2,STEPS=60,STEP_SLEEP=0.1",
              "-o", "sft-%j.out", "llama-sft.sbatch").strip()
    wait_until(lambda: (work / "checkpoints" / jid / "ckpt-20.pt").exists(), 120, what="the first checkpoint")
    run(env, work, "scontrol", "requeue", jid)
    out = work / f"sft-{jid}.out"
    wait_until(lambda: "done" in out.read_text().splitlines(), 180, what="the second run to finish")
    text = out.read_text()
    first, second = text.split("resumed from ", 1)
    assert "ckpt-20.pt" in first and second.split()[0] in ("ckpt-20.pt", "ckpt-40.pt")
    resumed_at = int(second.split("\n", 1)[0].rsplit(" ", 1)[1])
    assert [int(line.split()[1]) for line in second.splitlines() if line.startswith("step ")][0] >= resumed_at
    assert run(env, work, "scontrol", "show", "job", jid).count("Restarts=1") == 1
