"""The CLI is called in loops by other tools: its import path must stay light."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

HEAVY = ("sqlalchemy", "fastapi", "pydantic", "httpx", "starlette", "uvicorn", "psutil", "slurmlet.controller",
         "slurmlet.nodeagent", "http.client", "email", "argparse", "asyncio")


def test_cli_commands_import_nothing_heavy():
    mods = ["slurmlet.cli.main", "slurmlet.cli.sbatch", "slurmlet.cli.squeue", "slurmlet.cli.scancel",
            "slurmlet.cli.sacct", "slurmlet.cli.sinfo", "slurmlet.cli.scontrol", "slurmlet.common.render_squeue",
            "slurmlet.cli.render_sinfo", "slurmlet.cli.render_sacct", "slurmlet.cli.render_scontrol",
            "slurmlet.cli.opts", "slurmlet.cli.http", "slurmlet.common.cred"]
    code = ("import sys\n" + "".join(f"import {m}\n" for m in mods) +
            f"heavy = {HEAVY!r}\n"
            "print(','.join(sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
