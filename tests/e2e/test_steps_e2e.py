"""srun steps inside an allocation on a real 2-node local cluster: layout and task environment,
output relayed to srun with -l labels, exit codes, sacct's step rows, cancellation."""

from __future__ import annotations

import os

import pytest

from tests.conftest import BIN, Cluster, wait_until

pytestmark = pytest.mark.e2e

SCRIPT = """#!/bin/sh
srun -l bash -c 'echo $SLURM_STEP_ID $SLURM_PROCID $SLURM_LOCALID $SLURM_NODEID $SLURMD_NODENAME' | sort
srun bash -c 'echo out-$SLURM_PROCID; echo err-$SLURM_PROCID >&2; exit $SLURM_PROCID'
echo "rc=$?"
srun -N1 -n1 bash -c 'echo $SLURM_STEP_NUM_TASKS $SLURM_STEP_NODELIST $SLURM_STEP_TASKS_PER_NODE $SLURM_NTASKS $SLURM_NNODES'
srun -n 99 true
echo "rc=$?"
"""


def test_steps_run_across_the_nodes_with_slurms_environment_and_exit_codes(cluster: Cluster):
    c = cluster
    jid = c.sbatch("-N2", "--ntasks-per-node=2", "-J", "steps", "-o", "steps-%j.out", script=SCRIPT)
    j = c.wait_state(jid, ("COMPLETED", "FAILED"), timeout=60)
    lines = (c.workdir / f"steps-{jid}.out").read_text().splitlines()
    assert lines[:4] == ["0: 0 0 0 0 node1", "1: 0 1 1 0 node1", "2: 0 2 0 1 node2", "3: 0 3 1 1 node2"]
    rest = lines[4:]
    assert sorted(x for x in rest if x.startswith(("out-", "err-"))) == \
        [f"{s}-{r}" for s in ("err", "out") for r in range(4)]
    assert [x for x in rest if x.startswith("srun: error: node")] == [
        "srun: error: node1: task 1: Exited with exit code 1", "srun: error: node2: task 2: Exited with exit code 2",
        "srun: error: node2: task 3: Exited with exit code 3"]
    assert "rc=3" in rest and "1 node1 1 1 1" in rest  # the step's counts override the job's
    assert f"srun: error: Unable to create step for job {jid}: More processors requested than permitted" in rest
    assert rest[-1] == "rc=1" and j["state"] == "COMPLETED"  # the script's own last command succeeded
    r = c.run(f"sacct -j {jid} -n -P -o JobID,JobName,State,ExitCode,NodeList,NTasks")
    assert r.stdout.splitlines()[1:] == [
        f"{jid}.batch|batch|COMPLETED|0:0|node1|1",
        f"{jid}.0|bash|COMPLETED|0:0|node[1-2]|4",
        f"{jid}.1|bash|FAILED|3:0|node[1-2]|4",
        f"{jid}.2|bash|COMPLETED|0:0|node1|1",
    ]


def test_cancelling_the_job_kills_its_step_tasks_on_every_node(cluster: Cluster):
    c = cluster
    pids = c.workdir / "step-pids"
    pids.mkdir()
    script = f"#!/bin/sh\nsrun bash -c 'echo $$ > {pids}/$SLURM_PROCID; exec sleep 300'\n"
    jid = c.sbatch("-N2", "--ntasks-per-node=1", "-J", "long", script=script)
    c.wait_state(jid, "RUNNING")
    got = wait_until(lambda: len(list(pids.iterdir())) == 2 and [int(p.read_text()) for p in pids.iterdir()],
                     what="both tasks to start")
    assert c.run(f"scancel {jid}").returncode == 0
    c.wait_state(jid, "CANCELLED")

    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return not open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
    wait_until(lambda: not any(alive(p) for p in got), what="the step's tasks to be gone on both nodes")
    r = c.run(f"sacct -j {jid} -n -P -o JobID,State")
    assert f"{jid}.0|CANCELLED" in r.stdout.splitlines()


