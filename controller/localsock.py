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
import stat
import struct

log = logging.getLogger("slurmlet.controller")

HEADER = "X-Slurmlet-Local"
FIRST_LINE_TIMEOUT = 30.0  #: seconds a connection may take to send its request line
IDLE = 75.0  #: seconds a relayed connection may wait for (more of) its answer (long-polls answer within 30)
PER_USER = 64  #: connections one uid may hold open at once
TOTAL = 512  #: connections all users may hold open at once (each costs the controller 3 descriptors)
MAX_FIRST_LINE = 65536
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


class Local:
    """The Unix socket's listener and the tokens of its open connections (token -> uid)."""

    def __init__(self, path: str, upstream: tuple[str, int]) -> None:
        self.path = path
        self.upstream = ("127.0.0.1" if upstream[0] in ("", "0.0.0.0") else upstream[0], upstream[1])
        self.uids: dict[str, int] = {}
        self.open: dict[int, int] = {}  #: uid -> connections it holds
        self.made: tuple[int, int, int] | None = None  #: the identity of the socket file this one made
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
        """Listen at `path`: what stands there is replaced only when it is a socket nobody listens
        on (one left by a controller that died); a live one, or any other file, is an error."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            st = None
        if st is not None:
            if not stat.S_ISSOCK(st.st_mode):
                raise OSError(f"--socket {self.path}: exists and is not a socket")
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(self.path)
                raise OSError(f"--socket {self.path}: another process listens there")
            except ConnectionRefusedError:
                os.unlink(self.path)
            finally:
                probe.close()
        old = os.umask(0o111)  # made 0666 by bind itself: any user of this host may connect (the kernel
        try:  # says who they are); no chmod afterwards, which a link put at the name would redirect
            self.server = await asyncio.start_unix_server(self._relay, path=self.path, limit=MAX_FIRST_LINE)
        finally:
            os.umask(old)
        st = os.lstat(self.path)
        self.made = (st.st_dev, st.st_ino, st.st_ctime_ns)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await self.server.wait_closed()
        with contextlib.suppress(OSError):
            st = os.lstat(self.path)
            if (st.st_dev, st.st_ino, st.st_ctime_ns) == self.made:  # (not one another controller made since)
                os.unlink(self.path)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        token = None
        up_w = None
        uid = None
        try:
            sock = writer.get_extra_info("socket")
            _pid, peer, _gid = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
            if self.open.get(peer, 0) >= PER_USER or sum(self.open.values()) >= TOTAL:
                return  # (closed at once: the CLI then goes by TCP)
            uid = peer
            self.open[uid] = self.open.get(uid, 0) + 1
            line = await asyncio.wait_for(reader.readuntil(b"\n"), FIRST_LINE_TIMEOUT)
            token = secrets.token_hex(16)
            self.uids[token] = uid
            up_r, up_w = await asyncio.open_connection(*self.upstream)
            up_w.write(line + f"{HEADER}: {token}\r\n".encode())
            # the answer's end ends the relay (a client that never closes holds nothing), and so does
            # an answer that has not come for IDLE seconds (a request whose head or body never ends);
            # the request's end (the client shut its side) only passes the end on
            answer = asyncio.create_task(_pump(up_r, writer, IDLE))
            asking = asyncio.create_task(_pump(reader, up_w))
            await answer
            asking.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await asking
        except (OSError, ValueError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            if token is not None:
                self.uids.pop(token, None)
            if uid is not None:
                self.open[uid] -= 1
                if not self.open[uid]:
                    del self.open[uid]
            for w in (writer, up_w):
                if w is not None:
                    w.close()


async def _pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, idle: float | None = None) -> None:
    """Copies until the end, or until nothing came for `idle` seconds."""
    try:
        while True:
            data = await asyncio.wait_for(src.read(65536), idle)
            if not data:
                break
            dst.write(data)
            await dst.drain()
        if dst.can_write_eof():
            dst.write_eof()
    except (OSError, asyncio.TimeoutError):
        dst.close()
