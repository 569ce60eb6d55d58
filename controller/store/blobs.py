"""Air runs' packed code and their secrets, each with its owners.

Code is stored once by its sha256; `code_owners` says which uids uploaded it (only they, and the
agents, may read it or name it in a run). A secret belongs to one owner, `user:NAME` or
`account:NAME`: a run of user U under account A resolves `scope/key` to U's own secret, else A's."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, select, update

from slurmlet.controller.errors import NotFound

from .base import Part
from .tables import code_blobs as CODE
from .tables import code_owners as CO
from .tables import secrets as SEC


class CodeAndSecrets(Part):
    """Air runs' code and secrets."""

    # ---------------------------------------------------------------- air runs' code
    def put_code(self, data: bytes, now: float, uid: int) -> str:
        import hashlib
        sha = hashlib.sha256(data).hexdigest()
        with self.engine.begin() as c:
            if c.execute(select(CODE.c.sha).where(CODE.c.sha == sha)).first() is None:
                c.execute(insert(CODE).values(sha=sha, data=data, created=now))
            if c.execute(select(CO.c.sha).where(CO.c.sha == sha, CO.c.uid == uid)).first() is None:
                c.execute(insert(CO).values(sha=sha, uid=uid))
        return sha

    def get_code(self, sha: str) -> bytes:
        with self.engine.connect() as c:
            data = c.execute(select(CODE.c.data).where(CODE.c.sha == sha)).scalar()
        if data is None:
            raise NotFound(f"no code {sha}")
        return bytes(data)

    def has_code(self, sha: str, uid: int | None = None) -> bool:
        """Whether the code is stored (and, given `uid`, uploaded by that uid)."""
        with self.engine.connect() as c:
            if uid is None:
                return c.execute(select(CODE.c.sha).where(CODE.c.sha == sha)).first() is not None
            return c.execute(select(CO.c.sha).where(CO.c.sha == sha, CO.c.uid == uid)).first() is not None

    # ---------------------------------------------------------------- secrets
    def put_secret(self, owner: str, scope: str, key: str, value: str, now: float) -> None:
        with self.engine.begin() as c:
            if c.execute(update(SEC).where(SEC.c.owner == owner, SEC.c.scope == scope, SEC.c.key == key)
                         .values(value=value, updated=now)).rowcount == 0:
                c.execute(insert(SEC).values(owner=owner, scope=scope, key=key, value=value, updated=now))

    def delete_secret(self, owner: str, scope: str, key: str) -> None:
        with self.engine.begin() as c:
            if c.execute(SEC.delete().where(SEC.c.owner == owner, SEC.c.scope == scope,
                                            SEC.c.key == key)).rowcount == 0:
                raise NotFound(f"no secret {scope}/{key}")

    def secret_names(self, owners: list[str] | None) -> list[dict]:
        """Names of the secrets of `owners` (None: everyone's), never their values."""
        q = select(SEC.c.owner, SEC.c.scope, SEC.c.key, SEC.c.updated)
        if owners is not None:
            q = q.where(SEC.c.owner.in_(owners))
        with self.engine.connect() as c:
            return [{"owner": r.owner, "scope": r.scope, "key": r.key, "updated": r.updated}
                    for r in c.execute(q.order_by(SEC.c.scope, SEC.c.key, SEC.c.owner))]

    def missing_secrets(self, refs: dict[str, str], owners: list[str]) -> list[str]:
        """The `NAME` of each reference (`scope/key`) that names no secret of `owners`."""
        with self.engine.connect() as c:
            have = {(r.scope, r.key) for r in c.execute(select(SEC.c.scope, SEC.c.key).where(SEC.c.owner.in_(owners)))}
        return [name for name, ref in refs.items() if tuple(ref.split("/", 1)) not in have]


def resolve_secrets(c: Any, refs: dict[str, str], owners: list[str]) -> dict[str, str]:
    """Each reference's value: the first of `owners` (in order) that has it."""
    out = {}
    for name, ref in refs.items():
        scope, _, key = ref.partition("/")
        got = {r.owner: r.value for r in c.execute(select(SEC.c.owner, SEC.c.value).where(
            SEC.c.scope == scope, SEC.c.key == key, SEC.c.owner.in_(owners)))}
        value = next((got[o] for o in owners if o in got), None)
        if value is not None:
            out[name] = value
    return out
