"""docker-compose.yml's topology without Docker: hosts as network namespaces on one bridge.

A switch namespace holds a bridge; each host is a namespace with one veth (`eth0`) plugged into it
and an address of its own (10.77.0.0/24). Daemons run in their host with `ip netns exec`, as their
own session with their own log. The bridge and every veth live only in these namespaces, so nothing
on the machine's own network changes, and `close()` (deleting the namespaces after killing every
process in them) removes all of it. Needs root and iproute2.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SUBNET = "10.77.0"
PREFIX = "slnetns-"  # every namespace made here: PREFIX + owner pid + "-" + role


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


def unavailable() -> str | None:
    """Why namespaces cannot be made here (None when they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (`ip`) is not installed"
    probe = f"{PREFIX}{os.getpid()}-probe"
    try:
        r = _ip("netns", "add", probe, check=False)
        if r.returncode != 0:
            return f"`ip netns add` fails here: {r.stderr.strip()}"
        r = _ip("-n", probe, "link", "add", "br0", "type", "bridge", check=False)
        if r.returncode != 0:
            return f"cannot make a bridge in a namespace: {r.stderr.strip()}"
        return None
    finally:
        _ip("netns", "del", probe, check=False)


def sweep_stale() -> None:
    """Namespaces a killed test run left behind (their owner pid is gone): kill their processes, delete them."""
    for ns in _ip("netns", "list", check=False).stdout.split():
        if not ns.startswith(PREFIX):
            continue
        owner = ns[len(PREFIX):].split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            _kill_all(ns)
            _ip("netns", "del", ns, check=False)


def _pids(ns: str) -> list[int]:
    return [int(p) for p in _ip("netns", "pids", ns, check=False).stdout.split()]


def _kill_all(ns: str) -> None:
    for _ in range(50):
        pids = _pids(ns)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


@dataclass
class Host:
    name: str  # also the name of its veth in the switch namespace
    ns: str
    addr: str
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)


class Topology:
    """Hosts on one bridge. Use as a context manager, or call close() (it is safe to call twice)."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.tag = f"{PREFIX}{os.getpid()}-"
        self.switch = self.tag + "sw"
        self.hosts: dict[str, Host] = {}
        self.tmpdirs: list[str] = []
        _ip("netns", "add", self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")

    def __enter__(self) -> Topology:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_host(self, name: str, last_octet: int) -> Host:
        ns = self.tag + name
        host = Host(name, ns, f"{SUBNET}.{last_octet}")
        self.hosts[name] = host  # before anything can fail: close() removes what was made
        _ip("netns", "add", ns)
        _ip("-n", self.switch, "link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("-n", self.switch, "link", "set", name, "master", "br0", "up")
        _ip("-n", ns, "addr", "add", f"{host.addr}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        return host

    def tmpdir(self, owner: str | None = None) -> str:
        """A temporary directory removed by close(); `owner`: a user to give it to."""
        d = tempfile.mkdtemp(prefix="slurmlet-netns-")
        self.tmpdirs.append(d)
        if owner:
            shutil.chown(d, owner, owner)
        return d

    # -- processes
    def argv(self, host: str, argv: list[str], user: str | None = None) -> list[str]:
        """`argv` as run in the host's namespace (as `user` when given)."""
        wrap = ["runuser", "-u", user, "--"] if user else []
        return ["ip", "netns", "exec", self.hosts[host].ns, *wrap, *argv]

    def spawn(self, host: str, key: str, argv: list[str], env: dict[str, str], user: str | None = None,
              cwd: str | None = None) -> subprocess.Popen:
        """A daemon on `host` in its own session, its output in `log_dir/<host>-<key>.log`.
        `ip netns exec` execs the command, so the process is the daemon itself."""
        with open(self.log_dir / f"{host}-{key}.log", "ab") as log:
            p = subprocess.Popen(self.argv(host, argv, user), stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True, env=env, cwd=cwd)
        self.hosts[host].procs[key] = p
        return p

    def run(self, host: str, argv: list[str], env: dict[str, str] | None = None, user: str | None = None,
            timeout: float = 60, cwd: str | None = None, input: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(host, argv, user), capture_output=True, text=True, env=env,
                              timeout=timeout, cwd=cwd, input=input)

    def kill(self, host: str, key: str, sig: int = signal.SIGKILL) -> None:
        """Signal the daemon alone (not its session: a killed agent leaves its jobs behind, as a crash does)."""
        p = self.hosts[host].procs.pop(key)
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, sig)
        p.wait(15)

    def pids(self, host: str) -> list[int]:
        """Every process in the host's namespace."""
        return _pids(self.hosts[host].ns)

    def crashed(self) -> list[str]:
        """Daemons that died by themselves, and logs with a traceback."""
        bad = [f"{h.name}-{k}" for h in self.hosts.values() for k, p in h.procs.items() if p.poll() is not None]
        bad += [log.name for log in self.log_dir.glob("*.log") if "Traceback" in log.read_text(errors="replace")]
        return bad

    # -- the network
    def cut(self, host: str) -> None:
        """Unplug the host: its veth's switch end goes down (the host's own `eth0` stays configured)."""
        _ip("-n", self.switch, "link", "set", host, "down")

    def reconnect(self, host: str) -> None:
        _ip("-n", self.switch, "link", "set", host, "up")

    # -- teardown
    def close(self) -> None:
        """Kill every process in every host (daemons, their jobs, strays), wait for our children,
        delete the namespaces (with them the veths and the bridge) and the temporary directories."""
        procs = [p for host in self.hosts.values() for p in host.procs.values()]
        for p in procs:  # polite first: agents stop their jobs, PostgreSQL shuts down
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        for p in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(max(0.0, deadline - time.monotonic()))
        for host in self.hosts.values():
            _kill_all(host.ns)
            for p in host.procs.values():
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(5)
            host.procs.clear()
        for ns in [h.ns for h in self.hosts.values()] + [self.switch]:
            _ip("netns", "del", ns, check=False)
        self.hosts.clear()
        for d in self.tmpdirs:
            shutil.rmtree(d, ignore_errors=True)
        self.tmpdirs.clear()
