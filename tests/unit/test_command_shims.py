"""The agent's command shims: a shell that dropped the job's environment (`env -i bash`) still runs
the job's slurmlet commands, and only ones that root or the caller owns."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from slurmlet.nodeagent.env import COMMAND_SHIM, install_command_shims


def fake_command(directory: Path, name: str, says: str) -> None:
    directory.mkdir(exist_ok=True)
    (directory / name).write_text(f'#!/bin/sh\necho "{says} $*"\n')
    (directory / name).chmod(0o755)


def run_below(shim: Path, job_bin: Path | None, path: str = "/nonexistent") -> subprocess.CompletedProcess:
    """The shim run with an empty environment (but PATH) by a shell whose own environment has
    SLURMLET_BIN, as a job's batch script has it."""
    env = {"PATH": "/usr/bin:/bin", **({"SLURMLET_BIN": str(job_bin)} if job_bin else {})}
    return subprocess.run(["sh", "-c", f'env -i PATH="{path}" "{shim}" a "b c"; exit $?'], env=env,
                          capture_output=True, text=True, timeout=30)


@pytest.fixture()
def shims(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "venv-bin"
    fake_command(bin_dir, "srun", "job srun")
    fake_command(bin_dir, "scontrol", "job scontrol")
    shim_dir = tmp_path / "local-bin"
    shim_dir.mkdir()
    (shim_dir / "scontrol").write_text("#!/bin/sh\necho a Slurm of the host's own\n")  # not ours: kept
    assert install_command_shims(str(bin_dir), str(shim_dir)) == ["srun"]
    assert (shim_dir / "srun").read_text() == COMMAND_SHIM and os.access(shim_dir / "srun", os.X_OK)
    assert (shim_dir / "scontrol").read_text().endswith("own\n")
    assert not (shim_dir / "sbatch").exists()  # the bin directory has none
    assert install_command_shims(str(bin_dir), str(shim_dir)) == ["srun"]  # again: nothing changes
    return shim_dir


def test_the_shim_runs_the_command_of_the_job_above_it(shims: Path, tmp_path: Path):
    r = run_below(shims / "srun", tmp_path / "venv-bin")
    assert (r.returncode, r.stdout) == (0, "job srun a b c\n"), r.stderr


def test_without_a_job_above_it_the_next_command_on_path_runs(shims: Path, tmp_path: Path):
    fake_command(tmp_path / "slurm-bin", "srun", "host srun")
    r = run_below(shims / "srun", None, path=f"{shims}:{tmp_path / 'slurm-bin'}")
    assert (r.returncode, r.stdout) == (0, "host srun a b c\n"), r.stderr
    r = run_below(shims / "srun", None, path=str(shims))
    assert r.returncode == 127 and "no slurmlet job above this process" in r.stderr


def test_a_directory_that_others_may_write_is_not_trusted(shims: Path, tmp_path: Path):
    (tmp_path / "venv-bin").chmod(0o777)
    r = run_below(shims / "srun", tmp_path / "venv-bin")
    assert r.returncode == 127 and r.stdout == "", r.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the command to another user")
def test_root_does_not_run_another_users_command(shims: Path, tmp_path: Path):
    os.chown(tmp_path / "venv-bin" / "srun", 65534, 65534)
    r = run_below(shims / "srun", tmp_path / "venv-bin")
    assert r.returncode == 127 and r.stdout == "", r.stdout
