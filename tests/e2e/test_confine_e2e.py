"""A cluster started by plain `slurmlet up` as root confines its jobs (the state directory's
cgroup.conf it writes: memory, CPUs, GPUs, 512 processes per CPU), with jobs of real users made by
the test: a job past its --mem ends OUT_OF_MEMORY while its neighbour completes, a fork bomb stops at
its own job's process limit while another user's job and a new srun work on. `up --no-confine` runs
jobs unconfined; `up` by a user who cannot write cgroups says so in one line.

The fork bomb is bounded three ways besides the limit under test: a count (3000 forks), `ulimit -u`
in the job and `timeout`, under the job's own time limit."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import BIN, made_users, traversable_dir, wait_until

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("setpriv"),
                                 reason="real users and a cluster started as root need root, useradd and setpriv")]

USERS = ("slurmlet-c1", "slurmlet-c2")
NOT_CONFINED = re.compile(r"^# slurmlet: jobs are not confined \((.+)\): their memory, CPUs, GPUs and process "
                          r"counts are not enforced$", re.M)


@pytest.fixture(scope="module")
def users() -> Iterator[list[pwd.struct_passwd]]:
    yield from made_users(USERS)


@pytest.fixture(scope="module")
def base(users) -> Iterator[Path]:
    """A world-traversable scratch directory with a directory per user."""
    for d in traversable_dir("slurmlet-confine-"):
        for u in users:
            (d / u.pw_name).mkdir()
            os.chown(d / u.pw_name, u.pw_uid, u.pw_gid)
        yield d


class Up:
    """A cluster started by `slurmlet up` (as root, or as `user`), and its commands."""

    def __init__(self, state: Path, *options: str, user: pwd.struct_passwd | None = None, home: Path | None = None,
                 inside: tuple[str, ...] = ()):
        """`inside`: a command line `up` runs at the end of (unshare ...)."""
        self.state, self.user = state, user
        self.env = {"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "HOME": str(home or state.parent),
                    "LANG": "C.UTF-8"}
        self.r = self.cmd(None, "slurmlet", "up", "--state-dir", str(state), "--port", "0", *options, timeout=120,
                          inside=inside)
        assert self.r.returncode == 0, self.r.stderr
        exports = dict(line.removeprefix("export ").split("=", 1) for line in self.r.stdout.splitlines())
        exports.pop("PATH")  # ("...:$PATH", for a shell to expand)
        self.env.update(exports)

    def cmd(self, user: pwd.struct_passwd | None, *argv: str, timeout: float = 60,
            inside: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
        """A command of the cluster, as root or (through the request spool, as a user's CLI) `user`."""
        user = user or self.user
        run = [*inside, str(BIN / argv[0]), *argv[1:]]
        env = dict(self.env)
        if user is not None:
            run = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", *run]
            env.update(SLURMLET_KEY_FILE="/nonexistent", SLURMLET_CRED_SOCKET="/nonexistent")
        return subprocess.run(run, capture_output=True, text=True, env=env, cwd="/tmp", timeout=timeout)

    def sbatch(self, user: pwd.struct_passwd, *argv: str) -> str:
        r = self.cmd(user, "sbatch", "--parsable", *argv)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    def state_of(self, jid: str) -> str:
        return self.cmd(None, "sacct", "-j", jid, "-X", "-n", "-P", "-o", "State").stdout.strip()

    def wait_state(self, jid: str, state: str, timeout: float = 90) -> None:
        """Until the job's state is `state` (CANCELLED: "CANCELLED by <uid>", as sacct says it)."""
        wait_until(lambda: self.state_of(jid).split(" by ")[0] == state, timeout, interval=0.3,
                   what=f"job {jid} to be {state}")

    def down(self) -> None:
        self.cmd(None, "slurmlet", "down", "--state-dir", str(self.state))


@pytest.fixture(scope="module")
def up(base: Path) -> Iterator[Up]:
    c = Up(base / "state")  # (world-traversable: the users' CLIs write their requests in its spool)
    try:
        yield c
    finally:
        c.down()


def test_plain_up_writes_the_recommended_cgroup_conf_and_says_nothing_of_confinement(up: Up):
    assert not NOT_CONFINED.search(up.r.stderr), up.r.stderr
    conf = (up.state / "cgroup.conf").read_text().splitlines()
    assert conf[1:] == ["ConstrainCores=yes", "ConstrainDevices=yes", "ConstrainRAMSpace=yes",
                        "SlurmletMaxTasksPerCPU=512"]


def test_a_job_past_its_memory_ends_out_of_memory_and_its_neighbour_completes(up: Up, users, base: Path):
    u1, u2 = users
    go = base / u2.pw_name / "go"
    neighbour = up.sbatch(u2, "-w", "node1", "--mem=200", "-o", str(base / u2.pw_name / "nb.out"), "--wrap",
                          "python3 -c 'x = b\"1\" * (60 << 20)' && "
                          f"while [ ! -e {go} ]; do sleep 0.2; done; echo neighbour done")
    up.wait_state(neighbour, "RUNNING")
    out = base / u1.pw_name / "oom.out"
    jid = up.sbatch(u1, "-w", "node1", "--mem=100", "-o", str(out), "--wrap", "python3 -c 'x = b\"1\" * (600 << 20)'")
    up.wait_state(jid, "OUT_OF_MEMORY")
    # what it was given, as 22.05 shows it (tests/data/slurm-2205-confine.md)
    show = up.cmd(None, "scontrol", "show", "job", jid).stdout
    assert "   TRES=cpu=1,mem=100M,node=1,billing=1\n" in show
    assert "   MinCPUsNode=1 MinMemoryNode=100M MinTmpDiskNode=0\n" in show
    acct = up.cmd(None, "sacct", "-j", jid, "-n", "-P", "-o", "JobID,State,ExitCode,ReqMem,AllocTRES").stdout
    assert f"{jid}|OUT_OF_MEMORY|0:125|100M|billing=1,cpu=1,mem=100M,node=1" in acct.splitlines(), acct
    assert (f"slurmstepd-node1: error: Detected 1 oom-kill event(s) in StepId={jid}.batch. Some of your processes "
            f"may have been killed by the cgroup out-of-memory handler.") in out.read_text()
    assert up.state_of(neighbour) == "RUNNING"
    go.touch()
    up.wait_state(neighbour, "COMPLETED")
    assert (base / u2.pw_name / "nb.out").read_text() == "neighbour done\n"


#: forks sleeps until it cannot (or 3000 are there); `ulimit -u` and `timeout` bound it whatever
#: happens to the limit under test
FORK_BOMB = """#!/bin/bash
ulimit -u 2000
timeout 120 bash -c 'for i in $(seq 3000); do sleep 300 & done; wait'
"""


def test_a_fork_bomb_stops_at_its_jobs_process_limit_and_the_node_works_on(up: Up, users, base: Path):
    u1, u2 = users
    go = base / u2.pw_name / "go2"
    other = up.sbatch(u2, "-w", "node1", "-o", str(base / u2.pw_name / "other.out"), "--wrap",
                      f"while [ ! -e {go} ]; do sleep 0.2; done; echo other done $(seq 3 | wc -l)")
    up.wait_state(other, "RUNNING")
    out = base / u1.pw_name / "bomb.out"
    script = base / u1.pw_name / "bomb.sh"
    script.write_text(FORK_BOMB)
    bomb = up.sbatch(u1, "-w", "node1", "-t", "3", "-o", str(out), str(script))
    try:
        wait_until(lambda: out.exists() and "Resource temporarily unavailable" in out.read_text(), 120, interval=0.3,
                   what="the fork bomb to be refused a fork")
        count = subprocess.run(["pgrep", "-c", "-u", str(u1.pw_uid)], capture_output=True, text=True).stdout.strip()
        assert 0 < int(count) <= 512, f"{count} processes of the bomb's user (512: 1 CPU x SlurmletMaxTasksPerCPU)"
        r = up.cmd(u2, "srun", "-w", "node1", "sh", "-c", "echo srun works $(id -un)")
        assert (r.returncode, r.stdout) == (0, f"srun works {u2.pw_name}\n"), r.stderr
        assert up.state_of(other) == "RUNNING"
        go.touch()
        up.wait_state(other, "COMPLETED")
        assert (base / u2.pw_name / "other.out").read_text() == "other done 3\n"
    finally:
        up.cmd(None, "scancel", bomb)
    up.wait_state(bomb, "CANCELLED")
    wait_until(lambda: subprocess.run(["pgrep", "-u", str(u1.pw_uid)]).returncode == 1, 60,
               what="every process of the bomb to be gone")


def test_up_no_confine_runs_jobs_unconfined(base: Path, users):
    u1 = users[0]
    c = Up(base / "free", "--nodes", "1", "--no-confine")
    try:
        assert not NOT_CONFINED.search(c.r.stderr), c.r.stderr
        out = base / u1.pw_name / "free.out"
        jid = c.sbatch(u1, "--mem=100", "-o", str(out), "--wrap",
                       "python3 -c 'x = b\"1\" * (300 << 20)' && echo kept 300 MB")
        c.wait_state(jid, "COMPLETED")
        assert out.read_text() == "kept 300 MB\n"
        assert "MinMemoryNode=100M" in c.cmd(None, "scontrol", "show", "job", jid).stdout
    finally:
        c.down()


#: runs the command after it where every cgroup file system is mounted read-only (as in a container)
READ_ONLY_CGROUPS = ("unshare", "-m", "--propagation", "private", "sh", "-c",
                     'for m in $(awk \'$3 == "cgroup" || $3 == "cgroup2" {print $2}\' /proc/self/mounts); do '
                     'mount -o remount,bind,ro "$m" || exit 1; done; exec "$@"', "sh")


def test_up_where_cgroups_cannot_be_written_says_so_in_one_line_and_its_jobs_run(base: Path, users):
    c = Up(base / "ro", "--nodes", "1", inside=READ_ONLY_CGROUPS)
    try:
        lines = NOT_CONFINED.findall(c.r.stderr)
        assert len(lines) == 1 and lines[0].startswith("cannot write /sys/fs/cgroup/"), c.r.stderr
        out = base / users[0].pw_name / "ro.out"
        jid = c.sbatch(users[0], "-o", str(out), "--wrap", "echo ran")
        c.wait_state(jid, "COMPLETED")
        assert out.read_text() == "ran\n"
    finally:
        c.down()


def _reaches(user: pwd.struct_passwd, path: str) -> bool:
    """Whether `user` may run `path` (a venv's interpreter may live in root's own home)."""
    return subprocess.run(["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups",
                           "test", "-x", os.path.realpath(path)]).returncode == 0


def test_up_by_a_user_who_cannot_write_cgroups_says_so_in_one_line(base: Path, users):
    u1 = users[0]
    if not _reaches(u1, str(BIN / "python")):
        pytest.skip(f"{u1.pw_name} may not run {os.path.realpath(BIN / 'python')}")
    home = base / u1.pw_name
    c = Up(home / "state", "--nodes", "1", user=u1, home=home)
    try:
        lines = NOT_CONFINED.findall(c.r.stderr)
        assert len(lines) == 1 and "(not root)" in lines[0], c.r.stderr
    finally:
        c.down()
