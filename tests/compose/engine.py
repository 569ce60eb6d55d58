"""A Docker engine and Compose for the compose tier: the one that runs, or one this tier starts.

On a host with no engine running but root and apt (Debian), Debian's `docker.io` and `docker-compose`
are installed and `dockerd` started with its defaults; `stop()` stops it again and puts back what it
changed in the host's network settings (IP forwarding, the iptables FORWARD policy). Where the
registry cannot be reached, the base images are built from Debian's packages and slurmlet is
installed from a wheelhouse (docker/offline/), the way an offline site does it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import ROOT

IP_FORWARD = Path("/proc/sys/net/ipv4/ip_forward")


def _ok(*argv: str, timeout: float = 60) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=timeout).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def compose_command() -> list[str] | None:
    """`docker compose` (v2) where the plugin is there, else `docker-compose` (v1), else None."""
    if _ok("docker", "compose", "version"):
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


class Engine:
    """The Docker engine the tier uses; `start()` says why there is none (None when there is)."""

    def __init__(self, log: Path):
        self.log = log
        self.proc: subprocess.Popen | None = None
        self._forward: str | None = None
        self._policy: str | None = None

    def start(self) -> str | None:
        if shutil.which("docker") and _ok("docker", "info"):
            return None if compose_command() else "Docker Compose is not installed"
        if os.geteuid() != 0:
            return "no Docker engine runs, and starting one needs root"
        if not (shutil.which("dockerd") and compose_command()):
            if not shutil.which("apt-get"):
                return "no Docker engine, and no apt-get to install Debian's docker.io"
            why = self._install("docker.io", "docker-compose", "debootstrap")
            if why:
                return why
        if not shutil.which("debootstrap"):  # needed only where the registry is out of reach
            self._install("debootstrap")
        self._forward = IP_FORWARD.read_text().strip()
        self._policy = self._forward_policy()
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(["dockerd"], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return f"dockerd exited with {self.proc.returncode}: {self._log_tail()}"
            if _ok("docker", "info", timeout=10):
                return None
            time.sleep(0.5)
        return f"dockerd did not answer within 120 s: {self._log_tail()}"

    def stop(self) -> None:
        """Stop the dockerd that `start()` started (an engine that was running is left alone)."""
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self._forward is not None:
            IP_FORWARD.write_text(self._forward + "\n")
        if self._policy and shutil.which("iptables"):
            subprocess.run(["iptables", "-P", "FORWARD", self._policy], capture_output=True, timeout=30)

    def _install(self, *packages: str) -> str | None:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        if r.returncode != 0:  # a stale package list: refresh it once
            subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env, timeout=900)
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        if r.returncode != 0:
            return f"apt-get install {' '.join(packages)} failed: {r.stderr.strip()[-500:]}"
        return None

    @staticmethod
    def _forward_policy() -> str | None:
        if not shutil.which("iptables"):
            return None
        r = subprocess.run(["iptables", "-S", "FORWARD"], capture_output=True, text=True, timeout=30)
        for line in r.stdout.splitlines():
            if line.startswith("-P FORWARD "):
                return line.split()[2]
        return None

    def _log_tail(self) -> str:
        try:
            return " | ".join(self.log.read_text(errors="replace").splitlines()[-5:])
        except OSError:
            return "(no log)"


def prepare_images(log: Path) -> None:
    """Base images (pulled, or Debian stand-ins) and a wheelhouse for the offline image build."""
    with open(log, "ab") as out:
        for script in ("standin-images.sh", "wheelhouse.sh"):
            subprocess.run([str(ROOT / "docker" / "offline" / script)], stdout=out, stderr=subprocess.STDOUT,
                           check=True, timeout=1800)
