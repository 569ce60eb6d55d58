"""Job and step semantics on a real 2-node local cluster, as 22.05 has them
(tests/data/slurm-2205-semantics.md): sbatch --wait of an array, -I, -n beyond --ntasks-per-node
times the nodes, a node's untyped GPUs, srun's stdin and its signals."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import BIN, Cluster, wait_until

pytestmark = pytest.mark.e2e

ENDED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT")


def test_sbatch_wait_of_an_array_waits_for_every_task_and_exits_with_the_highest_code(cluster: Cluster):
    c = cluster
    go = c.workdir / "array-go"
    script = ("#!/bin/sh\ncase $SLURM_ARRAY_TASK_ID in 1) exit 3;; 2) while [ ! -e " + str(go) + " ]; do sleep 0.1;"
              " done;; esac\nexit 0\n")
    p = subprocess.Popen([str(BIN / "sbatch"), "--parsable", "--wait", "--array=0-2", "-o", "/dev/null"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=c.env, cwd=c.workdir)
    p.stdin.write(script)
    p.stdin.close()
    jid = int(wait_until(lambda: p.stdout.readline().strip(), 30, what="the array's id"))

    def tasks() -> dict[int, str]:
        return {t["array_task_id"]: t["state"] for t in c.api("GET", f"/api/v1/jobs?ids={jid}")["jobs"]}
    wait_until(lambda: (t := tasks()) and t.get(0) in ENDED and t.get(1) in ENDED and t.get(2) == "RUNNING", 60,
               what="tasks 0 and 1 to end while 2 runs")
    go.touch()
    assert p.wait(60) == 3, p.stderr.read()  # task 1's code, the highest
    assert tasks() == {0: "COMPLETED", 1: "FAILED", 2: "COMPLETED"}  # every task had ended


def test_immediate_gives_the_allocation_up_when_it_cannot_start_in_time(cluster: Cluster):
    c = cluster
    hold = c.sbatch("-N2", "--exclusive", "-o", "/dev/null", "--wrap", "sleep 300")
    try:
        c.wait_state(hold, "RUNNING")
        r = c.run(["srun", "-I2", "-N1", "true"], timeout=30)
        jid = int(r.stderr.split()[2])
        assert (r.returncode, r.stderr) == (1, f"srun: job {jid} queued and waiting for resources\n"
                                               "srun: error: Unable to allocate resources: Requested nodes are busy\n")
        assert c.wait_state(jid, "CANCELLED")["state"] == "CANCELLED"
        r = c.run(["salloc", "--immediate=2", "-N1", "true"], timeout=30)
        jid = int(r.stderr.split()[4])
        assert (r.returncode, r.stderr) == (1, f"salloc: Pending job allocation {jid}\n"
                                               f"salloc: job {jid} queued and waiting for resources\n"
                                               f"salloc: Job allocation {jid} has been revoked.\n"
                                               "salloc: error: Unable to allocate resources: Connection timed out\n")
        assert c.wait_state(jid, "CANCELLED")["state"] == "CANCELLED"
    finally:
        c.run(f"scancel {hold}")
    c.wait_state(hold, "CANCELLED")
    wait_until(lambda: c.idle_nodes() == set(c.node_names), 30, what="the nodes to be idle again")
    r = c.run(["srun", "-I2", "-N2", "-l", "true"], timeout=30)  # free nodes: it runs as without -I
    assert (r.returncode, r.stderr) == (0, "")


def test_more_tasks_than_ntasks_per_node_times_the_nodes(cluster: Cluster):
    c = cluster
    for prog in ("sbatch", "salloc"):
        r = c.run([prog, "-n16", "--ntasks-per-node=4", "-N2", *(["--wrap", "true"] if prog == "sbatch" else ["true"])])
        what = "Batch job submission failed" if prog == "sbatch" else "Job submit/allocate failed"
        assert (r.returncode, r.stderr) == (1, f"{prog}: error: {what}: Requested node configuration is not available\n")
    # srun drops --ntasks-per-node when it is not -n over -N (saying so when -n is above it)
    r = c.run(["srun", "-l", "-n6", "--ntasks-per-node=4", "-N2", "hostname"])
    assert r.returncode == 0 and r.stderr.splitlines()[0] == (
        "srun: Warning: can't honor --ntasks-per-node set to 4 which doesn't match the requested tasks 6 with the "
        "number of requested nodes 2. Ignoring --ntasks-per-node.")
    assert sorted(int(line.split(":")[0]) for line in r.stdout.splitlines()) == list(range(6))
    r = c.run(["srun", "-l", "-n2", "--ntasks-per-node=4", "-N2", "hostname"])
    assert (r.returncode, r.stderr, len(r.stdout.splitlines())) == (0, "", 2)


def test_a_node_configured_with_untyped_gpus_has_no_gpu_type(tmp_path):
    conf = ("ClusterName=test\nNodeName=node[1-2] CPUs=2 RealMemory=2000 Gres=gpu:8\n"
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n")
    c = Cluster(tmp_path / "c", conf=conf)
    c.start_controller()
    try:
        for n in c.node_names:  # as `slurmlet up` starts them for a configured node: fake GPUs
            c._spawn(f"agent-{n}", [str(BIN / "slurmlet"), "agent", "--controller", c.url, "--name", n,
                                    "--spool", str(c.root / "spool" / n), "--gpus", "8"])
        wait_until(lambda: c.idle_nodes() == set(c.node_names), 30, what="the nodes to register")
        assert c.run(["sinfo", "-N", "-o", "%N %G"]).stdout.splitlines() == ["NODELIST GRES", "node1 gpu:8",
                                                                            "node2 gpu:8"]
        assert c.run(["sinfo", "-o", "%P %G"]).stdout.splitlines() == ["PARTITION GRES", "debug* gpu:8"]
        assert "   Gres=gpu:8\n" in c.run(["scontrol", "show", "node", "node2"]).stdout
    finally:
        c.stop()


def test_srun_gives_its_stdin_to_every_task_or_to_the_one_input_names(cluster: Cluster):
    c = cluster
    r = c.run(["srun", "-l", "-n2", "-N2", "cat"], input="a\nb\n")
    assert (r.returncode, sorted(r.stdout.splitlines())) == (0, ["0: a", "0: b", "1: a", "1: b"]), r.stderr
    r = c.run(["srun", "-l", "-n2", "--input=1", "cat"], input="a\nb\n")
    assert (r.returncode, r.stdout) == (0, "1: a\n1: b\n"), r.stderr
    r = c.run(["srun", "-l", "-n2", "-i", "none", "cat"], input="a\nb\n")
    assert (r.returncode, r.stdout) == (0, ""), r.stderr
    jid = c.sbatch("-N2", "-o", "stdin-%j.out", "--wrap", "printf 'x\\n' | srun -l cat | sort")  # a step's srun
    c.wait_state(jid, "COMPLETED", timeout=60)
    assert (c.workdir / f"stdin-{jid}.out").read_text() == "0: x\n1: x\n"


def _interrupted_srun(c: Cluster, signals: list[int]) -> tuple[int, list[str]]:
    """An srun whose task runs, sent `signals` one by one, each once srun answered the one before (a
    Ctrl-C's lines): its exit code and stderr lines."""
    import signal
    import threading
    p = subprocess.Popen([str(BIN / "srun"), "-N1", "sh", "-c", "echo started; exec sleep 300"], env=c.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=c.workdir)
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(line.rstrip("\n") for line in p.stderr), daemon=True)
    reader.start()
    try:
        assert p.stdout.readline() == "started\n"
        for i, sig in enumerate(signals):
            seen = len(err)
            p.send_signal(sig)
            if sig == signal.SIGINT and i < len(signals) - 1:
                wait_until(lambda seen=seen: len(err) > seen + 1, 30, what="srun's answer to Ctrl-C")
        rc = p.wait(60)
    finally:
        if p.poll() is None:
            p.kill()
    reader.join(30)
    return rc, err