def test_rendezvous_variables_are_the_same_on_every_node(cluster: Cluster):
    c = cluster
    script = ("#!/bin/sh\necho batch $MASTER_ADDR $MASTER_PORT $NUM_NODES $NODE_RANK $LOCAL_WORLD_SIZE\n"
              "srun -l bash -c 'echo $MASTER_ADDR $MASTER_PORT $NUM_NODES $NODE_RANK $LOCAL_WORLD_SIZE' | sort\n")
    a = c.sbatch("-N2", "--ntasks-per-node=2", "-o", "rdv-%j.out", script=script)
    b = c.sbatch("-N2", "--ntasks-per-node=1", "-o", "rdv-%j.out", script=script)
    for j in (a, b):
        c.wait_state(j, "COMPLETED", timeout=60)
    first = {}
    for j, per_node in ((a, 2), (b, 1)):
        lines = (c.workdir / f"rdv-{j}.out").read_text().splitlines()
        addr, port = lines[0].split()[1:3]
        assert lines[0] == f"batch {addr} {port} 2 0 {per_node}"
        ranks = [(r, n) for n in range(2) for r in range(per_node)]
        assert lines[1:] == [f"{i}: {addr} {port} 2 {n} {per_node}" for i, (_, n) in enumerate(ranks)]
        first[j] = port
    assert first[a] != first[b]  # each job has its own port


def test_srun_outside_an_allocation_allocates_runs_a_step_and_releases(cluster: Cluster):
    c = cluster
    r = c.run(["srun", "-N2", "-l", "bash", "-c", "echo $SLURMD_NODENAME"])
    assert (r.returncode, sorted(r.stdout.splitlines())) == (0, ["0: node1", "1: node2"])
    r = c.run(["srun", "-n2", "bash", "-c", "exit 3"])
    assert r.returncode == 3
    assert "srun: error: node1: task 0: Exited with exit code 3" in r.stdout + r.stderr
    assert c.idle_nodes() == set(c.node_names) or wait_until(lambda: c.idle_nodes() == set(c.node_names))


