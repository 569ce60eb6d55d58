"""Size limits: an oversized request gets 413 and a JSON error naming the limit, and changes nothing.

* A read (GET, HEAD, OPTIONS) carries no body. Every other request body: at most MAX_BODY bytes
  (32 MiB: a script at its limit, JSON-escaped, with its environment fits), except the packed
  code_source of an air run (`POST /api/v1/code`): MAX_CODE bytes as base64 in JSON. The gate
  (controller/gate.py) refuses a body whose Content-Length is larger before reading any of it, and
  counts every body as it arrives (keeping at most the limit).
* A job's script: at most `SchedulerParameters=max_script_size` bytes (4 MiB unless set, Slurm's
  default). slurmctld refuses a larger one with ESLURM_PATHNAME_TOO_LONG, which sbatch prints as
  `sbatch: error: Batch job submission failed: Pathname of a file, directory or other parameter too long`.

The answer: `{"detail": {"error": ..., "pre": [], "code": 1, "limit": BYTES, "size": BYTES}}`.
"""

from __future__ import annotations

from typing import Any

from slurmlet.common.wire import MAX_BODY
from slurmlet.controller.api.schemas import MAX_SCRIPT
from slurmlet.controller.errors import DomainError

MAX_CODE = 256 * 2**20  #: the largest packed code_source an air run may upload (bytes, before base64)
#: the message of Slurm's ESLURM_PATHNAME_TOO_LONG: a script over max_script_size
TOO_LONG = "Pathname of a file, directory or other parameter too long"
#: how long a refused request's remaining body is read and dropped (nginx's lingering close), so
#: that the client reads the 413 instead of a reset connection
LINGER = 10.0


class TooLarge(DomainError):
    """Request body too large"""

    status = 413

    def __init__(self, error: str | None = None, *, limit: int, size: int):
        super().__init__(error)
        self.limit = limit
        self.size = size

    def to_json(self) -> dict:
        return {**super().to_json(), "limit": self.limit, "size": self.size}


def max_script_size(config: Any) -> int:
    """SchedulerParameters=max_script_size (bytes), else Slurm's 4 MiB."""
    v = config.sched_params().get("max_script_size")
    return int(v) if v and v.isdigit() else MAX_SCRIPT


def check_script(script: str, config: Any) -> None:
    """413 for a script longer than max_script_size bytes (UTF-8, as slurmctld's strlen)."""
    limit = max_script_size(config)
    if len(script) * 4 <= limit:  # even four bytes a character would fit: skip the encoding
        return
    size = len(script.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise TooLarge(TOO_LONG, limit=limit, size=size)


#: the routes whose bodies may be larger than MAX_BODY: (method, path) -> their limit in bytes
BODY_LIMITS = {("POST", "/api/v1/code"): (MAX_CODE + 2) // 3 * 4 + 4096}  # (base64 in {"data": "..."})


def body_limit(method: str, path: str) -> int:
    """The largest body this request may carry, in bytes (gate.py refuses a larger one): none for a
    read (GET, HEAD, OPTIONS: nobody may make the controller read one)."""
    if method in ("GET", "HEAD", "OPTIONS"):
        return 0
    return BODY_LIMITS.get((method, path), MAX_BODY)


def refusal(method: str, path: str, limit: int, size: int) -> TooLarge:
    if method == "POST" and path == "/api/v1/jobs":  # what sbatch shows for a huge script
        return TooLarge(TOO_LONG, limit=limit, size=size)
    return TooLarge(f"Request body too large: {size} bytes, the limit is {limit} bytes", limit=limit, size=size)
