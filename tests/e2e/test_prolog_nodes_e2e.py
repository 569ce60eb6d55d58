"""Prolog and Epilog on every node of a multi-node job (lists and globs, run in order), their
failures on the node that is not the batch host, PrologSlurmctld/EpilogSlurmctld on the controller,
and `scontrol reconfigure` of a slurm.conf (on SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest

from tests.conftest import Cluster, pg_available, pg_schema_url, wait_until

pytestmark = pytest.mark.e2e


def script(path, body: str):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.pg)])
def db_url(request):
    if request.param == "sqlite":
        return None
    if not pg_available():
        pytest.skip("PostgreSQL is not available")
    return pg_schema_url("slurmlet_e2e_prolog")


def node(c: Cluster, name: str) -> dict:
    return next(n for n in c.api("GET", "/api/v1/nodes")["nodes"] if n["name"] == name)


def test_prolog_and_epilog_run_on_every_node_and_a_failing_one_drains_only_its_node(fresh_cluster, tmp_path,
                                                                                     db_url):
    trace = tmp_path / "trace.txt"
    flag = tmp_path / "fail-on-node2"
    pro = tmp_path / "prolog.d"
    pro.mkdir()
    script(pro / "10-first", f'echo "prolog-a $SLURMD_NODENAME $SLURM_JOB_ID" >> {trace}\n')
    script(pro / "20-second", f'[ -e {flag}.prolog ] && [ "$SLURMD_NODENAME" = node2 ] && exit 7\n'
                              f'echo "prolog-b $SLURMD_NODENAME $SLURM_JOB_ID" >> {trace}\n')
    script(pro / "30-third", f'echo "prolog-c $SLURMD_NODENAME $SLURM_JOB_ID" >> {trace}\n')
    epi = script(tmp_path / "epilog.sh", f'echo "epilog $SLURMD_NODENAME $SLURM_JOB_ID $SLURM_JOB_EXIT_CODE '
                                         f'$SLURM_JOB_EXIT_CODE2 $SLURM_SCRIPT_CONTEXT" >> {trace}\n')
    epi2 = script(tmp_path / "epilog2.sh", f'[ -e {flag}.epilog ] && [ "$SLURMD_NODENAME" = node2 ] && exit 3\n'
                                           f'echo "epilog2 $SLURMD_NODENAME $SLURM_JOB_ID" >> {trace}\n')
    c: Cluster = fresh_cluster(nodes=2, db_url=db_url,
                               extra_conf=f"Prolog={pro}/*\nEpilog={epi},{epi2}\n").start()

    def lines() -> list[str]:
        return trace.read_text().splitlines() if trace.exists() else []

    jid = c.sbatch("-N2", "--wrap", f"echo job $SLURM_JOB_ID >> {trace}; exit 3")
    c.wait_state(jid, "FAILED")
    done = wait_until(lambda: sum(x.startswith("epilog2 ") for x in lines()) == 2 and lines(), what="both epilogs")
    for n in ("node1", "node2"):  # the glob's scripts in order on each node, all before the batch script
        mine = [x for x in done if x.endswith(f" {n} {jid}") or f" {n} {jid} " in x]
        assert [x.split()[0] for x in mine] == ["prolog-a", "prolog-b", "prolog-c", "epilog", "epilog2"]
        assert done.index(f"prolog-c {n} {jid}") < done.index(f"job {jid}")
        assert f"epilog {n} {jid} 768 3:0 epilog_slurmd" in done
    # a prolog failing on the node that is not the batch host: only that node drains, the job is
    # requeued held, and the scripts after the failing one do not run
    flag.with_suffix(".prolog").touch()
    jid2 = c.sbatch("-N2", "--wrap", f"echo job $SLURM_JOB_ID >> {trace}")
    wait_until(lambda: (j := c.job(jid2))["state"] == "PENDING" and j["reason"] == "JobHeldAdmin",
               what="the job requeued held")
    n2 = wait_until(lambda: (n := node(c, "node2"))["state"].startswith("DRAIN") and n, what="node2 drained")
    assert n2["reason"] == "Prolog error" and node(c, "node1")["state"] == "IDLE"
    assert c.job(jid2)["restarts"] == 1 and f"job {jid2}" not in lines()
    assert f"prolog-c node2 {jid2}" not in lines() and f"prolog-b node2 {jid2}" not in lines()
    shown = c.run("sinfo -h -N -o '%N %T %E'").stdout.splitlines()
    assert "node2 drained Prolog error" in shown, shown
    flag.with_suffix(".prolog").unlink()
    assert c.run("scontrol update nodename=node2 state=resume").returncode == 0
    assert c.run(f"scontrol release {jid2}").returncode == 0
    c.wait_state(jid2, "COMPLETED", timeout=60)
    wait_until(lambda: {f"epilog2 node1 {jid2}", f"epilog2 node2 {jid2}"} <= set(lines()), what="job 2's epilogs")
    # an epilog failing on the node that is not the batch host drains it; the job's result stands
    flag.with_suffix(".epilog").touch()
    jid3 = c.sbatch("-N2", "--wrap", "true")
    c.wait_state(jid3, "COMPLETED")
    n2 = wait_until(lambda: (n := node(c, "node2"))["state"].startswith("DRAIN") and n, what="node2 drained")
    assert n2["reason"] == "Epilog error" and f"epilog2 node1 {jid3}" in lines()
    assert c.job(jid3)["state"] == "COMPLETED"


def test_epilog_sees_the_signal_of_a_cancelled_job(fresh_cluster, tmp_path):
    trace = tmp_path / "trace.txt"
    epi = script(tmp_path / "epilog.sh", f'echo "$SLURMD_NODENAME $SLURM_JOB_EXIT_CODE2" >> {trace}\n')
    c: Cluster = fresh_cluster(nodes=2, extra_conf=f"Epilog={epi}\n").start()
    jid = c.sbatch("-N2", "--wrap", "sleep 300")
    c.wait_state(jid, "RUNNING")
    wait_until(lambda: c.job(jid)["steps"], what="the batch step")
    assert c.run(f"scancel {jid}").returncode == 0
    got = wait_until(lambda: trace.exists() and len(trace.read_text().splitlines()) == 2 and
                     sorted(trace.read_text().splitlines()), what="both epilogs")
    assert got == ["node1 0:15", "node2 0:15"]


def test_prolog_slurmctld_and_epilog_slurmctld_run_on_the_controller(fresh_cluster, tmp_path, db_url):
    out = tmp_path / "ctld.txt"
    flag = tmp_path / "fail"
    keys = ("SLURM_JOB_ID SLURM_JOB_USER SLURM_JOB_ACCOUNT SLURM_JOB_PARTITION SLURM_JOB_NODELIST SLURM_JOB_NAME "
            "SLURM_SCRIPT_CONTEXT").split()
    show = " ".join(f"{k}=${k}" for k in keys)
    pro = script(tmp_path / "pro.sh", f'[ -e {flag} ] && {{ echo refused; exit 1; }}\necho "{show}" >> {out}\n')
    epi = script(tmp_path / "epi.sh", f'echo "{show} $SLURM_JOB_EXIT_CODE2" >> {out}\n')
    c: Cluster = fresh_cluster(nodes=2, db_url=db_url,
                               extra_conf=f"PrologSlurmctld={pro}\nEpilogSlurmctld={epi}\n").start()
    jid = c.sbatch("-N2", "-J", "ctld", "--wrap", "exit 2")
    c.wait_state(jid, "FAILED")
    got = wait_until(lambda: out.exists() and len(out.read_text().splitlines()) == 2 and out.read_text().splitlines(),
                     what="both controller scripts")
    common = f"SLURM_JOB_ID={jid} SLURM_JOB_USER=root SLURM_JOB_ACCOUNT=root SLURM_JOB_PARTITION=debug " \
             f"SLURM_JOB_NODELIST=node[1-2] SLURM_JOB_NAME=ctld"
    assert got == [f"{common} SLURM_SCRIPT_CONTEXT=prolog_slurmctld",
                   f"{common} SLURM_SCRIPT_CONTEXT=epilog_slurmctld 2:0"]
    # a failing PrologSlurmctld: the job goes back to the queue (not held: it is tried again after
    # the requeue delay, 0 here), never runs meanwhile; no node drains; sacct -D shows REQUEUED runs
    flag.touch()
    jid2 = c.sbatch("--wrap", f"echo ran >> {tmp_path}/ran.txt")
    j = wait_until(lambda: (j := c.job(jid2))["restarts"] >= 1 and j, what="the job requeued")
    assert j["held"] is None and not (tmp_path / "ran.txt").exists()
    states = c.run("sinfo -h -N -o %t").stdout.split()
    assert len(states) == 2 and not any(st.startswith(("drain", "drng")) for st in states)
    assert f"prolog_slurmctld JobId={jid2} prolog exit status 1:0" in (c.root / "controller.log").read_text()
    flag.unlink()
    c.wait_state(jid2, "COMPLETED", timeout=60)
    assert (tmp_path / "ran.txt").read_text() == "ran\n"
    runs = c.run(f"sacct -D -n -X -j {jid2} -o State").stdout.split()
    assert runs[-1] == "COMPLETED" and set(runs[:-1]) == {"REQUEUED"} and len(runs) >= 2


def test_reconfigure_a_slurm_conf_live_and_refuse_what_needs_a_restart(fresh_cluster, tmp_path):
    trace = tmp_path / "trace.txt"
    pro = script(tmp_path / "prolog.sh", f'echo "prolog $SLURMD_NODENAME" >> {trace}\n')
    c: Cluster = fresh_cluster(nodes=2).start()
    base = c.conf_path.read_text()

    assert c.config_value("Prolog") == "(null)"
    c.conf_path.write_text(base + f"Prolog={pro}\nPriorityType=priority/multifactor\nPriorityWeightAge=500\n"
                                  "PartitionName=extra Nodes=node1 MaxTime=10\n")
    r = c.run("scontrol reconfigure")
    assert (r.returncode, r.stderr) == (0, "")
    assert c.config_value("Prolog") == str(pro) and c.config_value("PriorityWeightAge") == "500"
    assert "extra" in c.run("sinfo -h -o %P").stdout.split()
    jid = c.sbatch("-p", "extra", "--wrap", "true")  # the new partition and the new prolog, live
    c.wait_state(jid, "COMPLETED")
    assert trace.read_text() == "prolog node1\n"
    c.conf_path.write_text(base.replace("ClusterName=test", "ClusterName=other"))
    r = c.run("scontrol reconfigure")
    assert r.returncode == 1
    assert r.stderr.startswith("slurm_reconfigure error: ClusterName (test -> other): set at cluster creation"), r.stderr
    c.conf_path.write_text(base + "KillWait=soon\n")
    r = c.run("scontrol reconfigure")
    assert r.returncode == 1 and "KillWait: expected a number, got 'soon'" in r.stderr
    assert c.config_value("PriorityWeightAge") == "500" and "extra" in c.run("sinfo -h -o %P").stdout.split()
