"""`-M/--clusters`: a cluster the accounting database does not know is refused with Slurm's two lines
(tests/data/slurm-2205-clusters.md), nothing queued; the cluster's own name works as in Slurm."""

from __future__ import annotations

import pytest

from tests.conftest import Cluster

pytestmark = pytest.mark.e2e

LINE2 = ("error: 'other' can't be reached now, or it is an invalid entry for --cluster.  "
         "Use 'sacctmgr list clusters' to see available clusters.")


def jobs(c: Cluster) -> int:
    return len(c.api("GET", "/api/v1/jobs?history=1")["jobs"])


@pytest.mark.parametrize("argv", [["sbatch", "-M", "other", "--wrap", "true"], ["srun", "-M", "other", "true"],
                                  ["squeue", "-M", "other"], ["sinfo", "--clusters=other"],
                                  ["scancel", "-M", "other", "1"]])
def test_an_unknown_cluster_is_refused(cluster: Cluster, argv: list[str]):
    before = jobs(cluster)
    r = cluster.run(argv)
    prog = argv[0]
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == f"{prog}: error: No cluster 'other' known by database.\n{prog}: {LINE2}\n"
    assert jobs(cluster) == before


def test_the_clusters_own_name_works_and_unknown_ones_beside_it_are_named(cluster: Cluster):
    c = cluster
    name = c.config_value("ClusterName")
    r = c.run(["sbatch", "-M", f"{name},other", "-H", "--wrap", "true"])
    assert r.returncode == 0 and r.stderr == "sbatch: error: No cluster 'other' known by database.\n"
    jid = int(r.stdout.split()[3])
    assert r.stdout == f"Submitted batch job {jid} on cluster {name}\n"
    lines = c.run(["squeue", "-M", name, "-j", str(jid)]).stdout.splitlines()
    assert lines[0] == f"CLUSTER: {name}" and lines[1].split()[0] == "JOBID" and lines[2].split()[0] == str(jid)
    assert c.run(["squeue", "-M", name, "-h", "-j", str(jid)]).stdout.split()[0] == str(jid)
    assert c.run(["sinfo", "-M", name]).stdout.splitlines()[0] == f"CLUSTER: {name}"
    assert c.run(["srun", "-M", name, "-N1", "true"]).returncode == 0
    r = c.run(["scancel", "-M", name, str(jid)])
    assert (r.returncode, r.stderr) == (0, "")


def test_options_that_change_nothing_here_say_so(cluster: Cluster):
    r = cluster.run(["sbatch", "--mail-type=END", "--mail-user=me@example.org", "-H", "--wrap", "true"])
    assert r.returncode == 0 and r.stdout.startswith("Submitted batch job ")
    assert r.stderr.splitlines() == ["sbatch: warning: --mail-type is accepted and ignored",
                                     "sbatch: warning: --mail-user is accepted and ignored"]
    cluster.run(["scancel", r.stdout.split()[3]])
    r = cluster.run(["sbatch", "-Q", "--mail-type=END", "-H", "--wrap", "true"])  # -Q: quiet
    assert (r.returncode, r.stderr) == (0, "")
    cluster.run(["scancel", r.stdout.strip()])
    r = cluster.run(["srun", "-N1", "--mail-type=END", "true"])
    assert (r.returncode, r.stderr) == (0, "srun: warning: --mail-type is accepted and ignored\n")
    # an invalid value is refused as Slurm refuses it
    r = cluster.run(["sbatch", "--mail-type=BOGUS", "--wrap", "true"])
    assert (r.returncode, r.stderr) == (255, "sbatch: error: Invalid --mail-type specification\n")
