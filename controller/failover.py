"""Primary and backup controllers (slurm.conf's `SlurmctldHost` lines, the primary first).

Each controller process is one of them (`slurmlet controller --host NAME`, else this host's name)
and, on a database they share, is either:

- **active**: it holds the database's lease (store/lease.py) and is the controller: the Controller
  (runtime.py), its loops and its spool run, and every request is served; or
- **in standby**: it answers `GET /api/v1/ping` (22.05's backup answers pings), takes
  `POST /api/v1/takeover` from root (`scontrol takeover`), and refuses every other request with
  503 and Slurm's "Slurm backup controller in standby mode", marked with common/wire.STANDBY, so
  that agents and the CLI try the next controller at once.

`Failover.run` keeps the lease: the active controller renews it; one in standby takes it once it
has expired (within SlurmctldTimeout of the active controller's last renewal, plus one look). The
primary takes it at its start, as 22.05's primary takes control back when it starts. A controller
that loses the lease (another took it while it was paused or cut off from the database) stops being
active at once: its loops end and its Controller is dropped, and it waits in standby; whatever it
still tried to write was refused by the lease's fence.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from slurmlet.common import wire
from slurmlet.common.wire import STANDBY

from . import auth
from .errors import InvalidRequest, Unavailable
from .store.lease import RENEWALS, Lease

if TYPE_CHECKING:
    from .config import ClusterConfig

log = logging.getLogger("slurmlet.controller")

#: what 22.05 answers a request sent to a backup in standby (ESLURM_IN_STANDBY_MODE)
STANDBY_ERROR = "Slurm backup controller in standby mode"
#: `scontrol takeover`'s route (api/admin.py's for the active controller; the gate's for one in standby)
TAKEOVER = "/api/v1/takeover"
#: the most seconds between two looks at the lease by a controller in standby
LOOK = 1.0


class HostError(Exception):
    """This process is none of the configured controllers, or one that cannot run on this database."""


def whoami(config: ClusterConfig, host: str | None) -> tuple[int, str]:
    """(index, name) of this controller among SlurmctldHost's: `host` (--host), else this host's short
    name, else the only one there is."""
    names = config.controller_names()
    if host is not None:
        if host not in names:
            raise HostError(f"--host {host}: not one of SlurmctldHost's ({', '.join(names)})")
        return names.index(host), host
    if len(names) == 1:
        return 0, names[0]
    me = socket.gethostname().split(".", 1)[0]
    if me in names:
        return names.index(me), me
    raise HostError(f"this host ({me}) is not one of SlurmctldHost's ({', '.join(names)}): name the "
                    f"controller this process is with --host")


def role(index: int, count: int) -> str:
    """22.05's name for controller `index` of `count`: primary, backup, backupN."""
    return "primary" if index == 0 else "backup" if count == 2 else f"backup{index}"


