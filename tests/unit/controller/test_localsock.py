"""The controller's Unix socket (controller/localsock.py) on its own: what it may replace at its
path, the mode it makes, and the connections one user may hold."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
import time
from pathlib import Path

import pytest

from slurmlet.controller import localsock


def test_it_replaces_only_a_socket_nobody_listens_on(tmp_path: Path):
    async def main() -> None:
        path = tmp_path / "ctl.sock"
        path.write_text("not a socket")
        with pytest.raises(OSError, match="not a socket"):
            await localsock.Local(str(path), ("127.0.0.1", 1)).start()
        assert path.read_text() == "not a socket"
        path.unlink()
        live = socket.socket(socket.AF_UNIX)
        live.bind(str(path))
        live.listen()
        with pytest.raises(OSError, match="another process listens"):
            await localsock.Local(str(path), ("127.0.0.1", 1)).start()
        live.close()  # now a socket file nobody listens on: replaced
        local = localsock.Local(str(path), ("127.0.0.1", 1))
        await local.start()
        assert stat.S_ISSOCK(path.lstat().st_mode) and stat.S_IMODE(path.lstat().st_mode) == 0o666
        await local.stop()
        assert not path.exists()
    asyncio.run(main())


def test_stop_leaves_a_socket_another_controller_made_since(tmp_path: Path):
    async def main() -> None:
        path = str(tmp_path / "ctl.sock")
        first = localsock.Local(path, ("127.0.0.1", 1))
        await first.start()
        first.server.close()
        os.unlink(path)
        second = localsock.Local(path, ("127.0.0.1", 1))
        await second.start()
        await first.stop()
        assert os.path.exists(path)
        await second.stop()
    asyncio.run(main())


def test_a_user_holds_few_connections_and_an_unanswered_one_is_dropped(tmp_path: Path, monkeypatch):
    """Past PER_USER open connections a user's next is closed at once; a connection whose answer
    never comes (a request head that never ends) is closed after IDLE seconds."""
    monkeypatch.setattr(localsock, "PER_USER", 2)
    monkeypatch.setattr(localsock, "IDLE", 1.0)

    async def until(cond, timeout: float = 30.0) -> None:  # a poll with a deadline
        deadline = asyncio.get_running_loop().time() + timeout
        while not cond():
            assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
            await asyncio.sleep(0.01)

    async def closed(r: asyncio.StreamReader) -> bool:
        try:
            return await asyncio.wait_for(r.read(), 30) == b""
        except ConnectionResetError:
            return True

    async def main() -> None:
        async def silent(reader, writer) -> None:  # an upstream that never answers
            await reader.read()
            writer.close()
        upstream = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = upstream.sockets[0].getsockname()[1]
        path = str(tmp_path / "ctl.sock")
        local = localsock.Local(path, ("127.0.0.1", port))
        await local.start()
        conns = []
        for n in (1, 2):
            r, w = await asyncio.open_unix_connection(path)
            w.write(b"GET /api/v1/jobs HTTP/1.1\r\n")
            await w.drain()
            conns.append((r, w))
            await until(lambda n=n: local.open.get(os.getuid()) == n)  # its relay counted it
        r, w = await asyncio.open_unix_connection(path)
        conns.append((r, w))
        assert await closed(conns[2][0])  # the third: closed at once
        assert local.open == {os.getuid(): 2}
        for r, _ in conns[:2]:  # the two others: dropped once IDLE passes without an answer
            assert await closed(r)
        await until(lambda: not local.open)
        assert local.open == {} and local.uids == {}
        await local.stop()
        upstream.close()
    asyncio.run(main())


# --- the spool beside the socket: requests from clients that load no `socket` module -------------

async def _app(seen: list[dict]):  # an ASGI app standing in for the controller's
    """Records each request's scope and body; answers "ok" (a long one for GET /long)."""
    async def app(scope, receive, send) -> None:
        msg = await receive()
        seen.append(dict(scope, body=msg["body"]))
        body = b"x" * 300_000 if scope["path"] == "/long" else b"ok"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": body})
    return app


