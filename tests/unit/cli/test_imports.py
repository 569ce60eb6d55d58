"""The CLI is called in loops by other tools: its import path must stay light."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

HEAVY = ("sqlalchemy", "fastapi", "pydantic", "httpx", "starlette", "uvicorn", "psutil", "controller",
         "nodeagent", "http.client", "email", "argparse", "asyncio")


def test_cli_commands_import_nothing_heavy():
    mods = ["cli.main", "cli.sbatch", "cli.squeue", "cli.scancel", "cli.sacct", "cli.sinfo", "cli.scontrol",
            "cli.render", "cli.opts", "cli.http"]
    code = ("import sys\n" + "".join(f"import {m}\n" for m in mods) +
            f"print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or m in {HEAVY!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