def test_srun_outside_an_allocation_streams_the_output_as_it_comes(cluster: Cluster, tmp_path):
    """Each task's lines reach the srun while the tasks still run (over the network, not through a
    file on a node read at the end), labelled with -l."""
    import subprocess
    import threading
    c = cluster
    go = tmp_path / "go"
    p = subprocess.Popen([str(BIN / "srun"), "-N2", "-l", "sh", "-c",
                          f'echo "start $SLURMD_NODENAME"; while [ ! -e {go} ]; do sleep 0.1; done; echo end'],
                         env=c.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(p.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        wait_until(lambda: sorted(lines) == ["0: start node1\n", "1: start node2\n"], 60,
                   what="both tasks' first lines while they run")
        assert p.poll() is None
        go.touch()
        assert p.wait(60) == 0, p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
    reader.join(10)
    assert sorted(lines) == ["0: end\n", "0: start node1\n", "1: end\n", "1: start node2\n"]


@pytest.mark.parametrize(("sig", "end"), [("SIGHUP", "FAILED"), ("SIGTERM", "FAILED"),
                                          ("SIGKILL", "COMPLETED")])
def test_srun_outside_an_allocation_that_is_hung_up_or_killed_gives_its_allocation_back(
        cluster: Cluster, tmp_path, sig: str, end: str):
    """Its terminal gone or told to stop, the srun's own allocation ends with it (never a job left
    holding nodes): its step's tasks are killed (SIGKILL) and the job ends FAILED, as 22.05's
    (tests/data/slurm-2205-semantics.md); killed outright, it cannot say so, and the allocation ends
    when its step does."""
    import signal
    import subprocess
    c = cluster
    before = {j["job_id"] for j in c.api("GET", "/api/v1/jobs?states=RUNNING,PENDING")["jobs"]}
    go = tmp_path / "go"  # the task runs until the test says
    p = subprocess.Popen([str(BIN / "srun"), "-N1", "sh", "-c", f"echo up; while [ ! -e {go} ]; do sleep 0.1; done"],
                         env=c.env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        mine = wait_until(lambda: [j for j in c.api("GET", "/api/v1/jobs?states=RUNNING")["jobs"]
                                   if j["job_id"] not in before and any(s.get("step") == 0 for s in j["steps"])],
                          60, what="srun's allocation and its step running")
        import select  # (the task's first line through srun: srun knows its step runs, not only the controller)
        assert select.select([p.stdout], [], [], 60)[0] and p.stdout.readline() == "up\n"
        p.send_signal(getattr(signal, sig))
        assert p.wait(60) != 0
        go.touch()  # (killed outright, srun cannot end its task: it ends by itself)
    finally:
        go.touch()
        if p.poll() is None:
            p.kill()
    job = c.wait_state(mine[0]["job_id"], ("CANCELLED", "COMPLETED", "FAILED"), 60)
    assert job["state"] == end, job["state"]


def _srun_signalled_while_the_controller_waits(c: Cluster, argv: list[str], what: str) -> str:
    """srun `argv` started while the controller is stopped, SIGTERMed once its first request is sent
    (it waits in the kernel's backlog), the controller then let go on: srun's stderr, once it exited
    with a failure (within 60 s)."""
    import signal
    import subprocess

    import psutil
    ctl = c.procs["controller"]
    p = None
    os.kill(ctl.pid, signal.SIGSTOP)
    try:
        p = subprocess.Popen([str(BIN / "srun"), *argv], env=c.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=c.workdir)
        try:
            wait_until(lambda: any(x.raddr and x.raddr[1] == c.port and x.status == psutil.CONN_ESTABLISHED
                                   for x in psutil.Process(p.pid).net_connections("tcp")), 60, what=what)
            p.send_signal(signal.SIGTERM)
        finally:
            os.kill(ctl.pid, signal.SIGCONT)
        assert p.wait(60) != 0
    finally:
        os.kill(ctl.pid, signal.SIGCONT)
        if p is not None and p.poll() is None:
            p.kill()
    return p.communicate()[1]


def test_srun_signalled_while_its_step_is_being_made_cancels_the_step_once_it_exists(cluster: Cluster):
    """SIGTERM to an srun whose step the controller has not answered yet (the controller stopped, so
    the request waits) is not lost: once the step exists srun cancels it and exits, and no task runs
    on without an srun. The allocation goes on."""
    c = cluster
    jid = c.sbatch("-N1", "--wrap", "sleep 300")
    c.wait_state(jid, "RUNNING", 60)
    # (inside an allocation srun's first request asks for the step)
    err = _srun_signalled_while_the_controller_waits(c, [f"--jobid={jid}", "-N1", "sleep", "300"],
                                                     "srun asking for its step")
    assert "srun: forcing job termination" in err, err
    step = c.api("GET", f"/api/v1/jobs/{jid}/steps/0?wait=60")
    assert step["state"] == "CANCELLED", step
    assert c.job(jid)["state"] == "RUNNING"
    c.run(f"scancel {jid}")


def test_srun_signalled_while_its_allocation_is_being_submitted_gives_it_back(cluster: Cluster):
    """SIGTERM to an srun outside an allocation whose submission the controller has not answered yet
    (the controller stopped): once the job exists srun cancels it, and no allocation is left holding a
    node for an srun that is gone."""
    c = cluster
    every = "/api/v1/jobs?states=PENDING,RUNNING,COMPLETING,COMPLETED,CANCELLED,FAILED,TIMEOUT,NODE_FAIL"
    before = {j["job_id"] for j in c.api("GET", every)["jobs"]}
    # (outside an allocation srun's first request is its submission)
    err = _srun_signalled_while_the_controller_waits(c, ["-N1", "sleep", "300"], "srun submitting its allocation")
    assert "srun: forcing job termination" in err, err
    mine = [j for j in c.api("GET", every)["jobs"] if j["job_id"] not in before]
    assert len(mine) == 1, mine
    assert c.wait_state(mine[0]["job_id"], ("CANCELLED", "COMPLETED", "FAILED"), 60)["state"] == "CANCELLED"


def test_kill_on_bad_exit_stops_the_other_tasks(cluster: Cluster):
    c = cluster
    script = ("#!/bin/sh\nsrun -K -N2 -n2 bash -c '[ $SLURM_PROCID = 0 ] && exit 4; exec sleep 300'\n"
              "echo rc=$?\n")
    jid = c.sbatch("-N2", "-o", "kbe-%j.out", script=script)
    c.wait_state(jid, "COMPLETED", timeout=60)
    text = (c.workdir / f"kbe-{jid}.out").read_text()
    assert "srun: error: node1: task 0: Exited with exit code 4" in text and text.splitlines()[-1] != "rc=0"


def test_kill_on_bad_exit_stops_the_other_tasks_of_the_same_node(cluster: Cluster):
    """A task's exit reaches srun when it happens, not when the node's last task of the step ends
    (as slurmstepd sends each one): -K then stops the others, which would run 300 s."""
    c = cluster
    script = ("#!/bin/sh\nsrun -K -N1 -n2 bash -c '[ $SLURM_PROCID = 1 ] && exit 4; exec sleep 300'\n"
              "echo rc=$?\n")
    jid = c.sbatch("-N1", "-n2", "-o", "kbe1-%j.out", script=script)
    c.wait_state(jid, "COMPLETED", timeout=60)
    text = (c.workdir / f"kbe1-{jid}.out").read_text()
    assert "srun: error: node1: task 1: Exited with exit code 4" in text, text
    assert text.splitlines()[-1] != "rc=0"


def test_srun_wait_kills_the_tasks_still_running_that_long_after_the_first_ended(cluster: Cluster):
    """srun -W N as 22.05's (tests/data/slurm-2205-tools.md): N seconds after the first task's end it says
    which tasks are in which state and kills the others (they would run 300 s); srun exits 137."""
    c = cluster
    script = ("#!/bin/sh\nsrun -N2 -n5 --wait=2 bash -c 'case $SLURM_PROCID in 2) exit 3;; 3|4) exec sleep 300;; esac'\n"
              "echo rc=$?\n")
    jid = c.sbatch("-N2", "-n5", "-o", "wait-%j.out", script=script)
    c.wait_state(jid, "COMPLETED", timeout=90)
    lines = (c.workdir / f"wait-{jid}.out").read_text().splitlines()
    at = lines.index("srun: First task exited 2s ago")
    assert lines[at:at + 5] == [
        "srun: First task exited 2s ago", f"srun: StepId={jid}.0 tasks 3-4: running",
        f"srun: StepId={jid}.0 task 2: exited abnormally", f"srun: StepId={jid}.0 tasks 0-1: exited",
        f"srun: launch/slurm: _step_signal: Terminating StepId={jid}.0"], lines
    assert "srun: Job step aborted: Waiting up to 4 seconds for job step to finish." in lines  # (KillWait=2)
    assert sorted(x for x in lines if x.startswith("srun: error: node")) == [
        "srun: error: node1: task 2: Exited with exit code 3", "srun: error: node1: task 3: Killed",
        "srun: error: node2: task 4: Killed"]
    assert lines[-1] == "rc=137" and not any("warning" in x for x in lines), lines


def test_scancel_of_a_step_kills_its_tasks_at_once_and_the_job_goes_on(cluster: Cluster):
    """As a real 22.05 does: scancel JOB.STEP kills the step's tasks with SIGKILL (no SIGTERM first),
    slurmstepd's CANCELLED line and srun's 'Job step aborted' come before srun's task errors, and the
    batch script goes on. A step that does not run (or a job that does not exist) is an error."""
    c = cluster
    task = 'trap "echo task $SLURM_PROCID got TERM" TERM; echo task $SLURM_PROCID started; while true; do sleep 0.1; done'
    script = f"#!/bin/sh\nsrun -N1 -n2 sh -c '{task}'\necho srun rc=$?\necho after\n"
    jid = c.sbatch("-N1", "-n2", "-o", "stepcancel-%j.out", script=script)
    out = c.workdir / f"stepcancel-{jid}.out"
    wait_until(lambda: out.exists() and "task 1 started" in out.read_text(), 60, what="the step's tasks")
    # a filter beside a step names no other job (the whole job stays), and a step that does not run is an error
    r = c.run(["scancel", "--me", f"{jid}.7"])
    assert r.returncode == 1 and "job step id" in r.stderr and c.job(jid)["state"] == "RUNNING", r.stderr
    r = c.run(["scancel", f"{jid}.0"])
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    c.wait_state(jid, "COMPLETED", timeout=60)
    lines = out.read_text().splitlines()
    assert "got TERM" not in out.read_text()
    cancelled = next(i for i, x in enumerate(lines) if x.startswith(f"slurmstepd-node1: error: *** STEP {jid}.0 ON node1 CANCELLED AT "))
    aborted = next(i for i, x in enumerate(lines) if x.startswith("srun: Job step aborted: Waiting up to "))
    killed = lines.index("srun: error: node1: task 0: Killed")
    assert cancelled < aborted < killed and lines[-2:] == ["srun rc=137", "after"], lines
    for ref in (f"{jid}.0", f"{jid}.7", "999999.0"):
        r = c.run(["scancel", ref])
        assert r.returncode == 1 and r.stderr == f"scancel: error: Kill job error on job step id {ref}: Invalid job id specified\n"


def test_output_patterns_and_nodelist(cluster: Cluster):
    c = cluster
    script = ("#!/bin/sh\nsrun -o 'task-%j.%s-%t-%N.out' bash -c 'echo rank $SLURM_PROCID'\n"
              "srun -w node2 -N1 -n1 bash -c 'echo on $SLURMD_NODENAME'\n")
    jid = c.sbatch("-N2", "--ntasks-per-node=1", "-o", "pat-%j.out", script=script)
    c.wait_state(jid, "COMPLETED", timeout=60)
    assert (c.workdir / f"task-{jid}.0-0-node1.out").read_text() == "rank 0\n"
    assert (c.workdir / f"task-{jid}.0-1-node2.out").read_text() == "rank 1\n"
    assert (c.workdir / f"pat-{jid}.out").read_text() == "on node2\n"


def test_interrupting_srun_kills_its_tasks_on_every_node(cluster: Cluster):
    c = cluster
    pids = c.workdir / "int-pids"
    pids.mkdir()
    script = (f"#!/bin/sh\nsrun bash -c 'echo $$ > {pids}/$SLURM_PROCID; exec sleep 300' &\nsrun_pid=$!\n"
              f"while [ $(ls {pids} | wc -l) -lt 2 ]; do sleep 0.1; done\n"
              "kill -TERM $srun_pid\nwait $srun_pid\necho srun-rc=$?\n")  # (one Ctrl-C only asks how they are)
    jid = c.sbatch("-N2", "--ntasks-per-node=1", "-o", "int-%j.out", script=script)
    c.wait_state(jid, "COMPLETED", timeout=60)
    got = [int(p.read_text()) for p in pids.iterdir()]
    wait_until(lambda: not any(os.path.exists(f"/proc/{p}") and
                               open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] != "Z" for p in got),
               what="the tasks to be gone")
    assert "srun-rc=0" not in (c.workdir / f"int-{jid}.out").read_text()
    r = c.run(f"sacct -j {jid} -n -P -o JobID,State")
    assert f"{jid}.0|CANCELLED" in r.stdout.splitlines()


def test_scontrol_show_step_lists_the_running_steps_as_slurm_does(fresh_cluster, tmp_path):
    """As a real 22.05 shows them (tests/data/slurm-2205-steps.md): the batch step, then each srun step
    with its nodes, CPUs, tasks, TRES and srun's host and pid; Slurm's messages for what is not there."""
    import re
    c = fresh_cluster(nodes=2)
    c.start()
    assert c.run(["scontrol", "show", "step"]).stdout == "No job steps in the system\n"
    jid = c.sbatch("-N2", "-o", "/dev/null", "--wrap", "srun -N2 sleep 60")
    wait_until(lambda: any(s["step"] == 0 for s in c.job(jid)["steps"]), 60, what="step 0 running")
    out = c.run(["scontrol", "show", "step", f"{jid}.0"]).stdout
    lines = out.split("\n")
    assert re.fullmatch(rf"StepId={jid}\.0 UserId=0 StartTime=\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d TimeLimit=UNLIMITED",
                        lines[0]), out
    assert lines[1] == "   State=RUNNING Partition=debug NodeList=node[1-2]"
    assert lines[2] == "   Nodes=2 CPUs=2 Tasks=2 Name=sleep Network=(null)"
    assert re.fullmatch(r"   TRES=cpu=2(,mem=\d+M)?,node=2", lines[3]), lines[3]  # mem: with DefMemPerCPU or --mem
    assert lines[4:6] == ["   ResvPorts=(null)", "   CPUFreqReq=Default Dist=Cyclic"]
    assert re.fullmatch(r"   SrunHost:Pid=node1:\d+", lines[6]) and lines[7:] == ["", ""], out
    both = c.run(["scontrol", "show", "step", str(jid)]).stdout
    assert [b.split()[0] for b in both.strip().split("\n\n")] == [f"StepId={jid}.batch", f"StepId={jid}.0"]
    assert "   TRES=(null)\n   ResvPorts=(null)\n   CPUFreqReq=Default\n   SrunHost:Pid=(null):0\n" in both
    one = c.run(["scontrol", "-o", "show", "step", f"{jid}.0"]).stdout
    assert one.count("\n") == 1 and one.startswith(f"StepId={jid}.0 UserId=0 ") and " Dist=Cyclic SrunHost:Pid=" in one
    r = c.run(["scontrol", "show", "step", f"{jid}.5"])
    assert (r.returncode, r.stdout) == (1, f"Job step {jid}.5 not found\n")
    r = c.run(["scontrol", "show", "step", "99999.0"])
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "slurm_get_job_steps error: Invalid job id specified\n")
    c.run(["scancel", str(jid)])


def test_a_step_can_be_waited_for_until_its_nodes_reported_its_end(cluster: Cluster):
    """GET /jobs/ID/steps/STEP?wait=S (srun's wait, once its tasks exited, for the nodes' reports):
    answers RUNNING while the step runs and its wait runs out, and its end as soon as it is in."""
    import time
    c = cluster
    jid = c.sbatch("-N1", "-o", "/dev/null", script="#!/bin/sh\nsrun sleep 3\n")
    wait_until(lambda: [s for s in c.job(jid).get("steps") or [] if s.get("step") == 0 and
                        s.get("state") == "RUNNING"], 30, what="step 0 running")
    assert c.api("GET", f"/api/v1/jobs/{jid}/steps/0?wait=0.2")["state"] == "RUNNING"
    t = time.monotonic()
    step = c.api("GET", f"/api/v1/jobs/{jid}/steps/0?wait=30")
    assert step["state"] == "COMPLETED", step
    assert time.monotonic() - t < 25  # (answered at the step's end, not at the end of the wait)
    c.wait_state(jid, "COMPLETED")
