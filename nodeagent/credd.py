"""`slurmlet credd`: the local credential service (munged's role) for users who may not read the
cluster key.

It holds the key and listens on a Unix socket that everyone may connect to. Each connection sends
one line, the binding of the request it wants a credential for (`cred.bind`: 32 hex digits); credd
asks the kernel who is on the other end (SO_PEERCRED: the peer's uid, which the peer cannot forge)
and answers one line: a credential signed for that uid and its user name, for that request only
(common/cred.py), or an error line starting with `error:`. The CLI asks it when it cannot read the key itself
(`$SLURMLET_CRED_SOCKET`, else /run/slurmlet/cred.sock); agents pass the socket on to jobs so that
`srun`, `scancel` and the rest work inside a job that runs as its user.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import socketserver
import struct
import sys
import threading

from slurmlet.common import cred

log = logging.getLogger("slurmlet.credd")


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix stream socket, from the kernel."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", raw)
    return uid


def user_name(uid: int) -> str:
    import pwd
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)  # a uid without a passwd entry (a container's user): its number


#: how long a caller has to send its request line
READ_TIMEOUT = 5.0


def read_binding(sock: socket.socket) -> str | None:
    """The binding a caller sends (32 lowercase hex digits and a newline); None for anything else,
    a line too long, or nothing within READ_TIMEOUT."""
    sock.settimeout(READ_TIMEOUT)
    data = b""
    while b"\n" not in data and len(data) <= 64:
        chunk = sock.recv(65)
        if not chunk:
            break
        data += chunk
    line = data.partition(b"\n")[0]
    if len(line) != 32 or not all(c in b"0123456789abcdef" for c in line):
        return None
    return line.decode()


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        key: bytes = self.server.key  # type: ignore[attr-defined]
        try:
            uid = peer_uid(self.request)
            binding = read_binding(self.request)
            line = (cred.sign(key, uid, user_name(uid), binding) if binding is not None
                    else "error: expected the request's binding (32 hex digits) and a newline")
        except OSError as e:  # not a Unix socket peer we can identify, or one that sent nothing: no credential
            line = f"error: no credential: {e.strerror or e}"
        try:
            self.request.sendall(line.encode() + b"\n")
        except OSError:
            pass  # the caller went away


class Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, key: bytes):
        self.key = key
        with _umask(0o111):  # everyone may connect (srw-rw-rw-): the kernel tells us who they are
            super().__init__(path, _Handler)


class _umask:
    def __init__(self, mask: int):
        self.mask = mask

    def __enter__(self) -> None:
        self.old = os.umask(self.mask)

    def __exit__(self, *exc: object) -> None:
        os.umask(self.old)


def serve(path: str, key: bytes) -> Server:
    """Bind the socket (replacing a stale one) and serve in a thread; the caller shuts it down."""
    if os.path.exists(path) and not _answers(path):
        os.remove(path)  # left by a daemon that died
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    srv = Server(path, key)
    threading.Thread(target=srv.serve_forever, name="credd", daemon=True).start()
    return srv


def _answers(path: str) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(1.0)
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="slurmlet credd", description="Sign credentials for local users who may "
                                 "not read the cluster key (munged's role).")
    ap.add_argument("--socket", default=os.environ.get("SLURMLET_CRED_SOCKET") or cred.DEFAULT_SOCKET,
                    help=f"the Unix socket to listen on (default $SLURMLET_CRED_SOCKET or {cred.DEFAULT_SOCKET})")
    ap.add_argument("--key-file", default=None, help="the cluster key (default $SLURMLET_KEY_FILE, "
                                                     f"~/.slurmlet/key or {cred.DEFAULT_KEY})")
    ap.add_argument("--log-level", default="info")
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    key = cred.read_key(args.key_file)
    if key is None:
        print(f"slurmlet credd: error: --key-file: cannot read {args.key_file or cred.key_path() or 'a key'}",
              file=sys.stderr)
        return 1
    if os.path.exists(args.socket) and _answers(args.socket):
        print(f"slurmlet credd: error: {args.socket}: another credd answers there", file=sys.stderr)
        return 1
    try:
        srv = serve(args.socket, key)
    except OSError as e:
        print(f"slurmlet credd: error: {args.socket}: {e.strerror or e}", file=sys.stderr)
        return 1
    log.info("serving credentials on %s", args.socket)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    srv.shutdown()
    srv.server_close()
    os.remove(args.socket)
    return 0
