"""A primary and a backup controller (two SlurmctldHost lines) on one PostgreSQL database: the
backup takes over within SlurmctldTimeout when the primary is killed during a storm of submissions
by two users, with nothing lost and nothing run twice; a primary paused past its lease changes
nothing when it resumes; `scontrol ping` and `scontrol takeover` as 22.05's; SQLite takes one
controller.

The users are real (useradd), submitting with the real sbatch through a credd socket (they cannot
read the cluster key); the agents and the CLI are given both controllers' addresses, primary first,
as a site gives them slurm.conf's SlurmctldHost list."""

from __future__ import annotations

import collections
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import BIN, Cluster, free_port, made_users, pg_available, pg_schema_url, traversable_dir, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.pg]

TIMEOUT = 5  #: SlurmctldTimeout of these clusters (seconds)
USERS = ("slfo_ann", "slfo_bob")


def ha_cluster(fresh_cluster, schema: str) -> tuple[Cluster, list[str]]:
    """A cluster of 2 nodes with controllers ctl1 (primary) and ctl2 (backup) on PostgreSQL, started;
    its CLI and agents are given both. Returns it and the controllers' addresses."""
    if not pg_available():
        pytest.skip("PostgreSQL is not running at 127.0.0.1:5432")
    c: Cluster = fresh_cluster(nodes=2, db_url=pg_schema_url(schema), extra_conf=(
        f"SlurmctldHost=ctl1(127.0.0.1)\nSlurmctldHost=ctl2(127.0.0.1)\nSlurmctldTimeout={TIMEOUT}\n"))
    urls = [c.url, f"http://127.0.0.1:{free_port()}"]
    c.url = ",".join(urls)
    c.env["SLURMLET_CONTROLLER"] = c.url
    start_ctl(c, 1, urls)
    wait_until(lambda: pinged(urls[0]).get("active"), 30, 0.05, "the primary to be active")
    start_ctl(c, 2, urls)
    wait_until(lambda: pinged(urls[1]).get("ok"), 30, 0.05, "the backup to answer")
    for n in c.node_names:
        c.start_agent(n)
    wait_until(lambda: c.idle_nodes() == set(c.node_names), 30, 0.05, "all nodes idle")
    return c, urls


def start_ctl(c: Cluster, n: int, urls: list[str]) -> None:
    c._spawn(f"ctl{n}", [str(BIN / "slurmlet"), "controller", "--config", str(c.conf_path), "--host", f"ctl{n}",
                         "--listen", urls[n - 1].removeprefix("http://"), "--state-dir", str(c.root / f"state{n}"),
                         "--db", str(c.db_url), "--key-file", str(c.key_file)])


def pinged(url: str) -> dict:
    try:
        r = httpx.get(f"{url}/api/v1/ping", timeout=2)
        return r.json() if r.status_code == 200 else {}
    except (httpx.HTTPError, ValueError):
        return {}


def lease(c: Cluster) -> tuple[str, int]:
    """(holder, token) of the database's controller lease."""
    import psycopg
    schema = re.search(r"search_path%3D(\w+)", str(c.db_url)).group(1)
    with psycopg.connect("host=127.0.0.1 port=5432 dbname=test", options=f"-csearch_path={schema}") as conn:
        return conn.execute("SELECT holder, token FROM controller_lease WHERE id = 1").fetchone()


def jobs_table(c: Cluster) -> list[tuple]:
    import psycopg
    schema = re.search(r"search_path%3D(\w+)", str(c.db_url)).group(1)
    with psycopg.connect("host=127.0.0.1 port=5432 dbname=test", options=f"-csearch_path={schema}") as conn:
        return conn.execute("SELECT id, state, reason, nodes, restarts, start_time, end_time, priority "
                            "FROM jobs ORDER BY id").fetchall()


@pytest.fixture
def users():
    yield from made_users(USERS)


@pytest.fixture
def shared():
    yield from traversable_dir("slurmlet-failover-")


