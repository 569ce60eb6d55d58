"""Every command's --help and --usage print the real 22.05.8's text (captured into cli/help/), exit 0;
`slurmlet --help` names each subcommand with a line about it."""

from __future__ import annotations

import subprocess

import pytest

from slurmlet.cli import helptext
from tests.conftest import BIN

COMMANDS = ("sbatch", "salloc", "srun", "squeue", "sinfo", "sacct", "scancel", "scontrol", "sstat", "sreport",
            "sattach", "sprio", "sshare", "sdiag", "sacctmgr")
FIRST_LINES = {  # as the reference's binaries print them
    "srun": "Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]] [ : [OPTIONS(N)...]] executable(N) [args(N)...]",
    "salloc": "Usage: salloc [OPTIONS(0)...] [ : [OPTIONS(N)]] [command(0) [args(0)...]]",
    "sbatch": "Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]",
    "sattach": "Usage: sattach [options] <jobid.stepid>",
}


@pytest.mark.parametrize("prog", COMMANDS)
def test_help_and_usage_are_slurms(prog: str) -> None:
    for kind in ("help", "usage"):
        r = subprocess.run([str(BIN / prog), f"--{kind}"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stderr == ""
        assert r.stdout == helptext.text(prog, kind) and len(r.stdout) > 20
    if prog in FIRST_LINES:
        assert helptext.text(prog, "help").splitlines()[0] == FIRST_LINES[prog]


def test_slurmlet_help_describes_each_subcommand() -> None:
    r = subprocess.run([str(BIN / "slurmlet"), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    described = {line.split()[0] for line in r.stdout.splitlines() if line.startswith("  ")}
    assert described == {"up", "down", "status", "controller", "agent", "credd", "simulate", "translate",
                         "secrets", "db", "install-commands"}
