"""sbatch sends an Idempotency-Key of its own and retries once, with the same key, when the
connection fails: a controller that made the job before its answer was lost answers the retry with
that job (tests/e2e/test_crash_e2e.py checks the controller's side)."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from pathlib import Path

from tests.conftest import BIN


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length"))
    while len(body) < length:
        body += conn.recv(65536)
    return head


def test_sbatch_retries_once_with_the_same_key(tmp_path: Path):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    heads: list[bytes] = []

    def serve() -> None:
        for attempt in range(2):
            conn, _ = srv.accept()
            with conn:
                heads.append(_read_request(conn))
                if attempt == 1:  # the first attempt's answer is lost: the connection just closes
                    body = b'{"job_id": 42}'
                    conn.sendall(b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: "
                                 + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    env.update(HOME=str(tmp_path), SLURMLET_CONTROLLER=f"http://127.0.0.1:{srv.getsockname()[1]}")
    r = subprocess.run([str(BIN / "sbatch"), "--parsable", "--wrap", "true"], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=30)
    t.join(10)
    srv.close()
    assert r.returncode == 0 and r.stdout == "42\n", r.stderr
    keys = [line.split(b":", 1)[1].strip() for h in heads for line in h.split(b"\r\n")
            if line.lower().startswith(b"idempotency-key:")]
    assert len(keys) == 2 and keys[0] == keys[1] and len(keys[0]) == 32, heads


def test_each_sbatch_has_its_own_key(tmp_path: Path):
    """Two invocations, two keys (one per invocation, not per script)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    keys: list[bytes] = []

    def serve() -> None:
        for _ in range(2):
            conn, _ = srv.accept()
            with conn:
                head = _read_request(conn)
                keys.extend(line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")
                            if line.lower().startswith(b"idempotency-key:"))
                body = b'{"job_id": 1}'
                conn.sendall(b"HTTP/1.1 201 Created\r\nContent-Length: " + str(len(body)).encode()
                             + b"\r\n\r\n" + body)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    env.update(HOME=str(tmp_path), SLURMLET_CONTROLLER=f"http://127.0.0.1:{srv.getsockname()[1]}")
    for _ in range(2):
        r = subprocess.run([str(BIN / "sbatch"), "--parsable", "--wrap", "true"], capture_output=True, text=True,
                           env=env, cwd=tmp_path, timeout=30)
        assert r.returncode == 0, r.stderr
    t.join(10)
    srv.close()
    assert len(keys) == 2 and keys[0] != keys[1]
