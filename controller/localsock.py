"""The controller's Unix socket (`slurmlet controller --socket PATH`): requests from this host whose
sender the kernel names, so the CLI neither signs them nor loads a hash library to do so.

Each connection's peer credentials (SO_PEERCRED: the uid of the process that connected) are read
once; the connection is then relayed to the controller's own HTTP listener with one header added
after the request line, `X-Slurmlet-Local: TOKEN`, where TOKEN is a random name for that uid that
lives as long as the connection. The authentication middleware (app.py) takes the token back
(once) and the request is that user's. A token is never sent anywhere but to the controller's own
listener, so another user cannot learn one; a client that sends the header itself names no live
token and is nobody.

Beside the socket, a spool (`PATH.d`, root's or the controller user's, mode 1733: anyone may add a
file, nobody but its owner may remove one, nobody but the controller may list it) serves clients that
would rather not load the `socket` module (milliseconds of every command): a client writes its whole
request to `NAME.req` (0600, its own), makes a FIFO `NAME.out` (0600) to read the answer from, and
writes `NAME` and a newline to the FIFO `bell`; NAME is 32 random hex digits, which only the client
and the controller ever see. The controller takes the request (unlinks `NAME.req`: of its unlink and
the client's, who withdraws a request not taken within a second, exactly one succeeds), and the
request is the user who owns the file: the kernel says who made it, as SO_PEERCRED says who
connected. It is handed to the controller's app in this process (read by h11, with a token as a
relayed connection's: no second connection, no second parse) and the answer written to `NAME.out`.
Postfix's maildrop and pickup FIFO work so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import shutil
import socket
import stat
import struct
import time
from http import HTTPStatus
from urllib.parse import unquote

import h11

from .api.limits import replaying

log = logging.getLogger("slurmlet.controller")

HEADER = "X-Slurmlet-Local"
FIRST_LINE_TIMEOUT = 30.0  #: seconds a connection may take to send its request line
IDLE = 75.0  #: seconds a relayed connection may wait for (more of) its answer (long-polls answer within 30)
PER_USER = 64  #: connections one uid may hold open at once
TOTAL = 512  #: connections all users may hold open at once (each costs the controller 3 descriptors)
MAX_FIRST_LINE = 65536
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
SPOOL_SUFFIX = ".d"  #: the spool beside the socket: PATH.d
BELL = "bell"
SPOOL_MAX = 256 * 2**10  #: the largest request a client may spool (larger ones go by the socket)
NAME_LEN = 32  #: a spooled request's name: this many lowercase hex digits
STALE = 60.0  #: seconds after which what is in the spool is removed (a request not taken within a second is withdrawn)
RING_MAX = 256  #: the most names taken from the bell at a time
_HEX = frozenset("0123456789abcdef")
_now = time.time  #: the sweep's clock


class Local:
    """The Unix socket's listener and the tokens of its open connections (token -> uid)."""

    def __init__(self, path: str, upstream: tuple[str, int], app=None) -> None:  # noqa: ANN001 - ASGI
        self.path = path
        self.app = app  #: the controller's ASGI app, which spooled requests are handed to (None: no spool)
        #: app.py's fast path: `await fast(scope, body, send)` serves a spooled request itself (True) or
        #: leaves it to the app (False)
        self.fast = None
        self.upstream = ("127.0.0.1" if upstream[0] in ("", "0.0.0.0") else upstream[0], upstream[1])
        self.uids: dict[str, int] = {}
        self.open: dict[int, int] = {}  #: uid -> connections it holds
        self.made: tuple[int, int, int] | None = None  #: the identity of the socket file this one made
        #: the names under which clients reach this controller's listener
        self.names = {"127.0.0.1", "localhost", "::1", self.upstream[0].lower(), socket.gethostname().lower()}
        self.server: asyncio.AbstractServer | None = None
        self.spool = path + SPOOL_SUFFIX
        self.spool_fd: int | None = None  #: the spool, opened (names are opened relative to it)
        self.bell_fd: int | None = None
        self.rung = b""  #: the bell's last line, while it has no newline yet
        self.swept = 0.0  #: (time.monotonic) when stale spooled requests were last removed
        self.sweeping = False
        self.tasks: set[asyncio.Task] = set()  #: spooled requests being answered (and sweeps)
        self.busy: set[str] = set()  #: the names of spooled requests being answered

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
        try:
            if self.app is not None:
                self._open_spool()
        except OSError as e:  # (the socket still serves: clients that find no bell use it)
            log.warning("no request spool at %s: %s", self.spool, e)

    def _open_spool(self) -> None:
        """The spool and its bell: made where missing; ones this user owns are reused (their old
        requests removed); anything else at their names is an error."""
        me = os.geteuid()
        try:
            os.mkdir(self.spool, 0o700)
        except FileExistsError:
            pass
        fd = os.open(self.spool, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if st.st_uid != me:
                raise OSError(f"{self.spool} belongs to uid {st.st_uid}, not to this controller's")
            try:  # (made before others may add files: nobody can put a file of theirs at its name)
                os.mkfifo(BELL, 0o600, dir_fd=fd)
            except FileExistsError:
                pass
            os.fchmod(fd, 0o1733)  # anyone may add a file, nobody list or remove another's
            bell = os.open(BELL, os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            bst = os.fstat(bell)
            if not stat.S_ISFIFO(bst.st_mode) or bst.st_uid != me:
                os.close(bell)
                raise OSError(f"{self.spool}/{BELL} is not this controller's FIFO")
            os.fchmod(bell, 0o622)  # (read and write: the bell never reads as ended)
        except BaseException:
            os.close(fd)
            raise
        self.spool_fd, self.bell_fd = fd, bell
        self._sweep(STALE)  # (not younger ones: a client may be writing its request as we start)
        asyncio.get_running_loop().add_reader(bell, self._ring)

    def _sweep(self, age: float) -> None:
        """What is in the spool (requests whose client died before ringing, and whatever else a user
        put there) changed over `age` seconds ago (st_ctime, which its owner cannot set) removed, in
        a thread (the spool may hold many), one sweep at a time; what cannot be removed (a directory
        nested too deep) is left and the others go."""
        self.swept = time.monotonic()
        if self.sweeping:
            return
        self.sweeping = True
        fd = self.spool_fd

        def sweep() -> None:
            now = _now()
            try:
                names = os.listdir(fd)
            except OSError:
                return
            for name in names:
                if name == BELL:
                    continue
                try:
                    st = os.lstat(name, dir_fd=fd)
                    if now - st.st_ctime < age:
                        continue
                    if stat.S_ISDIR(st.st_mode):  # (fd-based: no link inside leads it elsewhere)
                        shutil.rmtree(name, dir_fd=fd)
                    else:
                        os.unlink(name, dir_fd=fd)
                except Exception:  # noqa: BLE001, S112 - the next entry still goes
                    continue

        def done(_t: asyncio.Future) -> None:
            self.sweeping = False
            self.tasks.discard(_t)
        t = asyncio.get_running_loop().run_in_executor(None, sweep)
        self.tasks.add(t)
        t.add_done_callback(done)

    def _ring(self) -> None:
        """The bell rang: each complete line names a spooled request (its last NAME_LEN characters,
        so a stray write without a newline spoils no one else's). At most RING_MAX names a read,
        each once, none already being answered: a user who floods the bell slows the spool (clients
        then withdraw and use the socket), not the controller."""
        try:
            got = os.read(self.bell_fd, RING_MAX * (NAME_LEN + 1))
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            log.warning("the request spool's bell failed (%s): clients use the socket", e)
            self._close_spool()
            return
        *lines, rest = (self.rung + got).split(b"\n")
        self.rung = rest[-NAME_LEN:]
        for name in {line[-NAME_LEN:].decode("latin-1") for line in lines}:
            if len(name) == NAME_LEN and _HEX.issuperset(name) and name not in self.busy:
                taken = self._take(name)
                if taken is not None:
                    self.busy.add(name)
                    t = asyncio.create_task(self._spooled(name, *taken))
                    self.tasks.add(t)
                    t.add_done_callback(self.tasks.discard)
        if time.monotonic() - self.swept > STALE:
            self._sweep(STALE)

    def _take(self, name: str) -> tuple[bytes, int, int] | None:
        """A spooled request taken: (the request, its user, its answer FIFO's descriptor) and counted
        against its user; None when there is none to serve (withdrawn, refused: the FIFO closed
        with nothing written, and the client asks by the socket). Everything is checked before
        the request is read (at most SPOOL_MAX bytes)."""
        d = self.spool_fd
        try:
            if not stat.S_ISREG(os.stat(name + ".req", dir_fd=d, follow_symlinks=False).st_mode):
                return None  # (no device or FIFO is opened: the owner's swapping it in now is their own loss)
            req = os.open(name + ".req", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                          dir_fd=d)
        except OSError:
            return None  # (withdrawn, or never there)
        out, taken = None, None
        try:
            os.unlink(name + ".req", dir_fd=d)  # taken, unless the client withdrew it first
            st = os.fstat(req)
            try:
                out = os.open(name + ".out", os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC,
                              dir_fd=d)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(name + ".out", dir_fd=d)
            ost = os.fstat(out)
            uid = st.st_uid
            # The owner of a file is who made it only if nobody else could have written it or moved
            # it here: a request of one link (not linked in from elsewhere) that only its owner may
            # read or write, and a FIFO of the same owner that only they may open (another user can
            # move such files of theirs into the spool, but cannot have written the request nor read
            # the answer)
            if stat.S_ISREG(st.st_mode) and st.st_nlink == 0 and not stat.S_IMODE(st.st_mode) & 0o077 and \
                    0 < st.st_size <= SPOOL_MAX and \
                    stat.S_ISFIFO(ost.st_mode) and ost.st_uid == uid and not stat.S_IMODE(ost.st_mode) & 0o077 and \
                    self.open.get(uid, 0) < PER_USER and sum(self.open.values()) < TOTAL:
                data = os.read(req, st.st_size)
                if len(data) == st.st_size:
                    taken = data, uid, out
                    self.open[uid] = self.open.get(uid, 0) + 1
        except OSError:  # (the client is gone: nobody reads its FIFO; or it withdrew)
            pass
        finally:
            os.close(req)
            if taken is None and out is not None:
                os.close(out)  # (an answer of nothing: the client asks by the socket)
        return taken

    async def _spooled(self, name: str, data: bytes, uid: int, out: int) -> None:
        """One spooled request, taken, served as its owner's, its answer written to its FIFO."""
        try:
            await self._serve(data, uid, out)
        except Exception:  # noqa: BLE001 - whatever a request does, the controller goes on
            log.exception("a spooled request failed")
        finally:
            self.busy.discard(name)
            self.open[uid] -= 1
            if not self.open[uid]:
                del self.open[uid]

    async def _serve(self, data: bytes, uid: int, out: int) -> None:
        """A spooled request (HTTP/1.1, read by h11) handed to the controller's app as `uid`'s (a
        one-time token, as for a relayed connection), and its answer written to FIFO `out` (closed
        after): straight while the FIFO takes it, through a pipe transport once it is full."""
        answer = _Answer(out)
        try:
            req, body = _parse(data)
            if req is None:
                return  # (not a whole request: an answer of nothing)
            token = secrets.token_hex(16)
            target, _, query = bytes(req.target).partition(b"?")
            mark = HEADER.lower().encode()
            headers = [(mark, token.encode())] + [(bytes(k), bytes(v)) for k, v in req.headers if bytes(k) != mark]
            scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
                     "server": self.upstream, "client": None, "scheme": "http",
                     "method": req.method.decode("ascii"), "root_path": "", "path": unquote(target.decode("latin-1")),
                     "raw_path": target, "query_string": query, "headers": headers}

            async def disconnect() -> dict:
                await answer.gone.wait()
                return {"type": "http.disconnect"}

            self.uids[token] = uid
            answer.served = True
            try:
                if self.fast is None or not await self.fast(scope, body, answer.send):
                    await self.app(scope, replaying(body, disconnect), answer.send)
            finally:
                self.uids.pop(token, None)
        finally:
            await answer.close()

    def _close_spool(self) -> None:
        if self.bell_fd is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self.bell_fd)
            os.close(self.bell_fd)
        if self.spool_fd is not None:
            os.close(self.spool_fd)
        self.spool_fd = self.bell_fd = None

    async def stop(self) -> None:
        self._close_spool()  # (the bell stays: a client finds nobody reading it and uses the socket)
        for t in list(self.tasks):
            t.cancel()
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


