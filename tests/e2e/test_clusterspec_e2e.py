"""A cluster from a cloud-style JSON spec: node pools make the partitions, the login pool runs no
jobs, homes live under home_directory_storage, the spec's prolog runs on every node; `scontrol
reconfigure` applies live changes and refuses those fixed at creation (on SQLite and PostgreSQL)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Cluster, pg_available, pg_schema_url, wait_until

pytestmark = pytest.mark.e2e


def spec_doc(tmp_path, **scheduling) -> dict:
    trace = tmp_path / "trace.txt"
    return {"slurmSpec": {
        "partitions": [{"id": "a4", "node_pool_ids": ["a4"]}],
        "login_node_pool_id": "login",
        "home_directory_storage": str(tmp_path / "home"),
        "accounting": {"accounting_storage_enforce": "associations,limits,qos"},
        "scheduling": {"priority_type": "priority/multifactor", "priority_weight_age": 0,
                       "priority_weight_assoc": 0, "priority_weight_fairshare": 0, "priority_weight_job_size": 0,
                       "priority_weight_partition": 0, "priority_weight_qos": 0,
                       "priority_weight_tres": "cpu=100,mem=150", "preempt_type": "preempt/partition_prio",
                       "preempt_mode": "SUSPEND,GANG", "preempt_exempt_time": "00:00:00", **scheduling},
        "prolog_bash_scripts": [f"#!/bin/bash\necho \"prolog1 $SLURMD_NODENAME $SLURM_JOB_ID\" >> {trace}",
                                f"#!/bin/bash\necho \"prolog2 $SLURMD_NODENAME $SLURM_JOB_ID\" >> {trace}"],
        "epilog_bash_scripts": [f"#!/bin/bash\necho \"epilog $SLURMD_NODENAME $SLURM_JOB_ID\" >> {trace}"]}}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.pg)])
def spec_cluster(request, fresh_cluster, tmp_path):
    db = None
    if request.param == "postgresql":
        if not pg_available():
            pytest.skip("PostgreSQL is not available")
        db = pg_schema_url("slurmlet_e2e_spec")
    c: Cluster = fresh_cluster(spec=spec_doc(tmp_path), pools={"node1": "a4", "node2": "a4", "login1": "login"},
                               db_url=db)
    yield c.start()
    assert not c.crashed()


def test_spec_partitions_are_pools_and_the_login_node_runs_no_jobs(spec_cluster: Cluster, tmp_path):
    c = spec_cluster
    r = c.run("sinfo -h -o '%P %D %N'")
    assert r.stdout.split("\n")[0] == "a4* 2 node[1-2]", r.stdout  # login1 is in no partition
    shown = c.run("scontrol show node login1").stdout
    assert "AvailableFeatures=login" in shown and "ActiveFeatures=login" in shown and "Partitions=" not in shown
    shown = c.run("scontrol show node node2").stdout
    assert "ActiveFeatures=a4" in shown and "Partitions=a4 " in shown
    # the CLI works from a login node (any host that reaches the controller); jobs never land on it
    bad = c.run("sbatch -w login1 --wrap true")
    assert bad.returncode == 1 and "Requested node configuration is not available" in bad.stderr
    ids = [c.sbatch("-N2", "--wrap", "echo home=$HOME; test -d $HOME && echo exists")]
    ids += [c.sbatch("-n1", "--wrap", "sleep 0.5") for _ in range(5)]
    for jid in ids:
        c.wait_state(jid, "COMPLETED")
    assert all("login1" not in c.job(j)["node_list"] for j in ids)
    assert c.job(ids[0])["nodes"] == "node[1-2]"
    home = tmp_path / "home"
    out = (c.workdir / f"slurm-{ids[0]}.out").read_text().split()
    assert out == [f"home={home}/root", "exists"]
    # the spec's prologs ran on both nodes, in order, before the job; its epilog on both nodes after it
    trace = tmp_path / "trace.txt"
    want = {f"{k} node{n} {ids[0]}" for k in ("prolog1", "prolog2", "epilog") for n in (1, 2)}
    lines = wait_until(lambda: want <= set(trace.read_text().splitlines()) and trace.read_text().splitlines(),
                       what="prologs and epilogs of the 2-node job")
    for n in (1, 2):
        assert lines.index(f"prolog1 node{n} {ids[0]}") < lines.index(f"prolog2 node{n} {ids[0]}")


def test_reconfigure_applies_live_changes_and_refuses_fixed_ones(spec_cluster: Cluster, tmp_path):
    c = spec_cluster

    assert c.config_value("PriorityWeightAge") == "0" and c.config_value("PreemptMode") == "SUSPEND,GANG"
    doc = spec_doc(tmp_path, priority_weight_age=1000, preempt_mode="REQUEUE")
    c.spec_path.write_text(json.dumps(doc))
    r = c.run("scontrol reconfigure")
    assert r.returncode == 0 and r.stderr == ""
    assert c.config_value("PriorityWeightAge") == "1000" and c.config_value("PreemptMode") == "REQUEUE"
    assert "1000" in c.run("sprio -w").stdout.split("\n")[1]
    # a parameter fixed at creation: refused, nothing changes (not even the live ones beside it)
    doc2 = json.loads(json.dumps(doc))
    doc2["slurmSpec"]["login_node_pool_id"] = "login2"
    doc2["slurmSpec"]["scheduling"]["priority_weight_age"] = 5
    c.spec_path.write_text(json.dumps(doc2))
    r = c.run("scontrol reconfigure")
    assert r.returncode == 1
    assert r.stderr.startswith("slurm_reconfigure error: slurmSpec.login_node_pool_id (login -> login2): set at "
                               "cluster creation"), r.stderr
    assert c.config_value("PriorityWeightAge") == "1000"
    # a malformed spec: refused, naming the field; the controller goes on with what it had
    doc["slurmSpec"]["scheduling"]["priority_weight_age"] = "high"
    c.spec_path.write_text(json.dumps(doc))
    r = c.run("scontrol reconfigure")
    assert r.returncode == 1 and "slurmSpec.scheduling.priority_weight_age: Input should be a valid integer" in r.stderr
    c.spec_path.write_text("{not json")
    r = c.run("scontrol reconfigure")
    assert r.returncode == 1 and "not valid JSON" in r.stderr
    assert c.config_value("PriorityWeightAge") == "1000"
    jid = c.sbatch("--wrap", "true")
    c.wait_state(jid, "COMPLETED")
