"""Tools that drive Slurm, run unchanged (as installed from the package registry: pyproject's `test`
extra) against a real local cluster: Snakemake's Slurm executor (sbatch per rule, the rule in an
`srun` step, sacct or squeue to follow the jobs) and TorchX's Slurm scheduler (one `#SBATCH hetjob`
component per replica, `srun A : B`, sacct to follow and list them). What they do on 22.05 is in
tests/data/slurm-2205-tools.md."""

from __future__ import annotations

import getpass
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import BIN, Cluster, free_port

pytestmark = pytest.mark.e2e

SNAKEFILE = """\
rule all:
    input: "summary.txt"

rule make:
    output: "data/{sample}.txt"
    shell: "echo {wildcards.sample} $SLURM_JOB_ID $SLURM_STEP_ID > {output}"

rule summarize:
    input: expand("data/{sample}.txt", sample=["a", "b"])
    output: "summary.txt"
    shell: "cat {input} > {output}; echo step $SLURM_STEP_ID of $SLURM_JOB_ID >> {output}"
"""


@pytest.mark.parametrize("status_command", ["sacct", "squeue"])
def test_a_snakemake_workflow_runs_through_its_slurm_executor(cluster: Cluster, tmp_path: Path, status_command: str):
    pytest.importorskip("snakemake_executor_plugin_slurm")
    c = cluster
    work = tmp_path / "flow"
    work.mkdir()
    (work / "Snakefile").write_text(SNAKEFILE)
    # the executor's documented settings: where the jobs go (partition, account, a time limit), how soon
    # it first looks at them, the status command, and keeping the jobs' logs to look at
    r = c.run([str(BIN / "snakemake"), "--executor", "slurm", "--jobs", "2", "--slurm-status-command", status_command,
               "--slurm-init-seconds-before-status-checks", "1", "--slurm-keep-successful-logs",
               "--default-resources", "slurm_partition=debug", f"slurm_account={getpass.getuser()}", "runtime=5"],
              cwd=work, env={"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}, timeout=170)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-6000:]
    assert "4 of 4 steps (100%) done" in r.stderr
    logs = dict(re.findall(r"Job \d+ has been submitted with SLURM jobid (\d+) \(log: (\S+)\)", r.stderr))
    submitted = {jid: re.search(r"/rule_(\w+)/", log).group(1) for jid, log in logs.items()}
    assert sorted(submitted.values()) == ["make", "make", "summarize"], r.stderr[-6000:]
    # each rule ran as step 0 of its own job (the plugin's `srun` inside the batch script)
    made = {}
    for sample in ("a", "b"):
        name, job, step = (work / "data" / f"{sample}.txt").read_text().split()
        assert (name, step) == (sample, "0") and submitted.get(job) == "make"
        made[sample] = job
    summary = (work / "summary.txt").read_text().splitlines()
    assert summary[:2] == [f"a {made['a']} 0", f"b {made['b']} 0"]
    last = next(j for j, rule in submitted.items() if rule == "summarize")
    assert summary[2] == f"step 0 of {last}"
    for jid, log in logs.items():
        assert Path(log).is_file()  # the job's output, where the executor told sbatch to put it
        acct = c.run([str(BIN / "sacct"), "-j", jid, "-n", "-P", "-o", "JobID,State,ExitCode"]).stdout.split()
        assert acct == [f"{jid}|COMPLETED|0:0", f"{jid}.batch|COMPLETED|0:0", f"{jid}.0|COMPLETED|0:0"]


# ---------------------------------------------------------------- TorchX: a replica per heterogeneous component

TRAIN = """\
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"rank {dist.get_rank()} of {dist.get_world_size()} on {os.environ.get('SLURMD_NODENAME')}: sum {t.item():g}", flush=True)
dist.destroy_process_group()
"""


@pytest.fixture
def local_cluster(tmp_path: Path):
    """`slurmlet up`'s cluster of 2 nodes: their names resolve (hosts entries) and are their tasks'
    host names (a UTS namespace each), as on a real cluster, which torchrun's rendezvous needs (the
    node named in $SLURM_JOB_NODELIST_HET_GROUP_0 hosts it). Both need root."""
    if os.geteuid() != 0:
        pytest.skip("a local cluster whose node names resolve and are their tasks' host names needs root")
    state = tmp_path / "state"
    env = dict(os.environ, HOME=str(tmp_path), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("SLURMLET_CONTROLLER", None)
    r = subprocess.run([str(BIN / "slurmlet"), "up", "--nodes", "2", "--cpus-per-node", "4", "--state-dir", str(state),
                        "--port", "0"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    exports = dict(line.removeprefix("export ").split("=", 1) for line in r.stdout.splitlines())
    exports.pop("PATH")  # ("...:$PATH", for a shell to expand)
    env.update(exports)
    try:
        yield env
    finally:
        subprocess.run([str(BIN / "slurmlet"), "down", "--state-dir", str(state)], env=env, capture_output=True,
                       timeout=60)


def test_torchx_runs_a_ddp_app_of_two_replicas_as_one_heterogeneous_job(local_cluster: dict, tmp_path: Path):
    pytest.importorskip("torchx")
    env = local_cluster
    work = tmp_path / "app"
    work.mkdir()
    (work / "train.py").write_text(TRAIN)

    def torchx(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "torchx"), *argv], capture_output=True, text=True, env=env, cwd=work,
                              timeout=timeout)

    # the scheduler's documented run options (-cfg); the rendezvous on a port of its own
    r = torchx("run", "--scheduler", "slurm", "--wait", "-cfg", "partition=debug,time=5", "dist.ddp", "-j", "2x1",
               "--rdzv_port", str(free_port()), "--script", "train.py", timeout=170)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "unrecognized option" not in r.stderr, r.stderr  # (sinfo --noconvert, which it asks for the memory)
    handle = re.search(r"^(slurm://torchx/(\d+))$", r.stdout, re.M)
    assert handle, r.stdout
    app, jid = handle.group(1), handle.group(2)
    status = torchx("status", app).stdout
    assert "State: SUCCEEDED" in status and "train[0]:SUCCEEDED" in status and "train[1]:SUCCEEDED" in status, status
    # each replica's srun component wrote its own files; the two formed one process group of 2
    for k in (0, 1):
        got = torchx("log", "--stream", "stdout", f"{app}/train/{k}")
        assert got.returncode == 0, got.stderr
        assert got.stdout.splitlines() == [f"train/{k} [0]:rank {k} of 2 on node{k + 1}: sum 3"], got.stdout
    assert sorted(p.name for p in work.glob("slurm-*")) == [
        f"slurm-{jid}-train-0.err", f"slurm-{jid}-train-0.out", f"slurm-{jid}-train-1.err", f"slurm-{jid}-train-1.out",
        f"slurm-{jid}.out"]
    batch = (work / f"slurm-{jid}.out").read_text()
    assert "job exited with code 0" in batch and "srun: warning" not in batch, batch
    listed = torchx("list", "--scheduler", "slurm").stdout
    assert re.search(rf"^{re.escape(app)}\s+SUCCEEDED$", listed, re.M), listed