SHELL = r"""
n=0
while [ ! -f "$STOP" ]; do
  n=$((n + 1))
  c="fo-$ME-$n"
  if id=$(sbatch --parsable -o /dev/null --comment="$c" --wrap "echo \$SLURM_JOB_ID >> $RAN/\$SLURM_JOB_USER"); then
    echo "$c $id" >> "$ACKS"
  else
    echo "$c failed" >> "$ACKS.err"
  fi
done
"""


def test_backup_takes_over_a_killed_primary_during_a_storm_with_nothing_lost_or_run_twice(
        fresh_cluster, users, shared: Path):
    c, urls = ha_cluster(fresh_cluster, "slurmlet_e2e_failover")
    sock = shared / "cred.sock"
    credd = subprocess.Popen([str(BIN / "slurmlet"), "credd", "--socket", str(sock), "--key-file", str(c.key_file)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    ran, stop, acks_dir = shared / "ran", shared / "stop", shared / "acks"
    for d in (ran, acks_dir):  # (each user writes files of their own there)
        d.mkdir()
        d.chmod(0o1777)
    # a job that runs through it all: its agent keeps it and reports its end to the backup
    go = shared / "go"
    long = c.sbatch("-o", str(shared / "long.out"), "--wrap", f"echo $$; while [ ! -f {go} ]; do sleep 0.05; done")
    c.wait_state(long, "RUNNING")
    pid = wait_until(lambda: (shared / "long.out").exists() and (shared / "long.out").read_text().strip(), 10)
    shells = []
    try:
        wait_until(lambda: os.path.exists(sock), 10, what="credd's socket")
        for u in users:
            for s in (1, 2):  # 4 shells of 2 users
                acks = acks_dir / f"{u.pw_name}-{s}"
                env = {k: v for k, v in c.env.items() if k != "SLURMLET_KEY_FILE"}
                env.update(HOME=str(shared), USER=u.pw_name, LOGNAME=u.pw_name, ME=f"{u.pw_name}-{s}", ACKS=str(acks),
                           RAN=str(ran), STOP=str(stop), SLURMLET_CRED_SOCKET=str(sock))
                shells.append(subprocess.Popen(["runuser", "-u", u.pw_name, "--", "bash", "-c", SHELL], env=env,
                                               cwd=shared, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))

        def acked() -> list[tuple[str, int]]:
            out = []
            for f in acks_dir.iterdir():
                if not f.name.endswith(".err"):
                    out += [(a, int(b)) for a, b in (line.split() for line in f.read_text().splitlines() if line)]
            return out
        wait_until(lambda: len(acked()) >= 40 or any(p.poll() is not None for p in shells), 60, 0.05,
                   "submissions before the kill")
        assert all(p.poll() is None for p in shells), [p.stderr.read() for p in shells if p.poll() is not None]
        # a cancellation the primary acknowledged last: carried out whoever is active then
        victim = c.sbatch("--wrap", "sleep 300")
        c.wait_state(victim, "RUNNING", timeout=60)
        assert c.run(f"scancel {victim}").returncode == 0
        killed = time.monotonic()
        c.stop_proc("ctl1", signal.SIGKILL)
        wait_until(lambda: pinged(urls[1]).get("active"), TIMEOUT + 30, 0.02, "the backup to take over")
        took = time.monotonic() - killed
        at_kill = len(acked())
        wait_until(lambda: len(acked()) >= at_kill + 40, 60, 0.05, "submissions after the takeover")
    finally:
        stop.touch()
        for p in shells:
            p.wait(90)
    errs = [f.read_text() for f in acks_dir.glob("*.err")]
    print(f"takeover {took:.2f} s after the kill (SlurmctldTimeout={TIMEOUT}); {len(acked())} submissions "
          f"acknowledged; {sum(len(e.splitlines()) for e in errs)} refused")
    assert took <= TIMEOUT + 5
    assert not any(p.returncode for p in shells), [p.stderr.read() for p in shells if p.stderr]

    # every acknowledged job is recorded once, and runs once
    acks = acked()
    ids = [i for _, i in acks]
    assert len(set(ids)) == len(ids), "one job acknowledged twice"
    jobs = {j["job_id"]: j for j in c.api("GET", "/api/v1/jobs?history=true")["jobs"]}
    made = collections.Counter(j["comment"] for j in jobs.values() if (j.get("comment") or "").startswith("fo-"))
    assert [k for k, n in made.items() if n > 1] == [], "submissions recorded twice"
    for comment, i in acks:
        assert jobs[i]["comment"] == comment, (i, comment)
    wait_until(lambda: all(jobs_state(c, i) == "COMPLETED" for i in ids), 180, 0.5, "every job to complete")
    runs = collections.Counter(int(x) for f in ran.iterdir() for x in f.read_text().split())
    assert {i: n for i, n in runs.items() if n > 1} == {}, "jobs run twice"
    assert set(ids) <= set(runs), "acknowledged jobs that never ran"
    assert all(jobs_restarts(c, i) == 0 for i in ids[:: max(1, len(ids) // 50)])

    assert c.wait_state(victim, "CANCELLED", timeout=60)["restarts"] == 0
    # the job that ran through the takeover: the same process, completed once
    assert c.job(long)["state"] == "RUNNING" and Path(f"/proc/{pid}").exists()
    go.touch()
    c.wait_state(long, "COMPLETED", timeout=30)
    assert c.job(long)["restarts"] == 0
    r = c.run("scontrol ping")
    assert r.stdout == ("Slurmctld(primary) at ctl1 is DOWN\nSlurmctld(backup) at ctl2 is UP\n"
                        "*****************************************\n** RESTORE SLURMCTLD DAEMON TO SERVICE **\n"
                        "*****************************************\n"), r.stdout
    assert r.returncode == 0
    credd.terminate()
    credd.wait(10)
    assert not c.crashed(), c.crashed()


def jobs_state(c: Cluster, i: int) -> str:
    return c.job(i)["state"]


def jobs_restarts(c: Cluster, i: int) -> int:
    return c.job(i)["restarts"]


def test_a_primary_paused_past_its_lease_changes_nothing_when_it_resumes(fresh_cluster, tmp_path: Path):
    c, urls = ha_cluster(fresh_cluster, "slurmlet_e2e_failover_stop")
    held = c.sbatch("-H", "--wrap", "true")
    ran = c.sbatch("--wrap", "true")
    c.wait_state(ran, "COMPLETED")
    holder, token = lease(c)
    assert holder.startswith("ctl1 ")
    os.killpg(c.procs["ctl1"].pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        wait_until(lambda: pinged(urls[1]).get("active"), TIMEOUT + 30, 0.02, "the backup to take over")
        assert time.monotonic() - t0 <= TIMEOUT + 5
        # the backup schedules: a job submitted now runs, and the held one is released through it (named
        # alone: a command that tries the paused primary first waits out its answer's timeout there)
        backup = {"SLURMLET_CONTROLLER": urls[1]}
        r = c.run(["sbatch", "--parsable", "--wrap", "true"], env=backup)
        assert r.returncode == 0, r.stderr
        c.wait_state(int(r.stdout), "COMPLETED", timeout=60)
        r = c.run(f"scontrol release {held}", env=backup)
        assert r.returncode == 0, r.stderr
        c.wait_state(held, "COMPLETED", timeout=60)
        snapshot = jobs_table(c)
        assert lease(c)[0].startswith("ctl2 ") and lease(c)[1] == token + 1
    finally:
        os.killpg(c.procs["ctl1"].pid, signal.SIGCONT)
    # resumed: it finds the lease gone at its next look, and is in standby from its first moment
    log = c.root / "ctl1.log"
    wait_until(lambda: "lost the lease" in log.read_text(), 30, 0.05, "the resumed primary to see the lease gone")
    assert pinged(urls[0]).get("active") is False
    r = httpx.get(f"{urls[0]}/api/v1/jobs", timeout=10)
    assert r.status_code == 503 and r.json()["detail"]["error"] == "Slurm backup controller in standby mode"
    assert jobs_table(c) == snapshot and lease(c) == (lease(c)[0], token + 1)
    # and the cluster goes on through the backup: the CLI passes the primary, in standby
    j = c.sbatch("--wrap", "true")
    c.wait_state(j, "COMPLETED", timeout=60)
    assert [row[:2] for row in jobs_table(c)][:-1] == [row[:2] for row in snapshot]
    assert not c.crashed(), c.crashed()


def test_scontrol_ping_and_takeover_as_2205(fresh_cluster):
    c, urls = ha_cluster(fresh_cluster, "slurmlet_e2e_failover_ping")
    r = c.run("scontrol ping")
    assert (r.returncode, r.stdout) == (0, "Slurmctld(primary) at ctl1 is UP\nSlurmctld(backup) at ctl2 is UP\n")
    assert [c.config_value(k) for k in ("SlurmctldHost[0]", "SlurmctldHost[1]", "SlurmctldTimeout")] == [
        "ctl1(127.0.0.1)", "ctl2(127.0.0.1)", f"{TIMEOUT} sec"]
    r = c.run("scontrol takeover 2")
    assert (r.returncode, r.stderr) == (1, "takeover: invalid backup controller index (2)\n")
    r = c.run("scontrol takeover 1 2")
    assert (r.returncode, r.stderr) == (1, "takeover: too many arguments\n")
    r = c.run("scontrol takeover")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert pinged(urls[1]).get("active") is True
    wait_until(lambda: pinged(urls[0]).get("active") is False, TIMEOUT + 10, what="the primary in standby")
    j = c.sbatch("--wrap", "true")  # through the backup, past the primary in standby
    c.wait_state(j, "COMPLETED", timeout=60)
    assert lease(c)[0].startswith("ctl2 ")
    # a primary started again takes control back, as 22.05's does
    c.stop_proc("ctl1")
    start_ctl(c, 1, urls)
    wait_until(lambda: pinged(urls[0]).get("active"), 30, 0.05, "the restarted primary to take control back")
    wait_until(lambda: pinged(urls[1]).get("active") is False, TIMEOUT + 10, what="the backup in standby")
    j = c.sbatch("--wrap", "true")
    c.wait_state(j, "COMPLETED", timeout=60)
    # an ordinary user may not move control
    r = c.run("scontrol takeover", env={"SLURMLET_KEY_FILE": "/nonexistent", "SLURMLET_CRED_SOCKET": "/nonexistent"})
    assert r.returncode == 1 and r.stderr.startswith("slurm_takeover error: ")
    assert not c.crashed(), c.crashed()


def test_sqlite_takes_one_controller(fresh_cluster):
    c: Cluster = fresh_cluster(nodes=1, extra_conf="SlurmctldHost=ctl1\nSlurmctldHost=ctl2\n")
    base = [str(BIN / "slurmlet"), "controller", "--config", str(c.conf_path), "--state-dir", str(c.root / "state"),
            "--key-file", str(c.key_file)]
    r = subprocess.run([*base, "--host", "ctl2", "--listen", "127.0.0.1:0"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and r.stderr == (
        "slurmlet controller: error: ctl2 is a backup controller (SlurmctldHost backup): a backup shares the "
        "primary's database, which must be one every controller reaches (PostgreSQL: --db postgresql://...), "
        "not SQLite, a file of one host\n")
    c._spawn("controller", [*base, "--host", "ctl1", "--listen", f"127.0.0.1:{c.port}"])
    wait_until(c.ping, 30, 0.05, "the controller to answer")
    r = subprocess.run([*base, "--host", "ctl1", "--listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert re.fullmatch(r"slurmlet controller: error: the database \S+slurmlet\.db is in use: the controller ctl1 pid "
                        rf"{c.procs['controller'].pid} on \S+ holds it; SQLite takes one controller \(backup "
                        r"controllers share a PostgreSQL database\)\n", r.stderr), r.stderr
    r = subprocess.run([*base, "--host", "ctl3"], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stderr) == (1, "slurmlet controller: error: --host ctl3: not one of SlurmctldHost's "
                                           "(ctl1, ctl2)\n")
    # killed, it is started again on its database at once (its pid is gone)
    c.stop_proc("controller", signal.SIGKILL)
    c._spawn("controller", [*base, "--host", "ctl1", "--listen", f"127.0.0.1:{c.port}"])
    wait_until(c.ping, 30, 0.05, "the controller to answer again")
