"""Helpers shared by the query commands: users, job-state names, id lists."""

from __future__ import annotations

import os

JOB_STATES = ("PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL",
              "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "COMPLETING", "CONFIGURING", "RESIZING",
              "RESV_DEL_HOLD", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "REVOKED", "SIGNALING",
              "SPECIAL_EXIT", "STAGE_OUT", "STOPPED")
STATE_ABBREV = {"PD": "PENDING", "R": "RUNNING", "S": "SUSPENDED", "CD": "COMPLETED", "CA": "CANCELLED",
                "F": "FAILED", "TO": "TIMEOUT", "NF": "NODE_FAIL", "PR": "PREEMPTED", "BF": "BOOT_FAIL",
                "DL": "DEADLINE", "OOM": "OUT_OF_MEMORY", "CG": "COMPLETING", "CF": "CONFIGURING",
                "RQ": "REQUEUED", "RH": "REQUEUE_HOLD", "RS": "RESIZING", "RV": "REVOKED", "SI": "SIGNALING",
                "SE": "SPECIAL_EXIT", "SO": "STAGE_OUT", "ST": "STOPPED"}
DEFAULT_QUEUE_STATES = ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING")


def parse_states(value: str) -> list[str] | None:
    """`-t` values (names or abbreviations, comma-separated; `all`) -> names; None for all.

    Raises ValueError(bad_token) for an unknown state.
    """
    out: list[str] = []
    for tok in value.split(","):
        t = tok.strip().upper()
        if not t:
            continue
        if t == "ALL":
            return None
        name = STATE_ABBREV.get(t, t)
        if name not in JOB_STATES:
            raise ValueError(tok)
        out.append(name)
    return out


def current_user() -> str:
    import pwd
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return os.environ.get("USER") or str(os.getuid())


def split_list(values: list[str]) -> list[str]:
    return [x for v in values for x in v.split(",") if x]