def _ring(spool: Path, *lines: str) -> None:
    """The bell rung with these lines (each name and a newline), in one write."""
    fd = os.open(spool / "bell", os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, "".join(f"{n}\n" for n in lines).encode())
    os.close(fd)


def _server(tmp_path: Path, app) -> tuple[localsock.Local, Path]:  # an ASGI app
    path = str(tmp_path / "ctl.sock")
    return localsock.Local(path, ("127.0.0.1", 1), app), Path(path + ".d")


def _request(host_port: str = "127.0.0.1:1") -> bytes:
    return f"GET /api/v1/jobs HTTP/1.1\r\nHost: {host_port}\r\nConnection: close\r\n\r\n".encode()


def test_a_spooled_request_is_served_as_its_owner_and_answered_through_its_fifo(tmp_path: Path, monkeypatch):
    from slurmlet.cli import http

    async def main() -> None:
        seen: list[dict] = []
        path = str(tmp_path / "ctl.sock")
        local = localsock.Local(path, ("127.0.0.1", 1), await _app(seen))
        taken: list[int | None] = []
        await local.start()
        spool = Path(path + ".d")
        assert stat.S_IMODE(spool.lstat().st_mode) == 0o1733
        bell = spool / "bell"
        assert stat.S_ISFIFO(bell.lstat().st_mode) and stat.S_IMODE(bell.lstat().st_mode) == 0o622
        monkeypatch.setenv("SLURMLET_SOCKET", local.path)
        # the app takes the token the scope carries: it names this process's uid (and only once)
        real_app = local.app

        async def app(scope, receive, send) -> None:
            token = dict(scope["headers"])[localsock.HEADER.lower().encode()].decode()
            taken.extend([local.take(token), local.take(token)])
            await real_app(scope, receive, send)
        local.app = app
        forged = _request().replace(b"\r\n\r\n", f"\r\n{localsock.HEADER}: forged\r\n\r\n".encode())
        answer = await asyncio.to_thread(http._spooled, forged, 30.0)
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"\r\n\r\nok"), answer
        assert taken == [os.getuid(), None]
        got = seen[0]
        assert (got["method"], got["path"], got["body"]) == ("GET", "/api/v1/jobs", b"")
        assert [v for k, v in got["headers"] if k == b"x-slurmlet-local"] != [b"forged"]  # (only ours)
        assert sorted(os.listdir(spool)) == ["bell"]  # both of the request's files gone
        assert local.open == {} and local.uids == {}
        # a long answer (more than the FIFO holds) comes whole; a body comes as sent
        long = b"POST /long?x=1 HTTP/1.1\r\nHost: h:1\r\nContent-Length: 5\r\n\r\nhello"
        answer = await asyncio.to_thread(http._spooled, long, 30.0)
        assert answer.endswith(b"\r\n\r\n" + b"x" * 300_000)
        assert (seen[1]["path"], seen[1]["query_string"], seen[1]["body"]) == ("/long", b"x=1", b"hello")
        # a stray write without a newline spoils nobody's request that follows it
        fd = os.open(bell, os.O_WRONLY | os.O_NONBLOCK)
        os.write(fd, b"junk" + b"a" * 40)
        os.close(fd)
        assert (await asyncio.to_thread(http._spooled, _request(), 30.0)).endswith(b"ok")
        # what is no whole request gets an answer of nothing
        assert await asyncio.to_thread(http._spooled, b"GET / HTTP/1.1\r\nContent-Length: 9\r\n\r\nab", 30.0) is None
        assert await asyncio.to_thread(http._spooled, b"\x00\xff garbage", 30.0) is None
        assert len(seen) == 3 and local.open == {} and local.uids == {}
        if os.geteuid() == 0:  # another user's spool: never used (that user would read what we send)
            os.chown(spool, 12345, 12345)
            assert await asyncio.to_thread(http._spooled, _request(), 30.0) is None
            assert len(seen) == 3 and sorted(os.listdir(spool)) == ["bell"]
            os.chown(spool, 0, 0)
        await local.stop()
    asyncio.run(main())


