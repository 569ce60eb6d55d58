"""`slurmlet db upgrade|current|history`: the controller database's schema version.

    slurmlet db upgrade [--db URL] [--state-dir DIR]   bring the database to this slurmlet's schema
    slurmlet db current [--db URL] [--state-dir DIR]   the revision it is at
    slurmlet db history [--db URL] [--state-dir DIR]   every revision, the database's marked

The controller upgrades its database by itself at start; `upgrade` does it beforehand (e.g. to see
it happen, or with the controller stopped). The database is the controller's: --db, else SQLite
in --state-dir (default $SLURMLET_STATE_DIR, else ./state).
"""

from __future__ import annotations

import logging
import os
import sys

from slurmlet.common.oneline import Parser

PROG = "slurmlet db"


def main(argv: list[str]) -> int:
    ap = Parser(prog=PROG, description="The controller database's schema version (Alembic revisions).")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    for name, what in (("upgrade", "bring the database to this slurmlet's schema, keeping its data"),
                       ("current", "print the revision the database is at"),
                       ("history", "list the revisions, marking the database's")):
        p = sub.add_parser(name, help=what, description=what)
        p.add_argument("--db", help="database URL (default: SQLite in --state-dir)")
        p.add_argument("--state-dir", default=os.environ.get("SLURMLET_STATE_DIR", "./state"),
                       help="directory of the SQLite database (default $SLURMLET_STATE_DIR or ./state)")
    args = ap.parse_args(argv)

    from slurmlet.controller.store.engine import make_engine, normalize_url
    url: str | None = None  # None: no database (yet) to read
    if args.db:
        url = normalize_url(args.db)
    else:
        path = os.path.join(os.path.abspath(args.state_dir), "slurmlet.db")
        if args.cmd == "upgrade" or os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            url = f"sqlite:///{path}"
        elif args.cmd == "current":
            print(f"{PROG}: error: no database at {path} (see --state-dir, --db)", file=sys.stderr)
            return 1

    from slurmlet.controller.store import migrate
    from slurmlet.controller.store.migrations import HEAD
    try:
        if args.cmd == "upgrade":
            assert url is not None  # (upgrade makes the SQLite file where there is none)
            logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
            from slurmlet.controller.store import history
            history.check(os.path.abspath(args.state_dir), url)  # a lost database is not made anew here either
            engine = make_engine(url, migrate=False)
            before, after = migrate.prepare(engine)
            engine.dispose()
            if before is None:
                print(f"made the database's tables at {after} (head)")
            elif before == after:
                print(f"already at {after} (head)")
            elif before.startswith("pre-alembic:"):
                print(f"tables from before schema versions matched {before.split(':')[1]}: "
                      f"upgraded to {after} (head)")
            else:
                print(f"upgraded from {before} to {after} (head)")
            return 0
        version = pre = None
        if url:
            engine = make_engine(url, migrate=False)
            with engine.connect() as conn:
                version, pre = migrate.current(conn)
            engine.dispose()
        if args.cmd == "current":
            if version is not None:
                print(f"{version} (head)" if version == HEAD else
                      f"{version} (head is {HEAD}: `slurmlet db upgrade` or a controller start upgrades it)")
            elif pre is not None:
                print(f"none: tables from before schema versions, matching {pre} (`slurmlet db upgrade` "
                      f"stamps and upgrades them)")
            else:
                print("none: an empty database")
            return 0
        for script in migrate.script_directory().walk_revisions():
            mark = " (current)" if script.revision in (version, pre) else ""
            head = " (head)" if script.revision == HEAD else ""
            print(f"{script.down_revision or '<base>'} -> {script.revision}{head}{mark}, {script.doc}")
        return 0
    except BrokenPipeError:  # `slurmlet db history | head`
        return 0
    except migrate.SchemaError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a database that cannot be reached: one line, not a traceback
        if type(e).__module__.split(".")[0] not in ("sqlalchemy", "psycopg", "sqlite3"):
            raise
        print(f"{PROG}: error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
