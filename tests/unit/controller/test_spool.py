"""The controller's request spool (controller/spool.py) on its own, with the real client (cli/http.py
`_spooled`): who a spooled request is, what is no request, each user's bell, what is left in the spool,
and one user's flood against another user's request."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from starlette.requests import Request

from slurmlet.cli import http
from slurmlet.common import wire
from slurmlet.controller import gate, spool
from slurmlet.nodeagent import identity

ME = os.getuid()
OTHER = 65534  #: another user of the host (nobody), whose client runs in a child made that user (root only)
STRANGER = 12345  #: a uid files are given to (root only)
ROOT = os.geteuid() == 0
LISTEN = ("127.0.0.1", 1)


@pytest.fixture
def where(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The spool's path, named to the client, in a folder another user can reach (tmp_path is 0700)."""
    base = Path(tempfile.mkdtemp(prefix="slurmlet-spool-"))
    base.chmod(0o755)
    monkeypatch.setenv(wire.SPOOL_ENV, str(base / "spool"))
    yield base / "spool"
    shutil.rmtree(base, ignore_errors=True)


class App:
    """An ASGI app standing in for the controller's: each request's scope (and body) is recorded and
    put in `arrived`; it answers "ok", 300 kB for /long; /hold waits for `release` first, /park waits
    for it parked (gate.parked, as a long-poll does)."""

    def __init__(self) -> None:
        self.seen: list[dict] = []
        self.arrived: asyncio.Queue[dict] = asyncio.Queue()
        self.release = asyncio.Event()

    async def __call__(self, scope, receive, send) -> None:
        msg = await receive()
        got = dict(scope, body=msg["body"])
        self.seen.append(got)
        self.arrived.put_nowait(got)
        if scope["path"] == "/hold":
            await self.release.wait()
        elif scope["path"] == "/park":
            passed = gate.Passed(None, work=scope[gate.WORK])
            async with gate.parked(Request({**scope, gate.PASSED: passed})):
                await self.release.wait()
        body = b"x" * 300_000 if scope["path"] == "/long" else b"ok"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": body})

    async def arrival(self) -> dict:
        """The next request to reach the app."""
        return await asyncio.wait_for(self.arrived.get(), 30)


@contextlib.asynccontextmanager
async def started(path: Path, app: object) -> AsyncIterator[spool.Spool]:
    s = spool.Spool(str(path), app, LISTEN)
    await s.start()
    try:
        yield s
    finally:
        await s.stop()


def _request(path: str = "/api/v1/jobs", host: str = "127.0.0.1:1", body: bytes = b"") -> bytes:
    method = "POST" if body else "GET"
    return f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


async def ask(request: bytes) -> bytes | None:
    """The real client's answer, from a thread (it blocks; the spool runs in this loop)."""
    return await asyncio.to_thread(http._spooled, request, 30.0)


def _spooled_hex(request: bytes) -> str:
    got = http._spooled(request, 30.0)
    return "-" if got is None else got.hex()


async def ask_as(uid: int, request: bytes) -> bytes | None:
    """The real client's answer to a request of user `uid`'s, from a child forked and made that user
    as a job's own code is (the test's Python may stand where that user cannot read)."""
    got = await asyncio.to_thread(identity.run_as, {"uid": uid}, _spooled_hex, request)
    return None if got == "-" else bytes.fromhex(got)


async def until(cond: Callable[[], object], timeout: float = 30.0) -> None:
    """Waits for what the spool does on its own (no client waits on it): a poll with a deadline."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def swept(s: spool.Spool) -> None:
    """Once the spool's sweep (a thread) is over."""
    if s.tasks:
        await asyncio.wait(set(s.tasks), timeout=30)
    assert not s.sweeping


