"""salloc on a real 2-node local cluster: the allocation, its command's environment and steps, the
lines salloc prints, release on exit, pending allocations, revocation and signals, --no-shell.
Expected lines and values as the reference Slurm 22.05 printed them (tests/data/slurm-2205-salloc.md)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

import pytest

from tests.conftest import BIN, Cluster, wait_until

pytestmark = pytest.mark.e2e

ENV_SHOWN = ("SLURM_CLUSTER_NAME", "SLURM_CPUS_PER_TASK", "SLURM_JOBID", "SLURM_JOB_ACCOUNT",
             "SLURM_JOB_CPUS_PER_NODE", "SLURM_JOB_ID", "SLURM_JOB_NAME", "SLURM_JOB_NODELIST",
             "SLURM_JOB_NUM_NODES", "SLURM_JOB_PARTITION", "SLURM_JOB_QOS", "SLURM_MEM_PER_NODE", "SLURM_NNODES",
             "SLURM_NODELIST", "SLURM_NODE_ALIASES", "SLURM_NPROCS", "SLURM_NTASKS", "SLURM_SUBMIT_DIR",
             "SLURM_TASKS_PER_NODE")


def salloc(c: Cluster, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return c.run([str(BIN / "salloc"), *args], timeout=timeout)


STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_salloc_left():
    """A test that fails midway leaves no salloc (nor its command) running after it."""
    yield
    while STARTED:
        p = STARTED.pop()
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def popen(c: Cluster, *args: str) -> subprocess.Popen:
    p = subprocess.Popen([str(BIN / "salloc"), *args], cwd=c.workdir, env=c.env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    STARTED.append(p)
    return p


def only_job_id(lines: list[str]) -> int:
    return int(next(x for x in lines if x.startswith("salloc: Granted job allocation ")).split()[-1])


def test_salloc_runs_the_command_with_the_jobs_environment_and_steps_then_releases(cluster: Cluster):
    c = cluster
    show = " ".join(f'"{v}=${{{v}-unset}}"' for v in ENV_SHOWN)
    r = salloc(c, "-N2", "-n4", "-c2", "--mem=1G", "-J", "dbg", "bash", "-c",
               f"printf '%s\\n' {show}; srun -l bash -c 'echo $SLURM_STEP_ID $SLURMD_NODENAME' | sort; "
               "squeue -h -j $SLURM_JOB_ID -o '%T %j %D'; exit 3")
    err = r.stderr.splitlines()
    jid = only_job_id(err)
    assert err == [f"salloc: Granted job allocation {jid}", "salloc: Waiting for resource configuration",
                   "salloc: Nodes node[1-2] are ready for job", f"salloc: Relinquishing job allocation {jid}"]
    assert r.returncode == 3  # the command's exit status
    out = r.stdout.splitlines()
    env = dict(line.split("=", 1) for line in out[:len(ENV_SHOWN)])
    assert env == {
        "SLURM_CLUSTER_NAME": "test", "SLURM_CPUS_PER_TASK": "2", "SLURM_JOBID": str(jid),
        "SLURM_JOB_ACCOUNT": env["SLURM_JOB_ACCOUNT"], "SLURM_JOB_CPUS_PER_NODE": "4(x2)",
        "SLURM_JOB_ID": str(jid), "SLURM_JOB_NAME": "dbg", "SLURM_JOB_NODELIST": "node[1-2]",
        "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_PARTITION": "debug", "SLURM_JOB_QOS": "normal",
        "SLURM_MEM_PER_NODE": "1024", "SLURM_NNODES": "2", "SLURM_NODELIST": "node[1-2]",
        "SLURM_NODE_ALIASES": "(null)", "SLURM_NPROCS": "4", "SLURM_NTASKS": "4",
        "SLURM_SUBMIT_DIR": str(c.workdir), "SLURM_TASKS_PER_NODE": "2(x2)"}
    assert out[len(ENV_SHOWN):] == ["0: 0 node1", "1: 0 node1", "2: 0 node2", "3: 0 node2", "RUNNING dbg 2"]
    j = c.wait_state(jid, "FAILED")
    assert j["exit_code"] == 3
    rows = c.run(f"sacct -j {jid} -n -P -o JobID,JobName,State,ExitCode,NodeList").stdout.splitlines()
    assert rows == [f"{jid}|dbg|FAILED|3:0|node[1-2]", f"{jid}.0|bash|COMPLETED|0:0|node[1-2]"]  # no batch step
    wait_until(lambda: c.idle_nodes() == {"node1", "node2"}, what="the nodes to be free again")
    r = salloc(c, "-N1", "true")
    assert r.returncode == 0
    assert c.job(only_job_id(r.stderr.splitlines()))["state"] == "COMPLETED"
    assert c.job(only_job_id(r.stderr.splitlines()))["name"] == "interactive"


def test_a_pending_allocation_says_so_and_starts_when_the_nodes_free_up(cluster: Cluster):
    c = cluster
    blocker = c.sbatch("-N2", "--exclusive", "--wrap", "sleep 300")
    c.wait_state(blocker, "RUNNING")
    p = popen(c, "-N1", "--exclusive", "bash", "-c", "echo in $SLURM_JOB_ID")
    first = p.stderr.readline().strip()
    assert first.startswith("salloc: Pending job allocation ")
    jid = int(first.split()[-1])
    assert p.stderr.readline().strip() == f"salloc: job {jid} queued and waiting for resources"
    assert c.job(jid)["state"] == "PENDING"
    assert c.run(f"scancel {blocker}").returncode == 0
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0 and out == f"in {jid}\n"
    assert err.splitlines() == [f"salloc: job {jid} has been allocated resources",
                                f"salloc: Granted job allocation {jid}", "salloc: Waiting for resource configuration",
                                "salloc: Nodes node1 are ready for job", f"salloc: Relinquishing job allocation {jid}"]
    assert c.wait_state(jid, "COMPLETED")["exit_code"] == 0


def test_interrupted_while_pending_the_request_is_withdrawn(cluster: Cluster):
    c = cluster
    blocker = c.sbatch("-N2", "--exclusive", "--wrap", "sleep 300")
    c.wait_state(blocker, "RUNNING")
    p = popen(c, "-N1", "true")
    jid = int(p.stderr.readline().split()[-1])
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 1
    assert err.splitlines()[-2:] == [f"salloc: Job allocation {jid} has been revoked.", "salloc: Job aborted due to signal"]
    assert c.wait_state(jid, "CANCELLED")
    c.run(f"scancel {blocker}")
    c.wait_state(blocker, "CANCELLED")


def test_scancel_revokes_the_allocation_and_the_command_goes_on(cluster: Cluster):
    c = cluster
    mark = c.workdir / "after-revoke"
    r = salloc(c, "-N1", "bash", "-c", f"scancel $SLURM_JOB_ID; "
               f"until squeue -h -j $SLURM_JOB_ID -t all -o %T | grep -q CANCELLED; do sleep 0.1; done; "
               f"sleep 1; echo still > {mark}; exit 4")
    jid = only_job_id(r.stderr.splitlines())
    assert f"salloc: Job allocation {jid} has been revoked." in r.stderr.splitlines()
    assert "Relinquishing" not in r.stderr
    assert mark.read_text() == "still\n" and r.returncode == 4
    assert c.job(jid)["state"] == "CANCELLED"


def test_sigterm_to_salloc_gives_up_the_allocation_and_hangs_up_the_command(cluster: Cluster):
    c = cluster
    mark = c.workdir / "hup"
    p = popen(c, "-N1", "bash", "-c", f"trap 'echo hup > {mark}; exit 7' HUP; echo ready; "
              "while :; do sleep 0.1; done")
    assert p.stdout.readline() == "ready\n"
    jid = int(next(x for x in iter(p.stderr.readline, "") if "Granted" in x).split()[-1])
    p.send_signal(signal.SIGINT)  # Ctrl-C belongs to the command (the terminal sends it there): salloc stays
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert f"salloc: Job allocation {jid} has been revoked." in err
    wait_until(lambda: mark.exists() and mark.read_text() == "hup\n", what="the command to get SIGHUP")
    assert c.wait_state(jid, "CANCELLED")


def test_no_shell_leaves_the_allocation_running_for_later_steps(cluster: Cluster):
    c = cluster
    r = salloc(c, "--no-shell", "-N1", "-c2")
    assert r.returncode == 0, r.stderr
    jid = only_job_id(r.stderr.splitlines())
    j = c.job(jid)
    assert j["state"] == "RUNNING" and j["name"] == "no-shell"
    s = c.run([str(BIN / "srun"), f"--jobid={jid}", "bash", "-c", "echo $SLURM_JOB_ID $SLURM_STEP_ID"])
    assert s.stdout == f"{jid} 0\n", s.stderr
    assert c.run(f"scancel {jid}").returncode == 0
    c.wait_state(jid, "CANCELLED")


def test_salloc_refuses_what_slurm_refuses(cluster: Cluster):
    c = cluster
    r = salloc(c, "-N1", "-p", "nosuch", "true")
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == "salloc: error: Job submit/allocate failed: Invalid partition name specified"
    r = salloc(c, "-N1", "--bogus", "true")
    assert r.returncode == 255 and r.stderr.splitlines() == ["salloc: unrecognized option '--bogus'",
                                                              'Try "salloc --help" for more information']
    r = salloc(c, "--usage")
    assert r.returncode == 0 and r.stdout.startswith("Usage: salloc [-N numnodes|[min nodes]-[max nodes]]")
    r = salloc(c, "-N1", "--mail-type=END", "true")
    assert r.returncode == 0 and r.stderr.splitlines()[0] == "salloc: warning: --mail-type is accepted and ignored"
