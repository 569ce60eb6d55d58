"""docker-compose.yml as users run it: every command through `docker compose exec login ...`.

One cluster for the module, in the order a person would try it: look, run jobs, run as an ordinary
user, train, then break things (the controller killed, a node stopped) and grow the cluster. Each
wait is a poll of what a user would look at, with a deadline.
"""

from __future__ import annotations

import re

import httpx
import pytest

from tests.conftest import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.compose]


def sacct_rows(c, job_id: int) -> list[list[str]]:
    r = c.login("sacct", "-j", str(job_id), "-D", "-n", "-P", "-o", "JobID,State,NodeList,User")
    assert r.returncode == 0, r.stderr
    return [line.split("|") for line in r.stdout.splitlines() if line]


def test_sinfo_lists_both_nodes_idle(compose_cluster) -> None:
    r = compose_cluster.login("sinfo")
    assert r.returncode == 0, r.stderr
    assert re.search(r"^debug\*\s+up\s+infinite\s+2\s+idle\s+c\[1-2\]$", r.stdout, re.M), r.stdout


def test_controller_port_is_the_configured_one(compose_cluster) -> None:
    """SLURMLET_PORT moves the host's side of the controller's port (6817 may be taken on the host)."""
    r = httpx.get(f"http://127.0.0.1:{compose_cluster.port}/api/v1/ping", timeout=30)
    assert r.status_code == 200


def test_batch_job_runs_a_step_on_each_node(compose_cluster) -> None:
    c = compose_cluster
    r = c.login("sbatch", "-N2", "--wait", "-o", "/data/hostnames-%j.out", "--wrap", "srun hostname")
    assert r.returncode == 0, r.stderr
    job_id = int(re.search(r"Submitted batch job (\d+)", r.stdout).group(1))
    out = c.login("cat", f"/data/hostnames-{job_id}.out")  # written on c1, read on login: /data is shared
    assert sorted(out.stdout.split()) == ["c1", "c2"], out.stdout


def test_srun_streams_output_to_login_over_the_network(compose_cluster) -> None:
    r = compose_cluster.login("srun", "-N2", "-l", "hostname")
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["0: c1", "1: c2"], (r.stdout, r.stderr)


def test_an_ordinary_user_runs_as_themself(compose_cluster) -> None:
    c = compose_cluster
    r = c.login("sbatch", "--wait", "-N2", "-o", "alice-%j.out", "--wrap",
                "id -un; srun bash -c 'echo $(id -un) on $(hostname) > /data/alice-$SLURM_NODEID.txt'",
                user="alice", workdir="/data")
    assert r.returncode == 0, r.stderr
    job_id = int(re.search(r"Submitted batch job (\d+)", r.stdout).group(1))
    owners = c.sh(f"stat -c '%U %n' /data/alice-{job_id}.out /data/alice-0.txt /data/alice-1.txt; "
                  "cat /data/alice-0.txt /data/alice-1.txt")
    lines = owners.stdout.splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["alice"] * 3, owners.stdout
    assert sorted(lines[3:]) == ["alice on c1", "alice on c2"], owners.stdout
    assert c.login("cat", f"/data/alice-{job_id}.out").stdout == "alice\n"
    assert {row[3] for row in sacct_rows(c, job_id) if "." not in row[0]} == {"alice"}

    # another user's job is not alice's to cancel: Slurm's message and exit status (2002 % 256, as in
    # tests/data/slurm-2205-permissions.md), and the job runs on
    bobs = c.sbatch("--wrap", "sleep 300", user="bob")
    r = c.login("scancel", str(bobs), user="alice")
    assert r.returncode == 210
    assert r.stderr.strip() == f"scancel: error: Kill job error on job id {bobs}: Access/permission denied"
    assert c.job_state(bobs) in ("PENDING", "RUNNING")
    assert c.login("scancel", str(bobs), user="bob").returncode == 0
    c.wait_state(bobs, {"CANCELLED"})


