"""Heterogeneous jobs on a real 2-node local cluster, against 22.05's own (tests/data/slurm-2205-hetjob.md):
`#SBATCH hetjob` and `:` components under one job id shown as J+0, J+1; the per-component variables;
`srun A : B` and --het-group as one step with one rank space; a gloo process group across the
components; all components placed together or not at all; scancel of the whole job."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import BIN, Cluster, wait_until

pytestmark = pytest.mark.e2e

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm-2205-hetjob.md"

#: the capture's script, with SLURMD_NODENAME for `hostname` (a task's host name is the machine's
#: where nodes share one) and its files in the job's own directory
SCRIPT = """#!/bin/bash
#SBATCH -J hetcap -o out-%j.txt
#SBATCH -N1 -n1 -c2
#SBATCH hetjob
#SBATCH -N1 -n2
env | grep -E '^SLURM' | sort > batchenv.txt
srun -l bash -c 'echo $SLURMD_NODENAME $SLURM_PROCID $SLURM_NTASKS $SLURM_STEP_NUM_TASKS $SLURM_HET_SIZE' : -l bash -c 'echo $SLURMD_NODENAME $SLURM_PROCID $SLURM_NTASKS'
srun --het-group=0,1 -l bash -c 'env | grep ^SLURM | sort > stepenv-$SLURM_PROCID.txt'
srun --het-group=1 -l printenv SLURMD_NODENAME
srun -l printenv SLURMD_NODENAME
"""


def captured(title: str) -> list[str]:
    """The lines of the code block under the capture's section `title`."""
    text = DATA.read_text()
    at = text.index(f"## {title}")
    block = text[text.index("```", at) + 3:]
    return block[:block.index("```")].strip("\n").splitlines()


def as_here(lines: list[str], jid: int, first: int = 1, nodes: tuple[int, int] = (3, 4)) -> dict[str, str]:
    """The capture's variables as this cluster gives them: its `nodes` are node1 and node2 here, its
    job ids from `first` on this job's; memory (DefMemPerCPU there, none here) left out."""
    a, b = nodes
    names = {f"node[{a}-{b}]": "node[1-2]", f"node{a}": "node1", f"node{b}": "node2"}
    out = {}
    for line in lines:
        name, _, value = line.partition("=")
        if "MEM_PER_CPU" in name:
            continue
        value = re.sub(r"node\[\d-\d\]|node\d", lambda m: names.get(m.group(0), m.group(0)), value)
        if name.startswith(("SLURM_JOB_ID", "SLURM_JOBID")) and value.isdigit():
            value = str(jid + int(value) - first)
        out[name] = value
    return out


def het_vars(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if re.search(r"_(HET|PACK)_(GROUP_\d+|SIZE)$", k)}


