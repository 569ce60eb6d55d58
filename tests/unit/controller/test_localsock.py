"""The controller's Unix socket (controller/localsock.py) on its own: what it may replace at its
path, the mode it makes, and the connections one user may hold."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
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

    async def until(cond, timeout: float = 30.0) -> None:  # noqa: ANN001 - a poll with a deadline
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
        async def silent(reader, writer) -> None:  # noqa: ANN001 - an upstream that never answers
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
