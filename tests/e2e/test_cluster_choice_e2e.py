"""Which cluster a shell without `slurmlet up`'s exports talks to: its user's own running cluster
(`~/.slurmlet/clusters`), never another user's; with several of its own, none, naming them; and
`slurmlet status` names the cluster or says it is not running."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from slurmlet.cli.http import listener_uid
from slurmlet.common.wire import DEFAULT_PORT
from tests.conftest import BIN, made_users, traversable_dir

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("setpriv"),
                                 reason="real users need root, useradd and setpriv")]

USERS = ("slurmlet-cc",)


@pytest.fixture(scope="module")
def users():
    yield from made_users(USERS)


@pytest.fixture(scope="module")
def base():
    yield from traversable_dir("slurmlet-choice-")


def shell(home: Path, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`argv` run in a shell of the user whose home is `home`, without any of `slurmlet up`'s exports."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLURMLET_", "SLURM_"))}
    clean.update(HOME=str(home), PATH=f"{BIN}{os.pathsep}/usr/bin:/bin")
    return subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, env=clean, cwd=str(home),
                          timeout=timeout)


def test_a_shell_without_exports_uses_its_own_cluster_and_never_anothers(base: Path):
    """Two users' clusters side by side (a home each: `up` records its cluster in its user's home)."""
    homes = {u: base / u for u in ("a", "b", "c")}
    for h in homes.values():
        h.mkdir()
    states = {u: homes[u] / "state" for u in ("a", "b")}
    started = []
    try:
        for u in ("a", "b"):
            r = shell(homes[u], "slurmlet", "up", "--nodes", "1", "--port", "0", "--state-dir", str(states[u]))
            assert r.returncode == 0, r.stderr
            started.append(u)
            r = shell(homes[u], "sbatch", "-H", "-J", f"only-{u}", "--wrap", "true")
            assert r.returncode == 0, r.stderr
        for u in ("a", "b"):
            r = shell(homes[u], "squeue", "-h", "-o", "%j")
            assert (r.returncode, r.stdout.split()) == (0, [f"only-{u}"]), r.stderr
            r = shell(homes[u], "slurmlet", "status", "--state-dir", str(states[u]))
            assert r.returncode == 0 and r.stdout.startswith("slurmlet: cluster local running at http://127.0.0.1:")
        # a third, with no cluster of its own, sees neither queue
        r = shell(homes["c"], "squeue", "-h", "-o", "%j")
        assert r.returncode != 0 and "only-" not in r.stdout
        # two clusters of one user: none is picked, both are named
        second = homes["a"] / "state2"
        r = shell(homes["a"], "slurmlet", "up", "--nodes", "1", "--port", "0", "--state-dir", str(second))
        assert r.returncode == 0, r.stderr
        try:
            r = shell(homes["a"], "squeue", "-h", "-o", "%j")
            assert (r.returncode, r.stdout) == (1, "")
            assert r.stderr.startswith("squeue: error: more than one of your clusters is running: ")
            assert str(states["a"]) in r.stderr and str(second) in r.stderr and "SLURMLET_CONTROLLER" in r.stderr
        finally:
            assert shell(homes["a"], "slurmlet", "down", "--state-dir", str(second)).returncode == 0
        r = shell(homes["a"], "squeue", "-h", "-o", "%j")  # one again: it is used
        assert r.stdout.split() == ["only-a"]
    finally:
        for u in started:
            shell(homes[u], "slurmlet", "down", "--state-dir", str(states[u]))
    r = shell(homes["a"], "slurmlet", "status", "--state-dir", str(states["a"]))
    assert (r.returncode, r.stdout) == (1, f"slurmlet: not running (state directory {states['a']})\n")
    assert not list((homes["a"] / ".slurmlet" / "clusters").iterdir())


def test_a_controller_port_held_by_another_user_is_not_used(users, base: Path):
    """Without a cluster of its own, the CLI tries 127.0.0.1:6817 only where root or its user listens
    there: another user's process (a cluster of theirs, or anything) is named, never talked to."""
    other = users[0]
    holder = listener_uid(DEFAULT_PORT)
    server = None
    if holder is None:  # nobody listens there: another user does now
        server = subprocess.Popen(
            ["setpriv", f"--reuid={other.pw_uid}", f"--regid={other.pw_gid}", "--clear-groups", sys.executable, "-c",
             f"import socket, time; s = socket.socket(); s.bind(('127.0.0.1', {DEFAULT_PORT})); s.listen(); "
             "print('up', flush=True); time.sleep(300)"], stdout=subprocess.PIPE, text=True)
        assert server.stdout.readline() == "up\n"
        holder = other.pw_uid
    try:
        if holder in (0, os.geteuid()):
            pytest.skip(f"127.0.0.1:{DEFAULT_PORT} is held by root's own process here")
        home = base / "lonely"
        home.mkdir()
        r = shell(home, "squeue")
        assert (r.returncode, r.stdout) == (1, "")
        assert r.stderr == (f"squeue: error: the controller at 127.0.0.1:{DEFAULT_PORT} is run by uid {holder}, not by "
                            "you or root; set SLURMLET_CONTROLLER to use it\n")
    finally:
        if server is not None:
            server.kill()
            server.wait()


def test_slurmlet_version_names_slurmlet_and_sbatch_keeps_slurms_form():
    r = subprocess.run([str(BIN / "slurmlet"), "--version"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.startswith("slurmlet ") and "Slurm 22.05" in r.stdout
    r = subprocess.run([str(BIN / "sbatch"), "--version"], capture_output=True, text=True, timeout=30)
    assert r.stdout == "slurm-wlm 22.05.8\n"
