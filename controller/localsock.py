"""The controller's Unix socket (`slurmlet controller --socket PATH`): requests from this host whose
sender the kernel names, so the CLI neither signs them nor loads a hash library to do so.

Each connection's peer credentials (SO_PEERCRED: the uid of the process that connected) are read
once; the connection is then relayed to the controller's own HTTP listener with one header added
after the request line, `X-Slurmlet-Local: TOKEN`, where TOKEN is a random name for that uid that
lives as long as the connection. The authentication middleware (app.py) takes the token back
(once) and the request is that user's. A token is never sent anywhere but to the controller's own
listener, so another user cannot learn one; a client that sends the header itself names no live
token and is nobody.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import struct

log = logging.getLogger("slurmlet.controller")

HEADER = "X-Slurmlet-Local"
FIRST_LINE_TIMEOUT = 30.0  #: seconds a connection may take to send its request line
MAX_FIRST_LINE = 65536
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


class Local:
    """The Unix socket's listener and the tokens of its open connections (token -> uid)."""

    def __init__(self, path: str, upstream: tuple[str, int]) -> None:
        self.path = path
        self.upstream = ("127.0.0.1" if upstream[0] in ("", "0.0.0.0") else upstream[0], upstream[1])
        self.uids: dict[str, int] = {}
        #: the names under which clients reach this controller's listener
        self.names = {"127.0.0.1", "localhost", "::1", self.upstream[0].lower(), socket.gethostname().lower()}
        self.server: asyncio.AbstractServer | None = None

    def serves(self, host: str) -> bool:
        """Whether a request's Host (the controller its client meant) is this controller."""
        name, _, port = host.rpartition(":")
        return port == str(self.upstream[1]) and name.strip("[]").lower() in self.names

    def take(self, token: str) -> int | None:
        """The uid a token names, once (None: no such live token)."""
        return self.uids.pop(token, None)

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # a socket file left by a controller that died
        self.server = await asyncio.start_unix_server(self._relay, path=self.path, limit=MAX_FIRST_LINE)
        os.chmod(self.path, 0o666)  # any user of this host may connect: the kernel says who they are

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await self.server.wait_closed()
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        token = None
        up_w = None
        try:
            sock = writer.get_extra_info("socket")
            _pid, uid, _gid = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
            line = await asyncio.wait_for(reader.readuntil(b"\n"), FIRST_LINE_TIMEOUT)
            token = secrets.token_hex(16)
            self.uids[token] = uid
            up_r, up_w = await asyncio.open_connection(*self.upstream)
            up_w.write(line + f"{HEADER}: {token}\r\n".encode())
            answer = asyncio.create_task(_pump(up_r, writer))
            asking = asyncio.create_task(_pump(reader, up_w))
            # the answer's end ends the relay (a client that never closes holds nothing); the
            # request's end (the client shut its side) only passes the end on
            await answer
            asking.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await asking
        except (OSError, ValueError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            if token is not None:
                self.uids.pop(token, None)
            for w in (writer, up_w):
                if w is not None:
                    w.close()


async def _pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while True:
            data = await src.read(65536)
            if not data:
                break
            dst.write(data)
            await dst.drain()
        if dst.can_write_eof():
            dst.write_eof()
    except OSError:
        pass
