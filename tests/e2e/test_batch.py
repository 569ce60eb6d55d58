"""End to end: a real controller and two agents; jobs submitted with the real CLI."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.conftest import BIN, Cluster, wait_until

pytestmark = pytest.mark.e2e


TIMEOUT_JOB: dict = {}


def test_time_limit_submit(cluster: Cluster, tmp_path_factory):
    """Submitted first, checked last: a one-minute limit takes a minute to expire."""
    out = tmp_path_factory.mktemp("tmo") / "t.out"
    TIMEOUT_JOB.update(id=cluster.sbatch("-o", str(out), "-t", "1", "--wrap", "echo started; sleep 300"), out=out)
    assert cluster.wait_state(TIMEOUT_JOB["id"], "RUNNING")["time_limit"] == 1


def test_sbatch_runs_script_with_slurm_environment(cluster: Cluster, tmp_path: Path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -J envjob\n#SBATCH -N2 --ntasks-per-node=2\n"
                      "env | sort\necho args: \"$@\"\n")
    r = cluster.run([str(BIN / "sbatch"), str(script), "a1", "b 2"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Submitted batch job ")
    jid = int(r.stdout.split()[-1])
    script.unlink()  # the script was copied at submit time
    job = cluster.wait_state(jid, "COMPLETED")
    assert job["nodes"] == "node[1-2]" and job["exit_code"] == 0
    out = (tmp_path / f"slurm-{jid}.out").read_text()
    env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line and not line.startswith("args"))
    assert env["SLURM_JOB_ID"] == env["SLURM_JOBID"] == str(jid)
    assert env["SLURM_JOB_NAME"] == "envjob"
    assert env["SLURM_JOB_NODELIST"] == env["SLURM_NODELIST"] == "node[1-2]"
    assert env["SLURM_JOB_NUM_NODES"] == env["SLURM_NNODES"] == "2"
    assert env["SLURM_NTASKS"] == "4" and env["SLURM_TASKS_PER_NODE"] == "2(x2)"
    assert env["SLURM_JOB_CPUS_PER_NODE"] == "2(x2)" and env["SLURM_CPUS_ON_NODE"] == "2"
    assert env["SLURMD_NODENAME"] == "node1" and env["SLURM_NODEID"] == "0" and env["SLURM_PROCID"] == "0"
    assert env["SLURM_SUBMIT_DIR"] == str(tmp_path) and env["PWD"] == str(tmp_path)
    assert env["SLURM_JOB_PARTITION"] == "debug" and env["SLURM_CLUSTER_NAME"] == "test"
    assert int(env["SLURM_TASK_PID"]) > 1
    assert "args: a1 b 2" in out


def test_output_patterns_chdir_and_stderr(cluster: Cluster, tmp_path: Path):
    (tmp_path / "sub").mkdir()
    jid = cluster.sbatch("-J", "pat", "-D", str(tmp_path / "sub"), "-o", "o-%x-%j-%N.txt", "-e", "e-%j.txt",
                         "--wrap", "pwd; echo to-err >&2")
    cluster.wait_state(jid, "COMPLETED")
    assert (tmp_path / "sub" / f"o-pat-{jid}-node1.txt").read_text().strip() == str(tmp_path / "sub")
    assert (tmp_path / "sub" / f"e-{jid}.txt").read_text() == "to-err\n"


def test_exit_codes_and_states(cluster: Cluster):
    ok = cluster.sbatch("--wrap", "exit 0")
    bad = cluster.sbatch("--wrap", "exit 3")
    sig = cluster.sbatch("--wrap", "kill -9 $$")
    assert cluster.wait_state(ok, ("COMPLETED", "FAILED"))["state"] == "COMPLETED"
    j = cluster.wait_state(bad, ("COMPLETED", "FAILED"))
    assert (j["state"], j["reason"], j["exit_code"], j["exit_signal"]) == ("FAILED", "NonZeroExitCode", 3, 0)
    j = cluster.wait_state(sig, ("COMPLETED", "FAILED"))
    assert (j["state"], j["exit_code"], j["exit_signal"]) == ("FAILED", 0, 9)
    r = cluster.run(f"sacct -n -P -o JobID,State,ExitCode -j {bad}")
    assert r.stdout.splitlines() == [f"{bad}|FAILED|3:0", f"{bad}.batch|FAILED|3:0"]


def test_cancel_kills_the_whole_process_tree(cluster: Cluster, tmp_path: Path):
    pidfile = tmp_path / "pids"
    jid = cluster.sbatch("-o", str(tmp_path / "c.out"), "--wrap",
                         f"sleep 300 & echo $! >> {pidfile}; (sleep 301 & echo $! >> {pidfile}; wait) & "
                         f"setsid sleep 302 & wait")
    cluster.wait_state(jid, "RUNNING")
    pids = wait_until(lambda: pidfile.exists() and len(pidfile.read_text().split()) == 2
                      and [int(p) for p in pidfile.read_text().split()], what="children started")
    r = cluster.run(f"scancel {jid}")
    assert r.returncode == 0 and r.stderr == ""
    assert cluster.wait_state(jid, "CANCELLED")["state"] == "CANCELLED"

    def all_gone() -> bool:
        return all(not Path(f"/proc/{p}").exists() for p in pids)
    wait_until(all_gone, 15, what="the job's processes to be killed")
    wait_until(lambda: cluster.job(jid)["steps"][0]["state"] == "CANCELLED", what="batch step cancelled")
    assert "CANCELLED AT" in (tmp_path / "c.out").read_text()
    r = cluster.run(f"sacct -n -P -o JobID,State,ExitCode -j {jid}")
    assert r.stdout.splitlines() == [f"{jid}|CANCELLED by {os.getuid()}|0:0", f"{jid}.batch|CANCELLED|0:15"]
    # scontrol has the batch script's status where sacct's job line has 0:0
    assert "BatchFlag=1 Reboot=0 ExitCode=0:15" in cluster.run(f"scontrol show job {jid}").stdout


def test_hold_release_and_squeue_reasons(cluster: Cluster):
    jid = cluster.sbatch("-H", "-J", "held", "--wrap", "true")
    r = cluster.run(f"squeue -h -j {jid} -o '%i %T %r'")
    assert r.stdout == f"{jid} PENDING JobHeldUser\n"
    assert cluster.run(f"scontrol release {jid}").returncode == 0
    cluster.wait_state(jid, "COMPLETED")
    r = cluster.run(f"squeue -h -j {jid} -o '%i %T'")
    assert r.stdout == ""  # finished jobs need -t all
    r = cluster.run(f"squeue -h -t all -j {jid} -o '%i %T'")
    assert r.stdout == f"{jid} COMPLETED\n"


def test_scontrol_update_starttime_takes_parse_times_forms(cluster: Cluster):
    """22.05's `scontrol update StartTime=` (`St=` and any longer prefix; there is no BeginTime=): a
    pending job's EligibleTime becomes that time; a refused time is said and the other changes still
    apply; a running job's is refused (tests/data/slurm-2205-values.md)."""
    jid = cluster.sbatch("-H", "--wrap", "true")
    r = cluster.run(f"scontrol update JobId={jid} StartTime=2030-03-17T17:46:40")
    assert (r.returncode, r.stderr) == (0, "")
    assert "EligibleTime=2030-03-17T17:46:40" in cluster.run(f"scontrol show job {jid}").stdout
    r = cluster.run(f"scontrol update JobId={jid} St=2031-01-15T10:30")
    assert (r.returncode, r.stderr) == (0, "")
    assert "EligibleTime=2031-01-15T10:30:00" in cluster.run(f"scontrol show job {jid}").stdout
    r = cluster.run(f"scontrol update JobId={jid} StartTime=bogus")
    assert (r.returncode, r.stderr) == (1, "Invalid time specification (pos=0): bogus\nNo changes specified\n")
    r = cluster.run(f"scontrol update JobId={jid} StartTime=now+1h Comment=y")
    assert (r.returncode, r.stderr) == (0, "Invalid time specification (pos=4): now+1h\n")
    out = cluster.run(f"scontrol show job {jid}").stdout
    assert "EligibleTime=2031-01-15T10:30:00" in out and "Comment=y" in out
    r = cluster.run(f"scontrol update JobId={jid} BeginTime=now+1hour")
    assert (r.returncode, r.stderr) == (1, "Update of this parameter is not supported: BeginTime=now+1hour\n"
                                           "Request aborted\n")
    cluster.run(f"scancel {jid}")
    jid = cluster.sbatch("--wrap", "sleep 30")
    cluster.wait_state(jid, "RUNNING")
    r = cluster.run(f"scontrol update JobId={jid} StartTime=now+1hour")
    assert (r.returncode, r.stderr) == (1, f"Job is no longer pending execution for job {jid}\n")
    cluster.run(f"scancel {jid}")


