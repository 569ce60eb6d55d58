"""Processes of this host's slurmlet daemons (imports `os` alone: `slurmlet up`'s and the controller's)."""

from __future__ import annotations

import os


def daemon_alive(pid: int) -> bool:
    """Whether the daemon with this pid still runs: a zombie (killed, not yet reaped by whoever
    adopted it) does not, nor does another program that has since got the pid."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                return False
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"slurmlet" in f.read()
    except (OSError, IndexError):
        return True  # no /proc here: kill(0) is all we know