def _write(bell: Path, data: bytes) -> None:
    """`data` written into `bell` (a FIFO someone reads), in one write."""
    fd = os.open(bell, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _ring(bell: Path, *names: str) -> None:
    """`bell` rung with these names (each and a newline), in one write."""
    _write(bell, "".join(f"{n}\n" for n in names).encode())


def _flood(bell: Path, line: bytes) -> None:
    """`bell` written full of `line`."""
    with contextlib.suppress(BlockingIOError):
        while True:
            _write(bell, line * 64)


def _hand(where: Path, name: str, request: bytes = _request(), mode: int = 0o600, out_mode: int = 0o600) -> int:
    """A request put in the spool by hand (its file `mode`, its answer FIFO `out_mode`), the FIFO
    opened for reading: that descriptor."""
    req = where / f"{name}.req"
    req.write_bytes(request)
    req.chmod(mode)
    os.mkfifo(where / f"{name}.out")
    (where / f"{name}.out").chmod(out_mode)
    return os.open(where / f"{name}.out", os.O_RDONLY | os.O_NONBLOCK)


def _drain(fd: int) -> bytes:
    """What a FIFO holds, up to its end (no writer left), then closed."""
    got = []
    try:
        while b := os.read(fd, 65536):
            got.append(b)
    finally:
        os.close(fd)
    return b"".join(got)


def test_a_spooled_request_is_served_as_its_owner_and_answered_through_its_fifo(where: Path):
    async def main() -> None:
        app = App()
        async with started(where, app):
            assert stat.S_IMODE(where.lstat().st_mode) == 0o1733 and where.lstat().st_uid == os.geteuid()
            bell = where / wire.BELL
            assert stat.S_ISFIFO(bell.lstat().st_mode) and stat.S_IMODE(bell.lstat().st_mode) == 0o622
            answer = await ask(_request())
            assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"\r\n\r\nok"), answer
            got = app.seen[0]
            assert (got["method"], got["path"], got["body"], got[gate.LOCAL]) == ("GET", "/api/v1/jobs", b"", ME)
            assert sorted(os.listdir(where)) == [wire.BELL, f"{wire.BELL}.{ME}"]  # the request's files gone
            # a long answer (more than a FIFO holds) comes whole; a body comes as sent
            long = _request("/long?x=1", body=b"hello")
            assert (await ask(long)).endswith(b"\r\n\r\n" + b"x" * 300_000)
            got = app.seen[1]
            assert (got["path"], got["query_string"], got["body"]) == ("/long", b"x=1", b"hello")
            # a stray write without a newline into a bell spoils nobody's request that follows it
            for b in (bell, where / f"{wire.BELL}.{ME}"):
                _write(b, b"junk" + b"a" * 40)
            assert (await ask(_request())).endswith(b"ok")
            # what is no whole request gets an answer of nothing (the client then asks by TCP)
            assert await ask(b"GET / HTTP/1.1\r\nHost: 127.0.0.1:1\r\nContent-Length: 9\r\n\r\nab") is None
            assert await ask(b"\x00\xff garbage") is None
            assert len(app.seen) == 3 and sorted(os.listdir(where)) == [wire.BELL, f"{wire.BELL}.{ME}"]
            if ROOT:  # another user's spool: never used (that user would read what we send)
                os.chown(where, STRANGER, STRANGER)
                assert await ask(_request()) is None
                assert len(app.seen) == 3 and sorted(os.listdir(where)) == [wire.BELL, f"{wire.BELL}.{ME}"]
                os.chown(where, 0, 0)
    asyncio.run(main())


def test_files_others_could_have_written_or_read_are_no_request(where: Path):
    """Another user may move a user's files into the spool (a rename needs only the folder they stand
    in) or link them there: a request file of another link, one that group or others may read or
    write, an answer FIFO they may open or of another owner, is refused (its FIFO closed with nothing
    written); a .req that is no regular file is not even opened. The client makes both 0600 whatever
    its umask."""
    async def main() -> None:
        app = App()
        async with started(where, app):
            outs: dict[str, int] = {}
            for n, (mode, out_mode) in enumerate([(0o644, 0o600), (0o640, 0o600), (0o620, 0o600),
                                                  (0o600, 0o660), (0o600, 0o606)]):
                outs[f"{n}" * 32] = _hand(where, f"{n}" * 32, mode=mode, out_mode=out_mode)
            elsewhere = where.parent / "notes"  # (a file of the user's, linked in by someone else)
            elsewhere.write_bytes(_request())
            elsewhere.chmod(0o600)
            outs["a" * 32] = _hand(where, "a" * 32)
            (where / f"{'a' * 32}.req").unlink()
            os.link(elsewhere, where / f"{'a' * 32}.req")
            outs["b" * 32] = _hand(where, "b" * 32, request=b"")  # (empty)
            outs["c" * 32] = _hand(where, "c" * 32, request=_request(body=b"x" * wire.SPOOL_MAX))  # (too large)
            plain = "d" * 32  # an answer path that is a plain file: nothing written to it
            (where / f"{plain}.req").write_bytes(_request())
            (where / f"{plain}.req").chmod(0o600)
            (where / f"{plain}.out").write_bytes(b"")
            kept = os.open(where / f"{plain}.out", os.O_RDONLY)
            fifo, folder = "e" * 32, "f" * 32  # a .req that is a FIFO, or a folder: not opened
            os.mkfifo(where / f"{fifo}.req", 0o600)
            (where / f"{folder}.req").mkdir()
            names = [*outs, plain, fifo, folder]
            if ROOT:  # a FIFO of another owner's; a request of another owner's (not who reads its answer)
                outs["1" * 31 + "0"] = _hand(where, "1" * 31 + "0")
                os.chown(where / f"{'1' * 31 + '0'}.out", STRANGER, STRANGER)
                outs["1" * 31 + "2"] = _hand(where, "1" * 31 + "2")
                os.chown(where / f"{'1' * 31 + '2'}.req", STRANGER, STRANGER)
                names += ["1" * 31 + "0", "1" * 31 + "2"]
            _ring(where / wire.BELL, *names)
            old = os.umask(0o277)
            try:  # (rung after them into the same bell: answered once they were dealt with)
                assert (await ask(_request())).endswith(b"ok")
            finally:
                os.umask(old)
            assert len(app.seen) == 1
            for name, out in outs.items():
                assert _drain(out) == b"" and not os.path.lexists(where / f"{name}.req"), name
            assert os.fstat(kept).st_size == 0 and not os.path.lexists(where / f"{plain}.out")
            os.close(kept)
            assert stat.S_ISFIFO(os.lstat(where / f"{fifo}.req").st_mode) and (where / f"{folder}.req").is_dir()
            assert elsewhere.read_bytes() == _request()
    asyncio.run(main())


