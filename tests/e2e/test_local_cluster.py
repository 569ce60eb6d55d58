"""`slurmlet up` / `slurmlet down`: a local cluster in one command, found by the CLI."""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import httpx
import pytest

from tests.conftest import BIN, wait_until

pytestmark = pytest.mark.e2e

USER = "slurmlet-u1"  #: a user the hostname test makes (and removes) where it is not there


def test_up_exports_then_down_stops_exactly_its_processes(tmp_path: Path):
    env = dict(os.environ, HOME=str(tmp_path), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("SLURMLET_CONTROLLER", None)
    state = tmp_path / "state"
    up = subprocess.run([str(BIN / "slurmlet"), "up", "--nodes", "3", "--gpus-per-node", "2", "--state-dir",
                         str(state), "--port", "0"], capture_output=True, text=True, env=env, timeout=120)
    assert up.returncode == 0, up.stderr
    exports = dict(line.removeprefix("export ").split("=", 1) for line in up.stdout.splitlines())
    assert exports["SLURMLET_CONTROLLER"].startswith("http://127.0.0.1:")
    pids = json.loads((state / "pids.json").read_text())
    assert sorted(pids) == ["agent:node1", "agent:node2", "agent:node3", "controller", "credd"]
    assert exports["SLURMLET_CRED_SOCKET"] == str(state / "cred.sock")
    # the dashboard's address, signed in as whoever started the cluster (a token in it, as Jupyter's)
    dash = re.search(r"^# slurmlet: dashboard at (http://127\.0\.0\.1:\d+)/\?token=(\S+)$", up.stderr, re.M)
    assert dash and dash.group(1) == exports["SLURMLET_CONTROLLER"], up.stderr
    dashboard_token = dash.group(2)
    try:
        # without SLURMLET_CONTROLLER the CLI finds the running `up`
        r = subprocess.run([str(BIN / "sinfo"), "-h", "-N", "-o", "%N %t %G"], capture_output=True, text=True,
                           env=env, timeout=30)
        assert r.stdout.splitlines() == ["node1 idle gpu:H100:2", "node2 idle gpu:H100:2", "node3 idle gpu:H100:2"]
        # a user who may not read the key submits through the cluster's credd
        nokey = dict(env, SLURMLET_KEY_FILE=str(tmp_path / "unreadable"), SLURMLET_CRED_SOCKET=str(state / "cred.sock"))
        r = subprocess.run([str(BIN / "sbatch"), "--parsable", "-H", "--wrap", "true"], capture_output=True,
                           text=True, env=nokey, timeout=30)
        assert r.returncode == 0, r.stderr
        held = int(r.stdout.strip())
        # the dashboard's token acts as that user: their held job is cancelled through it
        got = httpx.post(exports["SLURMLET_CONTROLLER"] + "/api/v1/jobs/cancel", json={"ids": [held]},
                         headers={"X-SLURM-USER-TOKEN": dashboard_token}, timeout=30)
        assert got.status_code == 200 and got.json()["results"] == [{"job_id": held, "ok": True}], got.text
        # a second `up` on the same state directory keeps the running daemons
        again = subprocess.run([str(BIN / "slurmlet"), "up", "--state-dir", str(state)], capture_output=True,
                               text=True, env=env, timeout=60)
        assert again.returncode == 0 and again.stdout == up.stdout
        assert json.loads((state / "pids.json").read_text()) == pids
    finally:
        down = subprocess.run([str(BIN / "slurmlet"), "down", "--state-dir", str(state)], capture_output=True,
                              text=True, env=env, timeout=60)
    assert down.returncode == 0
    wait_until(lambda: not any(Path(f"/proc/{p}").exists() for p in pids.values()), 15, what="daemons to stop")
    assert not list((tmp_path / ".slurmlet" / "clusters").iterdir())  # (the CLI's record of it)


def test_up_again_restarts_only_the_daemons_that_died(tmp_path: Path):
    """kill -9 of an agent, then `slurmlet up` on the same state directory: that agent alone is
    started again (the controller keeps its pid, the other agent too) and a job submitted before is
    still known; then kill -9 of the controller: it comes back at the same address, from its
    database, and the agents that kept running reconnect by themselves."""
    env = dict(os.environ, HOME=str(tmp_path), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("SLURMLET_CONTROLLER", None)
    state = tmp_path / "state"
    slurmlet = str(BIN / "slurmlet")

    def up() -> dict[str, str]:
        r = subprocess.run([slurmlet, "up", "--nodes", "2", "--state-dir", str(state), "--port", "0"],
                           capture_output=True, text=True, env=env, timeout=60)
        assert r.returncode == 0, r.stderr
        return dict(line.removeprefix("export ").split("=", 1) for line in r.stdout.splitlines())

    def cli(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=30)

    def gone(pid: int) -> bool:  # dead, or a zombie its adopter has not reaped yet
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True

    exports = up()
    pids = json.loads((state / "pids.json").read_text())
    try:
        r = cli("sbatch", "--parsable", "-H", "--wrap", "true")
        assert r.returncode == 0, r.stderr
        held = r.stdout.strip()

        os.kill(pids["agent:node2"], signal.SIGKILL)
        wait_until(lambda: gone(pids["agent:node2"]), 10, what="agent node2 to die")
        assert up() == exports
        again = json.loads((state / "pids.json").read_text())
        assert again["controller"] == pids["controller"] and again["agent:node1"] == pids["agent:node1"]
        assert again["agent:node2"] != pids["agent:node2"] and not gone(again["agent:node2"])
        assert cli("sinfo", "-h", "-N", "-o", "%N %t").stdout.splitlines() == ["node1 idle", "node2 idle"]
        assert cli("squeue", "-h", "-j", held, "-o", "%i %T %r").stdout.split() == [held, "PENDING", "JobHeldUser"]

        os.kill(again["controller"], signal.SIGKILL)
        wait_until(lambda: gone(again["controller"]), 10, what="the controller to die")
        assert up() == exports  # the same address: the running agents find it there
        third = json.loads((state / "pids.json").read_text())
        assert third["controller"] != again["controller"] and not gone(third["controller"])
        assert {k: v for k, v in third.items() if k != "controller"} == \
            {k: v for k, v in again.items() if k != "controller"}
        assert cli("squeue", "-h", "-j", held, "-o", "%i %T").stdout.split() == [held, "PENDING"]
        assert cli("scontrol", "release", held).returncode == 0
        wait_until(lambda: cli("sacct", "-n", "-X", "-P", "-o", "State", "-j", held).stdout.strip() == "COMPLETED",
                   15, 0.1, what=f"job {held} to run")
        pids = third
    finally:
        down = subprocess.run([slurmlet, "down", "--state-dir", str(state)], capture_output=True, text=True,
                              env=env, timeout=60)
    assert down.returncode == 0
    wait_until(lambda: all(gone(p) for p in pids.values()), 15, what="daemons to stop")


@pytest.mark.parametrize("how", ["down", "kill -9"])
def test_a_cluster_started_again_on_its_state_directory_runs_the_next_job(tmp_path: Path, how: str):
    """`slurmlet down` (or kill -9 of every daemon), then `slurmlet up` on the same state directory:
    the database still shows the nodes up, but `up` returns only once this start's agents have
    registered, and the job submitted right after it runs (it was failed NODE_FAIL, or requeued for
    two minutes, when placed on a node before its new agent registered)."""
    env = dict(os.environ, HOME=str(tmp_path), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("SLURMLET_CONTROLLER", None)
    state = tmp_path / "state"

    def slurmlet(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "slurmlet"), *argv, "--state-dir", str(state)], capture_output=True,
                              text=True, env=env, timeout=120)

    def sbatch_wait(name: str) -> str:
        r = subprocess.run([str(BIN / "sbatch"), "--no-requeue", "--wait", "-o", str(tmp_path / f"{name}.out"),
                            "--wrap", f"echo {name}"], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        return (tmp_path / f"{name}.out").read_text()

    assert slurmlet("up", "--nodes", "2", "--port", "0").returncode == 0
    try:
        assert sbatch_wait("first") == "first\n"
        if how == "down":
            assert slurmlet("down").returncode == 0
        else:
            pids = json.loads((state / "pids.json").read_text())
            for pid in pids.values():
                os.kill(pid, signal.SIGKILL)
            wait_until(lambda: not any(Path(f"/proc/{p}").exists() and
                                       Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
                                       for p in pids.values()), 15, what="every daemon dead")
        r = slurmlet("up", "--nodes", "2", "--port", "0")
        assert r.returncode == 0, r.stderr
        assert sbatch_wait("second") == "second\n"
        r = subprocess.run([str(BIN / "sacct"), "-X", "-n", "-P", "-o", "JobName,State"], capture_output=True,
                           text=True, env=env, timeout=30)
        assert r.stdout.splitlines() == ["wrap|COMPLETED", "wrap|COMPLETED"]
    finally:
        slurmlet("down")


def test_a_new_node_shape_is_refused_while_the_cluster_runs_and_applied_at_its_next_start(tmp_path: Path):
    env = dict(os.environ, HOME=str(tmp_path), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("SLURMLET_CONTROLLER", None)
    state = tmp_path / "state"

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, env=env, timeout=120)

    assert run("slurmlet", "up", "--nodes", "3", "--state-dir", str(state), "--port", "0").returncode == 0
    try:
        r = run("slurmlet", "up", "--nodes", "2", "--cpus-per-node", "4", "--state-dir", str(state))
        assert (r.returncode, r.stderr) == (1, f"slurmlet up: error: the cluster in {state} runs 3 nodes of 8 CPUs, "
                                               f"16000 MB; stop it (slurmlet down --state-dir {state}) to start it "
                                               f"with 2 nodes of 4 CPUs, 16000 MB\n")
        assert run("slurmlet", "up", "--state-dir", str(state)).returncode == 0  # the same shape: fine
        assert run("slurmlet", "down", "--state-dir", str(state)).returncode == 0
        r = run("slurmlet", "up", "--nodes", "2", "--cpus-per-node", "4", "--gpus-per-node", "1",
                "--state-dir", str(state), "--port", "0")
        assert r.returncode == 0, r.stderr
        assert run("sinfo", "-h", "-N", "-o", "%N %c %t %G").stdout.splitlines() == [
            "node1 4 idle gpu:H100:1", "node2 4 idle gpu:H100:1"]
        assert run("slurmlet", "down", "--state-dir", str(state)).returncode == 0
        # and without shape options, the state directory's shape
        assert run("slurmlet", "up", "--state-dir", str(state), "--port", "0").returncode == 0
        assert run("sinfo", "-h", "-N", "-o", "%N %c").stdout.splitlines() == ["node1 4", "node2 4"]
    finally:
        run("slurmlet", "down", "--state-dir", str(state))


def test_two_clusters_on_one_host_do_not_touch_each_other(tmp_path: Path):
    """Two local clusters side by side (their own state directories): their nodes have addresses of
    their own, a shell without exports picks neither while both run, and taking the first down while
    the second runs a 2-node job leaves the second whole: the job runs on, its node names resolve."""
    env = dict(os.environ, HOME=str(tmp_path), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("SLURMLET_CONTROLLER", None)
    a, b = tmp_path / "a", tmp_path / "b"

    def up(state: Path) -> dict[str, str]:
        r = subprocess.run([str(BIN / "slurmlet"), "up", "--nodes", "2", "--state-dir", str(state), "--port", "0"],
                           capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        exports = dict(line.removeprefix("export ").split("=", 1) for line in r.stdout.splitlines())
        exports.pop("PATH")  # ("...:$PATH", for a shell to expand)
        return dict(env, **exports)

    def cli(e: dict, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, env=e,
                              cwd=tmp_path, timeout=60)

    def addrs(e: dict) -> set[str]:
        out = cli(e, "scontrol", "show", "node").stdout
        return {w.split("=", 1)[1] for w in out.split() if w.startswith("NodeAddr=")}

    ea = up(a)
    try:
        eb = up(b)
        try:
            # a shell without the exports uses neither, and names both
            r = cli(env, "squeue")
            assert r.returncode == 1 and str(a) in r.stderr and str(b) in r.stderr, r.stderr
            assert len(addrs(ea)) == len(addrs(eb)) == 2 and not addrs(ea) & addrs(eb)
            go = tmp_path / "go"
            r = cli(eb, "sbatch", "--parsable", "-N2", "-o", str(tmp_path / "b.out"), "--wrap",
                    f"while [ ! -e {go} ]; do sleep 0.1; done; getent hosts node1 >/dev/null && echo resolves; "
                    "srun -N2 printenv SLURMD_NODENAME | sort")
            assert r.returncode == 0, r.stderr
            jid = r.stdout.strip()
            wait_until(lambda: cli(eb, "squeue", "-h", "-j", jid, "-o", "%T").stdout.strip() == "RUNNING", 60,
                       what="b's job running")
            assert cli(ea, "slurmlet", "down", "--state-dir", str(a)).returncode == 0
            r = cli(env, "squeue", "-h", "-o", "%i")  # b alone: the shell without exports uses it
            assert r.stdout.split() == [jid], r.stderr
            go.touch()
            wait_until(lambda: cli(eb, "sacct", "-X", "-n", "-j", jid, "-o", "State").stdout.strip() == "COMPLETED",
                       60, what="b's job completed")
            assert (tmp_path / "b.out").read_text().splitlines() == ["resolves", "node1", "node2"]
        finally:
            cli(eb, "slurmlet", "down", "--state-dir", str(b))
    finally:
        cli(ea, "slurmlet", "down", "--state-dir", str(a))
    hosts = Path("/etc/hosts").read_text()
    assert str(a) not in hosts and str(b) not in hosts


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("setpriv"),
                    reason="a UTS namespace per node needs root; the user's job needs useradd and setpriv")
def test_tasks_see_their_node_name_as_their_host_name(tmp_path: Path):
    """On 22.05 a task's host is its node: `srun -N2 -l hostname` prints `0: node1` and `1: node2`,
    the batch script's `hostname` is its batch host's name, `sinfo -o %n` and scontrol's NodeHostName
    the nodes' names (tests/data/slurm-2205-hostname.md). The agents of a local cluster started as
    root share one host: each runs in a UTS namespace of its own named after its node, and so do the
    jobs it starts, whichever user they run as."""
    machine = os.uname().nodename
    assert machine not in ("node1", "node2")
    base = Path(tempfile.mkdtemp(prefix="slurmlet-uts-"))
    base.chmod(0o755)  # (pytest's tmp_path is 0700: the user could not reach the spool)
    state = base / "state"
    env = dict(os.environ, HOME=str(tmp_path), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("SLURMLET_CONTROLLER", None)
    r = subprocess.run([str(BIN / "slurmlet"), "up", "--nodes", "2", "--state-dir", str(state), "--port", "0"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    exports = dict(line.removeprefix("export ").split("=", 1) for line in r.stdout.splitlines())
    exports.pop("PATH")  # ("...:$PATH", for a shell to expand)
    env.update(exports)

    def cli(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=60)

    made = False
    try:
        r = cli("srun", "-N2", "-l", "hostname")
        assert r.returncode == 0, r.stderr
        assert sorted(r.stdout.splitlines()) == ["0: node1", "1: node2"]
        r = cli("srun", "-N2", "-l", "bash", "-c", 'echo "$(uname -n) $HOSTNAME $(python3 -c "import socket; '
                'print(socket.gethostname())") $SLURMD_NODENAME $SLURM_TOPOLOGY_ADDR"')
        assert r.returncode == 0, r.stderr
        assert sorted(r.stdout.splitlines()) == ["0: node1 node1 node1 node1 node1", "1: node2 node2 node2 node2 node2"]
        out = tmp_path / "batch.out"
        r = cli("sbatch", "--wait", "-N2", "-o", str(out), "--wrap",
                'hostname; uname -n; echo "$SLURMD_NODENAME"; srun -l hostname | sort')
        assert r.returncode == 0, r.stderr
        lines = out.read_text().splitlines()
        assert lines[0] in ("node1", "node2") and lines[:3] == [lines[0]] * 3, lines
        assert lines[3:] == ["0: node1", "1: node2"]
        assert cli("sinfo", "-h", "-N", "-o", "%N %n").stdout.splitlines() == ["node1 node1", "node2 node2"]
        assert "NodeHostName=node1 " in cli("scontrol", "show", "node", "node1").stdout
        # a user's job: the namespace was the agent's (root's) before the job became the user's
        try:
            pwd.getpwnam(USER)
        except KeyError:
            subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", USER], check=True)
            made = True
        u = pwd.getpwnam(USER)
        e = {"PATH": env["PATH"], "HOME": "/", "SLURMLET_CONTROLLER": env["SLURMLET_CONTROLLER"],
             "SLURMLET_SPOOL": env["SLURMLET_SPOOL"], "SLURMLET_KEY_FILE": "/nonexistent",
             "SLURMLET_CRED_SOCKET": "/nonexistent"}
        r = subprocess.run(["setpriv", f"--reuid={u.pw_uid}", f"--regid={u.pw_gid}", "--clear-groups", str(BIN / "srun"),
                            "-N2", "-l", "sh", "-c", "echo $(id -un) $(hostname)"],
                           capture_output=True, text=True, env=e, cwd="/tmp", timeout=60)
        assert r.returncode == 0, r.stderr
        assert sorted(r.stdout.splitlines()) == [f"0: {USER} node1", f"1: {USER} node2"]
        assert os.uname().nodename == machine  # the host's own is left as it was
    finally:
        cli("slurmlet", "down", "--state-dir", str(state))
        if made:
            subprocess.run(["userdel", USER], check=False)
        shutil.rmtree(base, ignore_errors=True)


#: the system's own directories of commands and of login-shell hooks: a cluster's daemons write none of them
SYSTEM_DIRS = ("/usr/local/bin", "/usr/local/sbin", "/etc/profile.d")
#: root's default search path (/etc/profile's; sudo's secure_path)
ROOT_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


@pytest.mark.skipif(os.geteuid() != 0 or not all(shutil.which(c) for c in ("unshare", "nsenter")),
                    reason="a cluster started as root in a mount namespace of its own needs root, unshare and nsenter")
def test_up_writes_nothing_outside_its_places_and_login_shells_find_the_installed_commands(tmp_path: Path):
    """A cluster started as root by plain `slurmlet up`, a job and `down` leave nothing new or
    changed in the system's directories (no command shim on root's search path, no /etc/profile.d
    hook, no new file in /etc; the /etc/hosts lines of its nodes gone). A batch script that starts a
    login shell (`#!/bin/bash -l`, whose /etc/profile resets PATH) finds srun once the administrator
    has run `slurmlet install-commands --prefix /usr/local`, and `--remove` takes the links away.
    The cluster runs in a mount namespace whose /usr/local/bin, /usr/local/sbin and /etc/profile.d
    are empty (a host where no slurmlet has run, and the host's own left alone)."""
    state = tmp_path / "state"
    mark = f"# slurmlet {state}"  # its lines in /etc/hosts
    mounts = " && ".join(f"mount -t tmpfs -o mode=755 slurmlet-test {d}" for d in SYSTEM_DIRS if os.path.isdir(d))
    anchor = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                               f"{mounts} && echo ready && exec cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    root = Path(f"/proc/{anchor.pid}/root")  # the namespace's view of the file system

    def snapshot() -> dict[str, object]:
        seen: dict[str, object] = {}
        for d in (*ROOT_PATH, "/etc/profile.d"):
            for e in os.scandir(root / d.lstrip("/")) if (root / d.lstrip("/")).is_dir() else ():
                st = e.stat(follow_symlinks=False)
                seen[f"{d}/{e.name}"] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        for top, dirs, files in os.walk(root / "etc"):  # names only: other programs edit /etc/hosts
            for name in dirs + files:  # (but for the passing files of useradd and userdel of other tests)
                if not name.startswith(("passwd", "group", "shadow", "gshadow", "subuid", "subgid", ".pwd.lock")):
                    seen.setdefault(os.path.join(top, name).removeprefix(str(root)), "in /etc")
        return seen

    def ns(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(["nsenter", f"--target={anchor.pid}", "--mount", "--", *argv], capture_output=True,
                              text=True, env=env, timeout=120)

    env = dict(os.environ, HOME=str(tmp_path), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("SLURMLET_CONTROLLER", None)
    try:
        assert anchor.stdout and anchor.stdout.readline() == "ready\n"
        before = snapshot()
        assert not any(any((root / d.lstrip("/")).iterdir()) for d in SYSTEM_DIRS if os.path.isdir(d))
        r = ns(str(BIN / "slurmlet"), "up", "--nodes", "2", "--state-dir", str(state), "--port", "0")
        assert r.returncode == 0, r.stderr
        exports = dict(line.removeprefix("export ").split("=", 1) for line in r.stdout.splitlines())
        exports.pop("PATH")  # ("...:$PATH", for a shell to expand)
        assert any(line.endswith(mark) for line in Path("/etc/hosts").read_text().splitlines())
        # the agents are up and have placed nothing: no shim under any command's name on root's path
        assert snapshot() == before
        # the administrator's step, then a login-shell script (root's: an ordinary user's job here could not
        # run this slurmlet, whose interpreter lies under root's 0700 home)
        r = ns(str(BIN / "slurmlet"), "install-commands", "--prefix", "/usr/local")
        assert r.returncode == 0, r.stderr
        assert os.readlink(root / "usr/local/bin/srun") == str(BIN / "srun")
        script = tmp_path / "login.sh"
        script.write_text("#!/bin/bash -l\ncommand -v srun\nreadlink -f \"$(command -v srun)\"\n"
                          "srun -N2 printenv SLURMD_NODENAME | sort\nenv -i bash -c 'command -v scontrol'\n")
        r = subprocess.run([str(BIN / "sbatch"), "--wait", "-N2", "-o", str(tmp_path / "login.out"), str(script)],
                           capture_output=True, text=True, env=dict(env, **exports), cwd=tmp_path, timeout=120)
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "login.out").read_text().splitlines() == [
            "/usr/local/bin/srun", str(BIN / "srun"), "node1", "node2", "/usr/local/bin/scontrol"]
        r = ns(str(BIN / "slurmlet"), "install-commands", "--prefix", "/usr/local", "--remove")
        assert r.returncode == 0 and "removed /usr/local/bin/srun" in r.stdout.splitlines(), r.stderr
    finally:
        down = ns(str(BIN / "slurmlet"), "down", "--state-dir", str(state))
    try:
        assert down.returncode == 0, down.stderr
        assert snapshot() == before
        assert not any(line.endswith(mark) for line in Path("/etc/hosts").read_text().splitlines())
    finally:
        if anchor.stdin:
            anchor.stdin.close()
        anchor.wait(timeout=30)
