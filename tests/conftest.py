"""Shared test harness: a real controller and real agents as subprocesses on loopback."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent
PG_URL = os.environ.get("SLURMLET_TEST_PG", "postgresql://127.0.0.1:5432/test")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The compose tier runs last: the Docker engine it may start changes the host's network settings."""
    items.sort(key=lambda item: "tests/compose/" in item.nodeid)


def wait_until(pred: Callable[[], object], timeout: float = 20.0, interval: float = 0.02, what: str = "") -> object:
    """Poll `pred` until it returns something truthy; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or pred}; last value: {last!r}")


def signed(key: bytes, uid: int, user: str):
    """An httpx auth that signs each request with its own credential for (uid, user), bound to the
    request as the CLI binds its own (common/cred.py)."""
    import httpx

    from slurmlet.common import cred

    class _Signed(httpx.Auth):
        requires_request_body = True

        def auth_flow(self, request: httpx.Request):
            binding = cred.bind(request.method, request.url.raw_path.decode("ascii"), request.content)
            request.headers[cred.HEADER] = cred.sign(key, uid, user, binding)
            yield request

    return _Signed()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_available() -> bool:
    try:
        import psycopg
        with psycopg.connect("host=127.0.0.1 port=5432 dbname=test", connect_timeout=2):
            return True
    except Exception:
        return False


def pg_schema_url(schema: str) -> str:
    """PG_URL in a fresh schema of its own (dropped and made again): tests that use it never touch
    the tables of other tests running at the same time against the same database."""
    import psycopg
    with psycopg.connect("host=127.0.0.1 port=5432 dbname=test", autocommit=True) as c:
        c.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        c.execute(f"CREATE SCHEMA {schema}")
    return f"{PG_URL}?options=-csearch_path%3D{schema}"


def store_url(backend: str, tmp_path: Path) -> str:
    """A fresh database for store tests: SQLite in `tmp_path`, or the emptied PostgreSQL `test`
    (skipped when it is not running)."""
    if backend == "sqlite":
        from slurmlet.controller.store.engine import sqlite_url
        return sqlite_url(str(tmp_path))
    if not pg_available():
        pytest.skip("PostgreSQL is not running at 127.0.0.1:5432")
    reset_pg()
    return PG_URL


def reset_pg(url: str = PG_URL) -> None:
    from sqlalchemy import create_engine

    from slurmlet.controller.store.engine import normalize_url
    from slurmlet.controller.store.migrate import version_table
    from slurmlet.controller.store.tables import metadata
    eng = create_engine(normalize_url(url))
    metadata.drop_all(eng)
    version_table.drop(eng, checkfirst=True)  # the schema's revision (Alembic) goes with its tables
    eng.dispose()


class Cluster:
    """A controller and N agents started as real processes, each with its own log."""

    def __init__(self, root: Path, *, nodes: int = 2, cpus: int = 4, memory: int = 8000, gpus: int = 0,
                 conf: str | None = None, db_url: str | None = None, extra_conf: str = "",
                 spec: dict | None = None, pools: dict[str, str] | None = None, cgroup_conf: str | None = None,
                 agent_env: dict[str, str] | None = None, spool: bool = False):
        """`spec`: a JSON cluster spec instead of slurm.conf; `pools`: node name -> the pool its agent joins
        (these are the cluster's nodes then); `cgroup_conf`: cgroup.conf beside slurm.conf; `agent_env`:
        more environment for the agents (SLURMLET_CGROUP); `spool`: the controller takes requests
        through a spool too (root/requests), which the CLI uses ($SLURMLET_SPOOL)."""
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.db_url = db_url
        self.node_names = [f"node{i}" for i in range(1, nodes + 1)]
        gres = f" Gres=gpu:H100:{gpus}" if gpus else ""
        self.conf_path = root / "slurm.conf"
        self.conf_path.write_text(conf or (
            f"ClusterName=test\nNodeName=node[1-{nodes}] CPUs={cpus} RealMemory={memory}{gres}\n"
            f"PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n"
            f"PartitionName=short Nodes=ALL MaxTime=5\n"
            f"KillWait=2\nMinJobAge=300\nSlurmletRequeueDelay=0\n{extra_conf}"))
        if cgroup_conf is not None:
            (root / "cgroup.conf").write_text(cgroup_conf)
        self.agent_env = agent_env or {}
        self.spec_path = None
        if spec is not None:
            self.spec_path = root / "cluster.json"
            self.spec_path.write_text(json.dumps(spec))
        self.pools = pools or {}
        if pools:
            self.node_names = list(pools)
        self.procs: dict[str, subprocess.Popen] = {}
        # the cluster key: controller, agents and the CLI (through SLURMLET_KEY_FILE) share it
        self.key_file = root / "slurmlet.key"
        if not self.key_file.exists():
            self.key_file.write_text(os.urandom(32).hex() + "\n")
            self.key_file.chmod(0o600)
        self.env = dict(os.environ, SLURMLET_CONTROLLER=self.url, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
                        PYTHONUNBUFFERED="1", SLURMLET_KEY_FILE=str(self.key_file))
        self.spool = root / "requests" if spool else None
        self.env.pop("SLURMLET_SPOOL", None)  # (one exported by a `slurmlet up` in the caller's shell)
        if self.spool:
            self.env["SLURMLET_SPOOL"] = str(self.spool)
        self.workdir = root / "work"
        self.workdir.mkdir(exist_ok=True)

    # -- processes
    def _spawn(self, key: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        log = open(self.root / f"{key}.log", "ab")
        self.procs[key] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           start_new_session=True, env=dict(self.env, **(env or {})), cwd=self.root)
        log.close()

    def start_controller(self) -> None:
        argv = [str(BIN / "slurmlet"), "controller", *(["--spec", str(self.spec_path)] if self.spec_path else
                                                         ["--config", str(self.conf_path)]),
                "--listen", f"127.0.0.1:{self.port}", "--state-dir", str(self.root / "state")]
        if self.db_url:
            argv += ["--db", self.db_url]
        if self.spool:
            argv += ["--spool", str(self.spool)]
        self._spawn("controller", argv)
        wait_until(self.ping, 30, 0.05, "controller to answer")

    def start_agent(self, name: str) -> None:
        pool = ["--pool", self.pools[name], "--cpus", "2", "--memory", "4000"] if name in self.pools else []
        self._spawn(f"agent-{name}", [str(BIN / "slurmlet"), "agent", "--controller", self.url, "--name", name,
                                      "--spool", str(self.root / "spool" / name), *pool], self.agent_env)

    def start(self) -> Cluster:
        self.start_controller()
        for n in self.node_names:
            self.start_agent(n)
        wait_until(lambda: self.idle_nodes() == set(self.node_names), 30, 0.05, "all nodes idle")
        return self

    def stop_proc(self, key: str, sig: int = signal.SIGTERM) -> None:
        p = self.procs.pop(key, None)
        if p is None:
            return
        if p.poll() is None:
            os.killpg(p.pid, sig)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)

    def stop(self) -> None:
        for key in [k for k in self.procs if k != "controller"] + ["controller"]:
            self.stop_proc(key)

    def crashed(self) -> list[str]:
        """Daemons that died by themselves, or logged a traceback."""
        bad = [k for k, p in self.procs.items() if p.poll() is not None]
        for log in self.root.glob("*.log"):
            if "Traceback" in log.read_text(errors="replace"):
                bad.append(log.name)
        return bad

    # -- API and CLI
    def api(self, method: str, path: str, body: object = None, signed: bool = False) -> object:
        from slurmlet.cli import http
        saved = os.environ.get("SLURMLET_KEY_FILE")
        os.environ["SLURMLET_KEY_FILE"] = str(self.key_file)  # signed as this process's user, like the CLI
        try:
            return http.request(method, path, body, url=self.url, signed=signed)
        finally:
            if saved is None:
                os.environ.pop("SLURMLET_KEY_FILE", None)
            else:
                os.environ["SLURMLET_KEY_FILE"] = saved

    def ping(self) -> bool:
        try:
            self.api("GET", "/api/v1/ping")
            return True
        except Exception:
            return False

    def idle_nodes(self) -> set[str]:
        try:
            return {n["name"] for n in self.api("GET", "/api/v1/nodes")["nodes"] if n["state"] == "IDLE"}
        except Exception:
            return set()

    def job(self, job_id: int) -> dict:
        return self.api("GET", f"/api/v1/jobs/{job_id}")

    def run(self, cmd: str | list[str], *, input: str | None = None, cwd: Path | str | None = None,
            env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        e = dict(self.env, **(env or {}))
        return subprocess.run(cmd, shell=isinstance(cmd, str), input=input, capture_output=True, text=True,
                              cwd=cwd or self.workdir, env=e, timeout=timeout)

    def sbatch(self, *args: str, script: str | None = None, cwd: Path | str | None = None) -> int:
        r = self.run([str(BIN / "sbatch"), "--parsable", *args], input=script, cwd=cwd)
        assert r.returncode == 0, r.stderr
        return int(r.stdout.strip().split(";")[0])

    def syncs(self) -> int:
        """How many syncs the agents have sent so far (the controller's /metrics)."""
        import httpx
        text = httpx.get(f"{self.url}/metrics", timeout=30).text
        return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
                   if line.startswith("slurmlet_http_request_duration_seconds_count") and "/sync" in line)

    def config_value(self, key: str) -> str:
        """A key's value in `scontrol show config`."""
        lines = self.run([str(BIN / "scontrol"), "show", "config"]).stdout.splitlines()
        return next(line.split("=", 1)[1].strip() for line in lines if line.split("=")[0].strip() == key)

    def wait_state(self, job_id: int, states: tuple[str, ...] | str, timeout: float = 30) -> dict:
        states = (states,) if isinstance(states, str) else states
        return wait_until(lambda: (j := self.job(job_id))["state"] in states and j, timeout,
                          what=f"job {job_id} to reach {states}")


def serve(c: Cluster):
    """A fixture's body: start the cluster, hand it out, stop it; fail if a daemon crashed."""
    c.start()
    yield c
    crashed = c.crashed()
    c.stop()
    assert not crashed, f"daemons crashed: {crashed}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    yield from serve(Cluster(tmp_path_factory.mktemp("cluster")))


@pytest.fixture
def fresh_cluster(tmp_path: Path):
    made: list[Cluster] = []

    def make(**kw) -> Cluster:
        c = Cluster(tmp_path / f"c{len(made)}", **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()


def read_json(path: Path) -> object:
    return json.loads(path.read_text())


def made_users(names: tuple[str, ...]):
    """Real local users for a test (useradd, no home), removed after it unless they were there before."""
    import pwd
    made = []
    for name in names:
        try:
            pwd.getpwnam(name)
        except KeyError:
            subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", name], check=True)
            made.append(name)
    yield [pwd.getpwnam(n) for n in names]
    for name in made:
        subprocess.run(["userdel", name], check=False)


def traversable_dir(prefix: str):
    """A world-traversable scratch directory (pytest's tmp_path is 0700: other users could not pass)."""
    import shutil
    import tempfile
    d = Path(tempfile.mkdtemp(prefix=prefix))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)