def test_old_spooled_requests_are_removed_at_start_and_the_bells_are_kept(where: Path, monkeypatch):
    """At start, what changed over STALE seconds ago (st_ctime, which its owner cannot set: an mtime
    in the future keeps nothing) goes, folders too, but the bells; what cannot be removed (a folder
    nested deeper than rmtree goes) is left and the rest still goes. Younger files stay (a client
    may be writing its request as the controller starts)."""
    async def main() -> None:
        where.mkdir()
        os.mkfifo(where / wire.BELL, 0o600)
        os.mkfifo(where / f"{wire.BELL}.{ME}", 0o600)
        (where / ("3" * 32 + ".req")).write_bytes(b"left by a client that died")
        os.mkfifo(where / ("3" * 32 + ".out"))
        (where / f"{wire.BELL}.x").write_bytes(b"")  # (no bell's name)
        (where / "junk").mkdir()  # (anything a user put there: a folder too)
        (where / "junk" / "inside").write_bytes(b"")
        (where / "future").write_bytes(b"")
        os.utime(where / "future", (4102444800, 4102444800))  # (2100)
        (where / "aaa_deep").mkdir()  # (rmtree fails on it below, as on a folder nested too deep)
        rmtree = spool.shutil.rmtree

        def failing(name, **kw) -> None:
            if name == "aaa_deep":
                raise RecursionError("maximum recursion depth exceeded")
            rmtree(name, **kw)
        monkeypatch.setattr(spool.shutil, "rmtree", failing)
        (where / "zzz").write_bytes(b"")
        later = time.time() + 2 * spool.STALE
        monkeypatch.setattr(spool, "_now", lambda: later)
        app = App()
        async with started(where, app) as s:
            await swept(s)
            assert sorted(os.listdir(where)) == ["aaa_deep", wire.BELL, f"{wire.BELL}.{ME}"]
            monkeypatch.setattr(spool, "_now", time.time)
            fresh = where / ("4" * 32 + ".req")
            fresh.write_bytes(b"a request being written as the controller sweeps")
            s._sweep(spool.STALE)
            await swept(s)
            assert fresh.exists()
            fresh.unlink()
            assert (await ask(_request())).endswith(b"ok")  # (the bells still rung)
    asyncio.run(main())



