"""sstat on a real 2-node local cluster: a running step's tasks sampled live by their agents (memory
peaks with node and task, CPU time, processes), -a/-i/-p/-o, and 22.05's messages."""

from __future__ import annotations

import os

import pytest

from tests.conftest import BIN, Cluster, wait_until

pytestmark = pytest.mark.e2e

# each task holds 150 MiB and spins until its file appears
TASK = ("python3 -c \"import os, time; x = bytearray(150 * 1024 * 1024); x[::4096] = b'1' * len(x[::4096]); "
        "[time.sleep(0) for _ in iter(lambda: os.path.exists('{stop}'), True)]\"")


def sstat(c: Cluster, *args: str):
    return c.run([str(BIN / "sstat"), *args])


def test_sstat_reports_the_running_steps_tasks_as_they_run(cluster: Cluster):
    c = cluster
    stop = c.workdir / "sstat-stop"
    jid = c.sbatch("-N2", "-n2", "--wrap", f"srun {TASK.format(stop=stop)}")
    c.wait_state(jid, "RUNNING")

    def row() -> list[str] | None:
        r = sstat(c, "-j", str(jid), "-n", "-P", "-o", "JobID,MaxRSS,MaxRSSNode,MaxRSSTask,NTasks,AveCPU,MinCPUNode")
        line = r.stdout.strip().split("|")
        return line if len(line) == 7 and line[1].endswith("K") and int(line[1][:-1]) > 150 * 1024 else None
    got = wait_until(row, timeout=60, what="sstat to show both tasks' 150 MiB")
    assert got[0] == f"{jid}.0" and got[2] in ("node1", "node2") and got[3] in ("0", "1") and got[4] == "2"
    assert got[5].count(":") == 2 and got[6] in ("node1", "node2")
    r = sstat(c, "-a", "-j", str(jid), "-p", "-o", "JobID,NTasks,Nodelist")
    assert r.stdout.splitlines() == ["JobID|NTasks|Nodelist|", f"{jid}.batch|1|node1|", f"{jid}.0|2|node[1-2]|"]
    r = sstat(c, "-i", "-j", f"{jid}.0", "-P", "-n")
    lines = [x.split("|") for x in r.stdout.splitlines()]
    assert [x[:2] for x in lines] == [[f"{jid}.0", "node1"], [f"{jid}.0", "node2"]]
    assert all(x[2] and all(p.isdigit() for p in x[2].split(",")) for x in lines)  # the tasks' processes
    r = sstat(c, "-j", str(jid))
    head = r.stdout.splitlines()[0].split()
    assert head[:6] == ["JobID", "MaxVMSize", "MaxVMSizeNode", "MaxVMSizeTask", "AveVMSize", "MaxRSS"]
    assert len(head) == 47 and r.stdout.splitlines()[2].startswith(f"{jid}.0 ")
    r = sstat(c, "-j", f"{jid}.7")
    assert r.returncode == 0 and r.stderr == f"sstat: error: StepId={jid}.7 not found running.\n"
    stop.touch()
    c.wait_state(jid, "COMPLETED", timeout=60)
    r = sstat(c, "-j", str(jid), "-o", "JobID")
    assert r.stderr == f"sstat: error: couldn't get steps for job {jid}\n" and r.stdout.splitlines()[0].strip() == "JobID"


def test_sstat_refusals(cluster: Cluster):
    c = cluster
    r = sstat(c)
    assert r.returncode == 1 and r.stderr == "sstat: error: You didn't give me any jobs to stat.\n"
    r = sstat(c, "-j", "99999", "-o", "JobID")
    assert r.returncode == 0 and r.stderr == "sstat: error: couldn't get steps for job 99999\n"
    r = sstat(c, "-j", "1", "-o", "Bogus")
    assert r.returncode == 1 and 'Invalid field requested: "Bogus"' in r.stderr
    r = sstat(c, "-e")
    assert r.stdout.splitlines()[0] == "AveCPU              AveCPUFreq          AveDiskRead         AveDiskWrite       "
    r = sstat(c, "-j", "abc")
    assert r.returncode == 1 and r.stderr == "sstat: fatal: Bad job/step specified: abc\n"


def test_scontrol_listpids_lists_a_nodes_job_processes(cluster: Cluster):
    c = cluster
    stop = c.workdir / "listpids-stop"
    jid = c.sbatch("-N2", "-n2", "--wrap", f"srun {TASK.format(stop=stop)}")
    c.wait_state(jid, "RUNNING")
    head = "PID      JOBID    STEPID   LOCALID GLOBALID"

    def listed(*args: str, node: str = "node1") -> list[list[str]]:
        r = c.run([str(BIN / "scontrol"), "listpids", *args], env={"SLURMD_NODENAME": node})
        assert r.stdout.splitlines()[0] == head
        return [x.split() for x in r.stdout.splitlines()[1:]]
    rows = wait_until(lambda: (got := listed()) and any(x[2] == "0" for x in got) and got, what="step 0 on node1")
    assert [x[1:] for x in rows if x[3] != "-"] == [[str(jid), "batch", "0", "0"], [str(jid), "0", "0", "0"]]
    assert all(x[0].isdigit() and os.path.exists(f"/proc/{x[0]}") for x in rows)
    assert [x[1:] for x in listed(f"{jid}.0", node="node2") if x[3] != "-"] == [[str(jid), "0", "0", "1"]]
    r = c.run([str(BIN / "scontrol"), "listpids", f"{jid}.5", "node1"])
    assert r.returncode == 1 and r.stderr == f"StepId={jid}.5 does not exist on node (null).\n"
    r = c.run([str(BIN / "scontrol"), "listpids", "99999", "node1"])
    assert r.returncode == 1 and r.stderr == "There are no steps for job 99999 on node (null).\n"
    stop.touch()
    c.wait_state(jid, "COMPLETED", timeout=60)
