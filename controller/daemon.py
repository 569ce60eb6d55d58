"""`slurmlet controller`: the slurmctld."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys

from slurmlet.common.wire import DEFAULT_PORT


def parse_listen(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host or "127.0.0.1", int(port or DEFAULT_PORT)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="slurmlet controller", description="Run the slurmlet controller (slurmctld).")
    ap.add_argument("--config", "-f", help="slurm.conf (default: $SLURM_CONF, else a built-in one-partition cluster)")
    ap.add_argument("--spec", help="a cloud-style JSON cluster spec instead of slurm.conf (a --config ending "
                                   "in .json is one too)")
    ap.add_argument("--db", help="database URL (default: SQLite in --state-dir)")
    ap.add_argument("--state-dir", default=os.environ.get("SLURMLET_STATE_DIR", "./state"),
                    help="directory for the SQLite database (default ./state)")
    ap.add_argument("--listen", default=f"127.0.0.1:{DEFAULT_PORT}",
                    help=f"HOST:PORT (default 127.0.0.1:{DEFAULT_PORT})")
    ap.add_argument("--key-file", default=None,
                    help="the cluster key: changes need a credential or token signed with it (default "
                         "$SLURMLET_KEY_FILE or /etc/slurmlet/slurmlet.key; without one, requests are trusted)")
    ap.add_argument("--spool", default=None, metavar="DIR",
                    help="also take requests through this spool directory, where this host's users are who the "
                         "kernel says (no credential needed; the CLI uses it through $SLURMLET_SPOOL)")
    ap.add_argument("--init-db", action="store_true",
                    help="make a new, empty database where the state directory records one that is now missing "
                         "or empty (without it, such a start is refused); a database with data is kept")
    ap.add_argument("--host", default=None, metavar="NAME",
                    help="which of slurm.conf's SlurmctldHost this controller is (default: this host's short "
                         "name; the only one where there is one); the first is the primary, the others backups, "
                         "which share its database (PostgreSQL)")
    ap.add_argument("--log-level", default="info")
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from slurmlet.controller.app import create_app
    from slurmlet.controller.clusterspec import load
    from slurmlet.controller.config import ConfigError
    from slurmlet.controller.runtime import Settings
    from slurmlet.controller.store.engine import sqlite_url

    conf_path = args.config or (None if args.spec else os.environ.get("SLURM_CONF"))
    conf_path = conf_path and os.path.abspath(conf_path)
    spec_path = args.spec and os.path.abspath(args.spec)
    state_dir = os.path.abspath(args.state_dir)

    def reload():  # noqa: ANN202 - scontrol reconfigure reads the same file again
        return load(conf_path, spec_path, state_dir)
    try:
        config = reload()
    except ConfigError as e:
        print(f"slurmlet controller: error: {e}", file=sys.stderr)
        return 1
    from slurmlet.common import cred
    key_file = args.key_file or os.environ.get("SLURMLET_KEY_FILE") or (
        cred.DEFAULT_KEY if os.path.exists(cred.DEFAULT_KEY) else None)
    key = None
    if key_file:
        key = cred.read_key(key_file)
        if key is None:
            print(f"slurmlet controller: error: --key-file: cannot read {key_file}", file=sys.stderr)
            return 1
    else:
        logging.getLogger("slurmlet.controller").warning(
            "no cluster key (--key-file): every request is trusted as the user it names")
    host, port = parse_listen(args.listen)
    import resource  # each connection costs a descriptor (two a spooled request): as many as allowed
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 1 << 16 if hard == resource.RLIM_INFINITY else min(hard, 1 << 16)
    if soft != resource.RLIM_INFINITY and soft < want:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    if args.spool and not port:
        print("slurmlet controller: error: --spool needs a --listen port other than 0", file=sys.stderr)
        return 1
    os.umask(0o077)  # what the controller makes (the database, its journal, database.json) is its own
    from slurmlet.controller.failover import HostError, role, whoami
    try:
        index, name = whoami(config, args.host)
    except HostError as e:
        print(f"slurmlet controller: error: {e}", file=sys.stderr)
        return 1
    settings = Settings(db_url=args.db or sqlite_url(args.state_dir), config=config, listen=f"{host}:{port}",
                        reload=reload if conf_path or spec_path else None, key=key,
                        spool=args.spool and os.path.abspath(args.spool), host=name)
    from slurmlet.controller.store.engine import private_state
    private_state(state_dir, None if args.db else settings.db_url.removeprefix("sqlite:///"))
    from slurmlet.controller.store.history import open_database
    from slurmlet.controller.store.migrate import SchemaError
    try:  # the database first (made, or upgraded keeping its data; never silently made anew): a refusal is one line
        open_database(state_dir, settings.db_url, init=args.init_db)
    except SchemaError as e:
        print(f"slurmlet controller: error: {e}", file=sys.stderr)
        return 1
    names = config.controller_names()
    if settings.db_url.startswith("sqlite"):  # one host's file: one controller
        if index > 0:
            print(f"slurmlet controller: error: {name} is a backup controller (SlurmctldHost {role(index, len(names))}"
                  f"): a backup shares the primary's database, which must be one every controller reaches "
                  f"(PostgreSQL: --db postgresql://...), not SQLite, a file of one host", file=sys.stderr)
            return 1
        from slurmlet.controller.store.engine import make_engine
        from slurmlet.controller.store.lease import Lease, single_host
        lease = Lease(make_engine(settings.db_url, migrate=False), name, index, config.slurmctld_timeout)
        why = single_host(lease.read(), lease.me)
        lease.engine.dispose()
        if why:
            print(f"slurmlet controller: error: the database {settings.db_url.removeprefix('sqlite:///')} is in use: "
                  f"{why}; SQLite takes one controller (backup controllers share a PostgreSQL database)",
                  file=sys.stderr)
            return 1
        if len(names) > 1:
            logging.getLogger("slurmlet.controller").warning(
                "slurm.conf names %d controllers (SlurmctldHost), but the database is SQLite, which no backup "
                "can share: this one runs alone", len(names))
    import uvicorn
    # agents sync over one kept-alive connection each: uvicorn's default 5 s idle limit races an agent that
    # comes back after a busy moment (its request meets the closing connection: a read error, a back-off)
    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning", access_log=False,
                timeout_keep_alive=75, timeout_graceful_shutdown=5)  # (open dashboards stream until closed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
