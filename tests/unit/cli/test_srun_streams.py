"""srun's (and sattach's) port for its tasks' streams (cli/srun.py _StepIO), over real sockets.
Anyone on the host may connect to it: only the step's own tasks end it, once each."""

from __future__ import annotations

import socket
import threading

from slurmlet.cli.srun import _listener, _StepIO
from slurmlet.common import streamhead


def send(port: int, header: dict, words: bool = True, body: bytes = b"") -> None:
    """One stream to the port, returning once srun has served it (closed its end)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(streamhead.write(header, words) + body)
        s.shutdown(socket.SHUT_WR)
        while s.recv(4096):
            pass


def running(io: _StepIO) -> threading.Thread:
    t = threading.Thread(target=io.run, args=(lambda: False,), daemon=True)
    t.start()
    return t


def test_only_the_steps_tasks_end_it_each_once(capfdbinary):
    srv = _listener()
    port = srv.getsockname()[1]
    io = _StepIO(srv, {0, 1}, label=False)
    t = running(io)
    send(port, {"rank": 5, "stream": "exit", "code": 0, "signal": 0, "node": "node9"})  # no task of the step
    send(port, {"rank": 0, "stream": "exit", "code": "abc"}, words=False)  # no agent's
    send(port, {"rank": 0, "stream": "exit", "code": 3, "signal": 0, "node": "node1"})
    send(port, {"rank": 0, "stream": "exit", "code": 0, "signal": 0, "node": "node1"})  # its second
    send(port, {"rank": 0, "stream": "out"}, body=b"hello\n")
    t.join(2)
    assert t.is_alive()  # rank 1 has not ended: the step goes on
    send(port, {"rank": 1, "stream": "exit", "code": 0, "signal": 9, "node": "node2"}, words=False)
    t.join(30)
    assert not t.is_alive()
    assert io.exits == {0: (3, 0, "node1"), 1: (0, 9, "node2")}
    assert capfdbinary.readouterr().out == b"hello\n"


def test_a_terminal_is_relayed_only_for_a_pty_step():
    srv = _listener()
    port = srv.getsockname()[1]
    io = _StepIO(srv, {0}, label=False)
    relayed: list[int] = []
    io._terminal = lambda conn, f: relayed.append(1)  # (what --pty's relay would read: the user's typing)
    t = running(io)
    send(port, {"rank": 0, "stream": "pty"})
    send(port, {"rank": 0, "stream": "exit", "code": 0, "signal": 0, "node": "node1"})
    t.join(30)
    assert not t.is_alive() and relayed == []
