"""What `--help` and `--usage` print for each command: the real 22.05.8's texts, kept verbatim under
cli/help/ (PROG.help, PROG.usage; captured from the reference cluster's binaries)."""

from __future__ import annotations

import os

HELP_DIR = os.path.join(os.path.dirname(__file__), "help")


def text(prog: str, kind: str = "help") -> str:
    """`kind` is "help" or "usage"."""
    with open(os.path.join(HELP_DIR, f"{prog}.{kind}"), encoding="utf-8") as f:
        return f.read()


def help_text(prog: str = "sbatch") -> str:
    return text(prog, "help")


def usage_text(prog: str = "sbatch") -> str:
    return text(prog, "usage")