def test_what_is_not_a_request_of_its_owner_is_refused_and_the_client_asks_by_the_socket(tmp_path: Path, monkeypatch):
    """A request file with another link (one linked in from elsewhere), or an answer path that is no
    FIFO, gets an answer of nothing (the client then uses the socket); a request nobody takes within
    a second is withdrawn by its client, and one with nobody reading the bell is not spooled."""
    from slurmlet.cli import http

    async def main() -> None:
        seen: list[dict] = []
        local, spool = _server(tmp_path, await _app(seen))
        await local.start()

        async def gone(*paths: Path) -> None:
            deadline = asyncio.get_running_loop().time() + 30
            while any(os.path.lexists(p) for p in paths):
                assert asyncio.get_running_loop().time() < deadline, paths
                await asyncio.sleep(0.01)

        # a linked request: refused (the answer FIFO is opened and closed with nothing written)
        name = "1" * 32
        other = tmp_path / "elsewhere"
        other.write_bytes(_request())
        os.link(other, spool / f"{name}.req")
        os.mkfifo(spool / f"{name}.out", 0o600)
        out = os.open(spool / f"{name}.out", os.O_RDONLY | os.O_NONBLOCK)
        _ring(spool, name)
        await gone(spool / f"{name}.req", spool / f"{name}.out")
        assert os.read(out, 100) == b""
        os.close(out)
        # an answer path that is a plain file: nothing written to it, nothing relayed
        name = "2" * 32
        (spool / f"{name}.req").write_bytes(_request())
        (spool / f"{name}.out").write_bytes(b"")
        _ring(spool, name)
        await gone(spool / f"{name}.req")
        assert seen == [] and other.read_bytes() == _request()
        # nobody reads the bell: not served that way (at once); nobody takes it: withdrawn after a second
        monkeypatch.setenv("SLURMLET_SOCKET", local.path)
        asyncio.get_running_loop().remove_reader(local.bell_fd)
        assert await asyncio.to_thread(http._spooled, _request(), 30.0) is None
        assert sorted(p for p in os.listdir(spool) if not p.startswith("2")) == ["bell"]
        await local.stop()
        assert await asyncio.to_thread(http._spooled, _request(), 30.0) is None  # (no reader: ENXIO)
    asyncio.run(main())


def test_old_spooled_requests_are_removed_at_start_and_a_spool_of_another_user_is_not_used(tmp_path: Path,
                                                                                            monkeypatch):
    """At start, what changed over STALE seconds ago (st_ctime, which its owner cannot set: an mtime
    in the future keeps nothing) goes, directories too; what cannot be removed (a directory nested
    deeper than rmtree goes) is left and the rest still goes."""
    async def main() -> None:
        path = str(tmp_path / "ctl.sock")
        spool = Path(path + ".d")
        spool.mkdir()
        (spool / ("3" * 32 + ".req")).write_bytes(b"left by a client that died")
        (spool / "junk").mkdir()  # (anything a user put there: a directory too)
        (spool / "junk" / "inside").write_bytes(b"")
        (spool / "future").write_bytes(b"")
        os.utime(spool / "future", (4102444800, 4102444800))  # (2100)
        (spool / "aaa_deep").mkdir()  # (rmtree fails on it below, as on a directory nested too deep)
        rmtree = localsock.shutil.rmtree

        def failing(name, **kw) -> None:
            if name == "aaa_deep":
                raise RecursionError("maximum recursion depth exceeded")
            rmtree(name, **kw)
        monkeypatch.setattr(localsock.shutil, "rmtree", failing)
        (spool / "zzz").write_bytes(b"")
        later = time.time() + 2 * localsock.STALE
        monkeypatch.setattr(localsock, "_now", lambda: later)
        local = localsock.Local(path, ("127.0.0.1", 1), await _app([]))
        await local.start()
        deadline = time.monotonic() + 30
        while local.sweeping or len(os.listdir(spool)) > 2:
            assert time.monotonic() < deadline, os.listdir(spool)
            await asyncio.sleep(0.01)
        assert "zzz" not in os.listdir(spool) and "future" not in os.listdir(spool)
        monkeypatch.setattr(localsock, "_now", time.time)
        fresh = spool / ("4" * 32 + ".req")
        fresh.write_bytes(b"a request being written as the controller sweeps")
        local._sweep(localsock.STALE)
        while local.sweeping:
            await asyncio.sleep(0.01)
        assert fresh.exists() and local.bell_fd is not None
        await local.stop()
        assert (spool / "aaa_deep").exists()
        if os.geteuid() == 0:  # another user's spool: not used (the socket still serves)
            os.chown(spool, 12345, 12345)
            local = localsock.Local(path, ("127.0.0.1", 1), await _app([]))
            await local.start()
            assert local.bell_fd is None and local.server is not None
            await local.stop()
    asyncio.run(main())


