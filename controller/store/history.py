"""The state directory's record of the databases made for it (`database.json`): a controller never
silently starts afresh on a database that was lost.

When a controller first makes (or first finds) its database, the state directory records it,
keyed by the database's name (a SQLite file's path, else its URL without a password). A later start
that finds that database missing or empty (no slurmlet tables) refuses with one line saying how to
go on: put the database back, or start with `--init-db` to make a new, empty one. A state
directory without the record (a fresh one, or one from a slurmlet before this record) starts as
before. For a database given by URL (PostgreSQL) the record is kept only where the state directory
exists.
"""

from __future__ import annotations

import json
import os
import time

from sqlalchemy import inspect

from .engine import make_engine, normalize_url
from .migrate import SchemaError, prepare
from .tables import metadata

MARKER = "database.json"
INIT_HINT = "to make a new, empty one, start with --init-db (slurmlet controller --init-db, slurmlet up --init-db)"


class LostDatabase(SchemaError):
    """The state directory shows a database with a history, and it is missing or empty."""


def _name(url: str) -> tuple[str, str | None]:
    """(the database's name in the record, its SQLite file or None)."""
    url = normalize_url(url)
    if url.startswith("sqlite:///") and not url.startswith("sqlite:///:memory:"):
        path = os.path.abspath(url[len("sqlite:///"):].split("?", 1)[0])
        return path, path
    from sqlalchemy.engine import make_url
    return make_url(url).render_as_string(hide_password=True), None


def _read(state_dir: str) -> dict:
    try:
        with open(os.path.join(state_dir, MARKER)) as f:
            data = json.load(f)
        return data if isinstance(data, dict) and isinstance(data.get("databases"), dict) else {"databases": {}}
    except (OSError, ValueError):
        return {"databases": {}}


def _empty(url: str) -> bool:
    """The database has none of slurmlet's tables (made anew by opening it, or emptied)."""
    engine = make_engine(url, migrate=False)
    try:
        with engine.connect() as conn:
            return not set(inspect(conn).get_table_names()) & set(metadata.tables)
    finally:
        engine.dispose()


def _since(state_dir: str, entry: dict) -> str:
    when = entry.get("made") or entry.get("found") or "an earlier start"
    return f"{os.path.join(state_dir, MARKER)} records it with data since {when}"


def check(state_dir: str, url: str, init: bool = False) -> None:
    """Raise LostDatabase when the state directory records the database at `url` and it is missing
    or empty, unless `init` (a new one is to be made: a SQLite file's leftover journal goes)."""
    name, path = _name(url)
    made = _read(state_dir)["databases"].get(name)
    if path is not None and not os.path.exists(path):
        if init:
            for leftover in (path + "-wal", path + "-shm", path + "-journal"):
                if os.path.exists(leftover):  # an old write-ahead log replayed into a new file would corrupt it
                    os.remove(leftover)
            return
        if made is not None:
            raise LostDatabase(f"the database {name} is missing, but {_since(state_dir, made)}: put it back, "
                               f"or {INIT_HINT}")
        return
    if made is not None and not init and _empty(url):
        raise LostDatabase(f"the database {name} is empty, but {_since(state_dir, made)}: put it back, "
                           f"or {INIT_HINT}")


def open_database(state_dir: str, url: str, init: bool = False) -> tuple[str | None, str]:
    """`check`, then bring the database to this slurmlet's schema (migrate.prepare: made when empty)
    and record it in the state directory. Returns prepare's (revision before, after)."""
    check(state_dir, url, init)
    engine = make_engine(url, migrate=False)
    try:
        before, after = prepare(engine)
    finally:
        engine.dispose()
    name, path = _name(url)
    if path is None and not os.path.isdir(state_dir):
        return before, after
    data = _read(state_dir)
    if before is None or name not in data["databases"]:  # made now, or first found with its data
        data["databases"][name] = {"made" if before is None else "found": time.strftime("%Y-%m-%d %H:%M:%S")}
        os.makedirs(state_dir, exist_ok=True)
        tmp = os.path.join(state_dir, MARKER + ".tmp")
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, os.path.join(state_dir, MARKER))
    return before, after
