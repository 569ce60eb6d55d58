"""The docker-compose cluster as processes in network namespaces (root only; skipped elsewhere).

Hosts, as in docker-compose.yml: slurmctld 10.77.0.1, postgres 10.77.0.2 (a PostgreSQL of its own,
made with initdb in a temporary directory), agents c1 10.77.0.11, c2 10.77.0.12, and login
10.77.0.100 where the CLI runs. /data is a temporary directory every host sees (one filesystem).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import BIN, wait_until
from tests.netns.topology import SUBNET, Topology, sweep_stale, unavailable

SLURMD_TIMEOUT = 4  # seconds of silence before a node is DOWN
AGENTS = {"c1": 11, "c2": 12}
CONTROLLER = f"http://{SUBNET}.1:6817"


def pg_bin() -> str | None:
    """The directory of PostgreSQL's initdb/postgres, newest version first."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]), reverse=True)
    if found:
        return os.path.dirname(found[0])
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


class NetnsCluster:
    """The daemons of the compose file, each on its own host of a `Topology`."""

    def __init__(self, topo: Topology, conf: str):
        self.topo = topo
        work = Path(topo.tmpdir())
        self.data = work / "data"  # /data
        self.data.mkdir()
        self.state = work / "state"
        self.conf = work / "slurm.conf"
        self.conf.write_text(conf)
        self.key_file = work / "slurmlet.key"
        self.key_file.write_text(os.urandom(32).hex() + "\n")
        self.key_file.chmod(0o600)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "PG"))}
        self.env = dict(env, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", PYTHONUNBUFFERED="1",
                        SLURMLET_KEY_FILE=str(self.key_file), SLURMLET_CONTROLLER=CONTROLLER)
        self.work = work
        self.db_url: str | None = None
        #: why the controller keeps its state in SQLite on its own host (None: PostgreSQL on `postgres`)
        self.no_pg: str | None = None

    # -- daemons
    def start_postgres(self) -> None:
        bindir = pg_bin()
        if bindir is None:
            self.no_pg = "PostgreSQL's initdb is not installed"
            return
        addr = self.topo.hosts["postgres"].addr
        try:
            pgdir = self.topo.tmpdir(owner="postgres")
        except LookupError:
            self.no_pg = "there is no `postgres` user to run PostgreSQL as"
            return
        data = os.path.join(pgdir, "data")
        r = subprocess.run(["runuser", "-u", "postgres", "--", f"{bindir}/initdb", "-D", data, "-U", "slurm",
                            "-A", "trust", "--no-sync", "-E", "UTF8"], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            self.no_pg = f"initdb failed: {r.stderr.strip()[-300:]}"
            return
        with open(os.path.join(data, "pg_hba.conf"), "a") as f:
            f.write(f"host all all {SUBNET}.0/24 trust\n")
        self.topo.spawn("postgres", "postgres", [f"{bindir}/postgres", "-D", data, "-h", addr, "-p", "5432",
                                                 "-k", pgdir, "-c", "fsync=off", "-c", "synchronous_commit=off",
                                                 "-c", "full_page_writes=off"], self.env, user="postgres")
        ready = [f"{bindir}/pg_isready", "-q", "-h", addr, "-p", "5432"]
        wait_until(lambda: self.topo.run("slurmctld", ready, env=self.env).returncode == 0, 30, 0.1,
                   "PostgreSQL on its host")
        r = self.topo.run("slurmctld", [f"{bindir}/createdb", "-h", addr, "-U", "slurm", "slurm"], env=self.env)
        assert r.returncode == 0, r.stderr
        self.db_url = f"postgresql://slurm@{addr}:5432/slurm"

    def start_controller(self) -> None:
        argv = ["slurmlet", "controller", "--config", str(self.conf), "--listen", f"{SUBNET}.1:6817",
                "--state-dir", str(self.state), "--key-file", str(self.key_file)]
        if self.db_url:
            argv += ["--db", self.db_url]
        self.topo.spawn("slurmctld", "controller", [str(BIN / argv[0]), *argv[1:]], self.env)
        wait_until(lambda: self.cli("sinfo", "-h").returncode == 0, 30, 0.1, "the controller to answer on login")

    def start_agent(self, name: str) -> None:
        host = self.topo.hosts[name]
        self.topo.spawn(name, "agent", [str(BIN / "slurmlet"), "agent", "--controller", CONTROLLER, "--name", name,
                                        "--addr", host.addr, "--spool", str(self.work / "spool" / name),
                                        "--key-file", str(self.key_file), "--cpus", "2", "--memory", "2000"],
                        self.env)

    def agent_pid(self, name: str) -> int:
        return self.topo.hosts[name].procs["agent"].pid

    # -- what a user sees, from the login host
    def cli(self, *argv: str, input: str | None = None) -> subprocess.CompletedProcess:
        return self.topo.run("login", [str(BIN / argv[0]), *argv[1:]], env=self.env, cwd=str(self.data),
                             input=input, timeout=30)

    def sbatch(self, *args: str) -> int:
        r = self.cli("sbatch", "--parsable", *args)
        assert r.returncode == 0, r.stderr
        return int(r.stdout.strip().split(";")[0])

    def show(self, kind: str, name: str | int) -> dict[str, str]:
        """`scontrol show node|job NAME` as a dict ({} when it fails); Reason with its spaces."""
        r = self.cli("scontrol", "show", kind, str(name))
        if r.returncode != 0:
            return {}
        out = dict(re.findall(r"([\w/:]+)=(\S*)", r.stdout))
        m = re.search(r"Reason=(.*?)(?: \[.*\])?\s*$", r.stdout, re.M)
        if m:
            out["Reason"] = m.group(1).strip()
        return out

    def node_states(self) -> dict[str, str]:
        r = self.cli("sinfo", "-h", "-N", "-o", "%N %T")
        return dict(line.split() for line in r.stdout.splitlines() if line.strip())

    def log_tails(self, lines: int = 25) -> str:
        out = []
        for log in sorted(self.topo.log_dir.glob("*.log")):
            if log.name.startswith("postgres"):
                continue
            kept = [ln[:300] for ln in log.read_text(errors="replace").splitlines()
                    if '"GET /' not in ln and '"POST /' not in ln]
            out.append(f"==== {log.name}\n" + "\n".join(kept[-lines:]))
        return "\n".join(out)

    def wait_idle(self, *names: str, timeout: float = 30) -> None:
        wait_until(lambda: all(self.node_states().get(n) == "idle" for n in names), timeout, 0.1,
                   f"nodes {names} idle")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failed test shows what the daemons logged (their last lines, the HTTP access lines left out):
    a failure seen only in CI can be read from its output."""
    outcome = yield
    rep = outcome.get_result()
    c = item.funcargs.get("netns_cluster") if hasattr(item, "funcargs") else None
    if rep.when == "call" and rep.failed and isinstance(c, NetnsCluster):
        rep.sections.append(("daemon logs", c.log_tails()))


@pytest.fixture(scope="module")
def netns_cluster(tmp_path_factory: pytest.TempPathFactory):
    why = unavailable()
    if why:
        pytest.skip(f"netns topology: {why}")
    sweep_stale()
    logs = tmp_path_factory.mktemp("netns")
    conf = (f"ClusterName=netns\nSlurmctldHost=slurmctld\nNodeName=c[1-{len(AGENTS)}] CPUs=2 RealMemory=2000\n"
            f"PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
            f"KillWait=1\nMinJobAge=300\nSlurmdTimeout={SLURMD_TIMEOUT}\nJobRequeue=1\nSlurmletRequeueDelay=0\n")
    with Topology(logs) as topo:
        topo.add_host("slurmctld", 1)
        topo.add_host("postgres", 2)
        for name, octet in AGENTS.items():
            topo.add_host(name, octet)
        topo.add_host("login", 100)
        c = NetnsCluster(topo, conf)
        c.start_postgres()
        c.start_controller()
        for name in AGENTS:
            c.start_agent(name)
        c.wait_idle(*AGENTS)
        yield c
        crashed = topo.crashed()
        if crashed:
            for log in sorted(logs.glob("*.log")):
                print(f"==== {log.name}\n{log.read_text(errors='replace')[-3000:]}")
        assert not crashed, f"daemons crashed: {crashed}"
