"""Credentials signed with the cluster key (munge's role): who sends a request, provably.

The cluster key is a file of random bytes that the controller, the agents and whoever may speak for
users share (`slurmlet up` writes one, mode 0600, and exports SLURMLET_KEY_FILE). A credential names
a uid and a user at a time, with a nonce, and carries an HMAC-SHA256 of them under the key:

    X-Slurmlet-Cred: v1:<uid>:<user>:<unix time>:<nonce>:<hex mac>

The controller accepts one for CRED_TTL seconds. REST clients use JWTs instead (`scontrol token`,
sent as X-SLURM-USER-TOKEN like slurmrestd's); both are checked in controller/auth.py.
Users who may not read the key get credentials from `slurmlet credd` (nodeagent/credd.py) over a
Unix socket, which signs for the uid the kernel reports for the caller (munged's way).
Imported by every CLI call: only `os` and `time` at import; `hmac` when signing, `socket` when
asking credd.
"""

from __future__ import annotations

import os
import time

HEADER = "X-Slurmlet-Cred"
CRED_TTL = 300.0  #: seconds a credential stays valid (munge's default TTL)
DEFAULT_KEY = "/etc/slurmlet/slurmlet.key"
DEFAULT_SOCKET = "/run/slurmlet/cred.sock"  #: slurmlet credd's, for users who may not read the key


def key_path() -> str | None:
    """The cluster key: $SLURMLET_KEY_FILE, else ~/.slurmlet/key (written by `slurmlet up`), else
    /etc/slurmlet/slurmlet.key; None when none exists."""
    env = os.environ.get("SLURMLET_KEY_FILE")
    if env:
        return env
    for p in (os.path.join(os.path.expanduser("~"), ".slurmlet", "key"), DEFAULT_KEY):
        if os.path.exists(p):
            return p
    return None


def read_key(path: str | None = None) -> bytes | None:
    path = path or key_path()
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            return f.read().strip() or None
    except OSError:
        return None


def _mac(key: bytes, text: str) -> str:
    """HMAC-SHA256 (RFC 2104) of `text` under `key`, hex."""
    import hashlib
    import hmac
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def sign(key: bytes, uid: int, user: str, now: float | None = None) -> str:
    """A credential for (uid, user) now."""
    body = f"v1:{uid}:{user}:{int(time.time() if now is None else now)}:{os.urandom(6).hex()}"
    return f"{body}:{_mac(key, body)}"


def verify(key: bytes, cred: str, now: float | None = None) -> tuple[int, str] | None:
    """(uid, user) of a valid, fresh credential; None otherwise."""
    import hmac
    body, _, mac = cred.rpartition(":")
    parts = body.split(":")
    if len(parts) != 5 or parts[0] != "v1" or not hmac.compare_digest(mac, _mac(key, body)):
        return None
    try:
        uid, ts = int(parts[1]), int(parts[3])
    except ValueError:
        return None
    t = time.time() if now is None else now
    if abs(t - ts) > CRED_TTL:
        return None
    return uid, parts[2]


def current_user() -> tuple[int, str]:
    uid = os.getuid()
    try:
        import pwd
        return uid, pwd.getpwuid(uid).pw_name
    except (KeyError, ImportError):
        return uid, os.environ.get("USER") or str(uid)


def header_for_me() -> str | None:
    """The credential the CLI sends: signed for the calling user with the key it can read, else
    one from the local credential service (`slurmlet credd`), else None."""
    key = read_key()
    if key is None:
        return from_credd()
    uid, user = current_user()
    return sign(key, uid, user)


def from_credd(path: str | None = None) -> str | None:
    """A credential for this process's user from `slurmlet credd` on its Unix socket
    ($SLURMLET_CRED_SOCKET, else DEFAULT_SOCKET); None when none answers."""
    path = path or os.environ.get("SLURMLET_CRED_SOCKET") or DEFAULT_SOCKET
    if not os.path.exists(path):
        return None
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(5.0)
        s.connect(path)
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(512)
            if not chunk:
                break
            data += chunk
    except OSError:
        return None
    finally:
        s.close()
    line = data.decode(errors="replace").strip()
    return line if line.startswith("v1:") else None
