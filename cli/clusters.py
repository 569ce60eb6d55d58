"""`-M/--clusters NAMES`: a command names clusters the accounting database knows (`sacctmgr list
clusters`), as Slurm's do. One known name is enough to go on (the others are refused each in a
line); none, and the command stops with Slurm's two lines and exit 1. `all` names every cluster.
Asked only when the option is given: a command without it pays nothing."""

from __future__ import annotations

import sys


def check(prog: str, value: str) -> list[str] | None:
    """The known clusters among `value` (comma-separated), after an error line for each unknown one;
    None (after Slurm's closing error line) when none is known."""
    from slurmlet.cli import http
    known = [c["cluster"] for c in http.request("GET", "/api/v1/accounting/clusters")["clusters"]]
    names = [n for n in value.split(",") if n]
    if names == ["all"]:
        return known
    good = []
    for n in names:
        if n in known:
            good.append(n)
        else:
            print(f"{prog}: error: No cluster '{n}' known by database.", file=sys.stderr)
    if not good:
        print(f"{prog}: error: '{value}' can't be reached now, or it is an invalid entry for --cluster.  "
              f"Use 'sacctmgr list clusters' to see available clusters.", file=sys.stderr)
        return None
    return good
