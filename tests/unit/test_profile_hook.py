"""The agent's /etc/profile.d hook: a job's login shell finds slurmlet's commands; other shells are untouched."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from slurmlet.nodeagent.env import PROFILE_HOOK, install_profile_hook


def test_the_hook_is_written_once_and_puts_the_commands_first_in_a_job_only(tmp_path: Path):
    path = install_profile_hook(str(tmp_path))
    assert path == str(tmp_path / "slurmlet.sh") and Path(path).read_text() == PROFILE_HOOK
    mtime = os.stat(path).st_mtime_ns
    assert install_profile_hook(str(tmp_path)) == path and os.stat(path).st_mtime_ns == mtime
    bin_dir = tmp_path / "venv-bin"
    bin_dir.mkdir()

    def path_after(env: dict[str, str]) -> str:
        r = subprocess.run(["sh", "-c", f'PATH=/usr/bin:/bin; . {path}; echo "$PATH"'], env=env,
                           capture_output=True, text=True, timeout=30)
        return r.stdout.strip()

    assert path_after({"SLURMLET_BIN": str(bin_dir)}) == f"{bin_dir}:/usr/bin:/bin"
    assert path_after({}) == "/usr/bin:/bin"
    assert path_after({"SLURMLET_BIN": str(tmp_path / "missing")}) == "/usr/bin:/bin"


def test_no_hook_where_the_directory_is_missing(tmp_path: Path):
    assert install_profile_hook(str(tmp_path / "nope")) is None