def test_srun_interrupted_says_what_22_05_says(cluster: Cluster):
    import re
    import signal
    c = cluster
    rc, err = _interrupted_srun(c, [signal.SIGINT, signal.SIGINT])
    step = re.fullmatch(r"srun: StepId=(\d+\.0) task 0: running", err[1]).group(1)
    assert (rc, err[:4]) == (130, ["srun: interrupt (one more within 1 sec to abort)", f"srun: StepId={step} task 0: running",
                                   f"srun: sending Ctrl-C to StepId={step}", "srun: forcing job termination"])
    wait = int(c.config_value("KillWait").split()[0]) + 2
    assert sorted(re.sub(r"AT \S+ \*\*\*$", "AT T ***", x) for x in err[4:]) == [
        f"slurmstepd-node1: error: *** STEP {step} ON node1 CANCELLED AT T ***",
        f"srun: Job step aborted: Waiting up to {wait} seconds for job step to finish."]  # (no task line: 130)
    rc, err = _interrupted_srun(c, [signal.SIGTERM])
    assert (rc, err[0], err[-1]) == (137, "srun: forcing job termination", "srun: error: node1: task 0: Killed")
    assert sorted(re.sub(r"STEP \S+ ON node1 CANCELLED AT \S+ \*\*\*$", "STEP S ON node1 CANCELLED AT T ***", x)
                  for x in err[1:-1]) == ["slurmstepd-node1: error: *** STEP S ON node1 CANCELLED AT T ***",
                                          f"srun: Job step aborted: Waiting up to {wait} seconds for job step to finish."]


def test_a_task_killed_by_a_signal_force_terminates_the_step_and_fails_srun_s_job(cluster: Cluster):
    c = cluster
    r = c.run(["srun", "-J", "k9", "-N1", "sh", "-c", "kill -9 $$"])
    jid = max(j["job_id"] for j in c.api("GET", "/api/v1/jobs?names=k9")["jobs"])
    assert (r.returncode, r.stderr) == (137, f"srun: error: node1: task 0: Killed\n"
                                             f"srun: Force Terminated StepId={jid}.0\n")
    c.wait_state(jid, "FAILED")
    assert c.run(f"sacct -j {jid} -n -P -o JobID,State,ExitCode").stdout.splitlines() == [
        f"{jid}|FAILED|0:9", f"{jid}.0|CANCELLED|0:9"]