def test_resources_then_priority_reasons(cluster: Cluster):
    big = [cluster.sbatch("-N2", "-c", "3", "--wrap", "sleep 60") for _ in range(2)]
    small = cluster.sbatch("--wrap", "true")
    cluster.wait_state(big[0], "RUNNING")
    wait_until(lambda: cluster.job(big[1])["reason"] == "Resources", what="Resources reason")
    wait_until(lambda: cluster.job(small)["reason"] == "Priority", what="Priority reason")
    cluster.run(f"scancel {big[0]} {big[1]} {small}")
    for j in big + [small]:
        cluster.wait_state(j, "CANCELLED")


def test_tool_style_polling(cluster: Cluster, tmp_path: Path):
    """What Python submitters and workflow engines do: sbatch FILE, poll sacct/squeue, scancel."""
    script = tmp_path / "wf.sh"
    script.write_text("#!/bin/sh\necho hello\n")
    r = cluster.run(f"sbatch {script}", cwd=tmp_path)
    jid = int(r.stdout.strip().rsplit(" ", 1)[1])
    wait_until(lambda: cluster.run(f"sacct -o JobID,State,NodeList --parsable2 -n -j {jid}").stdout
               .startswith(f"{jid}|COMPLETED|node"), what="sacct to show COMPLETED")
    assert (tmp_path / f"slurm-{jid}.out").read_text() == "hello\n"