class Failover:
    """This controller's place among the controllers, and its lease."""

    def __init__(self, lease: Lease, names: tuple[str, ...], key: bytes | None):
        self.lease = lease
        self.names = names
        self.key = key
        self.wanted = asyncio.Event()  #: `scontrol takeover`: take the lease now
        self.holder_index: int | None = None  #: who holds the lease, as last read (None: nobody)
        self.activated = False  #: this process runs the controller now (app.py's activate)
        #: the takeover credentials used (each is good once, whichever role this controller had then)
        self.nonces = auth.Nonces(since=time.time())

    @property
    def index(self) -> int:
        return self.lease.index

    def active(self) -> bool:
        return self.lease.held()

    def public(self) -> dict:
        """What a ping answers of the controllers."""
        return {"controllers": list(self.names), "index": self.index, "role": role(self.index, len(self.names)),
                "active": self.active(), "holder_index": self.index if self.active() else self.holder_index}

    async def run(self, activate: Callable[[], Awaitable[None]], deactivate: Callable[[], Awaitable[None]]) -> None:
        """Keep (or wait for) the lease for as long as the controller runs: `activate()` makes this the
        active controller, `deactivate()` drops it (both idempotent; see app.py)."""
        ttl = self.lease.ttl
        lost = asyncio.Event()  # (a fenced commit found the lease gone: stop being active now)
        loop = asyncio.get_running_loop()

        def _lost() -> None:
            loop.call_soon_threadsafe(lost.set)
        self.lease.on_lost = _lost
        while True:
            if self.active():
                # (renewed at least each LOOK: one that was taken from it by force hears of it within that)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(ttl / RENEWALS, LOOK)):
                        await lost.wait()
                lost.clear()
                try:
                    kept = await asyncio.to_thread(self.lease.renew)
                except Exception as e:  # noqa: BLE001 - the database is away: held until the lease runs out
                    log.error("cannot renew the controller lease (%s): still active until it runs out", e,
                              extra={"action": "lease"})
                    kept = self.lease.token is not None
                if not kept or not self.active():
                    state = await self._read()
                    log.critical("this controller (%s) lost the lease%s: it is in standby now", self.lease.name,
                                 f" to {state.holder}" if state and state.holder else "",
                                 extra={"action": "lease"})
                    await self.stop(deactivate)
                continue
            if self.activated:  # (its lease ran out by its own clock: whatever it ran stops before anything else)
                log.critical("this controller (%s) could not renew its lease in time: it is in standby now",
                             self.lease.name, extra={"action": "lease"})
                await self.stop(deactivate)
            force = self.wanted.is_set()
            self.wanted.clear()
            try:
                taken = await asyncio.to_thread(self.lease.take, force)
            except Exception as e:  # noqa: BLE001
                log.error("cannot reach the database for the controller lease: %s", e, extra={"action": "lease"})
                taken = False
            if taken:
                log.warning("this controller (%s, %s) holds the lease (token %s): it is the active controller",
                            self.lease.name, role(self.index, len(self.names)), self.lease.token,
                            extra={"action": "lease"})
                await self.start(activate, deactivate)
                continue
            state = await self._read()
            self.holder_index = state.index if state is not None and state.live else None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(LOOK, ttl / RENEWALS)):
                    await self.wanted.wait()

    async def start(self, activate: Callable[[], Awaitable[None]], deactivate: Callable[[], Awaitable[None]]) -> None:
        """Become the active controller with the lease just taken. Refused by the database (another took
        the lease meanwhile, or it is away): back to standby, the lease given up. Anything else is the
        daemon's end, and the lease is given up first, so that a backup takes over at its next look."""
        try:
            await activate()
            self.activated = True
        except Unavailable as e:
            log.error("this controller could not become active (%s): it is in standby", e.error,
                      extra={"action": "lease"})
            await self.stop(deactivate)
        except BaseException:
            await self.stop(deactivate)
            raise

    async def stop(self, deactivate: Callable[[], Awaitable[None]]) -> None:
        self.activated = False
        await deactivate()
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self.lease.release)

    async def _read(self):  # noqa: ANN202
        try:
            return await asyncio.to_thread(self.lease.read)
        except Exception:  # noqa: BLE001
            return None

    # ------------------------------------------------------------------ requests in standby
    @staticmethod
    def takeover_request(method: str, path: str) -> bool:
        return method == "POST" and path == TAKEOVER

    def check_takeover(self, who: auth.Caller, index: object) -> None:
        """`scontrol takeover` from `who`, sent to the controller `index` (the CLI names the one it sends
        to: its list may be amiss): root only, as in 22.05 (anyone on a cluster without a key)."""
        if who is not auth.OPEN and who.uid != 0:
            raise auth.Forbidden()
        if str(index) != str(self.index):
            raise InvalidRequest(f"this is controller {self.index}, not {index}")

    async def take_over(self, who: auth.Caller, query: bytes) -> dict:
        """A takeover sent to this controller in standby, its caller known (gate.py): the lease is taken
        at once, and the answer comes once this controller is active."""
        self.check_takeover(who, parse_qs(query.decode("latin-1")).get("index", [""])[0])
        self.wanted.set()
        deadline = time.monotonic() + 30
        while not self.active() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if not self.active():
            raise Unavailable("the controller could not take the lease")
        return {"ok": True, "index": self.index}

    async def serve_standby(self, scope: Any, send: Any) -> None:
        """A request to this controller in standby, but a takeover: a ping's answer, else the refusal."""
        if scope["method"] == "GET" and scope["path"] == "/api/v1/ping":
            await answer_json(send, 200, dict(self.public(), ok=True))
            return
        await answer_json(send, 503, {"detail": {"error": STANDBY_ERROR, "pre": [], "code": 1}},
                     [(STANDBY.encode(), f"{self.lease.ttl:g}".encode())])

async def answer_json(send: Any, status: int, doc: dict, extra: list | None = None) -> None:
    body = json.dumps(doc).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", wire.JSON.encode()), (b"content-length", str(len(body)).encode()),
                            *(extra or [])]})
    await send({"type": "http.response.body", "body": body})
