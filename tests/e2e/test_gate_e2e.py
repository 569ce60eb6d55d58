"""The request path tried as a hostile client would, against a real controller: bodies that would
fill its memory, and one user's flood of the spool against another user's commands."""

from __future__ import annotations

import os
import pwd
import select
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from slurmlet.common.wire import MAX_BODY
from tests.conftest import BIN, Cluster, serve

pytestmark = pytest.mark.e2e

MIB = 1 << 20
HOSTILE = 400 * MIB


def _hwm(pid: int) -> int:
    """The process's peak resident memory (VmHWM), bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def _send_hostile(port: int, head: bytes, chunked: bool) -> tuple[int | None, int]:
    """Send `head`, then up to 400 MiB of body (chunked or raw) for as long as the controller takes it:
    (the answer's status, None when none came; the bytes of body sent)."""
    piece = b"x" * MIB
    frame = b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece
    sent = 0
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(head)
        s.setblocking(False)
        view = memoryview(b"")
        deadline = time.monotonic() + 120
        while sent < HOSTILE and time.monotonic() < deadline:
            r, w, _ = select.select([s], [s] if sent < HOSTILE else [], [], 10)
            if r:
                try:
                    got = s.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    break
                if not got:
                    break
                answer += got
                if b"\r\n" in answer:
                    break
                continue
            if w:
                if not view:
                    view = memoryview(frame)
                try:
                    n = s.send(view)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    break
                view = view[n:]
                sent += n
        s.setblocking(True)
        s.settimeout(5)
        try:
            while b"\r\n" not in answer:
                got = s.recv(65536)
                if not got:
                    break
                answer += got
        except OSError:
            pass
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None
    return status, sent


def test_hostile_bodies_are_refused_before_more_than_the_limit_is_read(tmp_path: Path) -> None:
    """8 connections, each sending a 400 MiB chunked body to POST /api/v1/jobs with a bogus credential:
    with both Content-Length and Transfer-Encoding, chunked alone, with a Content-Length of 400 MiB, or
    as a read by nobody. Each is answered (400, 401, 413) before it sent more than the body limit, and
    the controller's peak memory grows by less than 40 MB."""
    c = Cluster(tmp_path / "c", nodes=1)
    gen = serve(c)
    next(gen)
    try:
        pid = c.procs["controller"].pid
        before = _hwm(pid)
        bogus = b"X-Slurmlet-Cred: v2:0:root:%d:nonce:binding:0000\r\n" % int(time.time())
        base = b"Host: 127.0.0.1\r\nContent-Type: application/json\r\n" + bogus
        heads = [
            (b"POST /api/v1/jobs HTTP/1.1\r\n" + base + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
             True, 400),
            (b"POST /api/v1/jobs HTTP/1.1\r\n" + base + b"Transfer-Encoding: chunked\r\n\r\n", True, 401),
            (b"POST /api/v1/jobs HTTP/1.1\r\n" + base + b"Content-Length: %d\r\n\r\n" % HOSTILE, False, 401),
            (b"GET /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n", True, 413),
        ] * 2
        results: list[tuple[int | None, int] | None] = [None] * len(heads)

        def one(i: int) -> None:
            results[i] = _send_hostile(c.port, heads[i][0], heads[i][1])
        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(heads))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        statuses = [r[0] if r else None for r in results]
        assert statuses == [h[2] for h in heads], (statuses, results)
        assert all(r is not None and r[1] <= MAX_BODY for r in results), results
        grown = _hwm(pid) - before
        print(f"hostile bodies: {statuses}, body bytes sent {[r[1] for r in results if r]}, "
              f"peak memory +{grown / MIB:.1f} MiB")
        assert grown < 40 * MIB, f"the controller's peak memory grew by {grown / MIB:.0f} MiB"
        assert c.ping() and c.sbatch("-H", "--wrap", "true")  # (and it still serves)
    finally:
        for _ in gen:  # (the cluster stopped; a daemon that crashed fails the test)
            pass