def test_bad_input_is_refused_with_slurm_messages(cluster: Cluster):
    cases = [
        ("sbatch --bogus --wrap true", 255, "sbatch: unrecognized option '--bogus'\n"
                                            'Try "sbatch --help" for more information\n'),
        ("sbatch --time=abc --wrap true", 255, "sbatch: error: Invalid --time specification\n"),
        ("sbatch -p nonexistent --wrap true", 1, "sbatch: error: invalid partition specified: nonexistent\n"
                                                 "sbatch: error: Batch job submission failed: "
                                                 "Invalid partition name specified\n"),
        ("sbatch --gres=gpu:9 --wrap true", 1, "sbatch: error: Batch job submission failed: "
                                               "Requested node configuration is not available\n"),
        ("sbatch --mem=999999 --wrap true", 1, "sbatch: error: Memory specification can not be satisfied\n"
                                               "sbatch: error: Batch job submission failed: "
                                               "Requested node configuration is not available\n"),
        ("sbatch /nonexistent/script.sh", 1, "sbatch: error: Unable to open file /nonexistent/script.sh\n"),
        ("printf 'echo no shebang\\n' | sbatch", 1,
         "sbatch: error: This does not look like a batch script.  The first\n"
         "sbatch: error: line must start with #! followed by the path to an interpreter.\n"
         "sbatch: error: For instance: #!/bin/sh\n"),
        ("sbatch -w node9 --wrap true", 1, "sbatch: error: Batch job submission failed: Invalid node name specified\n"),
        ("squeue -j abc", 1, "squeue: error: Invalid job id: abc\n"),
        ("squeue -j 999999", 1, "slurm_load_jobs error: Invalid job id specified\n"),
        ("scancel abc", 1, "scancel: error: Invalid job id abc\n"),
        ("sbatch --array=0-2000 --wrap true", 1, "sbatch: error: Batch job submission failed: "
                                                 "Invalid job array specification\n"),
        ("scancel", 1, "scancel: error: No job identification provided\n"),
        ("sacct -j abc", 1, "sacct: fatal: Bad job/step specified: abc\n"),
        ("sacct -o JobID,Bogus", 1, 'sacct: error: Invalid field requested: "Bogus"\n'),
        ("scontrol show bogus", 1, "invalid entity:bogus for keyword:show \n"),
        ("scontrol show job 999999", 1, "slurm_load_jobs error: Invalid job id specified\n"),
    ]
    before = cluster.api("GET", "/api/v1/jobs?history=1")["jobs"]
    for cmd, code, err in cases:
        r = cluster.run(cmd)
        assert (r.returncode, r.stderr) == (code, err), cmd
    after = cluster.api("GET", "/api/v1/jobs?history=1")["jobs"]
    assert len(after) == len(before), "a refused submission was stored"
    assert not cluster.crashed()


def test_api_validation_names_the_field(cluster: Cluster):
    from slurmlet.cli.http import ControllerError
    with pytest.raises(ControllerError) as e:
        cluster.api("POST", "/api/v1/jobs", {"script": "#!/bin/sh\n", "nodes_min": 0})
    assert e.value.status == 422 and "nodes_min" in e.value.error
    with pytest.raises(ControllerError) as e:
        cluster.api("POST", "/api/v1/jobs", {"script": "#!/bin/sh\n", "bogus_field": 1})
    assert e.value.status == 422 and "bogus_field" in e.value.error


