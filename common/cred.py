"""Credentials signed with the cluster key (munge's role): who sends a request, provably.

The cluster key is a file of random bytes that the controller, the agents and whoever may speak for
users share (`slurmlet up` writes one, mode 0600, and exports SLURMLET_KEY_FILE). A credential names
a uid and a user at a time, with a nonce and the digest of the one request it is for (method,
target and body: `bind`), and carries an HMAC-SHA256 of them under the key:

    X-Slurmlet-Cred: v2:<uid>:<user>:<unix time>:<nonce>:<bind>:<hex mac>

The controller accepts one only for the request it names, at most CRED_TTL seconds old and at most
CRED_SKEW seconds ahead of its clock, and only once (it remembers the nonces it has seen for their
lifetime): a credential read off the wire cannot be replayed, nor moved to another request. REST
clients use JWTs instead (`scontrol token`, sent as X-SLURM-USER-TOKEN like slurmrestd's); both are
checked in controller/auth.py.
Users who may not read the key get credentials from `slurmlet credd` (nodeagent/credd.py) over a
Unix socket, which signs for the uid the kernel reports for the caller (munged's way).
Imported by every CLI call: only `os` and `time` at import; `hmac` when signing, `socket` when
asking credd.
"""

from __future__ import annotations

import os
import time

HEADER = "X-Slurmlet-Cred"
CRED_TTL = 120.0  #: seconds a credential stays valid after it is made
CRED_SKEW = 10.0  #: seconds a credential may be dated ahead of the controller's clock
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


def bind(method: str, target: str, body: bytes = b"") -> str:
    """The digest that ties a credential to one request: its method, its target (path and query,
    as sent) and its body."""
    import hashlib
    h = hashlib.sha256(f"{method.upper()} {target}\n".encode("utf-8", "surrogateescape"))
    h.update(body)
    return h.hexdigest()[:32]


def sign(key: bytes, uid: int, user: str, binding: str, now: float | None = None) -> str:
    """A credential for (uid, user) now, for the request whose `bind()` is `binding`."""
    body = f"v2:{uid}:{user}:{int(time.time() if now is None else now)}:{os.urandom(8).hex()}:{binding}"
    return f"{body}:{_mac(key, body)}"


def unseal(key: bytes, cred: str, now: float | None = None) -> tuple[int, str, str, int, str] | None:
    """(uid, user, nonce, time made, binding) of a credential signed with `key` and fresh at `now`;
    None otherwise. Whether it was made for the request (its `bind()` is the binding) and whether its
    nonce was seen before are the caller's to check (the controller's gate checks its signature before
    it reads the request's body)."""
    import hmac
    body, _, mac = cred.rpartition(":")
    parts = body.split(":")
    if len(parts) != 6 or parts[0] != "v2" or not hmac.compare_digest(mac.encode(), _mac(key, body).encode()):
        return None
    try:
        uid, ts = int(parts[1]), int(parts[3])
    except ValueError:
        return None
    t = time.time() if now is None else now
    if not t - CRED_TTL <= ts <= t + CRED_SKEW:
        return None
    return uid, parts[2], parts[4], ts, parts[5]


def verify(key: bytes, cred: str, binding: str, now: float | None = None) -> tuple[int, str, str, int] | None:
    """(uid, user, nonce, time made) of a valid, fresh credential made for the request whose
    `bind()` is `binding`; None otherwise. Whether the nonce was seen before is the caller's to check."""
    import hmac
    got = unseal(key, cred, now)
    if got is None or not hmac.compare_digest(got[4].encode(), binding.encode()):
        return None
    return got[:4]


def current_user() -> tuple[int, str]:
    uid = os.getuid()
    try:
        import pwd
        return uid, pwd.getpwuid(uid).pw_name
    except (KeyError, ImportError):
        return uid, os.environ.get("USER") or str(uid)


def header_for_me(binding: str) -> str | None:
    """The credential the CLI sends with the request whose `bind()` is `binding`: signed for the
    calling user with the key it can read, else one from the local credential service
    (`slurmlet credd`), else None."""
    key = read_key()
    if key is None:
        return from_credd(binding)
    uid, user = current_user()
    return sign(key, uid, user, binding)


def from_credd(binding: str, path: str | None = None) -> str | None:
    """A credential for this process's user, for the request whose `bind()` is `binding`, from
    `slurmlet credd` on its Unix socket ($SLURMLET_CRED_SOCKET, else DEFAULT_SOCKET); None when
    none answers. The request: the binding and a newline; the answer: the credential and a newline."""
    path = path or os.environ.get("SLURMLET_CRED_SOCKET") or DEFAULT_SOCKET
    if not os.path.exists(path):
        return None
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(5.0)
        s.connect(path)
        s.sendall(binding.encode() + b"\n")
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
    return line if line.startswith("v2:") else None