def _parse(data: bytes) -> tuple[h11.Request | None, bytes]:
    """A whole HTTP/1.1 request read by h11: (its head, its body); (None, b"") when it is not one."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_FIRST_LINE)
    try:
        conn.receive_data(data)
        conn.receive_data(b"")
        req = conn.next_event()
        if not isinstance(req, h11.Request):
            return None, b""
        body = []
        while True:
            ev = conn.next_event()
            if isinstance(ev, h11.Data):
                body.append(bytes(ev.data))
            elif isinstance(ev, h11.EndOfMessage):
                return req, b"".join(body)
            else:
                return None, b""
    except h11.RemoteProtocolError:
        return None, b""


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


def _head(status: int, headers: list) -> bytes:
    """An HTTP/1.1 answer's head; it ends the connection (the FIFO's end is the answer's)."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    if not any(bytes(k).lower() == b"connection" for k, _ in headers):
        headers = [*headers, (b"connection", b"close")]
    return f"HTTP/1.1 {status} {phrase}\r\n".encode() + b"".join(
        bytes(k) + b": " + bytes(v) + b"\r\n" for k, v in headers) + b"\r\n"


class _Answer:
    """The ASGI `send` of a spooled request: the answer as HTTP/1.1 (ended by the FIFO's end) on `fd`."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pipe: asyncio.WriteTransport | None = None
        self.sink: _Sink | None = None
        self.gone = asyncio.Event()  #: the client stopped reading
        self.head = b""
        self.served = False  #: the request was handed to the app (an answer of nothing is then a 500)
        self.sent = False  #: the answer's head was written

    async def send(self, msg: dict) -> None:
        if msg["type"] == "http.response.start":
            self.head = _head(msg["status"], list(msg.get("headers", ())))
        elif msg["type"] == "http.response.body":
            self.sent = True
            await self._write(self.head + msg.get("body", b""))
            self.head = b""

    async def _write(self, data: bytes) -> None:
        if self.gone.is_set() or not data:
            return
        if self.pipe is None:
            try:
                n = os.write(self.fd, data)
            except BlockingIOError:
                n = 0
            except OSError:  # (the client went away)
                self.gone.set()
                return
            if n == len(data):
                return
            data = data[n:]
            loop = asyncio.get_running_loop()
            self.pipe, self.sink = await loop.connect_write_pipe(_Sink, os.fdopen(self.fd, "wb", buffering=0))
            self.sink.gone = self.gone
        self.pipe.write(data)
        await self._drained(self.sink.writable)

    async def _drained(self, event: asyncio.Event) -> None:
        """Waits for `event` (the FIFO taking more, or its end) at most IDLE seconds: a client that
        stops reading is given up (its descriptor closed, what was buffered for it dropped)."""
        try:
            await asyncio.wait_for(event.wait(), IDLE)
        except asyncio.TimeoutError:
            self.gone.set()
            self.pipe.abort()

    async def close(self) -> None:
        """The answer's end: written whole (within IDLE seconds of the client's last read), then closed.
        A request the app took and gave no answer to (it failed after its answer's head, or the
        controller stops) is answered 500, never with nothing: its client would send it again."""
        if self.served and not self.sent:
            self.sent = True
            body = b'{"detail":{"error":"the controller gave no answer to the request"}}'
            with contextlib.suppress(OSError, RuntimeError):
                await self._write(_head(500, [(b"content-type", b"application/json"),
                                              (b"content-length", str(len(body)).encode())]) + body)
        if self.pipe is None:
            os.close(self.fd)
            return
        self.pipe.close()  # (what is buffered is written first: its end is the connection's loss)
        if not self.gone.is_set():
            await self._drained(self.gone)


class _Sink(asyncio.Protocol):
    """A spooled request's answer FIFO: `writable` is clear while its buffer is full."""

    def __init__(self) -> None:
        self.writable = asyncio.Event()
        self.writable.set()
        self.gone: asyncio.Event | None = None

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.writable.set()
        if self.gone is not None:
            self.gone.set()
