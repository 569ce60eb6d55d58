"""The CLI's answer to something that is not the controller's JSON: one line and exit 1, never a
traceback (a proxy's error page, a half-written answer)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import pytest

from slurmlet.cli import http


@pytest.fixture
def bad_server():
    """A listener answering every connection with a non-JSON 502."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\n\r\n<html>bad gateway</html>")
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    stop.set()
    srv.close()


def test_a_non_json_error_page_is_an_unreachable_controller(bad_server: str):
    with pytest.raises(http.Unreachable, match="Unexpected answer from the slurm controller .*502 Bad Gateway"):
        http.request("GET", "/api/v1/jobs", url=bad_server)


def test_squeue_says_so_in_one_line(bad_server: str):
    r = subprocess.run([sys.executable, "-c", "import sys; from slurmlet.cli.main import squeue; sys.exit(squeue())"],
                       capture_output=True, text=True, env=dict(os.environ, SLURMLET_CONTROLLER=bad_server))
    assert r.returncode == 1
    assert r.stderr.startswith("squeue: error: Unexpected answer from the slurm controller") and \
        "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1


def test_marshal_over_tcp_is_not_read():
    """marshal is not made for hostile data: the CLI reads it only from this host's controller (its
    spool or socket), never from whatever answers at a TCP address."""
    import marshal
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    body = marshal.dumps({"jobs": []}, 4)

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-marshal\r\nContent-Length: " +
                         str(len(body)).encode() + b"\r\n\r\n" + body)
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    with pytest.raises(http.Unreachable, match="application/x-marshal over TCP"):
        http.request("GET", "/api/v1/jobs", url=f"http://127.0.0.1:{srv.getsockname()[1]}")
    t.join(30)
    srv.close()