def test_files_others_could_have_written_or_read_are_no_request(tmp_path: Path, monkeypatch):
    """Another user may move a user's files into the spool (a rename needs only the directory they
    stand in): a request file that group or others may read or write, or an answer FIFO they may
    open, is refused, so the file's owner is who wrote it. The client makes both 0600 whatever its
    umask."""
    from slurmlet.cli import http

    async def main() -> None:
        seen: list[dict] = []
        local, spool = _server(tmp_path, await _app(seen))
        await local.start()
        for n, (req_mode, out_mode) in enumerate([(0o664, 0o600), (0o640, 0o600), (0o600, 0o660), (0o600, 0o606)]):
            name = str(n + 5) * 32
            elsewhere = tmp_path / f"notes{n}"  # (made outside, with the modes of a group's shared files)
            elsewhere.write_bytes(_request())
            elsewhere.chmod(req_mode)
            fifo = tmp_path / f"fifo{n}"
            os.mkfifo(fifo)
            fifo.chmod(out_mode)
            os.rename(elsewhere, spool / f"{name}.req")
            os.rename(fifo, spool / f"{name}.out")
            out = os.open(spool / f"{name}.out", os.O_RDONLY | os.O_NONBLOCK)
            _ring(spool, name)
            deadline = time.monotonic() + 30
            while os.path.lexists(spool / f"{name}.req"):
                assert time.monotonic() < deadline
                await asyncio.sleep(0.01)
            assert os.read(out, 100) == b"" and seen == [], (req_mode, out_mode)
            os.close(out)
        monkeypatch.setenv("SLURMLET_SOCKET", local.path)
        old = os.umask(0o277)
        try:
            assert (await asyncio.to_thread(http._spooled, _request(), 30.0)).endswith(b"ok")
        finally:
            os.umask(old)
        await local.stop()
    asyncio.run(main())


