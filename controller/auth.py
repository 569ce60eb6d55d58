"""Who is asking, and may they: credentials (common/cred.py), JWTs for REST clients, permissions.

With a cluster key configured (`slurmlet controller --key-file`, SLURMLET_KEY_FILE), every request
that changes something must carry a valid credential (X-Slurmlet-Cred, signed with the key) or a
token (X-SLURM-USER-TOKEN from `scontrol token`, as slurmrestd takes them); reads stay open. A
request without either is refused with 401; one whose caller may not do what it asks, with 403.

Users may act on their own jobs; operators and administrators (sacctmgr AdminLevel, and root) on
every job; administrators alone change the accounting database and reconfigure the cluster.
Without a key the controller runs open, as before: every request acts as the user it names.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass

from slurmlet.common import cred
from slurmlet.controller.errors import DomainError

TOKEN_HEADER = "X-SLURM-USER-TOKEN"
TOKEN_USER_HEADER = "X-SLURM-USER-NAME"
LEVELS = {"None": 0, "Operator": 1, "Administrator": 2}


class Unauthenticated(DomainError):
    """Authentication failure"""

    status = 401


class Forbidden(DomainError):
    """Access/permission denied"""

    status = 403


class InvalidUser(DomainError):
    """Invalid user id"""

    #: Slurm's ESLURM_USER_ID_MISSING: what slurmctld answers a user who updates (holds, releases)
    #: someone else's job, or who is not an operator and updates a node or reconfigures
    status = 403


@dataclass(frozen=True)
class Caller:
    uid: int | None  #: None: unknown (no key configured, or no credential on a read)
    user: str | None
    level: int = 0  #: 0 user, 1 operator, 2 administrator (root is an administrator)

    @property
    def known(self) -> bool:
        return self.uid is not None

    def owns(self, uid: int | None, user: str | None) -> bool:
        return self.uid == uid or (self.user is not None and self.user == user)


OPEN = Caller(None, None, 2)  #: no key: everything allowed, as the request says


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def issue_token(key: bytes, user: str, lifespan: int, now: float) -> str:
    """An HS256 JWT for `user` (claim `sun`, as Slurm's auth/jwt), valid `lifespan` seconds."""
    head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    body = _b64(json.dumps({"iat": int(now), "exp": int(now) + lifespan, "sun": user},
                           separators=(",", ":")).encode())
    sig = _b64(hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest())
    return f"{head}.{body}.{sig}"


def verify_token(key: bytes, token: str, now: float) -> str | None:
    """The user a valid, unexpired token names; None otherwise."""
    try:
        head, body, sig = token.split(".")
        want = _b64(hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest())
        if not hmac.compare_digest(sig, want):
            return None
        if json.loads(_unb64(head)).get("alg") != "HS256":
            return None
        claims = json.loads(_unb64(body))
    except (ValueError, TypeError, UnicodeDecodeError, AttributeError):
        return None
    if not isinstance(claims, dict) or not isinstance(claims.get("sun"), str):
        return None
    if not isinstance(claims.get("exp"), int) or claims["exp"] < now:
        return None
    return claims["sun"]


def uid_of(user: str) -> int | None:
    import pwd
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return None


class Nonces:
    """The nonces of the credentials accepted in their lifetime: a credential is good once. They
    are kept in memory, so credentials made before `since` (the controller's start, to the second)
    are refused: one used with the controller that ran before cannot be used again with this one."""

    def __init__(self, since: float = 0.0) -> None:
        self.until: dict[str, float] = {}  #: nonce -> when its credential expires
        self.high = 4096  #: the size at which expired nonces are dropped
        self.since = int(since)

    def first_use(self, nonce: str, now: float, made: int | None = None) -> bool:
        if made is not None and made < self.since:
            return False
        if len(self.until) >= self.high:
            self.until = {n: t for n, t in self.until.items() if t >= now}
            self.high = max(4096, 2 * len(self.until))
        if nonce in self.until:
            return False
        self.until[nonce] = now + cred.CRED_TTL + cred.CRED_SKEW
        return True


def token_caller(key: bytes, headers, now: float, level_of) -> Caller | None:  # noqa: ANN001
    """The caller a token (X-SLURM-USER-TOKEN, `scontrol token`) proves; None when there is none or it
    proves nobody. `level_of(user)` is the sacctmgr AdminLevel of a user (0, 1 or 2)."""
    token = headers.get(TOKEN_HEADER)
    if not token:
        return None
    user = verify_token(key, token, now)
    named = headers.get(TOKEN_USER_HEADER)
    if user is None or (named and named != user):
        return None
    uid = uid_of(user)
    return Caller(uid if uid is not None else -1, user, 2 if uid == 0 else level_of(user))


def local_caller(uid: int, level_of) -> Caller:  # noqa: ANN001
    """The caller the kernel names for a spooled request (spool.py): that uid, under
    its name on this host (its number when it has none, as `id -un` fails then)."""
    import pwd
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    return Caller(uid, user, 2 if uid == 0 else level_of(user))


def require(caller: Caller, level: int, denied: type[DomainError] = Forbidden) -> None:
    """Refuse (`denied`, 403) a caller below `level` (1 operator, 2 administrator)."""
    if caller.level < level:
        raise denied()


def may_act_on(caller: Caller, uid: int | None, user: str | None) -> bool:
    """A user acts on their own jobs; operators and administrators on anyone's."""
    return caller.level >= 1 or caller.owns(uid, user)