def test_a_sweep_going_on_as_the_spool_stops_removes_nothing_elsewhere(where: Path, monkeypatch):
    """The sweep runs in a thread: when the spool stops meanwhile (its descriptor closed, and that
    number given to another folder's), what is left of the sweep still removes only what is in the
    spool."""
    names = [f"d{n}" for n in range(8)]
    elsewhere = where.parent / "elsewhere"
    for folder in (where, elsewhere):
        folder.mkdir()
        for name in names:
            (folder / name).mkdir()
    entered, go = threading.Event(), threading.Event()
    rmtree = spool.shutil.rmtree

    def held(name, **kw) -> None:  # (the first removal waits for `go`)
        if not entered.is_set():
            entered.set()
            go.wait(30)
        rmtree(name, **kw)
    monkeypatch.setattr(spool.shutil, "rmtree", held)
    later = time.time() + 2 * spool.STALE
    monkeypatch.setattr(spool, "_now", lambda: later)

    async def main() -> None:
        s = spool.Spool(str(where), App(), LISTEN)
        await s.start()
        assert await asyncio.to_thread(entered.wait, 30)
        number = s.fd
        await s.stop()
        other = os.open(elsewhere, os.O_RDONLY | os.O_DIRECTORY)  # (the next opened may well get its number)
        if other != number:
            os.dup2(other, number)
            os.close(other)
        go.set()
        await asyncio.get_running_loop().shutdown_default_executor()  # (the sweep's thread ended)
        os.close(number)
        assert sorted(os.listdir(elsewhere)) == names
        assert sorted(os.listdir(where)) == [wire.BELL]
    asyncio.run(main())


def test_a_user_gets_a_bell_of_their_own_whatever_stood_at_its_name(where: Path, monkeypatch):
    """After a user's first request (through the shared bell) the controller makes `bell.UID`, a FIFO
    of that user's that only they may write, and their client rings it from then on; whatever stood
    at its name (a file, a folder, a FIFO others may write or of another owner) is replaced; a
    controller started again reads the users' bells it finds."""
    mine = where / f"{wire.BELL}.{ME}"

    @contextlib.contextmanager
    def own_bell_only() -> Iterator[None]:
        """The shared bell out of the clients' reach (its name moved) meanwhile."""
        os.rename(where / wire.BELL, where.parent / "aside")
        try:
            yield
        finally:
            os.rename(where.parent / "aside", where / wire.BELL)

    async def main() -> None:
        impostors: list[Callable[[], None]] = [
            lambda: (mine.mkdir(), (mine / "inside").write_bytes(b"")),
            lambda: os.mkfifo(mine, 0o620),
            lambda: os.mkfifo(mine, 0o606)]
        if ROOT:
            impostors += [lambda: (os.mkfifo(mine, 0o600), os.chown(mine, STRANGER, STRANGER)),
                          lambda: (mine.write_bytes(b""), os.chown(mine, STRANGER, STRANGER))]
        for n, impostor in enumerate([None, *impostors]):
            app = App()
            async with started(where, app):
                if impostor is not None:
                    impostor()
                with own_bell_only():
                    assert await ask(_request()) is None  # (no bell of its own: nothing to ring)
                assert (await ask(_request())).endswith(b"ok")  # through the shared bell
                st = mine.lstat()
                assert stat.S_ISFIFO(st.st_mode) and st.st_uid == ME and stat.S_IMODE(st.st_mode) == 0o600, n
                with own_bell_only():
                    assert (await ask(_request())).endswith(b"ok")  # through its own
                assert len(app.seen) == 2
            mine.unlink()
        # at restart the bells found are read again (and one that is not a FIFO replaced)
        async with started(where, App()):
            assert (await ask(_request())).endswith(b"ok")
            if ROOT:
                assert (await ask_as(OTHER, _request())).endswith(b"ok")
                other = where / f"{wire.BELL}.{OTHER}"
                assert other.lstat().st_uid == OTHER and stat.S_IMODE(other.lstat().st_mode) == 0o600
        mine.unlink()
        mine.write_bytes(b"")
        app = App()
        async with started(where, app):
            st = mine.lstat()
            assert stat.S_ISFIFO(st.st_mode) and st.st_uid == ME and stat.S_IMODE(st.st_mode) == 0o600
            with own_bell_only():
                assert (await ask(_request())).endswith(b"ok")
                if ROOT:
                    assert (await ask_as(OTHER, _request())).endswith(b"ok")
            assert [r[gate.LOCAL] for r in app.seen] == ([ME, OTHER] if ROOT else [ME])
    asyncio.run(main())


