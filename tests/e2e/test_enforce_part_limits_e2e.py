"""EnforcePartLimits: with ALL (or ANY, or YES) a request beyond its partition's limits is refused at
submission with slurmctld's message and nothing is queued; with the default NO it pends with the
partition-limit reason. Expected texts as the reference 22.05 printed them (tests/data/slurm-2205-partlimits.md)."""

from __future__ import annotations

import pytest

from tests.conftest import BIN, Cluster, wait_until

pytestmark = pytest.mark.e2e

SMALL = "PartitionName=small Nodes=node[1-2] MaxTime=10 MaxNodes=1\n"


@pytest.mark.parametrize("mode", ["ALL", "ANY", "YES"])
def test_requests_beyond_the_partition_are_refused_at_submission(fresh_cluster, mode: str):
    c: Cluster = fresh_cluster(nodes=2, cpus=4, extra_conf=f"EnforcePartLimits={mode}\n{SMALL}").start()
    cases = [
        (["sbatch", "-p", "small", "-N2", "--wrap", "true"], "sbatch: error: Batch job submission failed: "
         "Node count specification invalid"),
        (["sbatch", "-p", "small", "-t", "20", "--wrap", "true"], "sbatch: error: Batch job submission failed: "
         "Requested time limit is invalid (missing or exceeds some limit)"),
        (["sbatch", "-N9", "--wrap", "true"], "sbatch: error: Batch job submission failed: Node count specification invalid"),
        (["sbatch", "-p", "small", "-n", "20", "--wrap", "true"], "sbatch: error: Batch job submission failed: "
         "More processors requested than permitted"),
        (["srun", "-p", "small", "-N2", "true"], "srun: error: Unable to allocate resources: Node count specification invalid"),
        (["salloc", "-p", "small", "-t", "20", "true"], "salloc: error: Job submit/allocate failed: "
         "Requested time limit is invalid (missing or exceeds some limit)"),
    ]
    for argv, message in cases:
        r = c.run([str(BIN / argv[0]), *argv[1:]])
        assert (r.returncode, r.stderr.splitlines()[-1:]) == (1, [message]), argv
    assert c.api("GET", "/api/v1/jobs")["jobs"] == []  # nothing queued
    assert c.config_value("EnforcePartLimits") == ("ANY" if mode == "YES" else mode)
    r = c.run([str(BIN / "sbatch"), "--parsable", "-p", "small", "-t", "5", "--wrap", "true"])
    assert r.returncode == 0  # within the limits


def test_by_default_such_requests_pend_with_the_partition_limit_reason(fresh_cluster):
    c: Cluster = fresh_cluster(nodes=2, cpus=4, extra_conf=SMALL).start()
    assert c.config_value("EnforcePartLimits") == "NO"
    node_limit = c.sbatch("-p", "small", "-N2", "--wrap", "true")  # MaxNodes=1
    time_limit = c.sbatch("-p", "small", "-t", "20", "--wrap", "true")
    wait_until(lambda: c.run(f"squeue -h -j {node_limit},{time_limit} -o '%i %r'").stdout.split() ==
               [str(node_limit), "PartitionNodeLimit", str(time_limit), "PartitionTimeLimit"],
               what="the partition-limit reasons")