FLOOD = """
import os, sys, threading
from slurmlet.cli import http
spool, me = sys.argv[1], os.getuid()
def junk(path):
    fd = os.open(path, os.O_WRONLY)
    line = os.urandom(16).hex().encode() + b"\\n"
    while True:
        os.write(fd, line * 64)
def asks():
    while True:
        try:
            http.exchange("GET", "/api/v1/jobs")
        except Exception:
            pass
ts = [threading.Thread(target=junk, args=(f"{spool}/bell",), daemon=True)]
if os.path.exists(f"{spool}/bell.{me}"):
    ts.append(threading.Thread(target=junk, args=(f"{spool}/bell.{me}",), daemon=True))
ts += [threading.Thread(target=asks, daemon=True) for _ in range(8)]
for t in ts:
    t.start()
print("flooding", flush=True)
threading.Event().wait()
"""

FLOODER = "slurmlet-flood"


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("setpriv"),
                    reason="two real users need root, useradd and setpriv")
def test_one_users_flood_of_the_spool_leaves_anothers_squeue_within_twice_its_idle_time() -> None:
    """A user writes names into the spool's bells as fast as it can and keeps 8 requests of its own
    going: another user's squeue (p50 of 25) stays within 2x of what it takes on an idle controller."""
    try:
        pwd.getpwnam(FLOODER)
        made = False
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", FLOODER], check=True)
        made = True
    u = pwd.getpwnam(FLOODER)
    base = Path(tempfile.mkdtemp(prefix="slurmlet-flood-"))
    base.chmod(0o755)
    c = Cluster(base / "c", nodes=1, spool=True)
    gen = serve(c)
    next(gen)
    flood = None
    try:
        for _ in range(20):
            c.sbatch("-H", "-o", "/dev/null", "--wrap", "true")

        def squeue_ms(n: int) -> float:
            took = []
            for _ in range(n):
                t0 = time.perf_counter()
                r = subprocess.run([str(BIN / "squeue")], env=c.env, capture_output=True, timeout=60)
                took.append(time.perf_counter() - t0)
                assert r.returncode == 0, r.stderr
            return statistics.median(took) * 1000
        squeue_ms(3)
        idle = squeue_ms(25)
        env = {"PATH": c.env["PATH"], "HOME": "/", "SLURMLET_CONTROLLER": c.url, "SLURMLET_SPOOL": str(c.spool),
               "SLURMLET_KEY_FILE": "/nonexistent", "SLURMLET_CRED_SOCKET": "/nonexistent"}
        asuser = ["setpriv", f"--reuid={u.pw_uid}", f"--regid={u.pw_gid}", "--clear-groups"]
        subprocess.run([*asuser, sys.executable, "-c", "from slurmlet.cli import http; http.exchange('GET', "
                        "'/api/v1/ping')"], env=env, check=True, timeout=60, cwd="/tmp")  # (its own bell made)
        flood = subprocess.Popen(["nice", "-n", "19", *asuser, sys.executable, "-c", FLOOD, str(c.spool)],
                                 env=env, stdout=subprocess.PIPE, cwd="/tmp", start_new_session=True)
        assert flood.stdout.readline().strip() == b"flooding"
        squeue_ms(3)
        flooded = squeue_ms(25)
        assert flood.poll() is None
        print(f"squeue p50: {idle:.1f} ms idle, {flooded:.1f} ms under the flood")
        assert flooded <= 2 * idle, f"squeue p50 {flooded:.1f} ms under the flood, {idle:.1f} ms idle"
    finally:
        if flood is not None:
            os.killpg(flood.pid, 9)
            flood.wait(30)
        for _ in gen:  # (the cluster stopped; a daemon that crashed fails the test)
            pass
        shutil.rmtree(base, ignore_errors=True)
        if made:
            subprocess.run(["userdel", FLOODER], check=False)
