"""Air runs' packed code and their secrets."""

from __future__ import annotations

from typing import Any

from slurmlet.controller.errors import NotFound
from sqlalchemy import insert, select, update

from .tables import code_blobs as CODE
from .tables import secrets as SEC


class CodeAndSecrets:
    # ---------------------------------------------------------------- air runs' code
    def put_code(self, data: bytes, now: float) -> str:
        import hashlib
        sha = hashlib.sha256(data).hexdigest()
        with self.engine.begin() as c:
            if c.execute(select(CODE.c.sha).where(CODE.c.sha == sha)).first() is None:
                c.execute(insert(CODE).values(sha=sha, data=data, created=now))
        return sha

    def get_code(self, sha: str) -> bytes:
        with self.engine.connect() as c:
            data = c.execute(select(CODE.c.data).where(CODE.c.sha == sha)).scalar()
        if data is None:
            raise NotFound(f"no code {sha}")
        return bytes(data)

    def has_code(self, sha: str) -> bool:
        with self.engine.connect() as c:
            return c.execute(select(CODE.c.sha).where(CODE.c.sha == sha)).first() is not None

    # ---------------------------------------------------------------- secrets
    def put_secret(self, scope: str, key: str, value: str, now: float) -> None:
        with self.engine.begin() as c:
            if c.execute(update(SEC).where(SEC.c.scope == scope, SEC.c.key == key)
                         .values(value=value, updated=now)).rowcount == 0:
                c.execute(insert(SEC).values(scope=scope, key=key, value=value, updated=now))

    def delete_secret(self, scope: str, key: str) -> None:
        with self.engine.begin() as c:
            if c.execute(SEC.delete().where(SEC.c.scope == scope, SEC.c.key == key)).rowcount == 0:
                raise NotFound(f"no secret {scope}/{key}")

    def secret_names(self) -> list[dict]:
        with self.engine.connect() as c:
            return [{"scope": r.scope, "key": r.key, "updated": r.updated}
                    for r in c.execute(select(SEC.c.scope, SEC.c.key, SEC.c.updated).order_by(SEC.c.scope, SEC.c.key))]

    def missing_secrets(self, refs: dict[str, str]) -> list[str]:
        """The `NAME` of each reference (`scope/key`) that names no stored secret."""
        with self.engine.connect() as c:
            have = {(r.scope, r.key) for r in c.execute(select(SEC.c.scope, SEC.c.key))}
        return [name for name, ref in refs.items() if tuple(ref.split("/", 1)) not in have]

    @staticmethod
    def _resolve_secrets(c: Any, refs: dict[str, str]) -> dict[str, str]:
        out = {}
        for name, ref in refs.items():
            scope, _, key = ref.partition("/")
            value = c.execute(select(SEC.c.value).where(SEC.c.scope == scope, SEC.c.key == key)).scalar()
            if value is not None:
                out[name] = value
        return out

