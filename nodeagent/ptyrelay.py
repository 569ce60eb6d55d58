"""srun --pty on the node: task 0 runs on a pseudo-terminal whose other end is relayed to srun over
one connection. From srun come frames (one type byte, a 4-byte big-endian length, the payload):
`d` bytes typed, `w` a new window size (rows, columns: two 16-bit numbers). To srun goes what the
terminal prints, as it comes. Ctrl-C and the like are bytes like any other: the terminal's line
discipline turns them into signals for the task's foreground process group, as on a local terminal.
srun going away closes the terminal: the task's session gets SIGHUP."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import grp
import json
import logging
import os
import struct
import termios

log = logging.getLogger("slurmlet.agent")

#: how the task's shell takes the terminal as its controlling one: a session leader (the task starts in
#: a session of its own) that opens a terminal without O_NOCTTY acquires it. $1 is the terminal's path;
#: then the usual launch (identity.LAUNCH) with the working directory as the next argument.
PTY_PREFIX = 'exec 0<>"$1" 1>&0 2>&0; shift; '


def open_pty(owner: tuple[int, int, list[int]] | None, rows: int, cols: int) -> tuple[int, int, str]:
    """A new pseudo-terminal (master, slave, slave's path) of that size, its slave given to the job's
    user (and the tty group, mode 0620, as a login does) so that their task can open it."""
    master, slave = os.openpty()
    try:
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        if owner is not None:
            try:
                tty_gid = grp.getgrnam("tty").gr_gid
            except KeyError:
                tty_gid = owner[1]
            os.fchown(slave, owner[0], tty_gid)
            os.fchmod(slave, 0o620)
        return master, slave, os.ttyname(slave)
    except OSError:
        os.close(master)
        os.close(slave)
        raise


async def relay(io: str | None, header: dict, master: int) -> None:
    """Connect to srun at `io` and relay until the terminal has no user left (every process holding it
    ended) or srun is gone (then the terminal is closed: SIGHUP)."""
    loop = asyncio.get_running_loop()
    os.set_blocking(master, False)
    ended = asyncio.Event()
    writer = None
    reader = None
    if io:
        host, _, port = io.rpartition(":")
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 10)
            writer.write(json.dumps(header).encode() + b"\n")
        except (TimeoutError, OSError, ValueError) as e:
            log.warning("srun --pty at %s unreachable (%r): the terminal is closed", io, e)
            reader = writer = None

    def readable() -> None:
        try:
            data = os.read(master, 65536)
        except BlockingIOError:
            return
        except OSError:  # EIO: no process has the terminal open any more
            data = b""
        if not data:
            loop.remove_reader(master)
            ended.set()
            return
        if writer is not None and not writer.is_closing():
            writer.write(data)
    loop.add_reader(master, readable)

    async def typed() -> None:
        try:
            while reader is not None:
                head = await reader.readexactly(5)
                kind, size = head[:1], struct.unpack(">I", head[1:])[0]
                if size > 1 << 20:
                    break
                data = await reader.readexactly(size)
                if kind == b"d":
                    await _write_all(master, data)
                elif kind == b"w" and size == 4:
                    rows, cols = struct.unpack(">HH", data)
                    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
    typing = asyncio.create_task(typed())
    if writer is None:
        os.close(master)  # nobody to relay to: the task gets its SIGHUP now
        master = -1
        await asyncio.sleep(0)
    else:
        stop = asyncio.create_task(ended.wait())
        await asyncio.wait({typing, stop}, return_when=asyncio.FIRST_COMPLETED)
        if not ended.is_set():  # srun went away: hang the terminal up
            loop.remove_reader(master)
        stop.cancel()
    typing.cancel()
    if master >= 0:
        with contextlib.suppress(ValueError, OSError):
            loop.remove_reader(master)
        os.close(master)
    if writer is not None:
        with contextlib.suppress(OSError, ConnectionError):
            await writer.drain()
            writer.close()
            await writer.wait_closed()


async def _write_all(fd: int, data: bytes) -> None:
    while data:
        try:
            n = os.write(fd, data)
        except BlockingIOError:
            await asyncio.sleep(0.01)
            continue
        data = data[n:]
