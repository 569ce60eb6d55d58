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


def test_sacct_s_default_columns_load_no_time_or_range_grammar():
    """sacct -j's default columns need no duration, limit or range forms: their columns import
    those where used, and sacct in a loop does not load the modules that parse them."""
    code = ("import sys\n"
            "from slurmlet.cli import render_sacct\n"
            "job = {'job_id': 7, 'name': 'wrap', 'partition': 'debug', 'account': 'root', 'num_cpus': 1,\n"
            "       'state': 'COMPLETED', 'exit_code': 0, 'exit_signal': 0, 'start_time': 1.0, 'end_time': 2.0,\n"
            "       'steps': [{'step': 'batch', 'name': 'batch', 'state': 'COMPLETED', 'exit_code': 0,\n"
            "                  'exit_signal': 0, 'num_cpus': 1, 'start_time': 1.0, 'end_time': 2.0}]}\n"
            "lines = render_sacct.sacct_lines([job], now=3.0)\n"
            "print(len(lines), sorted(m for m in sys.modules if m in\n"
            "      ('slurmlet.common.slurmtime', 'slurmlet.common.grammar')))\n"
            "from slurmlet.common.grammar import fmt_ranges\n"
            "from slurmlet.common.slurmtime import fmt_secs_long\n"
            "print(fmt_secs_long(3700), fmt_ranges([1, 2, 3, 5]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["4 []", "01:01:40 1-3,5"]