def test_a_user_is_answered_a_few_requests_at_a_time_and_one_who_stops_reading_is_dropped(tmp_path: Path,
                                                                                          monkeypatch):
    """Past PER_USER requests being answered, a user's next ones are refused (the count is taken as
    the request is, however many the bell names at once); a name the bell repeats is taken once; a
    client that stops reading a long answer is given up after IDLE seconds (its FIFO closed)."""
    monkeypatch.setattr(localsock, "PER_USER", 2)
    monkeypatch.setattr(localsock, "IDLE", 1.0)

    async def main() -> None:
        release = asyncio.Event()
        seen: list[dict] = []
        inner = await _app(seen)

        async def slow(scope, receive, send) -> None:
            if scope["path"] != "/long":
                await release.wait()
            await inner(scope, receive, send)
        path = str(tmp_path / "ctl.sock")
        local = localsock.Local(path, ("127.0.0.1", 1), slow)
        await local.start()
        spool = Path(path + ".d")
        outs = []
        names = [str(n) * 32 for n in range(1, 5)]
        for name in names:
            fd = os.open(spool / f"{name}.req", os.O_WRONLY | os.O_CREAT, 0o600)
            os.write(fd, _request())
            os.close(fd)
            os.mkfifo(spool / f"{name}.out", 0o600)
            outs.append(os.open(spool / f"{name}.out", os.O_RDONLY | os.O_NONBLOCK))
        _ring(spool, *names, *names)  # (all at once, each twice)
        deadline = time.monotonic() + 30
        while local.open.get(os.getuid()) != 2 or any(os.path.lexists(spool / f"{n}.req") for n in names):
            assert time.monotonic() < deadline, (local.open, os.listdir(spool))
            await asyncio.sleep(0.01)
        release.set()
        answers = []
        for out in outs:
            got = b""
            while True:
                try:
                    b = os.read(out, 65536)
                except BlockingIOError:
                    await asyncio.sleep(0.01)
                    continue
                if not b:
                    break
                got += b
            answers.append(got)
            os.close(out)
        assert sorted(a.endswith(b"ok") for a in answers) == [False, False, True, True]
        assert len(seen) == 2 and local.open == {}
        # a long answer nobody reads: the FIFO is closed once IDLE passes
        name = "9" * 32
        fd = os.open(spool / f"{name}.req", os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, b"GET /long HTTP/1.1\r\nHost: h:1\r\n\r\n")
        os.close(fd)
        os.mkfifo(spool / f"{name}.out", 0o600)
        out = os.open(spool / f"{name}.out", os.O_RDONLY | os.O_NONBLOCK)
        _ring(spool, name)
        deadline = time.monotonic() + 30
        while not local.open:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        while local.open:  # (given up after IDLE)
            assert time.monotonic() < deadline, local.open
            await asyncio.sleep(0.01)
        got = b""
        while True:
            try:
                b = os.read(out, 65536)
            except BlockingIOError:
                break
            if not b:
                break
            got += b
        assert 0 < len(got) < 300_000  # what the FIFO held, then its end
        os.close(out)
        await local.stop()
    asyncio.run(main())


def test_a_request_the_app_took_and_did_not_answer_is_a_500_and_what_is_no_request_is_not_read(tmp_path: Path,
                                                                                               monkeypatch):
    """The app failed after its answer's head, or sent no body: the client gets a 500, never an
    answer of nothing (which it would send again by the socket). A request over SPOOL_MAX is not
    spooled by the client nor read by the controller; a .req that is no regular file is not opened."""
    from slurmlet.cli import http

    async def main() -> None:
        async def app(scope, receive, send) -> None:
            await receive()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            if scope["path"] == "/fail":
                raise RuntimeError("after the head")
        local, spool = _server(tmp_path, app)
        await local.start()
        monkeypatch.setenv("SLURMLET_SOCKET", local.path)
        for path in ("/fail", "/nobody"):
            got = await asyncio.to_thread(http._spooled, f"GET {path} HTTP/1.1\r\nHost: h:1\r\n\r\n".encode(), 30.0)
            assert got.startswith(b"HTTP/1.1 500 ") and b"gave no answer" in got, got
        big = b"POST / HTTP/1.1\r\nHost: h:1\r\nContent-Length: 300000\r\n\r\n" + b"x" * 300_000
        assert await asyncio.to_thread(http._spooled, big, 30.0) is None and sorted(os.listdir(spool)) == ["bell"]
        name = "7" * 32  # (written by hand: the client itself does not spool it)
        (spool / f"{name}.req").write_bytes(big)
        (spool / f"{name}.req").chmod(0o600)
        os.mkfifo(spool / f"{name}.out", 0o600)
        out = os.open(spool / f"{name}.out", os.O_RDONLY | os.O_NONBLOCK)
        fifo = "8" * 32
        os.mkfifo(spool / f"{fifo}.req", 0o600)  # (opening it would block a reader; it is not opened)
        _ring(spool, name, fifo)
        deadline = time.monotonic() + 30
        while os.path.lexists(spool / f"{name}.req"):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        assert os.read(out, 100) == b"" and os.path.lexists(spool / f"{fifo}.req")
        os.close(out)
        await local.stop()
    asyncio.run(main())