def read_env(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_a_hetjob_script_runs_its_components_as_one_job_as_2205_does(cluster: Cluster):
    c = cluster
    jid = c.sbatch(script=SCRIPT)
    c.wait_state(jid, ("COMPLETED", "FAILED"), timeout=90)
    out = (c.workdir / f"out-{jid}.txt").read_text().splitlines()
    want = [line.replace("node3", "node1").replace("node4", "node2") for line in captured("The script's output")]
    # (the components' lines of one step come in any order)
    assert sorted(out[:3]) == sorted(want[:3]) and out[3:] == want[3:], out
    # the batch script's per-component variables are 22.05's
    ref = as_here(captured("The batch script's environment (SLURM_*)"), jid)
    got = read_env(c.workdir / "batchenv.txt")
    assert het_vars(got) == het_vars(ref)
    assert {k: got.get(k) for k in ("SLURM_JOB_NODELIST", "SLURM_JOB_NUM_NODES", "SLURM_NTASKS", "SLURM_JOB_ID")} == \
        {k: ref[k] for k in ("SLURM_JOB_NODELIST", "SLURM_JOB_NUM_NODES", "SLURM_NTASKS")} | {"SLURM_JOB_ID": str(jid)}
    # a task of the step over both components: the job is both of them, the ranks one space
    ref = as_here(captured("A task's environment in `srun --het-group=0,1` (rank 0; ranks 1 and 2 ran on node4)"), jid)
    got = read_env(c.workdir / "stepenv-0.txt")
    assert het_vars(got) == het_vars(ref)
    keys = ("SLURM_JOB_NODELIST", "SLURM_JOB_NUM_NODES", "SLURM_JOB_CPUS_PER_NODE", "SLURM_NODELIST", "SLURM_NTASKS",
            "SLURM_STEP_NUM_TASKS", "SLURM_STEP_TASKS_PER_NODE", "SLURM_STEP_NODELIST", "SLURM_PROCID", "SLURM_NODEID")
    assert {k: got.get(k) for k in keys} == {k: ref[k] for k in keys}
    assert {read_env(c.workdir / f"stepenv-{r}.txt")["SLURM_PROCID"] for r in (1, 2)} == {"1", "2"}
    # sacct: each component a job of its own under the one id, each step under every component it
    # ran in, with its part there (22.05's, less the extern steps of its PrologFlags=Contain)
    r = c.run(f"sacct -j {jid} -n -P -o JobID,JobIDRaw,JobName,State,ExitCode,NodeList,AllocCPUS")
    want = [line.split() for line in captured("sacct")[3:14] if ".extern" not in line]
    want = ["|".join([w[0].replace("1+", f"{jid}+"), str(jid + int(w[1].split(".")[0]) - 1) +
                      (w[1][w[1].index("."):] if "." in w[1] else ""), w[2].replace("hostname", "printenv"), *w[3:5],
                      w[5].replace("node3", "node1").replace("node4", "node2"), w[6]]) for w in want]
    assert r.stdout.splitlines() == want


def test_squeue_scontrol_and_scancel_see_one_job_of_two_components(cluster: Cluster):
    c = cluster
    jid = c.sbatch("-J", "h2", "-o", "/dev/null", "-n1", ":", "-n2", "--wrap", "sleep 300")
    c.wait_state(jid, "RUNNING", timeout=60)
    wait_until(lambda: c.job(jid + 1)["state"] == "RUNNING", 30, what="the second component to follow")
    for target in (str(jid), f"{jid}+1"):  # 22.05: J+N names the whole job too
        r = c.run([str(BIN / "squeue"), "-j", target, "-h", "-o", "%i %A %P %t %D %N"])
        assert r.stdout.splitlines() == [f"{jid}+0 {jid} debug R 1 node1", f"{jid}+1 {jid + 1} debug R 1 node2"]
    r = c.run([str(BIN / "squeue"), "-j", str(jid + 1), "-h", "-o", "%i"])  # a component's own id: itself
    assert r.stdout.split() == [f"{jid}+1"]
    r = c.run([str(BIN / "scontrol"), "show", "job", str(jid)])
    heads = [line for line in r.stdout.splitlines() if line.startswith("JobId=")]
    assert heads == [f"JobId={jid} HetJobId={jid} HetJobOffset=0 JobName=h2",
                     f"JobId={jid + 1} HetJobId={jid} HetJobOffset=1 JobName=h2"]
    assert r.stdout.count(f"   HetJobIdSet={jid}-{jid + 1}\n") == 2
    r = c.run([str(BIN / "scancel"), f"{jid}+1"])  # 22.05: no component alone
    assert r.returncode != 0 and r.stderr.strip() == (
        f"scancel: error: Kill job error on job id {jid}+1: "
        "Operation not permitted on individual component of heterogeneous job")
    assert c.job(jid)["state"] == "RUNNING"
    assert c.run([str(BIN / "scancel"), str(jid)]).returncode == 0
    c.wait_state(jid, "CANCELLED", timeout=30)
    c.wait_state(jid + 1, "CANCELLED", timeout=30)


def test_components_start_together_or_not_at_all(fresh_cluster):
    c = fresh_cluster(nodes=2, cpus=4)
    c.start()
    try:
        blocker = c.sbatch("-w", "node2", "-c4", "-o", "/dev/null", "--wrap", "sleep 300")
        c.wait_state(blocker, "RUNNING", timeout=60)
        # the first component fits on node1 now, the second (a whole node) only once node2 is free
        jid = c.sbatch("-o", "/dev/null", "-n1", ":", "-c4", "--wrap", "sleep 300")
        small = c.sbatch("-o", "/dev/null", "-c1", "--wrap", "sleep 300")  # behind it in the queue
        c.wait_state(small, "RUNNING", timeout=60)  # a pass looked at the heterogeneous job meanwhile
        assert c.job(jid)["state"] == "PENDING" and c.job(jid + 1)["state"] == "PENDING"
        c.run([str(BIN / "scancel"), str(small), str(blocker)])
        c.wait_state(jid, "RUNNING", timeout=60)
        j0, j1 = c.job(jid), wait_until(lambda: (j := c.job(jid + 1))["state"] == "RUNNING" and j, 30)
        assert {j0["nodes"], j1["nodes"]} == {"node1", "node2"}  # each component on nodes of its own
        c.run([str(BIN / "scancel"), str(jid)])
    finally:
        c.stop()


TRAIN = """import os, torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="env://", rank=int(os.environ["SLURM_PROCID"]),
                        world_size=int(os.environ["SLURM_NTASKS"]))
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"{os.environ['SLURMD_NODENAME']} rank {dist.get_rank()} of {dist.get_world_size()}: {t.item():g}", flush=True)
dist.destroy_process_group()
"""


def test_srun_A_colon_B_forms_one_gloo_process_group_across_the_components(cluster: Cluster):
    pytest.importorskip("torch")
    c = cluster
    (c.workdir / "train.py").write_text(TRAIN)
    py = sys.executable
    script = (f"#!/bin/bash\n#SBATCH -N1 -n1\n#SBATCH hetjob\n#SBATCH -N1 -n1\n"
              f"srun -l {py} train.py : -l {py} train.py\n")
    jid = c.sbatch("-o", "gloo-%j.out", script=script)
    j = c.wait_state(jid, ("COMPLETED", "FAILED"), timeout=180)
    out = (c.workdir / f"gloo-{jid}.out").read_text()
    assert sorted(line for line in out.splitlines() if " rank " in line) == [
        "0: node1 rank 0 of 2: 3", "1: node2 rank 1 of 2: 3"], out
    assert j["state"] == "COMPLETED"


def test_srun_and_salloc_outside_an_allocation_make_a_heterogeneous_job(cluster: Cluster):
    c = cluster
    wait_until(lambda: c.idle_nodes() == set(c.node_names), 60, what="the nodes to be idle")
    r = c.run([str(BIN / "srun"), "-l", "-n1", "printenv", "SLURMD_NODENAME", ":", "-n2", "bash", "-c",
               "echo $SLURM_PROCID/$SLURM_NTASKS $SLURM_HET_SIZE $SLURM_STEP_NUM_TASKS"])
    assert r.returncode == 0, r.stderr
    # 22.05: `0: node2`, `1: 1/3 112 2 3`, `2: 2/3 112 2 3` (its job id among them, here left out)
    assert sorted(r.stdout.splitlines()) == ["0: node1", "1: 1/3 2 3", "2: 2/3 2 3"]
    script = "env | grep -E '^SLURM' | sort > salloc-env.txt; srun -l printenv SLURMD_NODENAME; " \
             "srun -l --het-group=1 printenv SLURMD_NODENAME"
    r = c.run([str(BIN / "salloc"), "-J", "hetcap5", "-n1", ":", "-n2", "bash", "-c", script])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["0: node1", "0: node2", "1: node2"]  # 22.05's, its nodes node2, node3
    jid = int(re.search(r"Granted job allocation (\d+)", r.stderr).group(1))
    lines = captured("srun and salloc outside an allocation")
    ref = as_here([x for x in lines if x.startswith("SLURM_") and "=" in x], jid, first=115, nodes=(2, 3))
    got = read_env(c.workdir / "salloc-env.txt")
    assert het_vars(got) == het_vars(ref)
    assert (got["SLURM_JOB_ID"], got["SLURM_NTASKS"], got["SLURM_NPROCS"]) == (str(jid), "3", "3")
    assert "SLURM_JOB_NODELIST" not in got and "SLURM_NNODES" not in got  # (22.05 sets only the groups')


TOOLS = Path(__file__).resolve().parents[1] / "data" / "slurm-2205-tools.md"


def captured_files(job: int) -> dict[str, str]:
    """The files a capture of tests/data/slurm-2205-tools.md listed after `Job {job} (`: name -> content."""
    text = TOOLS.read_text()
    block = text[text.index("```", text.index(f"Job {job} (")) + 3:]
    block = block[:block.index("```")]
    parts = re.split(r"^### (\S+)\n", block, flags=re.M)[1:]
    return {name: content for name, content in zip(parts[::2], parts[1::2])}


def test_each_component_of_a_step_has_its_own_output_files_as_2205_names_them(cluster: Cluster, tmp_path: Path):
    """srun -o/-e per component (a component without them takes the first's); %j the component's own
    job id, %n the node's index among the component's, %t the rank plus the component's offset."""
    c = cluster
    work = tmp_path / "hetio"
    work.mkdir()
    # the capture's job 1776, its files' lines without -l's labels
    script = ("#!/bin/bash\n#SBATCH -J tl-hetio -o batch-%j.out\n#SBATCH -N1 -n2\n#SBATCH hetjob\n#SBATCH -N1 -n3\n"
              "srun -o a-%j-%t-%n.out printenv SLURM_PROCID : -o b-%j-%t-%n.out printenv SLURM_PROCID\n"
              "srun -o c-%j.out printenv SLURM_PROCID : printenv SLURM_PROCID\n"
              "srun -l printenv SLURM_PROCID : -o d-%j-%t.out printenv SLURM_PROCID\n"
              "srun -l --export=ALL,X=one printenv X : -l --export=ALL,X=two printenv X\n")
    jid = c.sbatch(script=script, cwd=work)
    assert c.wait_state(jid, ("COMPLETED", "FAILED"), timeout=120)["state"] == "COMPLETED"
    want = {re.sub(r"\b177([67])\b", lambda m: str(jid + int(m.group(1)) - 6), name):
            "".join(sorted(re.sub(r"^\d+: ", "", line) for line in content.splitlines(keepends=True)))
            for name, content in captured_files(1776).items() if not name.startswith("batch")}
    got = {p.name: "".join(sorted(p.read_text().splitlines(keepends=True)))
           for p in work.iterdir() if not p.name.startswith("batch")}
    assert got == want
    batch = (work / f"batch-{jid}.out").read_text().splitlines()
    # (as the capture's job 1774: each component's tasks with its own --export)
    assert sorted(batch) == ["0: 0", "0: one", "1: 1", "1: one", "2: two", "3: two", "4: two"], batch
    # once the steps ended the database keeps no environment of theirs, a component's neither
    import sqlite3
    db = sqlite3.connect(c.root / "state" / "slurmlet.db")
    try:
        steps = [json.loads(r[0]) for r in db.execute("SELECT request FROM steps WHERE job_id = ?", (jid,))]
    finally:
        db.close()
    assert len(steps) == 4 and not any(s["environment"] or any(p.get("environment") for p in s.get("components") or [])
                                       for s in steps)


def test_sacct_json_names_each_components_leader_and_offset(cluster: Cluster):
    c = cluster
    jid = c.sbatch("-J", "hj", "-o", "/dev/null", "-n1", ":", "-n1", "--wrap", "true")
    solo = c.sbatch("-J", "hj", "-o", "/dev/null", "--wrap", "true")
    c.wait_state(jid, ("COMPLETED", "FAILED"), timeout=60)
    c.wait_state(solo, ("COMPLETED", "FAILED"), timeout=60)
    r = c.run([str(BIN / "sacct"), "--json", "-j", f"{jid},{solo}"])
    got = {j["job_id"]: j["het"] for j in json.loads(r.stdout)["jobs"]}
    # 22.05 (tests/data/slurm-2205-tools.md): {'job_id': 1765, 'job_offset': 0}, ... and 0/None for another job
    assert got == {jid: {"job_id": jid, "job_offset": 0}, jid + 1: {"job_id": jid, "job_offset": 1},
                   solo: {"job_id": 0, "job_offset": None}}


def test_components_naming_the_same_node_are_refused(cluster: Cluster):
    r = cluster.run([str(BIN / "sbatch"), "--parsable", "-J", "hetsame", "-o", "/dev/null", "-w", "node1", "-n1", ":",
                     "-w", "node1", "-n1", "--wrap", "sleep 5"])
    want = captured("Components naming the same node")
    assert (r.stderr.splitlines(), r.returncode) == ([want[1]], int(want[2].split()[1].rstrip("]")))


def test_requeue_acts_on_the_whole_job(cluster: Cluster):
    c = cluster
    wait_until(lambda: c.idle_nodes() == set(c.node_names), 60, what="the nodes to be idle")
    jid = c.sbatch("-J", "hreq", "-o", "/dev/null", "-n1", ":", "-n1", "--wrap", "sleep 300")
    c.wait_state(jid, "RUNNING", timeout=60)
    assert c.run([str(BIN / "scontrol"), "requeue", str(jid)]).returncode == 0

    def restarted() -> bool:
        out = c.run([str(BIN / "scontrol"), "show", "job", str(jid)]).stdout
        return out.count("Restarts=1") == 2 and out.count("JobState=RUNNING") == 2
    wait_until(restarted, 90, what="both components to run again once")
    r = c.run([str(BIN / "squeue"), "-j", str(jid), "-h", "-o", "%i %t"])
    assert r.stdout.splitlines() == [f"{jid}+0 R", f"{jid}+1 R"]
    c.run([str(BIN / "scancel"), str(jid)])
    c.wait_state(jid + 1, "CANCELLED", timeout=30)