def test_the_migration_guides_example_trains_across_both_nodes(compose_cluster) -> None:
    """llama-sft.sbatch with gloo over the container network: 2 nodes x 2 processes, the loss falls,
    a checkpoint lands in /data."""
    c = compose_cluster
    assert c.sh("rm -rf /data/llama-sft && cp -r /opt/slurmlet/examples/llama-sft /data/ "
                "&& chown -R alice /data/llama-sft").returncode == 0
    r = c.login("sbatch", "--wait", "--gpus-per-node=2", "--export=ALL,NPROC_PER_NODE=2,STEPS=30",
                "-o", "sft-%j.out", "llama-sft.sbatch", user="alice", workdir="/data/llama-sft", timeout=900)
    out = c.sh("cat /data/llama-sft/sft-*.out").stdout
    assert r.returncode == 0, (r.stderr, out)
    job_id = int(re.search(r"Submitted batch job (\d+)", r.stdout).group(1))
    assert "world size 4" in out, out
    losses = [float(x) for x in re.findall(r"step \d+ loss ([\d.]+)", out)]
    assert len(losses) >= 2 and losses[-1] < losses[0], out
    ckpts = c.sh(f"ls /data/llama-sft/checkpoints/{job_id}").stdout.split()
    assert "ckpt-20.pt" in ckpts, ckpts

    # the same training as the workload YAML, its code uploaded from login
    r = c.login("air", "run", "--file", "train.yaml", "--override", "compute.accelerator_type=GPU_2xH100",
                "--override", "compute.num_accelerators=4", "--override", "env_variables.STEPS=30",
                "--override", "env_variables.CKPT_DIR=/data/llama-sft/air-ckpt",
                "--override", "environment.dependencies=[]", "--watch",
                user="alice", workdir="/data/llama-sft", timeout=900)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "world size 4" in r.stdout and "[air] run" in r.stderr and "SUCCEEDED" in r.stderr, (r.stdout, r.stderr)
    assert "ckpt-20.pt" in c.sh("ls /data/llama-sft/air-ckpt").stdout


def test_a_killed_controller_comes_back_with_its_queue(compose_cluster) -> None:
    c = compose_cluster
    done = c.sbatch("--wrap", "true")
    c.wait_state(done, {"COMPLETED"})
    running = c.sbatch("-N2", "--exclusive", "--wrap", "srun sleep 600")
    c.wait_state(running, {"RUNNING"})
    pending = c.sbatch("-N2", "--exclusive", "--wrap", "true")  # waits for the running one's nodes
    assert c.job_state(pending) == "PENDING"

    c("kill", "slurmctld")
    c("up", "-d", "slurmctld")
    wait_until(lambda: c.login("squeue", "-h").returncode == 0, timeout=180, interval=1,
               what="the controller answering again")
    assert c.job_state(running) == "RUNNING"
    assert c.job_state(pending) == "PENDING"
    assert sacct_rows(c, done)[0][1] == "COMPLETED"
    # the running job's processes lived through it, and the queue moves on
    assert c.login("scancel", str(running)).returncode == 0
    c.wait_state(pending, {"COMPLETED"})
    c.wait_nodes_idle({"c1", "c2"})


STORM = r"""
n=0
while [ ! -f /data/fo/stop ]; do
  n=$((n + 1))
  if id=$(sbatch --parsable -o /dev/null --comment="fo-$ME-$n" --wrap 'echo $SLURM_JOB_ID >> /data/fo/ran/$SLURM_JOB_USER'); then
    echo "fo-$ME-$n $id" >> /data/fo/acks/$ME
  else
    echo "fo-$ME-$n" >> /data/fo/acks/$ME.err
  fi
done
touch /data/fo/done-$ME
"""


