"""Multifactor priority on a real cluster configured like the reference one: sprio and squeue."""

from __future__ import annotations

import pytest

from tests.conftest import Cluster

pytestmark = pytest.mark.e2e

CONF = """ClusterName=anchor
NodeName=node[1-4] CPUs=8 RealMemory=32000 Gres=gpu:8
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE
PriorityType=priority/multifactor
PriorityMaxAge=7-0
PriorityWeightAge=1000
PriorityWeightFairshare=10000
PriorityWeightJobSize=1000
PriorityWeightPartition=10000
PriorityWeightQOS=1000
"""


def test_sprio_and_squeue_show_slurms_numbers(fresh_cluster):
    c: Cluster = fresh_cluster(nodes=4, conf=CONF).start()
    # the cluster is full, so that these stay pending and visible to sprio
    full = c.sbatch("-N4", "--exclusive", "--wrap", "sleep 300")
    c.wait_state(full, "RUNNING")
    a = c.sbatch("--wrap", "true")
    b = c.sbatch("--nice=100", "--wrap", "true")
    d = c.sbatch("-N", "10", "--wrap", "true")
    held = c.sbatch("-H", "--wrap", "true")
    later = c.sbatch("--begin=now+1hour", "--wrap", "true")  # like sprio, left out: waits for BeginTime
    r = c.run("sprio")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION        QOS",
        f"{a:>15} debug          20140          0          0      10000        141      10000          0",
        f"{b:>15} debug          20040          0          0      10000        141      10000          0",
        f"{d:>15} debug          21000          0          0      10000       1000      10000          0",
    ]
    r = c.run("sprio -w")
    assert r.stdout.splitlines()[1] == \
        "        Weights                               1       1000      10000       1000      10000       1000"
    r = c.run(f"sprio -h -o '%i %Y %A %F %J %P %Q' -j {b}")
    assert r.stdout == f"{b} 20040 0 10000 141 10000 0\n"
    assert c.run("sprio -j 999999").stdout == "Unable to find jobs matching user/id(s) specified\n"
    # squeue shows the stored priority once a pass has run; held jobs have priority 0
    from tests.conftest import wait_until
    wait_until(lambda: c.run(f"squeue -h -o '%i %Q' -j {a},{held}").stdout ==
               f"{a} 20140\n{held} 0\n", what="squeue priorities")
    assert str(later) not in c.run("sprio -h -o %i").stdout.split()
    c.run(f"scancel {full}")
