"""The controller's request spool on this host (`slurmlet controller --spool DIR`; `slurmlet up`
makes it): requests whose sender the kernel names, so the CLI neither signs them nor loads a hash
library or the `socket` module to send them (milliseconds of every command).

The spool is a directory (root's or the controller user's, mode 1733: anyone may add a file, nobody
but its owner may remove one, nobody but the controller may list it). A client writes its whole
request to `NAME.req` (0600, its own), makes a FIFO `NAME.out` (0600) to read the answer from, and
writes `NAME` and a newline to a bell: its own, `bell.UID` (a FIFO of its uid's that only it may
write, which the controller makes on that user's first request), else the shared `bell`. NAME is 32
random hex digits, which only the client and the controller ever see. The controller takes the
request (unlinks `NAME.req`: of its unlink and the client's, who withdraws a request not taken within
common/wire.WITHDRAW seconds, exactly one succeeds), and the request is the user who owns the file: the
kernel says who made it. It is handed to the controller's app in this process (read by h11; its scope
carries the uid as gate.LOCAL, which no TCP request can) and the answer written to `NAME.out`.
Postfix's maildrop and pickup FIFO work so.

One user's flood cannot slow the others: a user's bell is not read while that user has PER_USER
requests at work (gate.parked: a long wait does not count), a request of theirs in the shared bell
then is left for its client to withdraw, and a bell that named no request it could take is not read
for PAUSE seconds (a bell written full of nonsense costs the controller a read every PAUSE).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import socket
import stat
import time
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

import h11

from slurmlet.common import wire

from . import gate

log = logging.getLogger("slurmlet.controller")

IDLE = 75.0  #: seconds a spooled request's answer may wait for its client to read more of it
PER_USER = 4  #: requests of one user at work at once (others wait in that user's bell)
TOTAL = 512  #: requests of all users at once (each holds two descriptors)
PAUSE = 0.02  #: seconds a bell that named no request it could take is not read
RING_MAX = 64  #: the most names taken from the shared bell at a time
MAX_HEAD = 65536  #: the largest request head (request line and header lines)
STALE = 60.0  #: seconds after which what is in the spool is removed (a request not taken within a second is withdrawn)
_HEX = frozenset("0123456789abcdef")
_now = time.time  #: the sweep's clock


class Work:
    """A spooled request's place among its user's work in flight: held from its taking until its
    answer starts, but while it is parked (gate.parked)."""

    def __init__(self, spool: Spool, uid: int) -> None:
        self.spool = spool
        self.uid = uid
        self.held = True
        self.ended = False

    def park(self) -> None:
        if self.held:
            self.held = False
            self.spool.release(self.uid)

    def resume(self) -> None:
        if not self.held and not self.ended:
            self.held = True
            self.spool.inflight[self.uid] = self.spool.inflight.get(self.uid, 0) + 1

    def done(self) -> None:
        self.park()
        self.ended = True


class _Bell:
    """A bell the controller reads: its descriptor, its owner (None: the shared bell), the last line
    read while it has no newline yet, whether it is being read, and whether it is paused (PAUSE)."""

    def __init__(self, fd: int, owner: int | None) -> None:
        self.fd = fd
        self.owner = owner
        self.rung = b""
        self.reading = False
        self.paused = False


class Spool:
    """The spool: its bells, the requests being answered and each user's work in flight."""

    def __init__(self, path: str, app: Any, listen: tuple[str, int]) -> None:
        self.path = path
        self.app = app  #: the controller's ASGI app (the gate first), which spooled requests are handed to
        self.server = ("127.0.0.1" if listen[0] in ("", "0.0.0.0") else listen[0], listen[1])
        #: the names under which clients reach this controller's listener (a spooled request meant for
        #: another controller is answered 421: its client asks that one by TCP)
        self.names = {"127.0.0.1", "localhost", "::1", self.server[0].lower(), socket.gethostname().lower()}
        self.fd: int | None = None  #: the spool, opened (names are opened relative to it)
        self.bells: dict[int | None, _Bell] = {}
        self.inflight: dict[int, int] = {}  #: uid -> its requests at work
        self.swept = 0.0  #: (time.monotonic) when stale spooled requests were last removed
        self.sweeping = False
        self.tasks: set[asyncio.Future] = set()  #: spooled requests being answered (and sweeps)
        self.busy: set[str] = set()  #: the names of spooled requests being answered

    def serves(self, host: str) -> bool:
        """Whether a request's Host (the controller its client meant) is this controller."""
        name, _, port = host.rpartition(":")
        return port == str(self.server[1]) and name.strip("[]").lower() in self.names

    async def start(self) -> None:
        """The spool and its shared bell: made where missing; ones this user owns are reused (their
        old requests removed, the users' bells found there read again); anything else at their names
        is an error."""
        me = os.geteuid()
        with contextlib.suppress(FileExistsError):
            os.mkdir(self.path, 0o700)
        fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if st.st_uid != me:
                raise OSError(f"{self.path} belongs to uid {st.st_uid}, not to this controller's")
            try:  # (made before others may add files: nobody can put a file of theirs at its name)
                os.mkfifo(wire.BELL, 0o600, dir_fd=fd)
            except FileExistsError:
                pass
            os.fchmod(fd, 0o1733)  # anyone may add a file, nobody list or remove another's
            bell = os.open(wire.BELL, os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            bst = os.fstat(bell)
            if not stat.S_ISFIFO(bst.st_mode) or bst.st_uid != me:
                os.close(bell)
                raise OSError(f"{self.path}/{wire.BELL} is not this controller's FIFO")
            os.fchmod(bell, 0o622)  # (read and write: the bell never reads as ended)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        self._read(_Bell(bell, None))
        for name in os.listdir(fd):
            owner = name[len(wire.BELL) + 1:]
            if name.startswith(wire.BELL + ".") and owner.isdigit():
                self._adopt(int(owner))
        self._sweep(STALE)  # (not younger ones: a client may be writing its request as we start)

    def _read(self, bell: _Bell) -> None:
        """Read `bell` when it rings (again)."""
        self.bells[bell.owner] = bell
        if not bell.reading and self.fd is not None:
            bell.reading = True
            asyncio.get_running_loop().add_reader(bell.fd, self._ring, bell)

    def _hold(self, bell: _Bell) -> None:
        if bell.reading:
            bell.reading = False
            asyncio.get_running_loop().remove_reader(bell.fd)

    def _adopt(self, uid: int) -> None:
        """`uid`'s own bell, read from now on: the FIFO at its name when that is `uid`'s and theirs
        alone, else one made for them (whatever stood there removed). Only a controller running as
        root makes bells for others (its own user's it makes too)."""
        if uid in self.bells or self.fd is None or os.geteuid() not in (0, uid):
            return
        name, d = f"{wire.BELL}.{uid}", self.fd
        try:
            try:
                st = os.lstat(name, dir_fd=d)
                if not stat.S_ISFIFO(st.st_mode) or st.st_uid != uid or stat.S_IMODE(st.st_mode) & 0o077:
                    if stat.S_ISDIR(st.st_mode):
                        shutil.rmtree(name, dir_fd=d)
                    else:
                        os.unlink(name, dir_fd=d)
                    raise FileNotFoundError
            except FileNotFoundError:
                os.mkfifo(name, 0o600, dir_fd=d)  # (root's until it is given: nobody else may move it)
                os.chown(name, uid, -1, dir_fd=d, follow_symlinks=False)
            fd = os.open(name, os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=d)
        except OSError as e:
            log.warning("no bell of uid %d in the request spool: %s", uid, e)
            return
        st = os.fstat(fd)
        if not stat.S_ISFIFO(st.st_mode) or st.st_uid != uid:  # (swapped in meanwhile)
            os.close(fd)
            return
        self._read(_Bell(fd, uid))

    def release(self, uid: int) -> None:
        """One request of `uid`'s is no longer at work: their bell is read again."""
        n = self.inflight.get(uid, 0) - 1
        if n > 0:
            self.inflight[uid] = n
        else:
            self.inflight.pop(uid, None)
        bell = self.bells.get(uid)
        if bell is not None and not bell.reading and n < PER_USER and not bell.paused:
            self._read(bell)

    def _room(self, uid: int) -> bool:
        return self.inflight.get(uid, 0) < PER_USER and len(self.busy) < TOTAL

    def _sweep(self, age: float) -> None:
        """What is in the spool (requests whose client died before ringing, and whatever else a user
        put there, but the bells) changed over `age` seconds ago (st_ctime, which its owner cannot
        set) removed, in a thread (the spool may hold many), one sweep at a time; what cannot be
        removed (a directory nested too deep) is left and the others go."""
        self.swept = time.monotonic()
        if self.sweeping or self.fd is None:
            return
        self.sweeping = True
        fd = os.dup(self.fd)  # (its own: stop() may close the spool's meanwhile, and its number be reused)

        def sweep() -> None:
            now = _now()
            try:
                names = os.listdir(fd)
            except OSError:
                names = []
            for name in names:
                if name == wire.BELL or (name.startswith(wire.BELL + ".") and name[len(wire.BELL) + 1:].isdigit()):
                    continue
                try:
                    st = os.lstat(name, dir_fd=fd)
                    if now - st.st_ctime < age:
                        continue
                    if stat.S_ISDIR(st.st_mode):  # (fd-based: no link inside leads it elsewhere)
                        shutil.rmtree(name, dir_fd=fd)
                    else:
                        os.unlink(name, dir_fd=fd)
                except Exception:  # noqa: BLE001 - the next entry still goes
                    continue
            os.close(fd)

        def done(t: asyncio.Future) -> None:
            self.sweeping = False
            self.tasks.discard(t)
        t = asyncio.get_running_loop().run_in_executor(None, sweep)
        self.tasks.add(t)
        t.add_done_callback(done)

    def _ring(self, bell: _Bell) -> None:
        """A bell rang: each complete line names a spooled request (its last NAME_LEN characters, so
        a stray write without a newline spoils no one else's). A user's bell gives as many names as
        the user has room for; the shared bell RING_MAX at most. A bell that named nothing taken is
        paused."""
        if bell.owner is not None and not self._room(bell.owner):
            self._hold(bell)
            return
        room = RING_MAX if bell.owner is None else PER_USER - self.inflight.get(bell.owner, 0)
        try:
            got = os.read(bell.fd, room * (wire.NAME_LEN + 1))
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            log.warning("a bell of the request spool failed (%s): its clients go by TCP", e)
            self._hold(bell)
            self.bells.pop(bell.owner, None)
            os.close(bell.fd)
            return
        *lines, rest = (bell.rung + got).split(b"\n")
        bell.rung = rest[-wire.NAME_LEN:]
        served = 0
        for name in {line[-wire.NAME_LEN:].decode("latin-1") for line in lines}:
            if len(name) == wire.NAME_LEN and _HEX.issuperset(name) and name not in self.busy:
                taken = self._take(name, bell.owner)
                if taken is not None:
                    served += 1
                    self.busy.add(name)
                    t = asyncio.create_task(self._spooled(name, *taken))
                    self.tasks.add(t)
                    t.add_done_callback(self.tasks.discard)
        if not served:
            self._pause(bell)
        if time.monotonic() - self.swept > STALE:
            self._sweep(STALE)

    def _pause(self, bell: _Bell) -> None:
        self._hold(bell)
        bell.paused = True

        def again() -> None:
            bell.paused = False
            if self.bells.get(bell.owner) is bell and (bell.owner is None or self._room(bell.owner)):
                self._read(bell)
        asyncio.get_running_loop().call_later(PAUSE, again)

    def _take(self, name: str, owner: int | None) -> tuple[bytes, int, int] | None:
        """A spooled request taken: (the request, its user, its answer FIFO's descriptor) and counted
        against its user; None when there is none to serve (withdrawn, someone else's named in a
        user's bell, its user at PER_USER: left for its client to withdraw; refused: the FIFO closed
        with nothing written, and the client asks by TCP). Everything is checked before the request
        is read (at most wire.SPOOL_MAX bytes)."""
        d = self.fd
        try:
            if not stat.S_ISREG(os.stat(name + ".req", dir_fd=d, follow_symlinks=False).st_mode):
                return None  # (no device or FIFO is opened: the owner's swapping it in now is their own loss)
            req = os.open(name + ".req", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                          dir_fd=d)
        except OSError:
            return None  # (withdrawn, or never there)
        out, taken = None, None
        try:
            st = os.fstat(req)
            uid = st.st_uid
            if (owner is not None and uid != owner) or not self._room(uid):
                return None
            os.unlink(name + ".req", dir_fd=d)  # taken, unless the client withdrew it first
            try:  # (only a FIFO is opened: no device, nor a file, linked in at the name)
                if not stat.S_ISFIFO(os.stat(name + ".out", dir_fd=d, follow_symlinks=False).st_mode):
                    return None
                out = os.open(name + ".out", os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC,
                              dir_fd=d)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(name + ".out", dir_fd=d)
            ost = os.fstat(out)
            st = os.fstat(req)
            # The owner of a file is who made it only if nobody else could have written it or moved
            # it here: a request of one link (not linked in from elsewhere) that only its owner may
            # read or write, and a FIFO of the same owner that only they may open (another user can
            # move such files of theirs into the spool, but cannot have written the request nor read
            # the answer)
            if stat.S_ISREG(st.st_mode) and st.st_nlink == 0 and not stat.S_IMODE(st.st_mode) & 0o077 and \
                    0 < st.st_size <= wire.SPOOL_MAX and st.st_uid == uid and \
                    stat.S_ISFIFO(ost.st_mode) and ost.st_uid == uid and not stat.S_IMODE(ost.st_mode) & 0o077:
                data = os.read(req, st.st_size)
                if len(data) == st.st_size:
                    taken = data, uid, out
                    self.inflight[uid] = self.inflight.get(uid, 0) + 1
        except OSError:  # (the client is gone: nobody reads its FIFO; or it withdrew)
            pass
        finally:
            os.close(req)
            if taken is None and out is not None:
                os.close(out)  # (an answer of nothing: the client asks by TCP)
        if taken is not None and owner is None:
            self._adopt(uid)  # (its next requests ring its own bell)
        return taken

    async def _spooled(self, name: str, data: bytes, uid: int, out: int) -> None:
        """One spooled request, taken, served as its owner's, its answer written to its FIFO."""
        work = Work(self, uid)
        try:
            await self._serve(data, work, out)
        except Exception:
            log.exception("a spooled request failed")
        finally:
            self.busy.discard(name)
            work.done()

    async def _serve(self, data: bytes, work: Work, out: int) -> None:
        """A spooled request (HTTP/1.1, read by h11) handed to the controller's app as `work.uid`'s,
        and its answer written to FIFO `out` (closed after): straight while the FIFO takes it, through
        a pipe transport once it is full."""
        answer = _Answer(out)
        try:
            req, body = _parse(data)
            if req is None:
                return  # (not a whole request: an answer of nothing)
            target, _, query = bytes(req.target).partition(b"?")
            headers = [(bytes(k), bytes(v)) for k, v in req.headers]
            host = next((v for k, v in headers if k == b"host"), b"").decode("latin-1")
            answer.served = True
            if not self.serves(host):  # (meant for another controller: its client asks there by TCP)
                await answer.send({"type": "http.response.start", "status": 421, "headers": []})
                await answer.send({"type": "http.response.body", "body": b""})
                return
            scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
                     "server": self.server, "client": None, "scheme": "http",
                     "method": req.method.decode("ascii"), "root_path": "", "path": unquote(target.decode("latin-1")),
                     "raw_path": target, "query_string": query, "headers": headers,
                     gate.LOCAL: work.uid, gate.WORK: work}
            given = False

            async def receive() -> dict:
                nonlocal given
                if not given:
                    given = True
                    return {"type": "http.request", "body": body, "more_body": False}
                await answer.gone.wait()
                return {"type": "http.disconnect"}

            await self.app(scope, receive, answer.send)
        finally:
            await answer.close()

    async def stop(self) -> None:
        """Bells closed (they stay: a client finds nobody reading and goes by TCP; the next controller
        reads them again), requests being answered cancelled."""
        for bell in list(self.bells.values()):
            self._hold(bell)
            os.close(bell.fd)
        self.bells.clear()
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        for t in list(self.tasks):
            t.cancel()


def _parse(data: bytes) -> tuple[h11.Request | None, bytes]:
    """A whole HTTP/1.1 request read by h11: (its head, its body); (None, b"") when it is not one."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
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
        assert self.pipe is not None and self.sink is not None
        self.pipe.write(data)
        await self._drained(self.sink.writable)

    async def _drained(self, event: asyncio.Event) -> None:
        """Waits for `event` (the FIFO taking more, or its end) at most IDLE seconds: a client that
        stops reading is given up (its descriptor closed, what was buffered for it dropped)."""
        try:
            await asyncio.wait_for(event.wait(), IDLE)
        except TimeoutError:
            self.gone.set()
            if self.pipe is not None:
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
