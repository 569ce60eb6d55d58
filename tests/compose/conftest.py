"""The docker-compose cluster itself: docker-compose.yml brought up unchanged, driven as a user drives
it, through `docker compose exec login ...` (see engine.py for where the engine and images come from).

Skipped with the reason where no engine can be had (not root, no Docker, no apt);
SLURMLET_REQUIRE_COMPOSE=1 (which .ci/run sets) makes that a failure instead. The tier runs last
(tests/conftest.py orders it): starting dockerd changes the host's network settings.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.compose.engine import Engine, compose_command, prepare_images
from tests.conftest import ROOT, free_port, wait_until

PROJECT = "slurmlet-compose-test"  # apart from a user's own `docker compose up` in this folder


class Compose:
    """One `docker compose` project of docker-compose.yml."""

    def __init__(self, cmd: list[str], port: int, log: Path):
        self.cmd = [*cmd, "-p", PROJECT, "-f", str(ROOT / "docker-compose.yml")]
        self.port = port
        self.log = log
        self.env = dict(os.environ, SLURMLET_PORT=str(port))

    def __call__(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run([*self.cmd, *args], capture_output=True, text=True, env=self.env, timeout=timeout,
                           cwd=ROOT)
        with open(self.log, "a") as f:
            f.write(f"$ docker compose {' '.join(args)}\n-> {r.returncode}\n{r.stdout}{r.stderr}\n")
        if check and r.returncode != 0:
            raise AssertionError(f"docker compose {' '.join(args)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        return r

    def login(self, *argv: str, user: str | None = None, input: str | None = None, timeout: float = 300,
              workdir: str | None = None) -> subprocess.CompletedProcess:
        """A command on `login` (as root, or as `user`), the way a person at its shell runs it."""
        opts = ["-T"] + (["-u", user] if user else []) + (["-w", workdir] if workdir else [])
        cmd = [*self.cmd, "exec", *opts, "login", *argv]
        r = subprocess.run(cmd, capture_output=True, text=True, env=self.env, timeout=timeout, input=input,
                           cwd=ROOT)
        with open(self.log, "a") as f:
            f.write(f"$ login{' -u ' + user if user else ''}: {' '.join(argv)}\n-> {r.returncode}\n"
                    f"{r.stdout}{r.stderr}\n")
        return r

    def sh(self, script: str, user: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        return self.login("bash", "-c", script, user=user, timeout=timeout)

    def sbatch(self, *args: str, user: str | None = None) -> int:
        r = self.login("sbatch", "--parsable", *args, user=user)
        assert r.returncode == 0, r.stderr
        return int(r.stdout.strip().split(";")[0])

    def job_state(self, job_id: int) -> str:
        r = self.login("scontrol", "show", "job", str(job_id))
        m = re.search(r"JobState=(\S+)", r.stdout)
        return m.group(1) if m else ""

    def node_states(self) -> dict[str, str]:
        r = self.login("sinfo", "-N", "-h", "-o", "%N %T")
        return dict(line.split() for line in r.stdout.splitlines() if line.strip())

    def wait_nodes_idle(self, names: set[str], timeout: float = 180) -> None:
        wait_until(lambda: all(self.node_states().get(n) == "idle" for n in names), timeout=timeout,
                   interval=1, what=f"nodes {sorted(names)} idle")

    def wait_state(self, job_id: int, states: set[str], timeout: float = 300) -> str:
        return wait_until(lambda: (s := self.job_state(job_id)) in states and s, timeout=timeout, interval=1,
                          what=f"job {job_id} in {states}")


@pytest.fixture(scope="session")
def compose_cluster():
    work = Path(tempfile.mkdtemp(prefix="slurmlet-compose-"))
    engine = Engine(work / "dockerd.log")
    why = engine.start()
    if why:
        if os.environ.get("SLURMLET_REQUIRE_COMPOSE") == "1":
            pytest.fail(f"the compose tier cannot run: {why}")
        pytest.skip(why)
    c = Compose(compose_command() or [], free_port(), work / "compose.log")
    try:
        prepare_images(work / "images.log")
        c("down", "-v", "--remove-orphans", timeout=300)  # what a killed run left
        c("up", "-d", "--build", timeout=1800)
        c.wait_nodes_idle({"c1", "c2"})
        yield c
    finally:
        r = c("logs", "--no-color", "--tail", "200", check=False, timeout=120)
        (work / "services.log").write_text(r.stdout + r.stderr)
        c("--profile", "scale", "down", "-v", "--remove-orphans", check=False, timeout=300)
        engine.stop()
        print(f"compose tier logs: {work}")