def test_sbatch_wait_returns_the_exit_code(cluster: Cluster):
    r = cluster.run("sbatch -W --wrap 'exit 7'")
    assert r.returncode == 7 and r.stdout.startswith("Submitted batch job")


def test_srun_and_scontrol_inside_a_job(cluster: Cluster, tmp_path: Path):
    jid = cluster.sbatch("-N2", "-o", str(tmp_path / "in.out"), "--wrap",
                         'scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1; srun hostname >/dev/null && echo srun-ok')
    cluster.wait_state(jid, "COMPLETED")
    assert (tmp_path / "in.out").read_text().splitlines()[:2] == ["node1", "srun-ok"]


def test_controller_restart_mid_queue(fresh_cluster, tmp_path: Path):
    c: Cluster = fresh_cluster(nodes=1, cpus=1).start()
    running = c.sbatch("-o", str(tmp_path / "r.out"), "--wrap", "sleep 3; echo done")
    queued = [c.sbatch("--wrap", "true") for _ in range(3)]
    c.wait_state(running, "RUNNING")
    c.stop_proc("controller", signal.SIGKILL)
    c.start_controller()
    # the queue survived; the running job finished while the controller was away or after
    assert {c.job(j)["state"] for j in queued} <= {"PENDING", "RUNNING", "COMPLETED"}
    c.wait_state(running, "COMPLETED", 30)
    for j in queued:
        c.wait_state(j, "COMPLETED", 30)
    assert (tmp_path / "r.out").read_text() == "done\n"
    assert not c.crashed()


def test_time_limit_gives_timeout(cluster: Cluster):
    jid = TIMEOUT_JOB["id"]
    j = cluster.wait_state(jid, ("TIMEOUT", "COMPLETED", "FAILED", "CANCELLED"), 120)
    assert (j["state"], j["reason"]) == ("TIMEOUT", "TimeLimit")
    assert 60 <= j["end_time"] - j["start_time"] < 90
    text = TIMEOUT_JOB["out"].read_text()
    assert text.startswith("started\n") and "DUE TO TIME LIMIT ***" in text
    r = cluster.run(f"sacct -n -P -o JobID,State,ExitCode -j {jid}")
    assert r.stdout.splitlines() == [f"{jid}|TIMEOUT|0:0", f"{jid}.batch|CANCELLED|0:15"]
    assert "BatchFlag=1 Reboot=0 ExitCode=0:15" in cluster.run(f"scontrol show job {jid}").stdout


def test_requeue_running_job_runs_again(cluster: Cluster, tmp_path: Path):
    out = tmp_path / "rq.out"
    jid = cluster.sbatch("-o", str(out), "--open-mode=append", "--wrap",
                         'echo "run ${SLURM_RESTART_COUNT:-0}"; sleep 300')
    cluster.wait_state(jid, "RUNNING")
    wait_until(lambda: out.exists() and "run 0" in out.read_text(), what="first run")
    r = cluster.run(f"scontrol requeue {jid}")
    assert (r.returncode, r.stderr) == (0, "")
    wait_until(lambda: "run 1" in out.read_text(), 30, what="second run")
    j = cluster.job(jid)
    assert (j["state"], j["restarts"]) == ("RUNNING", 1)
    cluster.run(f"scancel {jid}")
    cluster.wait_state(jid, "CANCELLED")


def test_an_input_that_never_opens_fails_its_job_alone(cluster: Cluster):
    """`-i` naming a FIFO nobody writes: opening it (as the job's user) would wait forever. The agent
    gives up after its open timeout and fails that job alone: its node stays up and runs the next."""
    c = cluster
    fifo = c.workdir / "never-written.fifo"
    os.mkfifo(fifo)
    stuck = c.sbatch("-w", "node1", "-i", str(fifo), "--wrap", "cat")
    other = c.sbatch("-w", "node1", "--wrap", "true")
    job = c.wait_state(stuck, ("FAILED", "COMPLETED", "CANCELLED"), timeout=90)
    assert job["state"] == "FAILED", job
    c.wait_state(other, "COMPLETED", timeout=60)
    assert not any(n.get("state", "").startswith("DOWN") for n in c.api("GET", "/api/v1/nodes")["nodes"])
