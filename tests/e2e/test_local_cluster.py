"""`slurmlet up` / `slurmlet down`: a local cluster in one command, found by the CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import BIN, wait_until

pytestmark = pytest.mark.e2e


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
    assert not (tmp_path / ".slurmlet" / "controller").exists()