def test_a_user_at_per_user_requests_waits_and_another_user_is_served(where: Path, monkeypatch):
    """Past PER_USER requests at work a user's next is not taken (its client withdraws it and asks by
    TCP) while another user's is served; a request parked (a long wait) does not count."""
    monkeypatch.setattr(spool, "PER_USER", 2)

    async def main() -> None:
        app = App()
        async with started(where, app):
            held = [asyncio.create_task(ask(_request("/hold")))]
            await app.arrival()
            held.append(asyncio.create_task(ask(_request("/park"))))
            await app.arrival()
            held.append(asyncio.create_task(ask(_request("/hold"))))  # (the parked one does not count)
            await app.arrival()
            assert await ask(_request("/next")) is None  # two at work: withdrawn
            if ROOT:
                assert (await ask_as(OTHER, _request("/other"))).endswith(b"ok")
            assert [r["path"] for r in app.seen] == ["/hold", "/park", "/hold", *(["/other"] if ROOT else [])]
            assert not any(t.done() for t in held)
            app.release.set()
            assert all(a.endswith(b"ok") for a in await asyncio.gather(*held))
            assert (await ask(_request("/next"))).endswith(b"ok")
    asyncio.run(main())


def test_a_bell_full_of_nonsense_is_paused_and_others_are_served(where: Path, monkeypatch):
    """A bell that named no request it could take is not read for PAUSE seconds: a user who fills
    their bell with nonsense waits (their requests are withdrawn), another user is served; the shared
    bell full of nonsense does not stop a user who rings their own."""
    monkeypatch.setattr(spool, "PAUSE", 3600.0)  # (paused for the whole test)

    async def main() -> None:
        nonsense = [os.urandom(16).hex().encode() + b"\n", b"\xff" * 40 + b"\n", b"../../etc/passwd\n"]
        async with started(where, App()):
            assert (await ask(_request())).endswith(b"ok")  # (the user's own bell made)
            for line in nonsense:
                _flood(where / f"{wire.BELL}.{ME}", line)
            assert await ask(_request()) is None  # behind the nonsense (or not rung: the bell is full)
            if ROOT:
                assert (await ask_as(OTHER, _request())).endswith(b"ok")
        async with started(where, App()):  # (again: no bell paused)
            for line in nonsense:
                _flood(where / wire.BELL, line)
            assert (await ask(_request())).endswith(b"ok")
            if ROOT:
                assert (await ask_as(OTHER, _request())).endswith(b"ok")  # (its bell made above)
    asyncio.run(main())


def test_a_client_that_stops_reading_is_given_up_and_its_user_served_again(where: Path, monkeypatch):
    """A long answer nobody reads: its FIFO is closed IDLE seconds after the client last read, and
    the request's work ends (its user's next request is taken)."""
    monkeypatch.setattr(spool, "IDLE", 0.5)
    monkeypatch.setattr(spool, "PER_USER", 1)

    async def main() -> None:
        async with started(where, App()) as s:
            name = "9" * 32
            out = _hand(where, name, _request("/long"))
            _ring(where / wire.BELL, name)
            await until(lambda: s.busy)
            await until(lambda: not s.busy)  # (given up)
            assert 0 < len(_drain(out)) < 300_000  # what the FIFO held, then its end
            assert (await ask(_request())).endswith(b"ok")
    asyncio.run(main())


def test_a_request_the_app_took_and_did_not_answer_is_a_500_and_another_controllers_a_421(where: Path):
    """The app failed after its answer's head, or sent no body: the client gets a 500, never an
    answer of nothing (which it would send again by TCP). A request whose Host names another
    controller is answered 421 without reaching the app (its client asks that one by TCP)."""
    async def main() -> None:
        seen = []

        async def app(scope, receive, send) -> None:
            await receive()
            seen.append(scope["path"])
            if scope["path"] == "/ok":
                await send({"type": "http.response.start", "status": 200, "headers": []})
                await send({"type": "http.response.body", "body": b"ok"})
                return
            await send({"type": "http.response.start", "status": 200, "headers": []})
            if scope["path"] == "/fail":
                raise RuntimeError("after the head")
        async with started(where, app) as s:
            for path in ("/fail", "/nobody"):
                got = await ask(_request(path))
                assert got.startswith(b"HTTP/1.1 500 ") and b"gave no answer" in got, got
            for host in ("elsewhere:1", "127.0.0.1:2", "127.0.0.1", "10.1.2.3:1"):
                got = await ask(_request("/ok", host=host))
                assert got.startswith(b"HTTP/1.1 421 "), (host, got)
                assert not s.serves(host)
            for host in ("127.0.0.1:1", "localhost:1", "[::1]:1", "LOCALHOST:1"):
                assert (await ask(_request("/ok", host=host))).endswith(b"ok"), host
            assert seen == ["/fail", "/nobody", "/ok", "/ok", "/ok", "/ok"]
    asyncio.run(main())
