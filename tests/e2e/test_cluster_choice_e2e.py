"""Which cluster a shell without `slurmlet up`'s exports talks to: its user's own running cluster
(`~/.slurmlet/clusters`), never another user's; with several of its own, none, naming them; and
`slurmlet status` names the cluster or says it is not running. Real users (made by the test), each
starting their clusters with `slurmlet up` as themselves."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from slurmlet.cli.http import listener_uid
from slurmlet.common.wire import DEFAULT_PORT
from slurmlet.controller.commands.local import closed_to_others
from tests.conftest import BIN, made_users, traversable_dir

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("setpriv"),
                                 reason="real users need root, useradd and setpriv")]

USERS = ("slurmlet-ca", "slurmlet-cb", "slurmlet-cc")


@pytest.fixture(scope="module")
def users():
    yield from made_users(USERS)


@pytest.fixture(scope="module")
def base():
    yield from traversable_dir("slurmlet-choice-")


def home(base: Path, user: pwd.struct_passwd) -> Path:
    d = base / user.pw_name
    d.mkdir(exist_ok=True)
    os.chown(d, user.pw_uid, user.pw_gid)
    d.chmod(0o700)
    return d


def shell(user: pwd.struct_passwd, base: Path, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`argv` run by `user` in a shell of theirs (HOME theirs) without any of `slurmlet up`'s exports."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLURMLET_", "SLURM_"))}
    clean.update(HOME=str(home(base, user)), USER=user.pw_name, PATH=f"{BIN}{os.pathsep}/usr/bin:/bin")
    # (through sh: a command it runs is found and run with the user's rights alone, as from their shell)
    return subprocess.run(["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", "sh", "-c",
                           'exec "$@"', "sh", str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, env=clean,
                          cwd=str(home(base, user)), timeout=timeout)


#: the users' shells run slurmlet's commands: its Python must be one they may run (test.sh makes it so)
OPEN = pytest.mark.skipif(closed_to_others(sys.executable) is not None,
                          reason="other users cannot run this slurmlet (its Python is closed to them): install it "
                                 "with a Python every user can run, as test.sh does")


@OPEN
def test_a_shell_without_exports_uses_its_users_own_cluster_and_never_anothers(users, base: Path):
    """Two users' clusters side by side, each started by its user with `slurmlet up`; a third user."""
    ua, ub, uc = users
    states = {u.pw_name: home(base, u) / "state" for u in (ua, ub)}
    started = []
    try:
        for u in (ua, ub):
            r = shell(u, base, "slurmlet", "up", "--nodes", "1", "--port", "0", "--state-dir", str(states[u.pw_name]))
            assert r.returncode == 0, r.stderr
            started.append(u)
            r = shell(u, base, "sbatch", "-H", "-J", f"only-{u.pw_name}", "--wrap", "true")
            assert r.returncode == 0, r.stderr
        for u in (ua, ub):
            r = shell(u, base, "squeue", "-h", "-o", "%j")
            assert (r.returncode, r.stdout.split()) == (0, [f"only-{u.pw_name}"]), r.stderr
            r = shell(u, base, "slurmlet", "status", "--state-dir", str(states[u.pw_name]))
            assert r.returncode == 0 and r.stdout.startswith("slurmlet: cluster local running at http://127.0.0.1:")
        # a third user, with no cluster of their own, sees neither queue
        r = shell(uc, base, "squeue", "-h", "-o", "%j")
        assert r.returncode != 0 and "only-" not in r.stdout
        # two clusters of one user: none is picked, both are named
        second = home(base, ua) / "state2"
        r = shell(ua, base, "slurmlet", "up", "--nodes", "1", "--port", "0", "--state-dir", str(second))
        assert r.returncode == 0, r.stderr
        try:
            r = shell(ua, base, "squeue", "-h", "-o", "%j")
            assert (r.returncode, r.stdout) == (1, "")
            assert r.stderr.startswith("squeue: error: more than one of your clusters is running: ")
            assert str(states[ua.pw_name]) in r.stderr and str(second) in r.stderr
            assert "SLURMLET_CONTROLLER" in r.stderr
        finally:
            assert shell(ua, base, "slurmlet", "down", "--state-dir", str(second)).returncode == 0
        r = shell(ua, base, "squeue", "-h", "-o", "%j")  # one again: it is used
        assert r.stdout.split() == [f"only-{ua.pw_name}"]
    finally:
        for u in started:
            shell(u, base, "slurmlet", "down", "--state-dir", str(states[u.pw_name]))
    r = shell(ua, base, "slurmlet", "status", "--state-dir", str(states[ua.pw_name]))
    assert (r.returncode, r.stdout) == (1, f"slurmlet: not running (state directory {states[ua.pw_name]})\n")
    assert not list((home(base, ua) / ".slurmlet" / "clusters").iterdir())


@OPEN
def test_a_controller_port_held_by_another_user_is_not_used(users, base: Path):
    """Without a cluster of its own, the CLI tries 127.0.0.1:6817 only where root or its user listens
    there: another user's process (a cluster of theirs, or anything) is named, never talked to."""
    other = users[2]
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
        if holder in (0, users[0].pw_uid):
            pytest.skip(f"127.0.0.1:{DEFAULT_PORT} is held by root's own process here")
        r = shell(users[0], base, "squeue")
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
