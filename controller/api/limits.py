"""Size limits: an oversized request gets 413 and a JSON error naming the limit, and changes nothing.

* Every request body: at most MAX_BODY bytes (32 MiB: a script at its limit, JSON-escaped, with its
  environment fits), except the packed code_source of an air run (`POST /api/v1/code`): MAX_CODE
  bytes (app.py) as base64 in JSON. `BodyLimit` refuses a body whose Content-Length is larger
  before reading any of it, and counts a chunked body as it arrives (keeping at most the limit).
* A job's script: at most `SchedulerParameters=max_script_size` bytes (4 MiB unless set, Slurm's
  default). slurmctld refuses a larger one with ESLURM_PATHNAME_TOO_LONG, which sbatch prints as
  `sbatch: error: Batch job submission failed: Pathname of a file, directory or other parameter too long`.

The answer: `{"detail": {"error": ..., "pre": [], "code": 1, "limit": BYTES, "size": BYTES}}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from slurmlet.controller.api.schemas import MAX_SCRIPT
from slurmlet.controller.errors import DomainError

MAX_BODY = 32 * 2**20
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


def max_script_size(config: Any) -> int:  # noqa: ANN401
    """SchedulerParameters=max_script_size (bytes), else Slurm's 4 MiB."""
    v = config.sched_params().get("max_script_size")
    return int(v) if v and v.isdigit() else MAX_SCRIPT


def check_script(script: str, config: Any) -> None:  # noqa: ANN401
    """413 for a script longer than max_script_size bytes (UTF-8, as slurmctld's strlen)."""
    limit = max_script_size(config)
    if len(script) * 4 <= limit:  # even four bytes a character would fit: skip the encoding
        return
    size = len(script.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise TooLarge(TOO_LONG, limit=limit, size=size)


def body_limit(method: str, path: str, max_code: int) -> int:
    """The largest body this request may carry, in bytes."""
    if method == "POST" and path == "/api/v1/code":
        return (max_code + 2) // 3 * 4 + 4096  # base64 in {"data": "..."}
    return MAX_BODY


def refusal(method: str, path: str, limit: int, size: int) -> TooLarge:
    if method == "POST" and path == "/api/v1/jobs":  # what sbatch shows for a huge script
        return TooLarge(TOO_LONG, limit=limit, size=size)
    return TooLarge(f"Request body too large: {size} bytes, the limit is {limit} bytes", limit=limit, size=size)


class BodyLimit:
    """ASGI middleware: 413 for a body over `body_limit`, before the application reads it."""

    def __init__(self, app: Any, max_code: int) -> None:  # noqa: ANN401
        self.app = app
        self.max_code = max_code

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:  # noqa: ANN401
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        limit = body_limit(method, path, self.max_code)
        length = None
        chunked = False
        for k, v in scope["headers"]:
            if k == b"content-length":
                length = v
            elif k == b"transfer-encoding":
                chunked = True
        if length is not None:  # the server already checked that it is a number
            size = int(length)
            if size > limit:
                await _refuse(receive, send, refusal(method, path, limit, size))
                return
            await self.app(scope, receive, send)
            return
        if not chunked:  # no body
            await self.app(scope, receive, send)
            return
        # chunked: read it here, at most `limit` bytes, and hand it on whole
        parts: list[bytes] = []
        size = 0
        while True:
            msg = await receive()
            if msg["type"] != "http.request":
                return  # the client went away
            size += len(msg.get("body", b""))
            if size > limit:
                await _refuse(receive, send, refusal(method, path, limit, size), more=msg.get("more_body", False))
                return
            parts.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        body = b"".join(parts)
        del parts
        await self.app(scope, replaying(body, receive), send)


def replaying(body: bytes, receive: Any) -> Any:  # noqa: ANN401
    """An ASGI `receive` that gives `body` whole first (read by a middleware), then `receive`'s."""
    given = False

    async def replay() -> dict:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _refuse(receive: Any, send: Any, err: TooLarge, more: bool = True) -> None:  # noqa: ANN401
    if more:  # drop what the client still sends, for at most LINGER seconds
        with contextlib.suppress(asyncio.TimeoutError):
            async with asyncio.timeout(LINGER):
                while True:
                    msg = await receive()
                    if msg["type"] != "http.request" or not msg.get("more_body"):
                        break
    body = json.dumps({"detail": err.to_json()}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