def test_the_backup_controller_takes_over_a_killed_primary_during_a_storm(compose_cluster) -> None:
    import time
    c = compose_cluster
    c.sh("rm -rf /data/fo && mkdir -m 1777 /data/fo /data/fo/ran /data/fo/acks")
    shells = [f"{u}-{n}" for u in ("alice", "bob") for n in (1, 2)]  # 4 shells of 2 users on login
    for me in shells:
        c("exec", "-d", "-T", "-u", me.split("-")[0], "-w", "/data/fo", "-e", f"ME={me}", "login", "bash", "-c", STORM)

    def acked() -> list[tuple[str, int]]:
        out = c.sh("cat /data/fo/acks/*-[12] 2>/dev/null").stdout
        return [(a, int(b)) for a, b in (line.split() for line in out.splitlines() if line.strip())]

    def active(host: str) -> bool:
        r = c.login("python", "-c", "import json, urllib.request; print(json.load(urllib.request.urlopen("
                    f"'http://{host}:6817/api/v1/ping', timeout=2))['active'])", timeout=30)
        return r.stdout.strip() == "True"

    try:
        wait_until(lambda: len(acked()) >= 30, timeout=180, interval=1, what="submissions before the kill")
        t0 = time.monotonic()
        c("kill", "slurmctld")
        wait_until(lambda: active("slurmctld2"), timeout=120, interval=0.5, what="the backup to take over")
        took = time.monotonic() - t0
        at = len(acked())
        wait_until(lambda: len(acked()) >= at + 30, timeout=180, interval=1, what="submissions after the takeover")
    finally:
        c.sh("touch /data/fo/stop")
    wait_until(lambda: c.sh("ls /data/fo/done-* | wc -l").stdout.strip() == "4", timeout=300, interval=1,
               what="the shells to end")
    print(f"compose: the backup took over {took:.1f} s after the kill (SlurmctldTimeout=10)")
    assert took <= 10 + 5 + 3  # (+ the look through `docker compose exec`, about a second each)
    acks = acked()
    ids = [i for _, i in acks]
    assert len(set(ids)) == len(ids)
    wait_until(lambda: c.login("squeue", "-h", "-a").stdout.strip() == "", timeout=300, interval=2,
               what="the queue to drain")
    r = c.login("sacct", "-a", "-X", "-n", "-P", "-o", "JobID,Comment,State", "-S", "now-1hours")
    recorded = [line.split("|") for line in r.stdout.splitlines() if "|fo-" in line]
    comments = [row[1] for row in recorded]
    assert len(comments) == len(set(comments)), "submissions recorded twice"
    by_comment = {row[1]: (int(row[0]), row[2]) for row in recorded}
    assert all(by_comment[cm] == (i, "COMPLETED") for cm, i in acks), "acknowledged jobs lost or not completed"
    ran = [int(x) for x in c.sh("cat /data/fo/ran/*").stdout.split()]
    assert len(ran) == len(set(ran)) and set(ids) <= set(ran), "jobs run twice or not at all"
    # the primary started again takes control back, as 22.05's does
    c("up", "-d", "slurmctld")
    wait_until(lambda: active("slurmctld"), timeout=180, interval=1, what="the primary to take control back")
    r = c.login("scontrol", "ping")
    assert r.stdout == "Slurmctld(primary) at slurmctld is UP\nSlurmctld(backup) at slurmctld2 is UP\n", r.stdout
    c.wait_nodes_idle({"c1", "c2"})


def test_a_stopped_node_fails_its_job_which_runs_again_when_the_node_is_back(compose_cluster) -> None:
    c = compose_cluster
    job = c.sbatch("-N2", "--requeue", "-o", "/data/requeue-%j.out", "--wrap",
                   'if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then srun sleep 600; else srun hostname; fi')
    c.wait_state(job, {"RUNNING"})
    c("stop", "c2")
    wait_until(lambda: "NODE_FAIL" in [row[1] for row in sacct_rows(c, job)], timeout=240, interval=2,
               what=f"job {job} NODE_FAIL")
    c("start", "c2")
    c.wait_state(job, {"COMPLETED"}, timeout=300)
    states = [row[1] for row in sacct_rows(c, job) if "." not in row[0]]
    assert states == ["NODE_FAIL", "COMPLETED"], sacct_rows(c, job)
    out = c.login("cat", f"/data/requeue-{job}.out").stdout  # the first run's end, then the second's
    assert sorted(out.splitlines()[-2:]) == ["c1", "c2"], out
    c.wait_nodes_idle({"c1", "c2"})


def test_scaled_nodes_register_and_run_jobs(compose_cluster) -> None:
    c = compose_cluster
    c("--profile", "scale", "up", "-d", "--scale", "cx=2", "cx")
    wait_until(lambda: len([s for s in c.node_states().values() if s == "idle"]) == 4, timeout=180, interval=1,
               what="four idle nodes")
    r = c.login("srun", "-N4", "-l", "hostname")
    assert r.returncode == 0, r.stderr
    hosts = [line.split(": ", 1)[1] for line in sorted(r.stdout.splitlines())]
    assert len(set(hosts)) == 4 and {"c1", "c2"} <= set(hosts), r.stdout
