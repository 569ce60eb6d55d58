"""quickstart.sh as a new user runs it, in a copy of the project: it installs, runs the multi-node
example to completion with its accounting, and leaves nothing behind but its .venv (no cluster, no
state directory, no record of the cluster in the user's home)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_runs_the_example_and_leaves_nothing_behind(tmp_path: Path):
    work = tmp_path / "slurmlet"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".venv", "build", ".git", "*.egg-info", "__pycache__",
                                                              ".mypy_cache", ".ruff_cache", ".pytest_cache"))
    home = tmp_path / "home"
    home.mkdir()
    before = {p.name for p in Path("/tmp").glob("slurmlet-quickstart.*")}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURMLET_", "SLURM_", "VIRTUAL_ENV"))}
    env["HOME"] = str(home)
    r = subprocess.run(["./quickstart.sh"], cwd=work, capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert "+ sbatch --parsable --wait hello.sbatch" in lines
    done = next(line for line in lines if line.startswith("job ") and line.endswith(" finished"))
    jid = done.split()[1]
    assert f"job {jid} (hello) on 2 nodes: node[1-2]" in lines
    assert any(line.split()[:1] == [jid] and "COMPLETED" in line for line in lines)  # its sacct record
    assert {p.name for p in Path("/tmp").glob("slurmlet-quickstart.*")} == before
    assert not list((home / ".slurmlet" / "clusters").glob("*")) if (home / ".slurmlet").exists() else True
    assert not list((work / "examples" / "hello").glob("hello-*.out"))
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(work) not in ps  # no daemon of it left running
