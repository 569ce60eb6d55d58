"""GPU binding on a real local cluster with fake GPUs: distinct devices per job, per task."""

from __future__ import annotations

import pytest

from tests.conftest import Cluster, serve, wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def gpu_cluster(tmp_path_factory: pytest.TempPathFactory):
    yield from serve(Cluster(tmp_path_factory.mktemp("gpus"), nodes=2, cpus=4, gpus=8))


def test_concurrent_jobs_never_share_a_gpu(gpu_cluster: Cluster):
    c = gpu_cluster
    gate = c.workdir / "gpu-gate"
    wait = f"echo $CUDA_VISIBLE_DEVICES; while [ ! -e {gate} ]; do sleep 0.1; done"
    ids = [c.sbatch("-w", "node1", "--gpus-per-node=3", "-o", "gpu-%j.out", "--wrap", wait) for _ in range(3)]
    for j in ids[:2]:
        c.wait_state(j, "RUNNING")
    assert c.job(ids[2])["state"] == "PENDING" and c.job(ids[2])["reason"] == "Resources"  # 3+3+3 > 8
    seen = [wait_until(lambda j=j: (c.workdir / f"gpu-{j}.out").exists()
                       and (c.workdir / f"gpu-{j}.out").read_text().strip(), what="the job's devices")
            for j in ids[:2]]
    sets = [set(s.split(",")) for s in seen]
    assert all(len(s) == 3 for s in sets) and not sets[0] & sets[1]
    gate.touch()
    for j in ids:
        c.wait_state(j, "COMPLETED", timeout=30)


def test_gpus_per_task_binds_each_task_to_its_own_devices(gpu_cluster: Cluster):
    c = gpu_cluster
    script = ("#!/bin/sh\nsrun bash -c 'echo task $SLURM_PROCID node=$SLURMD_NODENAME nodeid=$SLURM_NODEID "
              "localid=$SLURM_LOCALID CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS=$SLURM_STEP_GPUS "
              "SLURM_JOB_GPUS=$SLURM_JOB_GPUS SLURM_GPUS_ON_NODE=$SLURM_GPUS_ON_NODE' | sort\n")
    jid = c.sbatch("-N2", "-n4", "--ntasks-per-node=2", "--gpus-per-task=4", "-o", "gpt-%j.out", script=script)
    c.wait_state(jid, "COMPLETED", timeout=60)
    all8 = "0,1,2,3,4,5,6,7"
    assert (c.workdir / f"gpt-{jid}.out").read_text().splitlines() == [
        f"task 0 node=node1 nodeid=0 localid=0 CUDA_VISIBLE_DEVICES=0,1,2,3 SLURM_STEP_GPUS=0,1,2,3 "
        f"SLURM_JOB_GPUS={all8} SLURM_GPUS_ON_NODE=8",
        f"task 1 node=node1 nodeid=0 localid=1 CUDA_VISIBLE_DEVICES=4,5,6,7 SLURM_STEP_GPUS=4,5,6,7 "
        f"SLURM_JOB_GPUS={all8} SLURM_GPUS_ON_NODE=8",
        f"task 2 node=node2 nodeid=1 localid=0 CUDA_VISIBLE_DEVICES=0,1,2,3 SLURM_STEP_GPUS=0,1,2,3 "
        f"SLURM_JOB_GPUS={all8} SLURM_GPUS_ON_NODE=8",
        f"task 3 node=node2 nodeid=1 localid=1 CUDA_VISIBLE_DEVICES=4,5,6,7 SLURM_STEP_GPUS=4,5,6,7 "
        f"SLURM_JOB_GPUS={all8} SLURM_GPUS_ON_NODE=8",
    ]
